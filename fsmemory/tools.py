"""Deprecated: the ``remember`` and ``recall`` tools moved to :mod:`fsmemory.agent.tools`.

Importing this module emits a :class:`DeprecationWarning`; every name still works and
is the very object :mod:`fsmemory.agent.tools` holds (``MemoryTool`` is the former name
of :class:`~fsmemory.agent.tools.FunctionTool`). Write instead::

    from fsmemory.agent.tools import FunctionTool, knowledge_tools

The module will be removed in a future release.
"""

from __future__ import annotations

import warnings

from fsmemory.agent.tools import (
    DEFAULT_RECALL_LIMIT,
    FunctionTool,
    knowledge_tools,
    make_recall_tool,
    make_remember_tool,
    parse_bool,
)

warnings.warn(
    "fsmemory.tools is deprecated: import its names from fsmemory.agent.tools "
    "(MemoryTool is fsmemory.agent.tools.FunctionTool); fsmemory.tools will be removed "
    "in a future release",
    DeprecationWarning,
    stacklevel=2,
)

#: the former name of :class:`~fsmemory.agent.tools.FunctionTool`
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
