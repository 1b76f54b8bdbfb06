"""Find the log files under an export source.

A source is one memory root or any prefix above many of them (``s3://bucket/users/``).
One recursive listing finds every memory log (``<root>/logs/YYYY-MM-DD.jsonl``) and every
agent event log of a path store (``<root>/log/<stream>.jsonl``); ``<root>`` is whatever
folder holds them, relative to the source (``""`` when the source is the root itself).

A listing is kept column by column (:class:`Listing`): planning fingerprints every
listed file but makes a :class:`SourceFile` only of the files it looks at one by one,
so a no-op re-run over a fleet's 20,000 logs makes none.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.fs import FileInfo, StorageRoot, is_reserved_name
from fsmemory.fs.local import LocalRoot
from fsmemory.fs.local import _token as local_token
from fsmemory.memory.layout import DAILY_LOG_DIR as LOG_DIR
from fsmemory.memory.layout import log_date

__all__ = ["Listing", "SourceFile", "classify", "discover", "tenant_of"]

#: Top-level folders of a source that is itself a root (its logs, not a tenant).
_OWN_DIRS = frozenset({LOG_DIR, "log"})
_TABLES = frozenset({MEMORY_TABLE, EVENTS_TABLE})


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


class Listing:
    """The log files found under a source: one column per field, one row per file (in
    no particular order), and one row per folder holding them.

    No object per file: a :class:`SourceFile` is made on demand (:meth:`source_file`)
    for the files planning looks at one by one. A fleet's no-op re-run lists 20,000
    logs and looks at none; 20,000 objects would also set off garbage collections.

    Attributes:
        roots: per folder, the root it belongs to (relative to the source).
        folders: per folder, its name (``logs`` or ``log``).
        tables: per folder, the table its files' rows go to.
        dirs: per file, its folder's row.
        names: per file, its name.
        keys: per file, its path relative to the source (its manifest key).
        sizes, tokens, mtimes: per file, its listing entry's.
        days: per file, the day of a memory log (None for an event log).
    """

    __slots__ = ("days", "dirs", "folders", "keys", "mtimes", "names", "roots", "sizes",
                 "tables", "tokens")  # fmt: skip

    def __init__(self) -> None:
        self.roots: list[str] = []
        self.folders: list[str] = []
        self.tables: list[str] = []
        self.dirs: list[int] = []
        self.names: list[str] = []
        self.keys: list[str] = []
        self.sizes: list[int] = []
        self.tokens: list[str] = []
        self.mtimes: list[float | None] = []
        self.days: list[str | None] = []

    def __len__(self) -> int:
        return len(self.keys)

    def add_folder(self, table: str, root: str, folder: str) -> int:
        """Add a folder of logs; returns its row."""
        self.roots.append(root)
        self.folders.append(folder)
        self.tables.append(table)
        return len(self.roots) - 1

    def add(self, row: int, name: str, key: str, info: tuple[int, str, float | None],
            day: str | None) -> None:  # fmt: skip
        """Add the file ``name`` of the folder ``row``: its key, ``(size, token, mtime)``
        and day."""
        self.dirs.append(row)
        self.names.append(name)
        self.keys.append(key)
        self.sizes.append(info[0])
        self.tokens.append(info[1])
        self.mtimes.append(info[2])
        self.days.append(day)

    def root(self, i: int) -> str:
        """The root of file ``i``."""
        return self.roots[self.dirs[i]]

    def table(self, i: int) -> str:
        """The table of file ``i``."""
        return self.tables[self.dirs[i]]

    def order(self, i: int) -> tuple[str, str]:
        """``(root, name)`` of file ``i``: its reading order among the files of one
        table and day."""
        return self.roots[self.dirs[i]], self.names[i]

    def source_file(self, i: int) -> SourceFile:
        """The :class:`SourceFile` of file ``i``."""
        d = self.dirs[i]
        info = FileInfo(self.keys[i], self.sizes[i], self.mtimes[i], self.tokens[i])
        return SourceFile(self.tables[d], self.roots[d], f"{self.folders[d]}/{self.names[i]}",
                          info, self.days[i])  # fmt: skip


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


def _kind(folder: str, name: str) -> tuple[str, str | None] | None:
    """``(table, day)`` of a file named ``name`` in a folder named ``folder``, or None
    when it is not a log."""
    if not name.endswith(".jsonl"):
        return None
    if folder == LOG_DIR:
        day = _log_day(name)
        return None if day is None else (MEMORY_TABLE, day)
    if folder == "log" and name != ".jsonl":
        return EVENTS_TABLE, None
    return None


def classify(info: FileInfo) -> SourceFile | None:
    """The :class:`SourceFile` of a listed file, or None when it is not a log."""
    listing = Listing()
    return listing.source_file(0) if _add_listed(listing, {}, info, _TABLES, None) else None


def _add_listed(
    listing: Listing,
    rows: dict[tuple[str, str], int],
    info: FileInfo,
    tables: frozenset[str],
    tenants: Callable[[str], bool] | None,
) -> bool:
    """Add the listing entry ``info`` to ``listing`` when it is a log of one of
    ``tables`` (and of a tenant ``tenants`` accepts); ``rows``: the rows of the folders
    added so far, by root and folder name."""
    # String splits instead of one anchored regex over the whole path: this runs once
    # per listed file, and a fleet lists tens of thousands of them on every run.
    folder_path, _, name = info.path.rpartition("/")
    root, _, folder = folder_path.rpartition("/")
    kind = _kind(folder, name)
    if kind is None or kind[0] not in tables:
        return False
    if tenants is not None and not tenants(tenant_of(root)):
        return False
    row = rows.get((root, folder))
    if row is None:
        row = rows[root, folder] = listing.add_folder(kind[0], root, folder)
    listing.add(row, name, info.path, (info.size, info.token, info.mtime), kind[1])
    return True


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
) -> Listing:
    """Every log file under ``src`` belonging to one of ``tables`` (and, when given, to
    a tenant ``tenants`` accepts).

    One recursive listing of the source; with ``by_folder`` (cheap listings, e.g. a
    local folder) and ``tenants``, one listing per accepted top-level folder instead.
    A local folder is walked directly (:class:`_LocalWalk`): the files, and the listing
    entries, that its :meth:`~fsmemory.fs.StorageRoot.list` gives.
    """
    if type(src) is LocalRoot and by_folder:
        walk = _LocalWalk(tables, tenants)
        walk.top(src.root)
        return walk.listing
    if tenants is not None and by_folder:
        infos: list[FileInfo] = []
        for name in src.list_dirs(""):
            tenant = "" if name in _OWN_DIRS else name
            if tenants(tenant):
                infos += src.list(name, recursive=True)
    else:
        infos = src.list("", recursive=True)
    listing = Listing()
    rows: dict[tuple[str, str], int] = {}
    for info in infos:
        _add_listed(listing, rows, info, tables, tenants)
    return listing


# -- a local folder ---------------------------------------------------------------------
# A fleet's no-op re-run is mostly this listing (20,000 logs in 4,000 folders): one
# scandir per folder, folders passed down as OS paths (no check of each relative path:
# a log's path is checked by the root when it is read), and a stat only for the files
# that are logs by their folder and name.
class _LocalWalk:
    """One walk of a local source: its filters and the logs found."""

    __slots__ = ("listing", "tables", "tenants")

    def __init__(self, tables: frozenset[str], tenants: Callable[[str], bool] | None) -> None:
        self.tables = tables
        self.tenants = tenants
        self.listing = Listing()

    def top(self, base: str) -> None:
        """Walk the source folder ``base`` (as ``discover`` with ``by_folder``: a top-level
        folder of a tenant ``tenants`` refuses is not entered)."""
        for entry in _entries(base):
            name = entry.name
            if not entry.is_dir(follow_symlinks=False):
                continue  # a file at the top is in no root's logs folder
            if self.tenants is None or self.tenants("" if name in _OWN_DIRS else name):
                self.folder(entry.path, name, name)

    def folder(self, path: str, rel: str, name: str) -> None:
        """The folder ``rel`` (relative to the source; its OS path ``path``), named
        ``name``, and the folders under it."""
        root = rel.rpartition("/")[0]
        table = EVENTS_TABLE if name == "log" else MEMORY_TABLE if name == LOG_DIR else None
        if table is not None and (
            table not in self.tables
            or (self.tenants is not None and not self.tenants(tenant_of(root)))
        ):
            table = None
        listing = self.listing
        row = -1
        for entry in _entries(path):
            child = entry.name
            if entry.is_dir(follow_symlinks=False):
                self.folder(entry.path, f"{rel}/{child}", child)
                continue
            kind = None if table is None else _kind(name, child)
            if kind is None or not entry.is_file(follow_symlinks=False):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # deleted since the folder was read
            if row < 0:
                row = listing.add_folder(kind[0], root, name)
            info = (st.st_size, local_token(st), st.st_mtime)
            listing.add(row, child, f"{rel}/{child}", info, kind[1])


def _entries(path: str) -> list[os.DirEntry[str]]:
    """The entries of the OS folder ``path`` except fsmemory's own (none when it is
    gone or is not a folder)."""
    try:
        with os.scandir(path) as it:
            return [entry for entry in it if not is_reserved_name(entry.name)]
    except (FileNotFoundError, NotADirectoryError):
        return []
