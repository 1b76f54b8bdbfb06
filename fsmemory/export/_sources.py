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
import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.fs import RESERVED_PREFIX, FileInfo, StorageRoot
from fsmemory.memory.layout import DAILY_LOG_DIR as LOG_DIR
from fsmemory.memory.layout import log_date

__all__ = ["Listing", "SourceFile", "classify", "discover", "tenant_of"]

#: Top-level folders of a source that is itself a root (its logs, not a tenant).
_OWN_DIRS = frozenset({LOG_DIR, "log"})
_TABLES = frozenset({MEMORY_TABLE, EVENTS_TABLE})
_SIZE = operator.attrgetter("st_size")
_MTIME = operator.attrgetter("st_mtime")


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
    """The log files found under a source: one column per field, one row per file, the
    files of one folder in consecutive rows (in no particular order).

    No object per file: a :class:`SourceFile` is made on demand (:meth:`source_file`)
    for the files planning looks at one by one. A fleet's no-op re-run lists 20,000
    logs and looks at none; 20,000 objects would also set off garbage collections.

    Attributes:
        roots: per folder, the root it belongs to (relative to the source).
        folders: per folder, its name (``logs`` or ``log``).
        tables: per folder, the table its files' rows go to.
        starts: per folder, its first file's row (its files end where the next
            folder's start).
        dirs: per file, its folder's row.
        names: per file, its name.
        keys: per file, its path relative to the source (its manifest key).
        sizes, tokens, mtimes: per file, its listing entry's.
        days: per file, the day of a memory log (None for an event log).
    """

    __slots__ = ("days", "dirs", "folders", "keys", "mtimes", "names", "roots", "sizes",
                 "starts", "tables", "tokens")  # fmt: skip

    def __init__(self) -> None:
        self.roots: list[str] = []
        self.folders: list[str] = []
        self.tables: list[str] = []
        self.starts: list[int] = []
        self.dirs: list[int] = []
        self.names: list[str] = []
        self.keys: list[str] = []
        self.sizes: list[int] = []
        self.tokens: list[str] = []
        self.mtimes: list[float | None] = []
        self.days: list[str | None] = []

    def __len__(self) -> int:
        return len(self.keys)

    def add_folder(
        self,
        table: str,
        root: str,
        folder: str,
        names: list[str],
        entries: tuple[list[int], list[str], list[float | None]],
        days: list[str | None],
    ) -> None:
        """Add a folder of logs: their names, listing entries (sizes, tokens, mtimes)
        and days."""
        row = len(self.roots)
        self.roots.append(root)
        self.folders.append(folder)
        self.tables.append(table)
        self.starts.append(len(self.keys))
        self.dirs += [row] * len(names)
        self.names += names
        prefix = f"{root}/{folder}/" if root else f"{folder}/"
        self.keys += map(prefix.__add__, names)
        self.sizes += entries[0]
        self.tokens += entries[1]
        self.mtimes += entries[2]
        self.days += days

    def files_of(self, row: int) -> range:
        """The rows of the files of the folder ``row``."""
        end = self.starts[row + 1] if row + 1 < len(self.starts) else len(self.keys)
        return range(self.starts[row], end)

    def source_file(self, i: int) -> SourceFile:
        """The :class:`SourceFile` of file ``i``."""
        d = self.dirs[i]
        info = FileInfo(self.keys[i], self.sizes[i], self.mtimes[i], self.tokens[i])
        return SourceFile(self.tables[d], self.roots[d], f"{self.folders[d]}/{self.names[i]}",
                          info, self.days[i])  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _kind(folder: str, name: str) -> tuple[str, str | None] | None:
    """``(table, day)`` of a file named ``name`` in a folder named ``folder``, or None
    when it is not a log. A fleet repeats the same few names in every tenant."""
    if not name.endswith(".jsonl"):
        return None
    if folder == LOG_DIR:
        day = log_date(f"{LOG_DIR}/{name}")
        if day is None:
            return None
        try:
            date.fromisoformat(day)
        except ValueError:
            return None  # not a real day
        return MEMORY_TABLE, day
    if folder == "log" and name != ".jsonl":
        return EVENTS_TABLE, None
    return None


def classify(info: FileInfo) -> SourceFile | None:
    """The :class:`SourceFile` of a listed file, or None when it is not a log."""
    listing = _listing([info], _TABLES, None)
    return listing.source_file(0) if len(listing) else None


