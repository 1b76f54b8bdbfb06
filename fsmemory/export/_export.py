"""The export run: plan, stream, write, commit with compare-and-swap, clean up.

One run (an *attempt*, repeated when it loses a race) goes:

1. read the manifest head (and its version token); delete replaced files listed as
   ``trash`` and files of runs that died before committing (their lease expired);
2. list the source once and group its log files into segments (tenant bucket x day); a
   segment whose listing fingerprint matches the head's is skipped unread; the others'
   segment files are read (concurrently) and planned file by file: unchanged files are
   skipped, grown files continue at their watermark (after checking the digests of the
   exported prefix), rewritten files start over and the Parquet files holding their old
   rows are rewritten without them;
3. when there is anything to write: write this run's lease, read the sources (bounded
   concurrency; many small logs of one day are parsed as one block), write new, uniquely
   named Parquet files (encoding on a second thread), optionally merge small files of
   a partition (``compact``), write the changed segment files;
4. replace the head by compare-and-swap; on conflict, merge onto the winner's head when
   it touched none of our segments, else delete our files and retry;
5. delete the files this commit replaced.

The guarantees this gives are spelled out in the package docstring and README.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, TypeVar

from fsmemory import _jsonutil
from fsmemory.errors import ConflictError, InvalidInputError, KeyNotFoundError
from fsmemory.export._leases import Lease, new_run_id, sweep
from fsmemory.export._manifest import (
    BUCKETS,
    EVENTS_SEGMENT,
    MANIFEST_PATH,
    SEGMENTS_DIR,
    FileState,
    Manifest,
    ManifestError,
    PartInfo,
    SegmentRef,
    bucket_of,
    decode_segment,
    digest,
    encode_segment,
    fingerprint,
    segment_path,
)
from fsmemory.export._parse import EventParser, MemoryParser, Parsed
from fsmemory.export._report import (
    MAX_CORRUPT_SAMPLES,
    CorruptLine,
    ExportProgress,
    ExportReport,
)
from fsmemory.export._schema import (
    EVENTS_TABLE,
    MEMORY_TABLE,
    SCHEMA_VERSION,
    require_pyarrow,
    schema_for,
    system_memory_pool,
)
from fsmemory.export._sources import SourceFile, discover, tenant_of
from fsmemory.export._writer import PartSink, WriterThread
from fsmemory.fs import FileInfo, StorageRoot, open_root
from fsmemory.memory.layout import log_date

__all__ = ["NeedsFullExport", "export_parquet", "source_id"]

logger = logging.getLogger(__name__)

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

DateLike = date | datetime | str
_T = TypeVar("_T")
_R = TypeVar("_R")


class NeedsFullExport(InvalidInputError):
    """The destination cannot be continued incrementally (another source, another
    schema version, an unreadable manifest); a full export rebuilds it.

    Attributes:
        problem: what is wrong, without advice (the command line adds its own).
    """

    def __init__(self, problem: str) -> None:
        super().__init__(f"{problem}; rebuild it with incremental=False")
        self.problem = problem


def export_parquet(
    source: str | StorageRoot,
    dest: str | StorageRoot,
    *,
    since: DateLike | None = None,
    until: DateLike | None = None,
    incremental: bool = True,
    storage_options: Mapping[str, Any] | None = None,
    dest_storage_options: Mapping[str, Any] | None = None,
    tables: tuple[str, ...] = TABLES,
    progress: Callable[[ExportProgress], None] | None = None,
    block_size: int = 8 << 20,
    max_rows_per_file: int = 1_000_000,
    compression: str = "snappy",
    lease_seconds: float = 600.0,
    max_attempts: int = 5,
    shard: tuple[int, int] | None = None,
    compact: bool = False,
    concurrency: int = 16,
) -> ExportReport:
    """Export memory logs (and agent event logs) to a hive-partitioned Parquet dataset.

    Writes ``<dest>/memory/date=YYYY-MM-DD/part-*.parquet`` (memory logs) and
    ``<dest>/events/date=YYYY-MM-DD/part-*.parquet`` (path-store event logs), plus the
    manifest ``<dest>/_fsmemory_manifest.json`` (and its segment files). DuckDB reads
    them with ``read_parquet('<dest>/memory/*/*.parquet', hive_partitioning=true)``;
    pyarrow with ``pyarrow.dataset.dataset('<dest>/memory', partitioning='hive')``.

    Args:
        source: a memory root URL, or a prefix holding many roots (each root's path
            relative to ``source`` fills the ``root`` column). A path-store root's
            ``log/*.jsonl`` files feed the ``events`` table. The same folder given as a
            relative or an absolute path is the same source.
        dest: any fsspec URL (or an open root), not inside ``source``.
        since: export only days on or after this (``YYYY-MM-DD``, a date or a datetime).
        until: export only days on or before this.
        incremental: export only what earlier runs did not; False rebuilds the dataset
            from scratch (``--full``).
        storage_options: fsspec options for ``source`` (and ``dest`` unless
            ``dest_storage_options`` is given).
        dest_storage_options: fsspec options for ``dest``.
        tables: which tables to export (``"memory"``, ``"events"``).
        progress: called after every block with an :class:`ExportProgress`.
        block_size: bytes read from a log per request (and parsed at once).
        max_rows_per_file: rows per Parquet file at most.
        compression: the Parquet codec: ``"snappy"`` (fast, pyarrow's default),
            ``"zstd"`` (about 30% smaller files, slower to write), ``"none"``, ...
        lease_seconds: how long a silent run is presumed alive before a concurrent run
            may delete its uncommitted files.
        max_attempts: runs started over after losing a conflicting commit, at most.
        shard: ``(i, n)``: export only the tenants of shard ``i`` of ``n`` (a stable
            hash of the tenant root), so ``n`` processes or machines can export disjoint
            shards into the same destination at once. Incremental only.
        compact: also merge each partition's small Parquet files (under 16 MiB) into as
            few files as the row and size limits allow. Not with ``shard``.
        concurrency: source reads (and manifest segment reads/writes) in flight at once.

    Returns:
        An :class:`ExportReport`.

    Raises:
        MissingDependencyError: pyarrow is not installed.
        KeyNotFoundError: ``source`` is a local folder that does not exist (or a file).
        NeedsFullExport: ``dest`` holds an export of another source or another schema
            version, or an unreadable manifest.
        InvalidInputError: bad arguments, or ``dest`` is (inside) ``source``.
        ConflictError: still losing to concurrent exports after ``max_attempts``.
    """
    require_pyarrow()
    unknown = set(tables) - set(TABLES)
    if unknown or not tables:
        raise InvalidInputError(f"tables must be among {TABLES}, got {tables!r}")
    if block_size < 1024 or max_rows_per_file < 1 or max_attempts < 1 or concurrency < 1:
        raise InvalidInputError(
            "block_size, max_rows_per_file, max_attempts and concurrency are too small"
        )
    shard = _check_shard(shard)
    if shard is not None and not incremental:
        raise InvalidInputError(
            "a sharded export is incremental; rebuild a dataset with one unsharded full "
            "export, or export the shards into a new destination"
        )
    if shard is not None and compact:
        raise InvalidInputError("compact touches every tenant: run it without shard")
    first = _day(since, "since")
    last = _day(until, "until")
    if first is not None and last is not None and first > last:
        raise InvalidInputError(f"since ({first}) is after until ({last})")
    src = open_root(source, storage_options)
    dst = open_root(dest, dest_storage_options if dest_storage_options is not None
                    else storage_options)  # fmt: skip
    _check_roots(src, dst)
    run = _Run(
        src,
        dst,
        since=first,
        until=last,
        full=not incremental,
        tables=frozenset(tables),
        progress=progress,
        block_size=block_size,
        max_rows=max_rows_per_file,
        compression=compression,
        lease_seconds=lease_seconds,
        shard=shard,
        compact=compact,
        concurrency=concurrency,
    )
    return run.execute(max_attempts)


def _check_shard(shard: Any) -> tuple[int, int] | None:
    if shard is None:
        return None
    try:
        index, count = shard
    except (TypeError, ValueError):
        raise InvalidInputError(f"shard must be a pair (i, n), got {shard!r}") from None
    if (
        not isinstance(index, int)
        or not isinstance(count, int)
        or isinstance(index, bool)
        or isinstance(count, bool)
        or count < 1
        or not 0 <= index < count
    ):
        raise InvalidInputError(f"shard must be (i, n) with 0 <= i < n, got {shard!r}")
    return index, count


def _day(value: DateLike | None, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10]).isoformat()
        except ValueError:
            pass
    raise InvalidInputError(f"{name} must be a date like 2026-03-13, got {value!r}")


def _is_local(root: StorageRoot) -> bool:
    return root.storage_key()[0] == "local"


def _in_process(root: StorageRoot) -> bool:
    return root.capabilities.local_io


def source_id(root: StorageRoot) -> str:
    """The normalized URL identifying ``root`` as an export source: a local folder
    resolves to its real absolute path, whatever the working directory or spelling."""
    if _is_local(root):  # before ``root.fs``: a local folder never imports fsspec
        return "file://" + os.path.realpath(root.root).rstrip(os.sep)
    from fsmemory.fs.s3 import S3Root

    if isinstance(root, S3Root):  # not ``root.fs``: the built-in client imports no s3fs
        return f"s3://{root.root.strip('/')}"
    protocol = root.fs.protocol
    name = protocol if isinstance(protocol, str) else protocol[0]
    return f"{name}://{root.root.strip('/')}"


def _check_roots(src: StorageRoot, dst: StorageRoot) -> None:
    if _is_local(src) and not os.path.isdir(src.root):
        kind = "a file, not a folder" if os.path.exists(src.root) else "no such folder"
        raise KeyNotFoundError(f"export source {src.url}: {kind}")
    s, d = source_id(src), source_id(dst)
    if d == s or d.startswith(s.rstrip("/") + "/"):
        raise InvalidInputError(
            f"export destination {dst.url} is inside the source {src.url}: "
            "export to a folder outside it"
        )


def _order(sf: SourceFile) -> tuple[bool, str, str, str]:
    return (sf.table != MEMORY_TABLE, sf.day or "", sf.root, sf.path)


class _Lost(Exception):
    """This attempt's work cannot be committed; start over."""


@dataclass(slots=True)
class _Counters:
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


@dataclass(slots=True)
class _Work:
    """One source file to read from ``start``."""

    source: SourceFile
    state: FileState
    start: int
    open_line: bool = False
    tail: bytes = b""
    stopped: bool = False

    @property
    def remaining(self) -> int:
        return max(0, self.source.info.size - self.start)


@dataclass(slots=True)
class _Plan:
    works: list[_Work] = field(default_factory=list)
    reexport: dict[str, SourceFile] = field(default_factory=dict)
    refresh: dict[str, FileState] = field(default_factory=dict)
    #: per listed segment: (fingerprint, files)
    listed: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: segments whose fingerprint changed (planned file by file)
    visited: list[str] = field(default_factory=list)
    compact: set[str] = field(default_factory=set)


class _Run:
    def __init__(
        self,
        src: StorageRoot,
        dst: StorageRoot,
        *,
        since: str | None,
        until: str | None,
        full: bool,
        tables: frozenset[str],
        progress: Callable[[ExportProgress], None] | None,
        block_size: int,
        max_rows: int,
        compression: str,
        lease_seconds: float,
        shard: tuple[int, int] | None,
        compact: bool,
        concurrency: int,
    ) -> None:
        self.pa = require_pyarrow()
        self.src = src
        self.dst = dst
        self.source = source_id(src)
        self.since = since
        self.until = until
        self.full = full
        self.tables = tables
        self.progress = progress
        self.block_size = block_size
        self.max_rows = max_rows
        self.compression = compression
        self.lease_seconds = lease_seconds
        self.shard = shard
        self.compact = compact
        self.concurrency = concurrency
        # In-process I/O (local folders, memory://) gains nothing from threads.
        self.parallel = concurrency > 1 and not _in_process(src)
        self.started = time.monotonic()
        self.today = datetime.now(tz=UTC).date().isoformat()
        self.c = _Counters()
        self.run_id = ""
        self.lease: Lease  # created per attempt by execute
        self.pipe: WriterThread  # created per attempt by _export
        self.pool: ThreadPoolExecutor | None = None
        self._cleared: set[str] = set()
        self._flight = threading.Lock()
        self.buckets = BUCKETS
        self._buckets: dict[str, int] = {}
        self._prefixes: dict[str, str] = {}
        #: base states of the segments read so far
        self.loaded: dict[str, dict[str, FileState]] = {}
        #: segment of every source file this run knows of
        self.seg_of: dict[str, str] = {}
        self.memory_parser: MemoryParser | None = None

    # -- the attempt loop --------------------------------------------------------------
    def execute(self, max_attempts: int) -> ExportReport:
        with (
            system_memory_pool(self.pa),
            ThreadPoolExecutor(self.concurrency, thread_name_prefix="fsmemory-read") as pool,
        ):
            self.pool = pool
            for _ in range(max_attempts):
                self.run_id = new_run_id()
                self.lease = Lease(self.dst, self.run_id, self.shard, self.lease_seconds)
                self.c = _Counters(conflicts=self.c.conflicts)
                self.loaded, self.seg_of = {}, {}
                try:
                    generation = self._attempt()
                except _Lost:
                    self.c.conflicts += 1
                    continue
                return self._report(generation)
        raise ConflictError(
            f"export to {self.dst.url} kept conflicting with concurrent exports "
            f"({max_attempts} attempts)"
        )

    def _attempt(self) -> int:
        head, version = self._load()
        self._check_compatible(head)
        base = head or Manifest(source=self.source)
        if base.buckets != self.buckets:
            self.buckets, self._buckets, self._prefixes = base.buckets, {}, {}
        if base.legacy_files is not None:
            self._adopt_legacy(base)
        written: dict[str, PartInfo] = {}
        segment_files: list[str] = []
        try:
            self._cleanup(base)
            plan = self._plan(base)
            if head is not None and self._nothing_to_do(base, plan):
                self._ensure_table_dirs()
                return base.generation
            self.lease.hold()
            states, removed = self._export(base, plan, written)
            generation, replaced = self._commit(
                head, version, plan, states, written, removed, segment_files
            )
        except BaseException:
            self._abandon([*written, *segment_files])
            raise
        # The commit stands; what follows is tidying that the next run would redo.
        try:
            self.lease.finish("committed")
            for path in sorted(removed | replaced):
                if self.dst.delete(path) and not path.startswith(SEGMENTS_DIR):
                    self.c.parts_removed += 1
        except Exception as exc:
            logger.warning("export committed; tidying up failed (the next run retries): %s", exc)
        return generation

    def _nothing_to_do(self, base: Manifest, plan: _Plan) -> bool:
        if self.full or base.trash or plan.works or plan.reexport or plan.refresh:
            return False
        if plan.compact:
            return False
        for seg in plan.visited:
            ref = base.segments.get(seg)
            if ref is None or ref.fingerprint != plan.listed[seg][0]:
                return False
        return True

    def _abandon(self, written: Iterable[str]) -> None:
        for path in written:
            try:
                self.dst.delete(path)
            except Exception:
                logger.warning("could not delete %s after a failed export", path)
        if not self.lease.held:
            return
        try:
            self.lease.finish("aborted")
        except Exception:
            logger.warning("could not mark export run %s as aborted", self.run_id)

    def _map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``fn`` over ``items`` with up to ``concurrency`` calls at once, in order."""
        if self.pool is None or not self.parallel or len(items) < 2:
            return [fn(item) for item in items]
        return list(self.pool.map(fn, items))

    # -- manifest ----------------------------------------------------------------------
    def _load(self) -> tuple[Manifest | None, str | None]:
        try:
            current = self.dst.read(MANIFEST_PATH)
        except KeyNotFoundError:
            return None, None
        self.c.manifest_read += len(current.data)
        try:
            return Manifest.from_bytes(current.data), current.version
        except ManifestError as exc:
            if self.full:
                logger.warning("replacing an unreadable export manifest: %s", exc)
                return None, current.version
            raise NeedsFullExport(f"{self.dst.url}: {exc}") from exc

    def _check_compatible(self, manifest: Manifest | None) -> None:
        if manifest is None or self.full:
            return
        if manifest.source not in (self.source, self.src.url.rstrip("/")):
            raise NeedsFullExport(
                f"{self.dst.url} holds an export of {manifest.source!r}, not of "
                f"{self.source!r} (export to another destination)"
            )
        if manifest.schema_version != SCHEMA_VERSION:
            raise NeedsFullExport(
                f"{self.dst.url} uses export schema version {manifest.schema_version}, "
                f"this fsmemory writes version {SCHEMA_VERSION}"
            )
        if self.shard is not None and manifest.legacy_files is not None:
            raise InvalidInputError(
                f"{self.dst.url} has a manifest of an older fsmemory: run one export "
                "without shard first (it converts the manifest)"
            )

    def _bucket(self, root: str) -> int:
        """The bucket of a root: that of its tenant (:func:`tenant_of`)."""
        bucket = self._buckets.get(root)
        if bucket is None:
            bucket = self._buckets[root] = bucket_of(tenant_of(root), self.buckets)
        return bucket

    def _segment_name(self, table: str, root: str, day: str | None) -> str:
        prefix = self._prefixes.get(root)
        if prefix is None:
            width = len(str(self.buckets - 1))
            prefix = self._prefixes[root] = f"{self._bucket(root):0{width}d}/"
        return prefix + (day if table == MEMORY_TABLE and day else EVENTS_SEGMENT)

    def _mine(self, tenant: str) -> bool:
        """Whether ``tenant`` belongs to this run's shard."""
        if self.shard is None:
            return True
        index, count = self.shard
        return self._bucket(tenant) % count == index

    def _adopt_legacy(self, base: Manifest) -> None:
        """Group a layout-1 manifest's files into segments (all rewritten at commit)."""
        assert base.legacy_files is not None
        for key, state in base.legacy_files.items():
            day = log_date(state.path) if state.table == MEMORY_TABLE else None
            seg = self._segment_name(state.table, state.root, day)
            self.loaded.setdefault(seg, {})[key] = state
            self.seg_of[key] = seg
            for path in state.parts:
                info = base.parts.get(path)
                if info is not None and seg not in info.segments:
                    info.segments.append(seg)

    def _load_segments(self, base: Manifest, names: Iterable[str]) -> None:
        need = [s for s in dict.fromkeys(names) if s not in self.loaded]
        reads = []
        for seg in need:
            ref = base.segments.get(seg)
            if ref is None:
                self.loaded[seg] = {}
            else:
                reads.append((seg, segment_path(seg, ref.run)))

        def read(item: tuple[str, str]) -> bytes | None:
            try:
                return self.dst.read_bytes(item[1])
            except KeyNotFoundError:
                return None

        for (seg, path), data in zip(reads, self._map(read, reads), strict=True):
            if data is None:
                # Replaced by a concurrent commit (and deleted) since we read the head.
                logger.info("manifest segment %s changed meanwhile; starting over", path)
                raise _Lost
            self.c.manifest_read += len(data)
            self.c.segments_read += 1
            try:
                states = decode_segment(data)
            except ManifestError as exc:
                raise NeedsFullExport(f"{self.dst.url}: {path}: {exc}") from exc
            self.loaded[seg] = states
            for key in states:
                self.seg_of[key] = seg

    def _commit(
        self,
        head: Manifest | None,
        version: str | None,
        plan: _Plan,
        states: dict[str, FileState],
        written: dict[str, PartInfo],
        removed: set[str],
        segment_files: list[str],
    ) -> tuple[int, set[str]]:
        base = head or Manifest(source=self.source, buckets=self.buckets)
        refs, contents = self._segment_updates(base, plan, states)
        files = [(segment_path(seg, self.run_id), data) for seg, data in contents.items()]
        segment_files.extend(path for path, _ in files)

        def put(item: tuple[str, bytes]) -> None:
            self.dst.write(item[0], item[1], create_only=True)

        self._renew()
        self._map(put, files)
        self.c.segments_written += len(files)
        self.c.manifest_written += sum(len(data) for _, data in files)
        # Replaced segment files are deleted after the commit; after a crash, by the
        # orphan sweep once their run's lease is gone (they are not data).
        replaced = {
            segment_path(seg, base.segments[seg].run) for seg in contents if seg in base.segments
        }
        if self.full:
            replaced |= {segment_path(s, r.run) for s, r in base.segments.items()}
        current: Manifest | None = head
        for _ in range(50):
            new = self._merged(current, refs, written, removed)
            data = new.to_bytes()
            try:
                if version is None:
                    self.dst.write(MANIFEST_PATH, data, create_only=True)
                else:
                    self.dst.write(MANIFEST_PATH, data, if_version=version)
                self.c.manifest_written += len(data)
                return new.generation, replaced
            except ConflictError:
                self.c.conflicts += 1
            remote, version = self._load()
            if remote is not None and any(r.get("run") == self.run_id for r in remote.runs):
                # Our write landed although the service reported a conflict (a retried
                # conditional request answers 412 to its own first success).
                return remote.generation, replaced
            self._check_lease()
            if remote is None or not self._can_rebase(current, remote, refs, removed):
                raise _Lost
            current = remote
        raise _Lost

    def _segment_updates(
        self, base: Manifest, plan: _Plan, states: dict[str, FileState]
    ) -> tuple[dict[str, SegmentRef], dict[str, bytes]]:
        """The head entries this commit sets, and the segment files it writes."""
        by_segment: dict[str, dict[str, FileState]] = {}
        for key, state in states.items():
            by_segment.setdefault(self.seg_of[key], {})[key] = state
        if base.legacy_files is not None:
            for seg in self.loaded:
                by_segment.setdefault(seg, {})
        refs: dict[str, SegmentRef] = {}
        contents: dict[str, bytes] = {}
        for seg in sorted(set(by_segment) | set(plan.visited)):
            old = base.segments.get(seg)
            fp, count = plan.listed.get(seg, (old.fingerprint, old.files) if old else ("", 0))
            changes = by_segment.get(seg)
            if changes is None:
                if old is not None and old.fingerprint != fp:
                    refs[seg] = SegmentRef(old.run, fp, count, old.pending)
                continue
            merged = {} if self.full else dict(self.loaded.get(seg, {}))
            merged.update(changes)
            pending = sum(1 for s in merged.values() if s.offset < s.size)
            contents[seg] = encode_segment(merged)
            refs[seg] = SegmentRef(self.run_id, fp, count, pending)
        return refs, contents

    def _merged(
        self,
        base: Manifest | None,
        refs: dict[str, SegmentRef],
        written: dict[str, PartInfo],
        removed: set[str],
    ) -> Manifest:
        if base is None or self.full:
            old_parts = set(base.parts) if base is not None else set()
            new = Manifest(
                source=self.source,
                generation=(base.generation if base else 0) + 1,
                buckets=self.buckets,
            )
            new.segments = dict(refs)
            new.parts = dict(written)
            old_trash = set(base.trash) - self._cleared if base is not None else set()
            new.trash = sorted(old_parts | removed | old_trash)
            new.runs = list(base.runs) if base is not None else []
        else:
            new = Manifest(
                source=self.source,
                generation=base.generation + 1,
                buckets=self.buckets,
                segments=dict(base.segments),
                parts=dict(base.parts),
                runs=list(base.runs),
            )
            new.segments.update(refs)
            for path in removed:
                new.parts.pop(path, None)
            new.parts.update(written)
            # Keep trash a concurrent commit added (we rebased on it) and did not clear.
            new.trash = sorted(removed | (set(base.trash) - self._cleared))
        new.runs.append(
            {
                "run": self.run_id,
                "finished": datetime.now(tz=UTC).isoformat(),
                "full": self.full,
                "rows": sum(self.c.rows.values()),
                "parts": len(written),
                "since": self.since,
                "until": self.until,
                "shard": list(self.shard) if self.shard else None,
                "compact": self.compact,
            }
        )
        return new

    def _can_rebase(
        self,
        base: Manifest | None,
        remote: Manifest,
        refs: dict[str, SegmentRef],
        removed: set[str],
    ) -> bool:
        """True when a concurrent commit touched none of the segments this run sets."""
        if self.full or remote.legacy_files is not None:
            return False
        if remote.source != self.source or remote.schema_version != SCHEMA_VERSION:
            return False
        if remote.buckets != self.buckets:
            return False
        for seg in refs:
            before = base.segments.get(seg) if base is not None else None
            if before != remote.segments.get(seg):
                return False
        return all(path in remote.parts for path in removed)

    # -- leases and the sweep (_leases.py) ---------------------------------------------
    def _renew(self) -> None:
        if self.lease.due():
            self._check_lease()
            self.lease.hold()

    def _check_lease(self) -> None:
        # A concurrent run may delete our files once our lease looks expired.
        if self.lease.lapsing():
            raise _Lost

    def _cleanup(self, manifest: Manifest) -> None:
        """Delete replaced files still listed as trash, and files of runs (of this
        run's shard, when sharded) that died before committing."""
        self._cleared = set(manifest.trash)
        self.c.parts_removed += sweep(
            self.dst, manifest, run_id=self.run_id, shard=self.shard, map_fn=self._map
        )

    # -- planning ----------------------------------------------------------------------
    def _plan(self, base: Manifest) -> _Plan:
        plan = _Plan()
        groups: dict[str, list[SourceFile]] = {}
        mine = None if self.shard is None else self._mine
        for sf in discover(self.src, self.tables, mine, by_folder=_in_process(self.src)):
            self.c.files_seen += 1
            if sf.table == MEMORY_TABLE and not self._in_window(sf.day):
                continue
            groups.setdefault(self._segment_name(sf.table, sf.root, sf.day), []).append(sf)
        window = f"{self.since}|{self.until}"
        for seg, files in groups.items():
            salt = window if seg.endswith("/" + EVENTS_SEGMENT) else ""
            fp = fingerprint(((f.key, f.info.size, f.info.token) for f in files), salt)
            plan.listed[seg] = (fp, len(files))
            ref = base.segments.get(seg)
            if not self.full and ref is not None and ref.fingerprint == fp:
                self.c.files_unchanged += len(files)
                self.c.pending += ref.pending
                continue
            plan.visited.append(seg)
        if not self.full:
            self._load_segments(base, plan.visited)
        checks: list[tuple[SourceFile, FileState]] = []
        listing_order = [sf for seg in plan.visited for sf in groups[seg]]
        for seg in plan.visited:
            old = {} if self.full else self.loaded.get(seg, {})
            for sf in groups[seg]:
                self.seg_of[sf.key] = seg
                state = old.get(sf.key)
                if state is None:
                    plan.works.append(_Work(sf, FileState(sf.table, sf.root, sf.path), 0))
                elif sf.info.size == state.size and sf.info.token == state.token:
                    self.c.files_unchanged += 1
                    if state.offset < state.size:
                        self.c.pending += 1
                else:
                    checks.append((sf, state))
        for (sf, state), verified in zip(
            checks, self._map(lambda item: self._verify(*item), checks), strict=True
        ):
            if verified is None:
                plan.reexport[sf.key] = sf
                continue
            tail, open_line = verified
            if sf.info.size == state.offset:
                refreshed = state.copy()
                refreshed.size, refreshed.token = sf.info.size, sf.info.token
                plan.refresh[sf.key] = refreshed
                self.c.files_unchanged += 1
                continue
            plan.works.append(_Work(sf, state.copy(), state.offset, open_line, tail))
        if checks:
            # In listing order (day, root, path): the small logs of a day follow each
            # other. New files were added in that order, continued ones after them.
            rank = {sf.key: i for i, sf in enumerate(listing_order)}
            plan.works.sort(key=lambda w: rank[w.source.key])
        self.c.files_reexported = len(plan.reexport)
        if self.compact and not self.full:  # a full run rewrites every file anyway
            plan.compact = self._compaction_candidates(base)
        return plan

    def _compaction_candidates(self, base: Manifest) -> set[str]:
        groups: dict[tuple[str, str], list[str]] = {}
        for path, info in base.parts.items():
            if info.bytes < COMPACT_BELOW:
                groups.setdefault((info.table, info.date), []).append(path)
        return {path for paths in groups.values() if len(paths) > 1 for path in paths}

    def _in_window(self, day: str | None) -> bool:
        if day is None:
            return True
        return (self.since is None or day >= self.since) and (
            self.until is None or day <= self.until
        )

    def _verify(self, sf: SourceFile, state: FileState) -> tuple[bytes, bool] | None:
        """``(tail bytes, ends mid-line)`` when the exported prefix is unchanged; None
        when the file was rewritten (it is then exported again from the start)."""
        old = FileInfo(sf.key, state.size, None, state.token)
        if sf.info.size < state.offset or self.src.rewritten(old, sf.info):
            return None
        if state.offset == 0:
            return b"", False
        try:
            if state.offset <= 2 * CHECK_BYTES:
                prefix = self.src.read_range(sf.key, 0, state.offset)
                head, tail = prefix[: state.head_len], prefix[state.offset - state.tail_len :]
                if len(prefix) != state.offset:
                    return None
            else:
                head = self.src.read_range(sf.key, 0, state.head_len)
                tail = self.src.read_range(sf.key, state.offset - state.tail_len, state.offset)
        except KeyNotFoundError:
            return None
        if digest(head) != state.head or digest(tail) != state.tail:
            return None
        return tail, bool(tail) and not tail.endswith(b"\n")

    # -- exporting ---------------------------------------------------------------------
    def _export(
        self, base: Manifest, plan: _Plan, written: dict[str, PartInfo]
    ) -> tuple[dict[str, FileState], set[str]]:
        """Write this attempt's files; returns the new file states and the replaced
        parts."""
        states: dict[str, FileState] = dict(plan.refresh)
        for work in plan.works:
            states[work.source.key] = work.state
        seq = iter(range(1, 1 << 30))

        def on_part(path: str, info: PartInfo, keys: set[str]) -> None:
            info.segments = sorted({self.seg_of[key] for key in keys})
            written[path] = info
            self.c.parts_written += 1
            self.c.bytes_written += info.bytes
            for key in keys:
                states[key].parts.append(path)

        sinks = {
            table: PartSink(
                self.dst,
                table,
                schema_for(table),
                self.run_id,
                next_seq=lambda: next(seq),
                on_part=on_part,
                max_rows=self.max_rows,
                compression=self.compression,
            )
            for table in TABLES
        }
        self.pipe = WriterThread()
        try:
            removed = set(base.parts) if self.full else set()
            affected = set(plan.compact)
            for key in plan.reexport:
                affected.update(self._base_state(key).parts)
            if affected or plan.reexport:
                removed |= self._rewrite(base, plan, states, sinks, affected)
            self._export_works(plan.works, sinks)
            for sink in sinks.values():
                self.pipe.submit(sink.finish_all)
            self.pipe.close()
        except BaseException:
            self.pipe.cancel()
            for sink in sinks.values():
                sink.discard()
            raise
        self._ensure_table_dirs()
        return states, removed

    def _base_state(self, key: str) -> FileState:
        return self.loaded[self.seg_of[key]][key]

    def _export_works(self, works: list[_Work], sinks: dict[str, PartSink]) -> None:
        sizes = [w.remaining for w in works]
        total = sum(sizes)
        batches: list[list[_Work]] = []
        batch_bytes = 0
        limit = self.block_size // 2
        for work, size in zip(works, sizes, strict=True):
            last = batches[-1] if batches else None
            if (
                last is not None
                and size <= SMALL_FILE
                and work.source.table == MEMORY_TABLE
                and len(last) < BATCH_FILES
                and last[0].source.day == work.source.day
                and self._batchable(last[0])
                and batch_bytes + size <= limit
            ):
                last.append(work)
                batch_bytes += size
            else:
                batches.append([work])
                batch_bytes = size
        done = 0
        ahead: Callable[[], list[bytes | None]] | None = None
        read: dict[int, list[bytes | None]] = {}  # in-process reads done ahead, by batch
        for i, batch in enumerate(batches):
            if len(batch) == 1 and not self._batchable(batch[0]):
                ahead = None
                self._export_file(batch[0], sinks[batch[0].source.table])
            else:
                if not self.parallel:
                    if i not in read:
                        read = self._read_ahead(batches, i)
                    datas = read.pop(i)
                else:
                    fetched = ahead if ahead is not None else self._fetch(batch)
                    nxt = batches[i + 1] if i + 1 < len(batches) else None
                    batchable = nxt is not None and self._batchable(nxt[0])
                    ahead = self._fetch(nxt) if nxt is not None and batchable else None
                    datas = fetched()
                self._export_batch(batch, datas, sinks[MEMORY_TABLE])
                # Arrow's allocator keeps freed pages; thousands of small blocks would
                # otherwise grow the process by tens of MiB.
                self.pa.default_memory_pool().release_unused()
            done += len(batch)
            self._renew()
            if self.progress is not None:
                self.progress(
                    ExportProgress(
                        done, len(works), self.c.lines_read, self.c.bytes_read, total,
                        sum(self.c.rows.values()),
                    )
                )  # fmt: skip

    def _read_ahead(self, batches: list[list[_Work]], first: int) -> dict[int, list[bytes | None]]:
        """In-process sources: read batch ``first`` and the batches after it, up to
        ``block_size`` bytes in all (as much as a batch plus the one read ahead on other
        storage), with one ``read_ranges`` call, which checks each folder once per call:
        the logs of one tenant on consecutive days share their folder."""
        picked = [first]
        size = sum(w.remaining for w in batches[first])
        for j in range(first + 1, len(batches)):
            more = sum(w.remaining for w in batches[j])
            if not self._batchable(batches[j][0]) or size + more > self.block_size:
                break
            picked.append(j)
            size += more
        datas = self._fetch([w for j in picked for w in batches[j]])()
        out: dict[int, list[bytes | None]] = {}
        at = 0
        for j in picked:
            out[j] = datas[at : at + len(batches[j])]
            at += len(batches[j])
        return out

    @staticmethod
    def _batchable(work: _Work) -> bool:
        return work.source.table == MEMORY_TABLE and work.remaining <= SMALL_FILE

    def _fetch(self, batch: list[_Work]) -> Callable[[], list[bytes | None]]:
        """Start reading the unread part of each file of ``batch``, ``concurrency`` reads
        in flight; returns a function that waits for the contents (None: vanished)."""
        assert self.pool is not None

        def read(works: list[_Work]) -> list[bytes | None]:
            with self._flight:
                self.c.in_flight += 1
                self.c.max_in_flight = max(self.c.max_in_flight, self.c.in_flight)
            try:
                return self.src.read_ranges(
                    [(w.source.key, w.start, w.source.info.size) for w in works]
                )
            finally:
                with self._flight:
                    self.c.in_flight -= 1

        if not self.parallel or len(batch) == 1:
            try:
                done = read(batch)
            except BaseException as exc:
                error = exc

                def fail() -> list[bytes | None]:
                    raise error

                return fail
            return lambda: done
        # One file per task: this pool alone bounds the requests in flight (a root's own
        # batching, e.g. the built-in S3 client's smaller thread pool, would cap them
        # below ``concurrency`` and hop threads twice); a task costs little next to a
        # round trip.
        futures = [self.pool.submit(read, [work]) for work in batch]
        return lambda: [data for f in futures for data in f.result()]

    def _parser(self, root: str, source_file: str) -> MemoryParser:
        if self.memory_parser is None:
            self.memory_parser = MemoryParser(root, source_file)
        self.memory_parser.root, self.memory_parser.source_file = root, source_file
        return self.memory_parser

    def _export_batch(self, batch: list[_Work], datas: list[bytes | None], sink: PartSink) -> None:
        """Export small memory logs of one day, read whole: their complete lines are
        parsed as one block when the fast path takes it, else file by file."""
        day = batch[0].source.day
        assert day is not None
        self.pipe.submit(sink.finish_other_days, day)
        pieces: list[tuple[_Work, bytes, int, int]] = []  # work, data, start offset, cut
        for work, data in zip(batch, datas, strict=True):
            sf, state = work.source, work.state
            self.c.files_read += 1
            state.size, state.token = sf.info.size, sf.info.token
            if data is None:
                self.c.files_vanished += 1
                logger.info("%s vanished during the export", sf.key)
                continue
            offset = work.start
            if work.open_line and data[:1] == b"\n":
                data = data[1:]
                offset += 1
                work.tail = (work.tail + b"\n")[-CHECK_BYTES:]
            self.c.bytes_read += len(data)
            pieces.append((work, data, offset, data.rfind(b"\n") + 1))
        whole = [p for p in pieces if p[3]]
        table = None
        if len(whole) > 1:
            parser = self._parser(whole[0][0].source.root, whole[0][0].source.path)
            table = parser.parse_many(
                [
                    (w.source.root, w.source.path, d, cut, w.state.lines + 1)
                    for w, d, _, cut in whole
                ]
            )
        if table is not None:
            keys = []
            for work, data, offset, cut in whole:
                lines = data.count(b"\n", 0, cut)
                self.c.lines_read += lines
                self._consumed(work, data, offset, cut, lines)
                keys.append(work.source.key)
            self.c.rows[MEMORY_TABLE] += table.num_rows
            self.pipe.submit(sink.write, day, table, keys)
        for work, data, offset, cut in pieces:
            sf = work.source
            parser = self._parser(sf.root, sf.path)
            if cut and table is None:
                parsed = parser.parse(data, work.state.lines + 1, offset, cut)
                self._account(sf, parsed, parsed.lines)
                self._write_memory(sink, day, parsed, sf.key)
                self._consumed(work, data, offset, cut, parsed.lines)
            rest = data[cut:]
            if not rest.strip():
                continue
            # An unfinished last line: exported when it already is a whole JSON object
            # (a hand-written last line without newline), else left for a later run.
            if not _whole_object(rest):
                self.c.pending += 1
                continue
            parsed = parser.parse(rest + b"\n", work.state.lines + 1, offset + cut)
            self._account(sf, parsed, 1)
            self._write_memory(sink, day, parsed, sf.key)
            self._consumed(work, data, offset, len(data), 1)

    def _write_memory(self, sink: PartSink, day: str, parsed: Parsed, key: str) -> None:
        rows = parsed.batch.num_rows
        if rows:
            self.c.rows[MEMORY_TABLE] += rows
            self.pipe.submit(sink.write, day, parsed.batch, (key,))

    def _consumed(self, work: _Work, data: bytes, offset: int, upto: int, lines: int) -> None:
        """Record that ``work``'s file is exported up to ``data[:upto]``, ``lines`` more
        lines (``data`` starts at file offset ``offset``, after ``work.tail``)."""
        head = bytearray(data[: min(CHECK_BYTES, upto)]) if work.start == 0 else None
        tail = (work.tail + data[max(0, upto - CHECK_BYTES) : upto])[-CHECK_BYTES:]
        _advance(work.state, offset + upto, work.state.lines + lines, head, tail)

    def _rewrite(
        self,
        base: Manifest,
        plan: _Plan,
        states: dict[str, FileState],
        sinks: dict[str, PartSink],
        affected: set[str],
    ) -> set[str]:
        """Replace the ``affected`` parts by copies without the rows of re-exported
        files (compaction: with all their rows, merged); the re-exported files are then
        read again from the start."""
        pa = self.pa
        import pyarrow.parquet as pq

        from fsmemory.export import _compute as pc

        holder_segments = {s for p in affected if p in base.parts for s in base.parts[p].segments}
        self._load_segments(base, holder_segments)
        holders: dict[str, list[str]] = {}
        for seg in sorted(holder_segments | {self.seg_of[k] for k in plan.reexport}):
            for key, state in self.loaded.get(seg, {}).items():
                self.seg_of.setdefault(key, seg)
                for path in state.parts:
                    if path in affected:
                        holders.setdefault(path, []).append(key)
        for key, sf in plan.reexport.items():
            fresh = FileState(sf.table, sf.root, sf.path)
            plan.works.append(_Work(sf, fresh, 0))
            states[key] = fresh
        plan.works.sort(key=lambda w: _order(w.source))
        dropped = {(self._base_state(k).root, self._base_state(k).path) for k in plan.reexport}
        for path in sorted(affected):
            info = base.parts.get(path)
            keepers = [k for k in holders.get(path, []) if k not in plan.reexport]
            for key in keepers:
                kept_state = states.setdefault(key, self._base_state(key).copy())
                if path in kept_state.parts:
                    kept_state.parts.remove(path)
            if info is None or not keepers:
                continue
            try:
                data = self.dst.read_bytes(path)
            except KeyNotFoundError:
                logger.warning("%s is listed in the manifest but missing", path)
                continue
            if path in plan.compact:
                self.c.parts_compacted += 1
            parquet = pq.ParquetFile(pa.BufferReader(data))
            for batch in parquet.iter_batches(batch_size=64 * 1024):
                mask = None
                for root, source_file in dropped:
                    hit = pc.and_(
                        pc.equal(batch.column("root"), root),
                        pc.equal(batch.column("source_file"), source_file),
                    )
                    mask = hit if mask is None else pc.or_(mask, hit)
                kept = pc.filter(batch, pc.invert(mask)) if mask is not None else batch
                if kept.num_rows:
                    self.c.rewritten_rows += kept.num_rows
                    self.pipe.submit(sinks[info.table].write, info.date, kept, keepers)
        for sink in sinks.values():
            self.pipe.submit(sink.finish_all)
        return affected

    def _export_file(self, work: _Work, sink: PartSink) -> None:
        sf, state = work.source, work.state
        if sf.table == MEMORY_TABLE:
            assert sf.day is not None
            self.pipe.submit(sink.finish_other_days, sf.day)
            parser: MemoryParser | EventParser = self._parser(sf.root, sf.path)
        else:
            mtime = sf.info.mtime
            default = (
                datetime.fromtimestamp(mtime, tz=UTC).date().isoformat()
                if mtime is not None
                else self.today
            )
            parser = EventParser(
                sf.root,
                sf.path,
                carry_date=state.last_date,
                default_date=default,
                since=self.since,
                until=self.until,
            )
        self.c.files_read += 1
        try:
            for parsed in self._parsed_blocks(work, parser):
                if parsed.batch.num_rows:
                    if sf.table == MEMORY_TABLE:
                        assert sf.day is not None
                        self.pipe.submit(sink.write, sf.day, parsed.batch, (sf.key,))
                    else:
                        self._write_events(sink, parsed, sf.key)
                self.c.rows[sf.table] += parsed.batch.num_rows
                self._renew()
        except KeyNotFoundError:
            self.c.files_vanished += 1
            logger.info("%s vanished during the export", sf.key)
        if isinstance(parser, EventParser):
            state.last_date = parser.carry_date
        if work.stopped:
            # Stopped at `until`: the rest is unread, so never take the file as unchanged.
            state.size, state.token = state.offset, sf.info.token
        else:
            state.size, state.token = sf.info.size, sf.info.token

    def _write_events(self, sink: PartSink, parsed: Parsed, key: str) -> None:
        from fsmemory.export import _compute as pc

        days = parsed.dates
        unique = pc.unique(days).to_pylist()
        if len(unique) == 1:
            self.pipe.submit(sink.write, unique[0], parsed.batch, (key,))
            return
        for day in sorted(unique):
            self.pipe.submit(sink.write, day, pc.filter(parsed.batch, pc.equal(days, day)), (key,))

    def _parsed_blocks(self, work: _Work, parser: MemoryParser | EventParser) -> Iterator[Parsed]:
        """Read ``work``'s file from its start in blocks and parse them, advancing
        ``work.state`` (offset, lines, digests) as lines are consumed.

        Each read starts at the first unconsumed byte, so the partial line at the end of
        a block is read again with the next block rather than copied (no block is ever
        concatenated or sliced); a line longer than a block doubles the read size.
        """
        sf, state = work.source, work.state
        end = sf.info.size
        offset = work.start
        lines = state.lines
        tail = work.tail
        head = bytearray() if work.start == 0 else None
        size = self.block_size
        rest = b""
        # The last run exported an unfinished line that was a whole JSON object; the
        # newline a writer added after it belongs to that line.
        if work.open_line and self.src.read_range(sf.key, offset, offset + 1) == b"\n":
            offset += 1
            tail = (tail + b"\n")[-CHECK_BYTES:]
        while offset < end:
            chunk = self.src.read_range(sf.key, offset, min(offset + size, end))
            if not chunk:
                return  # the file shrank meanwhile: the next run notices
            self.c.bytes_read += len(chunk)
            if head is not None and offset == len(head) < CHECK_BYTES:
                head += chunk[: CHECK_BYTES - len(head)]
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                if offset + len(chunk) >= end:
                    rest = chunk
                    break
                size *= 2
                continue
            size = self.block_size
            parsed = parser.parse(chunk, lines + 1, offset, cut)
            stop = parsed.stop
            used_bytes = cut if stop is None else stop[0] - offset
            used = parsed.lines if stop is None else stop[1] - lines - 1
            self._account(sf, parsed, used)
            tail = (tail + chunk[max(0, used_bytes - CHECK_BYTES) : used_bytes])[-CHECK_BYTES:]
            offset += used_bytes
            lines += used
            del chunk
            _advance(state, offset, lines, head, tail)
            yield parsed
            if stop is not None:
                work.stopped = True
                return
        if not rest.strip():
            return
        if not _whole_object(rest):
            self.c.pending += 1
            return
        parsed = parser.parse(rest + b"\n", lines + 1, offset)
        if parsed.stop is not None:
            work.stopped = True
            return
        self._account(sf, parsed, 1)
        tail = (tail + rest[-CHECK_BYTES:])[-CHECK_BYTES:]
        _advance(state, offset + len(rest), lines + 1, head, tail)
        yield parsed

    def _account(self, sf: SourceFile, parsed: Parsed, used_lines: int) -> None:
        self.c.lines_read += used_lines
        self.c.out_of_window += parsed.out_of_window
        for number, reason in parsed.corrupt:
            self.c.corrupt += 1
            if len(self.c.samples) < MAX_CORRUPT_SAMPLES:
                self.c.samples.append(CorruptLine(sf.root, sf.path, number, reason))
            logger.warning("skipping corrupt line %s:%d (%s)", sf.key, number, reason)

    def _ensure_table_dirs(self) -> None:
        """``<table>/_common_metadata`` (the schema) for every exported table, rows or
        not: engines that look for it find it, and the table's folder always exists."""
        import pyarrow.parquet as pq

        for table in sorted(self.tables):
            path = f"{table}/_common_metadata"
            if self.dst.exists(path):
                continue
            sink = self.pa.BufferOutputStream()
            pq.write_metadata(schema_for(table), sink)
            with contextlib.suppress(ConflictError):
                self.dst.write(path, sink.getvalue().to_pybytes(), create_only=True)

    # -- report ------------------------------------------------------------------------
    def _report(self, generation: int) -> ExportReport:
        c = self.c
        return ExportReport(
            source=self.src.url,
            dest=self.dst.url,
            run_id=self.run_id,
            full=self.full,
            rows=sum(c.rows.values()),
            memory_rows=c.rows[MEMORY_TABLE],
            event_rows=c.rows[EVENTS_TABLE],
            rewritten_rows=c.rewritten_rows,
            files_seen=c.files_seen,
            files_read=c.files_read,
            files_unchanged=c.files_unchanged,
            files_reexported=c.files_reexported,
            files_vanished=c.files_vanished,
            lines_read=c.lines_read,
            bytes_read=c.bytes_read,
            corrupt_lines=c.corrupt,
            corrupt_samples=tuple(c.samples),
            pending_lines=c.pending,
            out_of_window=c.out_of_window,
            parts_written=c.parts_written,
            bytes_written=c.bytes_written,
            parts_removed=c.parts_removed,
            parts_compacted=c.parts_compacted,
            conflicts=c.conflicts,
            manifest_generation=generation,
            manifest_bytes_read=c.manifest_read,
            manifest_bytes_written=c.manifest_written,
            segments_read=c.segments_read,
            segments_written=c.segments_written,
            max_reads_in_flight=c.max_in_flight,
            shard=f"{self.shard[0]}/{self.shard[1]}" if self.shard else None,
            seconds=round(time.monotonic() - self.started, 3),
        )


def _whole_object(text: bytes) -> bool:
    try:
        return isinstance(_jsonutil.loads(text), dict)
    except _jsonutil.JSONDecodeError:
        return False


def _advance(
    state: FileState, offset: int, lines: int, head: bytearray | None, tail: bytes
) -> None:
    """Record that ``state``'s file is exported up to ``offset`` (``lines`` lines)."""
    state.offset = offset
    state.lines = lines
    state.tail_len = len(tail)
    state.tail = digest(tail)
    if head is not None:
        state.head_len = min(len(head), offset)
        # A file shorter than a check block: head and tail are the same bytes.
        same = state.head_len == offset == len(tail)
        state.head = state.tail if same else digest(bytes(head[: state.head_len]))
