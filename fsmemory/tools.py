"""The ``remember`` and ``recall`` tools of seed 000 (kept importable here).

They live in :mod:`fsmemory.agent` beside the other tools and share their schema
vocabulary (``openai_schema``, ``responses_schema``, ``anthropic_schema``, ``schema``).
``MemoryTool`` is the former name of :class:`~fsmemory.agent.FunctionTool`.
"""

from __future__ import annotations

from fsmemory.agent._functions import (
    DEFAULT_RECALL_LIMIT,
    FunctionTool,
    knowledge_tools,
    make_recall_tool,
    make_remember_tool,
    parse_bool,
)

MemoryTool = FunctionTool

__all__ = [
    "DEFAULT_RECALL_LIMIT",
    "FunctionTool",
    "MemoryTool",
    "knowledge_tools",
    "make_recall_tool",
    "make_remember_tool",
    "parse_bool",
]
