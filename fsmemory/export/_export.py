"""The export run: plan, stream, write, commit with compare-and-swap, clean up.

One run (an *attempt*, repeated when it loses a race) goes:

1. read the manifest (and its version token); write this run's lease;
2. delete replaced files listed as ``trash`` and files of runs that died before
   committing (their lease expired);
3. list the source and plan: unchanged files are skipped, grown files continue at their
   watermark (after checking the digests of the exported prefix), rewritten files start
   over and the Parquet files holding their old rows are rewritten without them;
4. read, parse and write new, uniquely named Parquet files (encoding on a second thread);
5. replace the manifest by compare-and-swap; on conflict, merge onto the winner's
   manifest when it touched none of our source files, else delete our files and retry;
6. delete the files this commit replaced.

The guarantees this gives are spelled out in the package docstring and README.md.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from fsmemory import _jsonutil
from fsmemory.errors import ConflictError, InvalidInputError, KeyNotFoundError
from fsmemory.export._manifest import (
    MANIFEST_PATH,
    RUNS_DIR,
    FileState,
    Manifest,
    ManifestError,
    PartInfo,
    digest,
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
)
from fsmemory.export._sources import SourceFile, discover
from fsmemory.export._writer import PartSink, WriterThread, part_run
from fsmemory.fs import FileInfo, StorageRoot, open_root

__all__ = ["export_parquet"]

logger = logging.getLogger(__name__)

#: Bytes digested at the start and before the end of the exported prefix of each file.
CHECK_BYTES = 4096
#: How long finished runs' lease files are kept (they protect that run's files from a
#: concurrent run's orphan sweep that read an older manifest).
FINISHED_RETENTION = 24 * 3600.0
TABLES = (MEMORY_TABLE, EVENTS_TABLE)

DateLike = date | datetime | str


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
) -> ExportReport:
    """Export memory logs (and agent event logs) to a hive-partitioned Parquet dataset.

    Writes ``<dest>/memory/date=YYYY-MM-DD/part-*.parquet`` (memory logs) and
    ``<dest>/events/date=YYYY-MM-DD/part-*.parquet`` (path-store event logs), plus the
    manifest ``<dest>/_fsmemory_manifest.json``. DuckDB reads them with
    ``read_parquet('<dest>/memory/*/*.parquet', hive_partitioning=true)``; pyarrow with
    ``pyarrow.dataset.dataset('<dest>/memory', partitioning='hive')``.

    Args:
        source: a memory root URL, or a prefix holding many roots (each root's path
            relative to ``source`` fills the ``root`` column). A path-store root's
            ``log/*.jsonl`` files feed the ``events`` table.
        dest: any fsspec URL (or an open root).
        since: export only days on or after this (``YYYY-MM-DD``, a date or a datetime).
        until: export only days on or before this.
        incremental: export only what earlier runs did not; False rebuilds the dataset
            from scratch (``--full``).
        storage_options: fsspec options for ``source`` (and ``dest`` unless
            ``dest_storage_options`` is given).
        dest_storage_options: fsspec options for ``dest``.
        tables: which tables to export (``"memory"``, ``"events"``).
        progress: called after every block with an :class:`ExportProgress`.
        block_size: bytes read from a log per request.
        max_rows_per_file: rows per Parquet file at most.
        compression: the Parquet codec: ``"snappy"`` (fast, pyarrow's default),
            ``"zstd"`` (about 30% smaller files, slower to write), ``"none"``, ...
        lease_seconds: how long a silent run is presumed alive before a concurrent run
            may delete its uncommitted files.
        max_attempts: runs started over after losing a conflicting commit, at most.

    Returns:
        An :class:`ExportReport`.

    Raises:
        MissingDependencyError: pyarrow is not installed.
        InvalidInputError: bad arguments, or ``dest`` holds an export of another source
            or another schema version (rebuild it with ``incremental=False``).
        ConflictError: still losing to concurrent exports after ``max_attempts``.
    """
    require_pyarrow()
    unknown = set(tables) - set(TABLES)
    if unknown or not tables:
        raise InvalidInputError(f"tables must be among {TABLES}, got {tables!r}")
    if block_size < 1024 or max_rows_per_file < 1 or max_attempts < 1:
        raise InvalidInputError("block_size, max_rows_per_file and max_attempts are too small")
    first = _day(since, "since")
    last = _day(until, "until")
    if first is not None and last is not None and first > last:
        raise InvalidInputError(f"since ({first}) is after until ({last})")
    src = open_root(source, storage_options)
    dst = open_root(dest, dest_storage_options if dest_storage_options is not None
                    else storage_options)  # fmt: skip
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
    )
    return run.execute(max_attempts)


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


def _order(sf: SourceFile) -> tuple[bool, str, str, str]:
    return (sf.table != MEMORY_TABLE, sf.day or "", sf.root, sf.path)


def _source_id(root: StorageRoot) -> str:
    return root.url.rstrip("/")


def _new_run_id() -> str:
    return f"{datetime.now(tz=UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


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
    conflicts: int = 0


@dataclass(slots=True)
class _Work:
    """One source file to read from ``start``."""

    source: SourceFile
    state: FileState
    start: int
    open_line: bool = False
    tail: bytes = b""
    stopped: bool = False


@dataclass(slots=True)
class _Plan:
    works: list[_Work] = field(default_factory=list)
    reexport: dict[str, SourceFile] = field(default_factory=dict)
    refresh: dict[str, FileState] = field(default_factory=dict)


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
    ) -> None:
        self.pa = require_pyarrow()
        self.src = src
        self.dst = dst
        self.since = since
        self.until = until
        self.full = full
        self.tables = tables
        self.progress = progress
        self.block_size = block_size
        self.max_rows = max_rows
        self.compression = compression
        self.lease = lease_seconds
        self.started = time.monotonic()
        self.today = datetime.now(tz=UTC).date().isoformat()
        self.c = _Counters()
        self.run_id = ""
        self._renewed = time.monotonic()
        self.pipe: WriterThread  # created per attempt by _export
        self._cleared: set[str] = set()

    # -- the attempt loop --------------------------------------------------------------
    def execute(self, max_attempts: int) -> ExportReport:
        for _ in range(max_attempts):
            self.run_id = _new_run_id()
            self.c = _Counters(conflicts=self.c.conflicts)
            try:
                generation = self._attempt()
            except _Lost:
                continue
            return self._report(generation)
        raise ConflictError(
            f"export to {self.dst.url} kept conflicting with concurrent exports "
            f"({max_attempts} attempts)"
        )

    def _attempt(self) -> int:
        manifest, version = self._load()
        base = manifest or Manifest(source=_source_id(self.src))
        self._check_compatible(manifest)
        self._heartbeat("running")
        written: dict[str, PartInfo] = {}
        try:
            self._cleanup(base)
            plan = self._plan(base)
            states, removed = self._export(base, plan, written)
            if (
                manifest is not None
                and not written
                and not removed
                and not base.trash
                and all(base.files.get(k) == s for k, s in states.items())
            ):
                self._heartbeat_done("committed", keep=False)
                return base.generation
            generation = self._commit(manifest, version, states, written, removed)
        except BaseException:
            self._abandon(written)
            raise
        # The commit stands; what follows is tidying that the next run would redo.
        try:
            self._heartbeat_done("committed", keep=True)
            for path in removed:
                if self.dst.delete(path):
                    self.c.parts_removed += 1
        except Exception as exc:
            logger.warning("export committed; tidying up failed (the next run retries): %s", exc)
        return generation

    def _abandon(self, written: Mapping[str, PartInfo]) -> None:
        for path in written:
            try:
                self.dst.delete(path)
            except Exception:
                logger.warning("could not delete %s after a failed export", path)
        try:
            self._heartbeat_done("aborted", keep=True)
        except Exception:
            logger.warning("could not mark export run %s as aborted", self.run_id)

    # -- manifest ----------------------------------------------------------------------
    def _load(self) -> tuple[Manifest | None, str | None]:
        try:
            current = self.dst.read(MANIFEST_PATH)
        except KeyNotFoundError:
            return None, None
        try:
            return Manifest.from_bytes(current.data), current.version
        except ManifestError as exc:
            if self.full:
                logger.warning("replacing an unreadable export manifest: %s", exc)
                return None, current.version
            raise InvalidInputError(
                f"{self.dst.url}: {exc}; rebuild with incremental=False (--full)"
            ) from exc

    def _check_compatible(self, manifest: Manifest | None) -> None:
        if manifest is None or self.full:
            return
        if manifest.source != _source_id(self.src):
            raise InvalidInputError(
                f"{self.dst.url} holds an export of {manifest.source!r}, not of "
                f"{_source_id(self.src)!r}; use another destination or rebuild it with "
                "incremental=False (--full)"
            )
        if manifest.schema_version != SCHEMA_VERSION:
            raise InvalidInputError(
                f"{self.dst.url} uses export schema version {manifest.schema_version}, "
                f"this fsmemory writes version {SCHEMA_VERSION}; rebuild it with "
                "incremental=False (--full)"
            )

    def _commit(
        self,
        manifest: Manifest | None,
        version: str | None,
        states: dict[str, FileState],
        written: dict[str, PartInfo],
        removed: set[str],
    ) -> int:
        base = manifest
        for _ in range(50):
            new = self._merged(base, states, written, removed)
            try:
                if version is None:
                    self.dst.write(MANIFEST_PATH, new.to_bytes(), create_only=True)
                else:
                    self.dst.write(MANIFEST_PATH, new.to_bytes(), if_version=version)
                return new.generation
            except ConflictError:
                self.c.conflicts += 1
            remote, version = self._load()
            if remote is not None and any(r.get("run") == self.run_id for r in remote.runs):
                # Our write landed although the service reported a conflict (a retried
                # conditional request answers 412 to its own first success).
                return remote.generation
            self._check_lease()
            if remote is None or not self._can_rebase(base, remote, states, removed):
                raise _Lost
            base = remote
        raise _Lost

    def _merged(
        self,
        base: Manifest | None,
        states: dict[str, FileState],
        written: dict[str, PartInfo],
        removed: set[str],
    ) -> Manifest:
        source = _source_id(self.src)
        if base is None or self.full:
            old_parts = set(base.parts) if base is not None else set()
            new = Manifest(source=source, generation=(base.generation if base else 0) + 1)
            new.files = {k: s.copy() for k, s in states.items()}
            new.parts = dict(written)
            new.trash = sorted(old_parts | removed)
            new.runs = list(base.runs) if base is not None else []
        else:
            new = Manifest(
                source=source,
                generation=base.generation + 1,
                files={k: s.copy() for k, s in base.files.items()},
                parts=dict(base.parts),
                trash=[],
                runs=list(base.runs),
            )
            new.files.update({k: s.copy() for k, s in states.items()})
            for path in removed:
                new.parts.pop(path, None)
            new.parts.update(written)
            # Keep trash a concurrent commit added (we rebased on it) and did not clear.
            new.trash = sorted(removed | (set(base.trash) - self._cleared))
        rows = sum(self.c.rows.values())
        new.runs.append(
            {
                "run": self.run_id,
                "finished": datetime.now(tz=UTC).isoformat(),
                "full": self.full,
                "rows": rows,
                "parts": len(written),
                "since": self.since,
                "until": self.until,
            }
        )
        return new

    def _can_rebase(
        self,
        base: Manifest | None,
        remote: Manifest,
        states: dict[str, FileState],
        removed: set[str],
    ) -> bool:
        """True when a concurrent commit touched nothing this run touched."""
        if self.full or remote.source != _source_id(self.src):
            return False
        if remote.schema_version != SCHEMA_VERSION:
            return False
        for key in states:
            before = base.files.get(key) if base is not None else None
            after = remote.files.get(key)
            if before is None:
                if after is not None:
                    return False
            elif not before.same_progress(after):
                return False
        return all(path in remote.parts for path in removed)

    # -- leases ------------------------------------------------------------------------
    def _lease_path(self) -> str:
        return f"{RUNS_DIR}/{self.run_id}.json"

    def _heartbeat(self, state: str) -> None:
        now = time.time()
        body = {"run": self.run_id, "state": state, "expires": now + self.lease}
        self.dst.write(self._lease_path(), _jsonutil.dumps(body))
        self._renewed = time.monotonic()

    def _heartbeat_done(self, state: str, *, keep: bool) -> None:
        if not keep:
            self.dst.delete(self._lease_path())
            return
        body = {"run": self.run_id, "state": state, "expires": time.time() + FINISHED_RETENTION}
        self.dst.write(self._lease_path(), _jsonutil.dumps(body))

    def _renew(self) -> None:
        elapsed = time.monotonic() - self._renewed
        if elapsed > self.lease / 4:
            self._check_lease()
            self._heartbeat("running")

    def _check_lease(self) -> None:
        # A concurrent run may delete our files once our lease looks expired.
        if time.monotonic() - self._renewed > self.lease * 0.8:
            raise _Lost

    def _cleanup(self, manifest: Manifest) -> None:
        """Delete replaced files still listed as trash, and files of runs that died
        before committing."""
        for path in manifest.trash:
            if self.dst.delete(path):
                self.c.parts_removed += 1
        self._cleared = set(manifest.trash)
        # List parts before leases: a part's lease is written before the part.
        candidates = []
        for table in TABLES:
            for info in self.dst.list(table, recursive=True):
                run = part_run(info.path)
                if run is not None and run != self.run_id and info.path not in manifest.parts:
                    candidates.append((info.path, run))
        now = time.time()
        protected: set[str] = set()
        expired: list[str] = []
        for info in self.dst.list(RUNS_DIR):
            lease = self._read_lease(info)
            if lease is None:
                continue
            run, state, expires = lease
            if expires > now and state in ("running", "committed"):
                protected.add(run)
            elif expires <= now:
                expired.append(info.path)
        for path, run in candidates:
            if run not in protected and self.dst.delete(path):
                logger.info("deleted %s, left by an export run that did not commit", path)
                self.c.parts_removed += 1
        for path in expired:
            self.dst.delete(path)

    def _read_lease(self, info: FileInfo) -> tuple[str, str, float] | None:
        try:
            body = _jsonutil.loads(self.dst.read_bytes(info.path))
            return str(body["run"]), str(body["state"]), float(body["expires"])
        except KeyNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            # Unreadable: treat as a long-dead run (its name still protects nothing).
            return info.path.rsplit("/", 1)[-1].removesuffix(".json"), "aborted", 0.0

    # -- planning ----------------------------------------------------------------------
    def _plan(self, base: Manifest) -> _Plan:
        plan = _Plan()
        for sf in discover(self.src, self.tables):
            self.c.files_seen += 1
            if sf.table == MEMORY_TABLE and not self._in_window(sf.day):
                continue
            state = None if self.full else base.files.get(sf.key)
            if state is None:
                plan.works.append(_Work(sf, FileState(sf.table, sf.root, sf.path), 0))
                continue
            if sf.info.size == state.size and sf.info.token == state.token:
                self.c.files_unchanged += 1
                if state.offset < state.size:
                    self.c.pending += 1
                continue
            verified = self._verify(sf, state)
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
        self.c.files_reexported = len(plan.reexport)
        return plan

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
            if plan.reexport:
                removed |= self._rewrite(base, plan, states, sinks)
            total = sum(max(0, w.source.info.size - w.start) for w in plan.works)
            for done, work in enumerate(plan.works):
                self._export_file(work, sinks[work.source.table], total, done, len(plan.works))
            for sink in sinks.values():
                self.pipe.submit(sink.finish_all)
            self.pipe.close()
        except BaseException:
            self.pipe.cancel()
            for sink in sinks.values():
                sink.discard()
            raise
        for table in TABLES:
            if any(info.table == table for info in written.values()):
                self._write_common_metadata(table)
        return states, removed

    def _rewrite(
        self,
        base: Manifest,
        plan: _Plan,
        states: dict[str, FileState],
        sinks: dict[str, PartSink],
    ) -> set[str]:
        """Replace the parts holding rows of re-exported files by copies without those
        rows; the re-exported files are then read again from the start."""
        pa = self.pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        affected: set[str] = set()
        for key in plan.reexport:
            affected.update(base.files[key].parts)
        holders: dict[str, list[str]] = {}
        for key, state in base.files.items():
            for path in state.parts:
                if path in affected:
                    holders.setdefault(path, []).append(key)
        for key, sf in plan.reexport.items():
            fresh = FileState(sf.table, sf.root, sf.path)
            plan.works.append(_Work(sf, fresh, 0))
            states[key] = fresh
        plan.works.sort(key=lambda w: _order(w.source))
        dropped = {(base.files[k].root, base.files[k].path) for k in plan.reexport}
        for path in sorted(affected):
            info = base.parts.get(path)
            keepers = [k for k in holders.get(path, []) if k not in plan.reexport]
            for key in keepers:
                kept_state = states.setdefault(key, base.files[key].copy())
                if path in kept_state.parts:
                    kept_state.parts.remove(path)
            if info is None or not keepers:
                continue
            try:
                data = self.dst.read_bytes(path)
            except KeyNotFoundError:
                logger.warning("%s is listed in the manifest but missing", path)
                continue
            parquet = pq.ParquetFile(pa.BufferReader(data))
            for batch in parquet.iter_batches(batch_size=64 * 1024):
                mask = None
                for root, source_file in dropped:
                    hit = pc.and_(
                        pc.equal(batch.column("root"), root),
                        pc.equal(batch.column("source_file"), source_file),
                    )
                    mask = hit if mask is None else pc.or_(mask, hit)
                kept = batch.filter(pc.invert(mask)) if mask is not None else batch
                if kept.num_rows:
                    self.c.rewritten_rows += kept.num_rows
                    self.pipe.submit(sinks[info.table].write, info.date, kept, keepers)
        for sink in sinks.values():
            self.pipe.submit(sink.finish_all)
        return affected

    def _export_file(
        self, work: _Work, sink: PartSink, total: int, done: int, n_files: int
    ) -> None:
        sf, state = work.source, work.state
        if sf.table == MEMORY_TABLE:
            assert sf.day is not None
            self.pipe.submit(sink.finish_other_days, sf.day)
            parser: MemoryParser | EventParser = MemoryParser(sf.root, sf.path)
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
        table_rows = 0
        try:
            for parsed in self._parsed_blocks(work, parser):
                rows = parsed.batch.num_rows
                if rows:
                    if sf.table == MEMORY_TABLE:
                        assert sf.day is not None
                        self.pipe.submit(sink.write, sf.day, parsed.batch, (sf.key,))
                    else:
                        self._write_events(sink, parsed, sf.key)
                table_rows += rows
                self.c.rows[sf.table] += rows
                self._renew()
                if self.progress is not None:
                    self.progress(
                        ExportProgress(
                            done, n_files, self.c.lines_read, self.c.bytes_read, total,
                            sum(self.c.rows.values()),
                        )
                    )  # fmt: skip
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
        import pyarrow.compute as pc

        days = parsed.dates
        unique = pc.unique(days).to_pylist()
        if len(unique) == 1:
            self.pipe.submit(sink.write, unique[0], parsed.batch, (key,))
            return
        for day in sorted(unique):
            self.pipe.submit(sink.write, day, parsed.batch.filter(pc.equal(days, day)), (key,))

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
        # An unfinished last line: exported when it already is a whole JSON object (a
        # hand-written last line without newline), else left for a later run.
        try:
            whole = isinstance(_jsonutil.loads(rest), dict)
        except _jsonutil.JSONDecodeError:
            whole = False
        if not whole:
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

    def _write_common_metadata(self, table: str) -> None:
        """``<table>/_common_metadata``: the schema, for engines that look for it."""
        import pyarrow.parquet as pq

        path = f"{table}/_common_metadata"
        if self.dst.exists(path):
            return
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
            conflicts=c.conflicts,
            manifest_generation=generation,
            seconds=round(time.monotonic() - self.started, 3),
        )


def _advance(
    state: FileState, offset: int, lines: int, head: bytearray | None, tail: bytes
) -> None:
    """Record that ``state``'s file is exported up to ``offset`` (``lines`` lines)."""
    state.offset = offset
    state.lines = lines
    if head is not None:
        state.head_len = min(len(head), offset)
        state.head = digest(bytes(head[: state.head_len]))
    state.tail_len = len(tail)
    state.tail = digest(tail)
