"""What the three parts of an export run share: its options, counters and context.

A run (``_export.py``) repeats *attempts*; each attempt plans (``_plan.py``), streams
(``_stream.py``) and commits (``_commit.py``) through one :class:`Context`, which holds
the roots, the options, this attempt's counters, run id and lease, and the thread pool.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from fsmemory.errors import InvalidInputError
from fsmemory.export._leases import Lease
from fsmemory.export._report import CorruptLine, ExportProgress
from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.fs import StorageRoot

__all__ = [
    "BATCH_FILES",
    "CHECK_BYTES",
    "COMPACT_BELOW",
    "SMALL_FILE",
    "TABLES",
    "Context",
    "Counters",
    "Lost",
    "NeedsFullExport",
    "Options",
    "legacy_source_id",
    "source_id",
]

#: Bytes digested at the start and before the end of the exported prefix of each file.
CHECK_BYTES = 4096
TABLES = (MEMORY_TABLE, EVENTS_TABLE)
#: A memory log whose unread part is at most this big is read in one request and parsed
#: together with the other small logs of its day.
SMALL_FILE = 1 << 20
#: Small logs parsed as one block, at most.
BATCH_FILES = 8192
#: ``compact``: Parquet files smaller than this are merged with their partition's others.
COMPACT_BELOW = 16 << 20

_T = TypeVar("_T")
_R = TypeVar("_R")


#: URL schemes under which fsspec registers one filesystem twice: the first spelling
#: (the filesystem's own first protocol) is the one manifests record.
_SCHEME_ALIASES = {"s3a": "s3", "gcs": "gs"}


def source_id(root: StorageRoot) -> str:
    """The normalized URL identifying ``root`` as an export source: a local folder
    resolves to its real absolute path, whatever the working directory or spelling;
    another root is its URL's scheme and its root path (``s3://bucket/prefix``).

    Only the root's public identity is asked (``storage_key()``, ``url``, ``root``):
    the root's filesystem is not built, so neither fsspec nor a backend library is
    imported for it."""
    kind, *_ = root.storage_key()
    if kind == "local":
        return "file://" + os.path.realpath(root.root).rstrip(os.sep)
    outer = root.url.split("::", 1)[0]
    if "://" not in outer:  # a root made without a URL: its filesystem's protocol
        return legacy_source_id(root)
    scheme = outer.split("://", 1)[0].lower()
    return f"{_SCHEME_ALIASES.get(scheme, scheme)}://{root.root.strip('/')}"


def legacy_source_id(root: StorageRoot) -> str:
    """``root``'s identity as earlier versions recorded it for a non-local root: its
    filesystem's first protocol, not its URL's scheme (builds the filesystem). A
    manifest recorded so is still continued."""
    protocol = root.fs.protocol
    name = protocol if isinstance(protocol, str) else protocol[0]
    return f"{name}://{root.root.strip('/')}"


class NeedsFullExport(InvalidInputError):
    """The destination cannot be continued incrementally (another source, another
    schema version, an unreadable manifest); a full export rebuilds it.

    Attributes:
        problem: what is wrong, without advice (the command line adds its own).
    """

    def __init__(self, problem: str) -> None:
        super().__init__(f"{problem}; rebuild it with incremental=False")
        self.problem = problem


class Lost(Exception):
    """This attempt's work cannot be committed; start over."""


@dataclass(frozen=True, slots=True)
class Options:
    """The checked arguments of one :func:`~fsmemory.export.export_parquet` call."""

    since: str | None
    until: str | None
    full: bool
    tables: frozenset[str]
    progress: Callable[[ExportProgress], None] | None
    block_size: int
    max_rows: int
    compression: str
    lease_seconds: float
    shard: tuple[int, int] | None
    compact: bool
    concurrency: int

    def in_window(self, day: str | None) -> bool:
        """Whether a log of ``day`` (None: no day) is inside ``since``/``until``."""
        if day is None:
            return True
        return (self.since is None or day >= self.since) and (
            self.until is None or day <= self.until
        )


