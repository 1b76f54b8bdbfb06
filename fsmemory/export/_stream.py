"""The stream part of an export run: read the planned files, parse them, write Parquet.

Sources are read with bounded concurrency (in-process sources with one
``read_ranges`` call per block of batches); many small logs of one day are parsed as
one block; the Parquet files (uniquely named after the run) are encoded and written on
a second thread (:class:`~fsmemory.export._writer.WriterThread`). Files holding rows of
re-exported source files, and with ``compact`` small files of a partition, are
rewritten without those rows (merged).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fsmemory import _jsonutil
from fsmemory.errors import ConflictError, KeyNotFoundError
from fsmemory.export._commit import Ledger
from fsmemory.export._manifest import FileState, Manifest, PartInfo, digest
from fsmemory.export._parse import EventParser, MemoryParser, Parsed
from fsmemory.export._plan import Plan, Work, order
from fsmemory.export._report import MAX_CORRUPT_SAMPLES, CorruptLine, ExportProgress
from fsmemory.export._schema import MEMORY_TABLE, require_pyarrow, schema_for
from fsmemory.export._sources import SourceFile
from fsmemory.export._state import BATCH_FILES, CHECK_BYTES, SMALL_FILE, TABLES, Context
from fsmemory.export._writer import PartSink, WriterThread

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Stream", "ensure_table_dirs"]

logger = logging.getLogger(__name__)

#: Rows per batch when a Parquet file is read back to be rewritten.
_REWRITE_BATCH = 64 * 1024


class Stream:
    """One attempt's reading, parsing and writing."""

    def __init__(self, ctx: Context, ledger: Ledger) -> None:
        self.ctx = ctx
        self.ledger = ledger
        self.counters = ctx.counters
        self.pa = require_pyarrow()
        self.pipe: WriterThread  # started by export
        self.memory_parser: MemoryParser | None = None
        self._flight = threading.Lock()

    def export(
        self, base: Manifest, plan: Plan, written: dict[str, PartInfo]
    ) -> tuple[dict[str, FileState], set[str]]:
        """Write this attempt's files (each new part is added to ``written`` as it is
        written); returns the new file states and the replaced parts."""
        states: dict[str, FileState] = dict(plan.refresh)
        for work in plan.works:
            states[work.source.key] = work.state
        sinks = self._sinks(states, written)
        self.pipe = WriterThread()
        try:
            removed = set(base.parts) if self.ctx.opts.full else set()
            affected = set(plan.compact)
            for key in plan.reexport:
                affected.update(self.ledger.base_state(key).parts)
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
        ensure_table_dirs(self.ctx)
        return states, removed

    def _sinks(
        self, states: dict[str, FileState], written: dict[str, PartInfo]
    ) -> dict[str, PartSink]:
        """One Parquet writer per table; a finished part is recorded in ``written``
        and in the states of the source files whose rows it holds."""
        seq = iter(range(1, 1 << 30))
        counters, seg_of = self.counters, self.ledger.seg_of

        def on_part(path: str, info: PartInfo, keys: set[str]) -> None:
            info.segments = sorted({seg_of[key] for key in keys})
            written[path] = info
            counters.parts_written += 1
            counters.bytes_written += info.bytes
            for key in keys:
                states[key].parts.append(path)

        opts = self.ctx.opts
        return {
            table: PartSink(
                self.ctx.dst,
                table,
                schema_for(table),
                self.ctx.run_id,
                next_seq=lambda: next(seq),
                on_part=on_part,
                max_rows=opts.max_rows,
                compression=opts.compression,
            )
            for table in TABLES
        }

    # -- reading -----------------------------------------------------------------------
    def _batches(self, works: list[Work]) -> list[list[Work]]:
        """``works`` in order, consecutive small memory logs of one day grouped."""
        batches: list[list[Work]] = []
        batch_bytes = 0
        limit = self.ctx.opts.block_size // 2
        for work in works:
            size = work.remaining
            last = batches[-1] if batches else None
            if (
                last is not None
                and _batchable(work)
                and len(last) < BATCH_FILES
                and last[0].source.day == work.source.day
                and _batchable(last[0])
                and batch_bytes + size <= limit
            ):
                last.append(work)
                batch_bytes += size
            else:
                batches.append([work])
                batch_bytes = size
        return batches

    def _export_works(self, works: list[Work], sinks: dict[str, PartSink]) -> None:
        total = sum(w.remaining for w in works)
        batches = self._batches(works)
        c = self.counters
        done = 0
        ahead: Callable[[], list[bytes | None]] | None = None
        read: dict[int, list[bytes | None]] = {}  # in-process reads done ahead, by batch
        for i, batch in enumerate(batches):
            if len(batch) == 1 and not _batchable(batch[0]):
                ahead = None
                self._export_file(batch[0], sinks[batch[0].source.table])
            else:
                if not self.ctx.parallel:
                    if i not in read:
                        read = self._read_ahead(batches, i)
                    datas = read.pop(i)
                else:
                    fetched = ahead if ahead is not None else self._fetch(batch)
                    nxt = batches[i + 1] if i + 1 < len(batches) else None
                    ahead = self._fetch(nxt) if nxt is not None and _batchable(nxt[0]) else None
                    datas = fetched()
                self._export_batch(batch, datas, sinks[MEMORY_TABLE])
                # Arrow's allocator keeps freed pages; thousands of small blocks would
                # otherwise grow the process by tens of MiB.
                self.pa.default_memory_pool().release_unused()
            done += len(batch)
            self.ctx.renew()
            if self.ctx.opts.progress is not None:
                rows = sum(c.rows.values())
                self.ctx.opts.progress(
                    ExportProgress(done, len(works), c.lines_read, c.bytes_read, total, rows)
                )

    def _read_ahead(self, batches: list[list[Work]], first: int) -> dict[int, list[bytes | None]]:
        """In-process sources: read batch ``first`` and the batches after it, up to
        ``block_size`` bytes in all (as much as a batch plus the one read ahead on other
        storage), with one ``read_ranges`` call, which checks each folder once per call:
        the logs of one tenant on consecutive days share their folder."""
        picked = [first]
        size = sum(w.remaining for w in batches[first])
        for j in range(first + 1, len(batches)):
            more = sum(w.remaining for w in batches[j])
            if not _batchable(batches[j][0]) or size + more > self.ctx.opts.block_size:
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

    def _fetch(self, batch: list[Work]) -> Callable[[], list[bytes | None]]:
        """Start reading the unread part of each file of ``batch``, ``concurrency`` reads
        in flight; returns a function that waits for the contents (None: vanished)."""
        ctx, c = self.ctx, self.counters

        def read(works: list[Work]) -> list[bytes | None]:
            with self._flight:
                c.in_flight += 1
                c.max_in_flight = max(c.max_in_flight, c.in_flight)
            try:
                return ctx.src.read_ranges(
                    [(w.source.key, w.start, w.source.info.size) for w in works]
                )
            finally:
                with self._flight:
                    c.in_flight -= 1

        if not ctx.parallel or len(batch) == 1 or ctx.pool is None:
            try:
                done = read(batch)
            except BaseException as exc:
                error = exc

                def fail() -> list[bytes | None]:
                    raise error

                return fail
            return lambda: done
        # One file per task: this pool alone bounds the requests in flight (a root's own
        # batching, e.g. a client's own smaller thread pool, would cap them
        # below ``concurrency`` and hop threads twice); a task costs little next to a
        # round trip.
        futures = [ctx.pool.submit(read, [work]) for work in batch]
        return lambda: [data for f in futures for data in f.result()]

    # -- memory logs -------------------------------------------------------------------
    def _parser(self, root: str, source_file: str) -> MemoryParser:
        if self.memory_parser is None:
            self.memory_parser = MemoryParser(root, source_file)
        self.memory_parser.root, self.memory_parser.source_file = root, source_file
        return self.memory_parser

    def _export_batch(self, batch: list[Work], datas: list[bytes | None], sink: PartSink) -> None:
        """Export small memory logs of one day, read whole: their complete lines are
        parsed as one block when the fast path takes it, else file by file."""
        day = batch[0].source.day
        assert day is not None
        self.pipe.submit(sink.finish_other_days, day)
        pieces = self._pieces(batch, datas)
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
                self.counters.lines_read += lines
                self._consumed(work, data, offset, cut, lines)
                keys.append(work.source.key)
            self.counters.rows[MEMORY_TABLE] += table.num_rows
            self.pipe.submit(sink.write, day, table, keys)
        for work, data, offset, cut in pieces:
            sf = work.source
            parser = self._parser(sf.root, sf.path)
            if cut and table is None:
                parsed = parser.parse(data, work.state.lines + 1, offset, cut)
                self._account(sf, parsed, parsed.lines)
                self._write_memory(sink, day, parsed, sf.key)
                self._consumed(work, data, offset, cut, parsed.lines)
            self._last_line(work, data, offset, cut, sink, day)

    def _pieces(
        self, batch: list[Work], datas: list[bytes | None]
    ) -> list[tuple[Work, bytes, int, int]]:
        """``(work, data, start offset, end of the last whole line)`` of each file of
        ``batch`` that was still there."""
        c = self.counters
        pieces: list[tuple[Work, bytes, int, int]] = []
        for work, data in zip(batch, datas, strict=True):
            sf, state = work.source, work.state
            c.files_read += 1
            state.size, state.token = sf.info.size, sf.info.token
            if data is None:
                c.files_vanished += 1
                logger.info("%s vanished during the export", sf.key)
                continue
            offset = work.start
            if work.open_line and data[:1] == b"\n":
                data = data[1:]
                offset += 1
                work.tail = (work.tail + b"\n")[-CHECK_BYTES:]
            c.bytes_read += len(data)
            pieces.append((work, data, offset, data.rfind(b"\n") + 1))
        return pieces

    def _last_line(
        self, work: Work, data: bytes, offset: int, cut: int, sink: PartSink, day: str
    ) -> None:
        """An unfinished last line: exported when it already is a whole JSON object (a
        hand-written last line without newline), else left for a later run."""
        rest = data[cut:]
        if not rest.strip():
            return
        if not _whole_object(rest):
            self.counters.pending += 1
            return
        sf = work.source
        parsed = self._parser(sf.root, sf.path).parse(
            rest + b"\n", work.state.lines + 1, offset + cut
        )
        self._account(sf, parsed, 1)
        self._write_memory(sink, day, parsed, sf.key)
        self._consumed(work, data, offset, len(data), 1)

    def _write_memory(self, sink: PartSink, day: str, parsed: Parsed, key: str) -> None:
        rows = parsed.batch.num_rows
        if rows:
            self.counters.rows[MEMORY_TABLE] += rows
            self.pipe.submit(sink.write, day, parsed.batch, (key,))

    def _consumed(self, work: Work, data: bytes, offset: int, upto: int, lines: int) -> None:
        """Record that ``work``'s file is exported up to ``data[:upto]``, ``lines`` more
        lines (``data`` starts at file offset ``offset``, after ``work.tail``)."""
        head = bytearray(data[: min(CHECK_BYTES, upto)]) if work.start == 0 else None
        tail = (work.tail + data[max(0, upto - CHECK_BYTES) : upto])[-CHECK_BYTES:]
        _advance(work.state, offset + upto, work.state.lines + lines, head, tail)

    # -- rewriting ---------------------------------------------------------------------
    def _rewrite(
        self,
        base: Manifest,
        plan: Plan,
        states: dict[str, FileState],
        sinks: dict[str, PartSink],
        affected: set[str],
    ) -> set[str]:
        """Replace the ``affected`` parts by copies without the rows of re-exported
        files (compaction: with all their rows, merged); the re-exported files are then
        read again from the start."""
        ledger = self.ledger
        holders = self._holders(base, plan, affected)
        for key, sf in plan.reexport.items():
            fresh = FileState(sf.table, sf.root, sf.path)
            plan.works.append(Work(sf, fresh, 0))
            states[key] = fresh
        plan.works.sort(key=lambda w: order(w.source))
        dropped = {(ledger.base_state(k).root, ledger.base_state(k).path) for k in plan.reexport}
        for done, path in enumerate(sorted(affected)):
            self._rewrite_progress(len(plan.works), done, len(affected))
            info = base.parts.get(path)
            keepers = [k for k in holders.get(path, []) if k not in plan.reexport]
            for key in keepers:
                kept_state = states.setdefault(key, ledger.base_state(key).copy())
                if path in kept_state.parts:
                    kept_state.parts.remove(path)
            if info is None or not keepers:
                continue
            try:
                data = self.ctx.dst.read_bytes(path)
            except KeyNotFoundError:
                logger.warning("%s is listed in the manifest but missing", path)
                continue
            if path in plan.compact:
                self.counters.parts_compacted += 1
            for kept in self._kept_rows(data, dropped):
                self.counters.rewritten_rows += kept.num_rows
                self.pipe.submit(sinks[info.table].write, info.date, kept, keepers)
        for sink in sinks.values():
            self.pipe.submit(sink.finish_all)
        self._rewrite_progress(len(plan.works), len(affected), len(affected))
        return affected

    def _rewrite_progress(self, files: int, done: int, total: int) -> None:
        progress = self.ctx.opts.progress
        if progress is not None:
            c = self.counters
            rows = sum(c.rows.values())
            progress(
                ExportProgress(
                    0, files, c.lines_read, c.bytes_read, 0, rows, "rewrite", done, total
                )
            )

    def _holders(self, base: Manifest, plan: Plan, affected: set[str]) -> dict[str, list[str]]:
        """The source files with rows in each ``affected`` part (their segments read)."""
        ledger = self.ledger
        segments = {s for p in affected if p in base.parts for s in base.parts[p].segments}
        ledger.load_segments(base, segments)
        holders: dict[str, list[str]] = {}
        for seg in sorted(segments | {ledger.seg_of[k] for k in plan.reexport}):
            for key, state in ledger.loaded.get(seg, {}).items():
                ledger.seg_of.setdefault(key, seg)
                for path in state.parts:
                    if path in affected:
                        holders.setdefault(path, []).append(key)
        return holders

    def _kept_rows(self, data: bytes, dropped: set[tuple[str, str]]) -> Iterator[pa.RecordBatch]:
        """The batches of the Parquet file ``data`` without the rows of the ``dropped``
        ``(root, source_file)`` pairs (empty batches left out)."""
        import pyarrow.parquet as pq

        from fsmemory.export import _compute as pc

        parquet = pq.ParquetFile(self.pa.BufferReader(data))
        for batch in parquet.iter_batches(batch_size=_REWRITE_BATCH):
            mask = None
            for root, source_file in dropped:
                hit = pc.and_(
                    pc.equal(batch.column("root"), root),
                    pc.equal(batch.column("source_file"), source_file),
                )
                mask = hit if mask is None else pc.or_(mask, hit)
            kept = pc.filter_(batch, pc.invert(mask)) if mask is not None else batch
            if kept.num_rows:
                yield kept

    # -- one file at a time --------------------------------------------------------------
    def _export_file(self, work: Work, sink: PartSink) -> None:
        sf, state = work.source, work.state
        c = self.counters
        parser: MemoryParser | EventParser
        if sf.table == MEMORY_TABLE:
            assert sf.day is not None
            self.pipe.submit(sink.finish_other_days, sf.day)
            parser = self._parser(sf.root, sf.path)
        else:
            parser = self._event_parser(sf, state)
        c.files_read += 1
        try:
            for parsed in self._parsed_blocks(work, parser):
                if parsed.batch.num_rows:
                    if sf.table == MEMORY_TABLE:
                        assert sf.day is not None
                        self.pipe.submit(sink.write, sf.day, parsed.batch, (sf.key,))
                    else:
                        self._write_events(sink, parsed, sf.key)
                c.rows[sf.table] += parsed.batch.num_rows
                self.ctx.renew()
        except KeyNotFoundError:
            c.files_vanished += 1
            logger.info("%s vanished during the export", sf.key)
        if isinstance(parser, EventParser):
            state.last_date = parser.carry_date
        if work.stopped:
            # Stopped at `until`: the rest is unread, so never take the file as unchanged.
            state.size, state.token = state.offset, sf.info.token
        else:
            state.size, state.token = sf.info.size, sf.info.token

    def _event_parser(self, sf: SourceFile, state: FileState) -> EventParser:
        mtime = sf.info.mtime
        default = (
            datetime.fromtimestamp(mtime, tz=UTC).date().isoformat()
            if mtime is not None
            else self.ctx.today
        )
        return EventParser(
            sf.root,
            sf.path,
            carry_date=state.last_date,
            default_date=default,
            since=self.ctx.opts.since,
            until=self.ctx.opts.until,
        )

    def _write_events(self, sink: PartSink, parsed: Parsed, key: str) -> None:
        from fsmemory.export import _compute as pc

        days = parsed.dates
        unique = pc.unique(days).to_pylist()
        if len(unique) == 1:
            self.pipe.submit(sink.write, unique[0], parsed.batch, (key,))
            return
        for day in sorted(unique):
            self.pipe.submit(sink.write, day, pc.filter_(parsed.batch, pc.equal(days, day)), (key,))

    def _parsed_blocks(self, work: Work, parser: MemoryParser | EventParser) -> Iterator[Parsed]:
        """Read ``work``'s file from its start in blocks and parse them, advancing
        ``work.state`` (offset, lines, digests) as lines are consumed.

        Each read starts at the first unconsumed byte, so the partial line at the end of
        a block is read again with the next block rather than copied (no block is ever
        concatenated or sliced); a line longer than a block doubles the read size.
        """
        sf, state = work.source, work.state
        src, block_size = self.ctx.src, self.ctx.opts.block_size
        end = sf.info.size
        offset = work.start
        lines = state.lines
        tail = work.tail
        head = bytearray() if work.start == 0 else None
        size = block_size
        rest = b""
        # The last run exported an unfinished line that was a whole JSON object; the
        # newline a writer added after it belongs to that line.
        if work.open_line and src.read_range(sf.key, offset, offset + 1) == b"\n":
            offset += 1
            tail = (tail + b"\n")[-CHECK_BYTES:]
        while offset < end:
            chunk = src.read_range(sf.key, offset, min(offset + size, end))
            if not chunk:
                return  # the file shrank meanwhile: the next run notices
            self.counters.bytes_read += len(chunk)
            if head is not None and offset == len(head) < CHECK_BYTES:
                head += chunk[: CHECK_BYTES - len(head)]
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                if offset + len(chunk) >= end:
                    rest = chunk
                    break
                size *= 2
                continue
            size = block_size
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
            self.counters.pending += 1
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
        c = self.counters
        c.lines_read += used_lines
        c.out_of_window += parsed.out_of_window
        for number, reason in parsed.corrupt:
            c.corrupt += 1
            if len(c.samples) < MAX_CORRUPT_SAMPLES:
                c.samples.append(CorruptLine(sf.root, sf.path, number, reason))
            logger.warning("skipping corrupt line %s:%d (%s)", sf.key, number, reason)


def ensure_table_dirs(ctx: Context) -> None:
    """``<table>/_common_metadata`` (the schema) for every exported table, rows or
    not: engines that look for it find it, and the table's folder always exists."""
    for table in sorted(ctx.opts.tables):
        path = f"{table}/_common_metadata"
        if ctx.dst.exists(path):
            continue
        pa: Any = require_pyarrow()  # only when there is one to write
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_metadata(schema_for(table), sink)
        with contextlib.suppress(ConflictError):
            ctx.dst.write(path, sink.getvalue().to_pybytes(), create_only=True)


def _batchable(work: Work) -> bool:
    return work.source.table == MEMORY_TABLE and work.remaining <= SMALL_FILE


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
