"""The names of a memory folder (seed 000's layout), in one place.

::

    <root>/MEMORY.md               persistent facts, by category (hand-editable)
    <root>/logs/YYYY-MM-DD.jsonl   one JSON record per line (UTC dates)
    <root>/fsmemory.json           the memory's settings (retention), carried by snapshots

Anything else in the folder is not part of the memory. Names starting with
``.fsmemory`` are reserved for fsmemory's own files (locks, caches): they are never
packed into snapshots as files of the memory, nor exported (a snapshot base carries the
search index's cache apart, as a derived file: see :mod:`fsmemory.memory._replica`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = [
    "DAILY_LOG_DIR",
    "MEMORY_FILE",
    "RESERVED_PREFIX",
    "SETTINGS_FILE",
    "TITLE",
    "log_date",
    "log_name_for",
]

#: The hand-editable file of persistent facts.
MEMORY_FILE = "MEMORY.md"
#: The folder of the daily JSONL logs.
DAILY_LOG_DIR = "logs"
#: The memory's settings (see :mod:`fsmemory.memory._settings`): part of the memory, so
#: snapshots carry it (its name does not start with :data:`RESERVED_PREFIX`).
SETTINGS_FILE = "fsmemory.json"
#: The first line of a MEMORY.md written by fsmemory.
TITLE = "# Agent Memory"
#: Names fsmemory keeps for its own files (never part of the memory's data).
RESERVED_PREFIX = ".fsmemory"

_LOG_NAME = re.compile(r"^logs/(\d{4}-\d{2}-\d{2})\.jsonl$")


def log_name_for(moment: datetime) -> str:
    """The daily log a record written at ``moment`` belongs to (UTC date)."""
    return f"{DAILY_LOG_DIR}/{moment.astimezone(UTC).strftime('%Y-%m-%d')}.jsonl"


def log_date(path: str) -> str | None:
    """``"logs/2026-01-02.jsonl"`` -> ``"2026-01-02"``; None for other files."""
    match = _LOG_NAME.match(path)
    return match.group(1) if match else None
