"""Write rows into new, uniquely named Parquet files of a hive-partitioned dataset.

Each file is built in memory (bounded by ``max_rows``/``max_bytes``) and stored with one
create-only write through the storage layer, so on every backend a reader sees either
the whole file or none of it, and no existing file is ever overwritten.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from fsmemory.export._manifest import PartInfo
from fsmemory.export._schema import PARTITION_COLUMN, require_pyarrow
from fsmemory.fs import StorageRoot

__all__ = ["PartSink", "WriterThread", "part_name", "part_run"]

#: Columns worth a dictionary (few distinct values); the others are written plain.
_DICTIONARY_COLUMNS = ["root", "source_file", "op", "category", "reason", "stream_id", "type"]


def part_name(table: str, day: str, run_id: str, seq: int) -> str:
    """The dataset path of a run's ``seq``-th file."""
    return f"{table}/{PARTITION_COLUMN}={day}/part-{run_id}-{seq:05d}.parquet"


def part_run(path: str) -> str | None:
    """The run id inside a part file name, or None when ``path`` is not a part file."""
    name = path.rsplit("/", 1)[-1]
    if not (name.startswith("part-") and name.endswith(".parquet")):
        return None
    stem = name[len("part-") : -len(".parquet")]
    run, sep, seq = stem.rpartition("-")
    if not sep or not seq.isdigit() or not run:
        return None
    return run


@dataclass(slots=True)
class _OpenPart:
    day: str
    sink: Any
    writer: Any
    rows: int = 0
    pending: list[Any] = field(default_factory=list)
    pending_rows: int = 0
    sources: set[str] = field(default_factory=set)


@dataclass(eq=False, repr=False)
class PartSink:
    """Collects rows of one table and writes them as new Parquet files.

    Args:
        dest: the destination root.
        table: the table (top folder) name.
        schema: the files' Arrow schema.
        run_id: names the files of this run.
        next_seq: returns the next file number (shared by the run's sinks).
        on_part: called with ``(path, info, source keys)`` after each file is stored.
        max_rows: rows per file at most.
        max_bytes: a file is closed once its encoded size passes this.
        row_group_rows: rows per Parquet row group.
        compression: Parquet codec.
        max_open: files (one per day) kept open at once; the least recently used is
            closed when a new day needs one.
    """

    dest: StorageRoot
    table: str
    schema: Any
    run_id: str
    _: KW_ONLY
    next_seq: Callable[[], int]
    on_part: Callable[[str, PartInfo, set[str]], None]
    max_rows: int = 1_000_000
    max_bytes: int = 24 << 20
    row_group_rows: int = 64 * 1024
    compression: str = "snappy"
    max_open: int = 4
    _open: OrderedDict[str, _OpenPart] = field(init=False, default_factory=OrderedDict)

    def __post_init__(self) -> None:
        self.pa = require_pyarrow()
        import pyarrow.parquet as pq

        self.pq = pq
        self.dictionary = [c for c in _DICTIONARY_COLUMNS if c in self.schema.names]

    def write(self, day: str, rows: Any, sources: Iterable[str]) -> None:
        """Add ``rows`` (a Table or RecordBatch in :attr:`schema`) to the file of ``day``."""
        pa = self.pa
        table = pa.Table.from_batches([rows]) if isinstance(rows, pa.RecordBatch) else rows
        keys = set(sources)
        while table.num_rows:
            part = self._part(day)
            room = self.max_rows - part.rows - part.pending_rows
            piece = table.slice(0, room) if table.num_rows > room else table
            table = table.slice(piece.num_rows)
            part.pending.append(piece)
            part.pending_rows += piece.num_rows
            part.sources |= keys
            if part.pending_rows >= self.row_group_rows:
                self._flush(part)
            if part.rows + part.pending_rows >= self.max_rows or part.sink.tell() >= self.max_bytes:
                self.finish(day)

    def _part(self, day: str) -> _OpenPart:
        part = self._open.get(day)
        if part is not None:
            self._open.move_to_end(day)
            return part
        while len(self._open) >= self.max_open:
            self.finish(next(iter(self._open)))
        sink = self.pa.BufferOutputStream()
        writer = self.pq.ParquetWriter(
            sink,
            self.schema,
            compression=self.compression,
            use_dictionary=self.dictionary,
            write_statistics=True,
        )
        part = _OpenPart(day, sink, writer)
        self._open[day] = part
        return part

    def _flush(self, part: _OpenPart) -> None:
        if not part.pending:
            return
        pa = self.pa
        table = part.pending[0] if len(part.pending) == 1 else pa.concat_tables(part.pending)
        part.writer.write_table(table, row_group_size=self.row_group_rows)
        part.rows += table.num_rows
        part.pending = []
        part.pending_rows = 0

    def finish(self, day: str) -> None:
        """Close the open file of ``day`` (if any) and store it."""
        part = self._open.pop(day, None)
        if part is None:
            return
        self._flush(part)
        part.writer.close()
        if part.rows == 0:
            return
        data = part.sink.getvalue().to_pybytes()
        path = part_name(self.table, day, self.run_id, self.next_seq())
        self.dest.write(path, data, create_only=True)
        info = PartInfo(self.table, day, part.rows, len(data), self.run_id)
        self.on_part(path, info, part.sources)

    def finish_all(self) -> None:
        """Store every open file."""
        for day in list(self._open):
            self.finish(day)

    def finish_other_days(self, day: str) -> None:
        """Store every open file except that of ``day`` (its rows are complete)."""
        for other in [d for d in self._open if d != day]:
            self.finish(other)

    def discard(self) -> None:
        """Drop open files without storing them."""
        for part in self._open.values():
            with suppress(Exception):  # the buffers are being thrown away
                part.writer.close()
        self._open.clear()


class WriterThread:
    """Runs sink calls in order on one background thread, so encoding and storing
    Parquet overlaps with reading and parsing the next block.

    At most ``depth`` calls wait in the queue (bounded memory). An exception raised by a
    call is re-raised by the next :meth:`submit` or by :meth:`close`; later calls are
    skipped.
    """

    def __init__(self, depth: int = 2) -> None:
        self._queue: queue.Queue[tuple[Callable[..., object], tuple[Any, ...]] | None] = (
            queue.Queue(maxsize=depth)
        )
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="fsmemory-export", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is not None:
                continue
            fn, args = item
            try:
                fn(*args)
            except BaseException as exc:  # re-raised in the submitting thread
                self._error = exc

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, fn: Callable[..., object], *args: Any) -> None:
        """Queue ``fn(*args)``; raises the error of an earlier call, if any."""
        self._raise()
        self._queue.put((fn, args))

    def close(self) -> None:
        """Wait for every queued call; raises the first error."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()

    def cancel(self) -> None:
        """Skip what is still queued and stop the thread (errors are dropped)."""
        if self._error is None:
            self._error = _Cancelled()
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._error = None


class _Cancelled(Exception):
    pass
