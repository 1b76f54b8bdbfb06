"""Find the log files under an export source.

A source is one memory root or any prefix above many of them (``s3://bucket/users/``).
One recursive listing finds every memory log (``<root>/logs/YYYY-MM-DD.jsonl``) and every
agent event log of a path store (``<root>/log/<stream>.jsonl``); ``<root>`` is whatever
folder holds them, relative to the source (``""`` when the source is the root itself).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.fs import FileInfo, StorageRoot
from fsmemory.memory.layout import DAILY_LOG_DIR as LOG_DIR
from fsmemory.memory.layout import log_date

__all__ = ["SourceFile", "discover", "tenant_of"]

#: Top-level folders of a source that is itself a root (its logs, not a tenant).
_OWN_DIRS = frozenset({LOG_DIR, "log"})


# Not frozen: a frozen dataclass sets each field through ``object.__setattr__``, which
# made up most of classifying a fleet's 20,000 listed files on every (no-op) run.
@dataclass(slots=True)
class SourceFile:
    """One log file to export (read-only by convention).

    Attributes:
        table: the table its rows go to.
        root: its memory/store root relative to the source.
        path: its path relative to ``root``.
        info: its listing entry (``info.path`` is relative to the source).
        day: memory logs: the UTC day in the file name.
        key: its manifest key: the path relative to the source (``info.path``).
    """

    table: str
    root: str
    path: str
    info: FileInfo
    day: str | None = None
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = self.info.path


@functools.lru_cache(maxsize=4096)
def _log_day(name: str) -> str | None:
    """The day of a memory log named ``name`` (``2026-03-13.jsonl``), or None when the
    name is not a real day's log. A fleet repeats the same few names in every tenant."""
    day = log_date(f"{LOG_DIR}/{name}")
    if day is None:
        return None
    try:
        date.fromisoformat(day)
    except ValueError:
        return None
    return day


def classify(info: FileInfo) -> SourceFile | None:
    """The :class:`SourceFile` of a listed file, or None when it is not a log."""
    path = info.path
    if not path.endswith(".jsonl"):
        return None
    # String splits instead of one anchored regex over the whole path: this runs once
    # per listed file, and a fleet lists tens of thousands of them on every run.
    folder_path, _, name = path.rpartition("/")
    root, _, folder = folder_path.rpartition("/")
    if folder == LOG_DIR:
        day = _log_day(name)
        if day is not None:
            return SourceFile(MEMORY_TABLE, root, f"{LOG_DIR}/{name}", info, day)
    elif folder == "log" and name != ".jsonl":
        return SourceFile(EVENTS_TABLE, root, f"log/{name}", info)
    return None


def tenant_of(root: str) -> str:
    """The tenant a root belongs to: its top-level folder under the source (``""`` when
    the source is itself the root). Shards and manifest buckets split by tenant."""
    return root.split("/", 1)[0]


def discover(
    src: StorageRoot,
    tables: frozenset[str],
    tenants: Callable[[str], bool] | None = None,
    *,
    by_folder: bool = False,
) -> list[SourceFile]:
    """Every log file under ``src`` belonging to one of ``tables`` (and, when given, to
    a tenant ``tenants`` accepts): memory logs by (day, root), then event logs by (root,
    stream).

    One recursive listing of the source; with ``by_folder`` (cheap listings, e.g. a
    local folder) and ``tenants``, one listing per accepted top-level folder instead.
    """
    if tenants is not None and by_folder:
        infos: list[FileInfo] = []
        for name in src.list_dirs(""):
            tenant = "" if name in _OWN_DIRS else name
            if tenants(tenant):
                infos += src.list(name, recursive=True)
    else:
        infos = src.list("", recursive=True)
    memory: list[SourceFile] = []
    events: list[SourceFile] = []
    for info in infos:
        item = classify(info)
        if item is None or item.table not in tables:
            continue
        if tenants is not None and not tenants(tenant_of(item.root)):
            continue
        (memory if item.table == MEMORY_TABLE else events).append(item)
    memory.sort(key=operator.attrgetter("day", "root", "path"))
    events.sort(key=operator.attrgetter("root", "path"))
    return memory + events