def _listing(
    infos: list[FileInfo], tables: frozenset[str], tenants: Callable[[str], bool] | None
) -> Listing:
    """The logs among the listing entries ``infos`` of ``tables`` (and of a tenant
    ``tenants`` accepts)."""
    found: dict[tuple[str, str, str], list[tuple[str, FileInfo, str | None]]] = {}
    for info in infos:
        # String splits instead of one anchored regex over the whole path: this runs
        # once per listed file, and a fleet lists tens of thousands of them.
        folder_path, _, name = info.path.rpartition("/")
        root, _, folder = folder_path.rpartition("/")
        kind = _kind(folder, name)
        if kind is None or kind[0] not in tables:
            continue
        if tenants is not None and not tenants(tenant_of(root)):
            continue
        found.setdefault((kind[0], root, folder), []).append((name, info, kind[1]))
    listing = Listing()
    for (table, root, folder), files in found.items():
        entries = ([i.size for _, i, _ in files], [i.token for _, i, _ in files],
                   [i.mtime for _, i, _ in files])  # fmt: skip
        listing.add_folder(table, root, folder, [n for n, _, _ in files], entries,
                           [day for _, _, day in files])  # fmt: skip
    return listing


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
    if by_folder and src.storage_key()[0] == "local":
        # Imported here: a root of another kind never loads the local one's module.
        from fsmemory.fs.local import LocalRoot
        from fsmemory.fs.local import stat_token as local_token

        if type(src) is LocalRoot:
            walk = _LocalWalk(tables, tenants, local_token)
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
    return _listing(infos, tables, tenants)


# -- a local folder ---------------------------------------------------------------------
# A fleet's no-op re-run is mostly this listing (20,000 logs in 4,000 folders): one
# scandir per folder, folders passed down as OS paths (no check of each relative path:
# a log's path is checked by the root when it is read), and a stat only for the files
# that are logs by their folder and name.
class _LocalWalk:
    """One walk of a local source: its filters and the logs found."""

    __slots__ = ("kinds", "listing", "tables", "tenants", "token")

    def __init__(
        self,
        tables: frozenset[str],
        tenants: Callable[[str], bool] | None,
        token: Callable[[os.stat_result], str],
    ) -> None:
        self.tables = tables
        self.tenants = tenants
        #: the change token of a local file's stat (the one its root's listing gives)
        self.token = token
        self.listing = Listing()
        #: per folder name, the kinds of the logs seen so far by name
        self.kinds: dict[str, dict[str, tuple[str, str | None]]] = {}

    def top(self, base: str) -> None:
        """Walk the source folder ``base`` (as ``discover`` with ``by_folder``: a top-level
        folder of a tenant ``tenants`` refuses is not entered)."""
        try:
            with os.scandir(base) as it:
                tops = [entry for entry in it if entry.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            return  # gone: nothing listed, as the root's own listing
        for entry in tops:
            name = entry.name
            if name.startswith(RESERVED_PREFIX):
                continue  # fsmemory's own (as :func:`~fsmemory.fs.is_reserved_name`)
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
        # The logs' kinds by name, for this walk (a dict lookup, not a cached call).
        known = None if table is None else self.kinds.setdefault(name, {})
        names: list[str] = []
        stats: list[os.stat_result] = []
        days: list[str | None] = []
        try:
            it = os.scandir(path)
        except (FileNotFoundError, NotADirectoryError):
            return  # gone since its parent was read
        with it:
            for entry in it:
                child = entry.name
                if child.startswith(RESERVED_PREFIX):
                    continue  # fsmemory's own (as :func:`~fsmemory.fs.is_reserved_name`)
                if entry.is_dir(follow_symlinks=False):
                    self.folder(entry.path, f"{rel}/{child}", child)
                    continue
                if known is None:
                    continue  # not a logs folder
                kind = known.get(child)
                if kind is None:
                    kind = _kind(name, child)
                    if kind is None:
                        continue
                    known[child] = kind
                if not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    stats.append(entry.stat(follow_symlinks=False))
                except FileNotFoundError:
                    continue  # deleted since the folder was read
                names.append(child)
                days.append(kind[1])
        if table is not None and names:
            mtimes: list[float | None] = list(map(_MTIME, stats))
            entries = (list(map(_SIZE, stats)), list(map(self.token, stats)), mtimes)
            self.listing.add_folder(table, root, name, names, entries, days)
