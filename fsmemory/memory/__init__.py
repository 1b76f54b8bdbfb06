"""KnowledgeMemory (seed 000): MEMORY.md + daily JSONL logs on any fsspec URL."""

from __future__ import annotations

import typing

from fsmemory import _lazy

if typing.TYPE_CHECKING:
    from fsmemory.memory._stats import MemoryStats
    from fsmemory.memory.entry import KnowledgeEntry, RememberResult
    from fsmemory.memory.knowledge import KnowledgeMemory
    from fsmemory.memory.markdown import escape_line, unescape_line


__all__ = [
    "KnowledgeEntry",
    "KnowledgeMemory",
    "MemoryStats",
    "RememberResult",
    "escape_line",
    "unescape_line",
]

_EXPORTS = {
    "KnowledgeEntry": "fsmemory.memory.entry",
    "KnowledgeMemory": "fsmemory.memory.knowledge",
    "MemoryStats": "fsmemory.memory._stats",
    "RememberResult": "fsmemory.memory.entry",
    "escape_line": "fsmemory.memory.markdown",
    "unescape_line": "fsmemory.memory.markdown",
}
__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS)
