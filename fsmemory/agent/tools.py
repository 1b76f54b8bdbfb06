"""Tools for the model, with one schema vocabulary for every provider.

* ``remember`` / ``recall`` on a :class:`~fsmemory.KnowledgeMemory`:
  :func:`knowledge_tools` (both), :func:`make_remember_tool`, :func:`make_recall_tool`,
  each a :class:`FunctionTool`; :func:`recall_text` renders recall results as the
  ``recall`` tool does; :func:`parse_bool` reads a boolean the way the tools do;
* the ``knowledge`` tool on a path store, :class:`KnowledgeTool` (its
  :data:`KNOWLEDGE_ACTIONS`);
* Anthropic's client-side memory tool on any URL, :class:`AnthropicMemoryTool` (its
  :data:`MEMORY_COMMANDS`, answering with a :class:`MemoryToolResult`);
* the schema vocabulary they share, :class:`ToolSchema`: ``schema(format)`` for each
  :data:`ToolFormat` in :data:`TOOL_FORMATS` (Chat Completions, strict mode, the
  Responses API, Anthropic), and :func:`strict_parameters`.
"""

from __future__ import annotations

from fsmemory.agent._functions import (
    DEFAULT_RECALL_LIMIT,
    FunctionTool,
    knowledge_tools,
    make_recall_tool,
    make_remember_tool,
    parse_bool,
    recall_text,
)
from fsmemory.agent._memory_tool import MEMORY_COMMANDS, AnthropicMemoryTool, MemoryToolResult
from fsmemory.agent._schema import TOOL_FORMATS, ToolFormat, ToolSchema, strict_parameters
from fsmemory.agent._tools import KNOWLEDGE_ACTIONS, KnowledgeTool

__all__ = [
    "DEFAULT_RECALL_LIMIT",
    "KNOWLEDGE_ACTIONS",
    "MEMORY_COMMANDS",
    "TOOL_FORMATS",
    "AnthropicMemoryTool",
    "FunctionTool",
    "KnowledgeTool",
    "MemoryToolResult",
    "ToolFormat",
    "ToolSchema",
    "knowledge_tools",
    "make_recall_tool",
    "make_remember_tool",
    "parse_bool",
    "recall_text",
    "strict_parameters",
]