@dataclass(slots=True)
class Counters:
    """What one attempt did so far (the report's numbers)."""

    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    rewritten_rows: int = 0
    files_seen: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    files_reexported: int = 0
    files_vanished: int = 0
    lines_read: int = 0
    bytes_read: int = 0
    corrupt: int = 0
    samples: list[CorruptLine] = field(default_factory=list)
    pending: int = 0
    out_of_window: int = 0
    parts_written: int = 0
    bytes_written: int = 0
    parts_removed: int = 0
    parts_compacted: int = 0
    conflicts: int = 0
    manifest_read: int = 0
    manifest_written: int = 0
    segments_read: int = 0
    segments_written: int = 0
    in_flight: int = 0
    max_in_flight: int = 0

    def report_counts(self) -> dict[str, int]:
        """The numbers of an :class:`~fsmemory.export.ExportReport` these counters
        fill, by the report's field names."""
        counts = {field: getattr(self, counter) for field, counter in _REPORT_COUNTS.items()}
        counts["rows"] = sum(self.rows.values())
        counts["memory_rows"] = self.rows[MEMORY_TABLE]
        counts["event_rows"] = self.rows[EVENTS_TABLE]
        return counts


#: Report field -> the counter it shows (the numbers copied as they are).
_REPORT_COUNTS: dict[str, str] = {
    "rewritten_rows": "rewritten_rows",
    "files_seen": "files_seen",
    "files_read": "files_read",
    "files_unchanged": "files_unchanged",
    "files_reexported": "files_reexported",
    "files_vanished": "files_vanished",
    "lines_read": "lines_read",
    "bytes_read": "bytes_read",
    "corrupt_lines": "corrupt",
    "pending_lines": "pending",
    "out_of_window": "out_of_window",
    "parts_written": "parts_written",
    "bytes_written": "bytes_written",
    "parts_removed": "parts_removed",
    "parts_compacted": "parts_compacted",
    "conflicts": "conflicts",
    "manifest_bytes_read": "manifest_read",
    "manifest_bytes_written": "manifest_written",
    "segments_read": "segments_read",
    "segments_written": "segments_written",
    "max_reads_in_flight": "max_in_flight",
}


def _today() -> str:
    return datetime.now(tz=UTC).date().isoformat()


@dataclass(eq=False, repr=False)
class Context:
    """One run's roots, options and pool, with the current attempt's counters, run id
    and lease (:meth:`new_attempt`)."""

    src: StorageRoot
    dst: StorageRoot
    #: the source's identity (:func:`~fsmemory.export._export.source_id`)
    source: str
    opts: Options
    pool: ThreadPoolExecutor | None = None
    # In-process I/O (local folders, memory://) gains nothing from threads.
    parallel: bool = field(init=False)
    started: float = field(init=False, default_factory=time.monotonic)
    today: str = field(init=False, default_factory=_today)
    counters: Counters = field(init=False, default_factory=Counters)
    run_id: str = field(init=False, default="")
    lease: Lease = field(init=False)  # set by new_attempt

    def __post_init__(self) -> None:
        self.parallel = self.opts.concurrency > 1 and not self.src.capabilities.local_io

    def new_attempt(self, run_id: str) -> None:
        """Start an attempt: a new run id and lease, counters from zero (conflicts
        add up over the attempts)."""
        self.run_id = run_id
        self.lease = Lease(self.dst, run_id, self.opts.shard, self.opts.lease_seconds)
        self.counters = Counters(conflicts=self.counters.conflicts)

    def map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``fn`` over ``items`` with up to ``concurrency`` calls at once, in order."""
        if self.pool is None or not self.parallel or len(items) < 2:
            return [fn(item) for item in items]
        return list(self.pool.map(fn, items))

    def renew(self) -> None:
        """Renew the lease when it is due (:class:`Lost` when it lapsed meanwhile)."""
        if self.lease.due():
            self.check_lease()
            self.lease.hold()

    def check_lease(self) -> None:
        """Raise :class:`Lost` when the lease looks expired: a concurrent run may delete
        this run's files then."""
        if self.lease.lapsing():
            raise Lost
