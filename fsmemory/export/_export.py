"""The export run: plan, stream, write, commit with compare-and-swap, clean up.

One run (an *attempt*, repeated when it loses a race) goes through three parts, each in
a module of its own: plan (``_plan.py``: what to read), stream (``_stream.py``: read,
parse, write Parquet) and commit (``_commit.py``: manifest segments and head, with the
sweep of ``_leases.py``). This module checks the arguments and drives the attempts:

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

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from typing import Any

from fsmemory.errors import ConflictError, InvalidInputError, KeyNotFoundError
from fsmemory.export._commit import Ledger
from fsmemory.export._leases import new_run_id
from fsmemory.export._manifest import SEGMENTS_DIR, Manifest, PartInfo
from fsmemory.export._plan import make_plan, nothing_to_do
from fsmemory.export._report import ExportProgress, ExportReport
from fsmemory.export._schema import check_pyarrow
from fsmemory.export._state import (
    TABLES,
    Context,
    Lost,
    NeedsFullExport,
    Options,
    source_id,
)
from fsmemory.export._stream import Stream, ensure_table_dirs
from fsmemory.fs import StorageRoot, open_root

__all__ = ["NeedsFullExport", "export_parquet", "source_id"]

logger = logging.getLogger(__name__)

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
    check_pyarrow()  # imported only by a run that writes (a no-op re-run does not)
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
    options = Options(
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
    return _Run(src, dst, options).execute(max_attempts)


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


class _Run:
    """The attempts of one export: each plans, streams and commits; one that loses a
    race with a concurrent export starts over."""

    def __init__(self, src: StorageRoot, dst: StorageRoot, options: Options) -> None:
        self.ctx = Context(src, dst, source_id(src), options)

    def execute(self, max_attempts: int) -> ExportReport:
        ctx = self.ctx
        with ThreadPoolExecutor(ctx.opts.concurrency, thread_name_prefix="fsmemory-read") as pool:
            ctx.pool = pool
            for _ in range(max_attempts):
                ctx.new_attempt(new_run_id())
                try:
                    generation = self._attempt()
                except Lost:
                    ctx.counters.conflicts += 1
                    continue
                return self._report(generation)
        raise ConflictError(
            f"export to {ctx.dst.url} kept conflicting with concurrent exports "
            f"({max_attempts} attempts)"
        )

    def _attempt(self) -> int:
        ctx = self.ctx
        ledger = Ledger(ctx)
        head, version = ledger.load()
        ledger.check_compatible(head)
        base = head or Manifest(source=ctx.source)
        ledger.adopt(base)
        written: dict[str, PartInfo] = {}
        segment_files: list[str] = []
        try:
            ledger.sweep(base)
            plan = make_plan(ctx, ledger, base)
            if head is not None and nothing_to_do(ctx, base, plan):
                ensure_table_dirs(ctx)
                return base.generation
            ctx.lease.hold()
            states, removed = Stream(ctx, ledger).export(base, plan, written)
            generation, replaced = ledger.commit(
                head, version, plan.listed, plan.visited, states, written, removed,
                segment_files,
            )  # fmt: skip
        except BaseException:
            self._abandon([*written, *segment_files])
            raise
        # The commit stands; what follows is tidying that the next run would redo.
        try:
            ctx.lease.finish("committed")
            for path in sorted(removed | replaced):
                if ctx.dst.delete(path) and not path.startswith(SEGMENTS_DIR):
                    ctx.counters.parts_removed += 1
        except Exception as exc:
            logger.warning("export committed; tidying up failed (the next run retries): %s", exc)
        return generation

    def _abandon(self, written: Iterable[str]) -> None:
        ctx = self.ctx
        for path in written:
            try:
                ctx.dst.delete(path)
            except Exception:
                logger.warning("could not delete %s after a failed export", path)
        if not ctx.lease.held:
            return
        try:
            ctx.lease.finish("aborted")
        except Exception:
            logger.warning("could not mark export run %s as aborted", ctx.run_id)

    def _report(self, generation: int) -> ExportReport:
        ctx = self.ctx
        opts = ctx.opts
        return ExportReport(
            source=ctx.src.url,
            dest=ctx.dst.url,
            run_id=ctx.run_id,
            full=opts.full,
            manifest_generation=generation,
            shard=f"{opts.shard[0]}/{opts.shard[1]}" if opts.shard else None,
            seconds=round(time.monotonic() - ctx.started, 3),
            corrupt_samples=tuple(ctx.counters.samples),
            **ctx.counters.report_counts(),
        )
