"""The record :meth:`KnowledgeMemory.stats <fsmemory.memory.KnowledgeMemory.stats>`
returns, typed so that a type checker knows each key users index. Public as
:class:`fsmemory.memory.MemoryStats`."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["MemoryStats"]


class MemoryStats(TypedDict):
    """Counts of one memory, for monitoring (a plain dict at run time).

    Attributes:
        storage: the memory root's URL.
        entries: live entries (expired and forgotten ones not counted).
        persistent_facts: live facts in MEMORY.md.
        categories: the categories of live entries, sorted.
        log_files: daily log files.
        log_bytes: their total size in bytes.
        memory_md_bytes: the size of MEMORY.md in bytes (0 when there is none).
        corrupt_lines: log lines skipped as unreadable, plus ``memory_md_invalid_lines``.
        memory_md_invalid_lines: MEMORY.md lines that are not valid UTF-8 (kept byte for
            byte, read with U+FFFD in place of the bad bytes).
    """

    storage: str
    entries: int
    persistent_facts: int
    categories: list[str]
    log_files: int
    log_bytes: int
    memory_md_bytes: int
    corrupt_lines: int
    memory_md_invalid_lines: int
