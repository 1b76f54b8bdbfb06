"""KnowledgeMemory (seed 000): MEMORY.md + daily JSONL logs on any fsspec URL."""

from __future__ import annotations

from fsmemory.memory.entry import KnowledgeEntry
from fsmemory.memory.knowledge import KnowledgeMemory, RememberResult
from fsmemory.memory.markdown import escape_line, unescape_line

__all__ = ["KnowledgeEntry", "KnowledgeMemory", "RememberResult", "escape_line", "unescape_line"]
