"""Turn blocks of JSONL log lines into Arrow record batches.

A block is a run of complete lines (each ending with ``\\n``) cut from one log file. Each
parser has two paths that give the same rows for the same input:

* the **reference path** parses line by line with orjson and applies the normalization
  rules below; it is exact about which lines are corrupt;
* the **fast path** lets ``pyarrow.json`` parse the whole block with an explicit schema
  (multi-threaded C++) and vectorizes the normalization with ``pyarrow.compute``. It only
  accepts a block when nothing in it needs per-line care (a corrupt or blank line, a
  record without id, a value of an unexpected type, an unusual ``metadata`` layout, ...);
  otherwise the block goes down the reference path.

Normalization of memory-log records (what the ``memory`` table holds):

* a line that is not a JSON object (bad JSON, invalid UTF-8) is corrupt: skipped, counted;
* ``op`` is the record's ``op`` when it is a string, else ``"remember"``;
* a ``forget`` record needs a string ``id`` (else corrupt); its ``timestamp`` is kept when
  parseable and its ``reason`` when a string; every fact column is null;
* any other record needs a string ``content`` (else corrupt); a missing or falsy ``id``
  becomes the id :class:`~fsmemory.memory.KnowledgeMemory` derives for it, a non-string
  one makes the line corrupt; ``category`` defaults to ``"general"`` (a non-string one is
  corrupt); ``persistent`` is ``bool(value)``; ``importance`` is a number clamped to
  [0, 1] (0.5 when absent or not a number); ``ttl_days`` is a number or null; a string
  ``timestamp``/``expires_at`` must parse as ISO-8601 (else corrupt); a missing
  ``expires_at`` is ``timestamp + ttl_days`` (null beyond year 9999); ``metadata`` is kept
  as compact JSON text when it is an object. JSON ``null`` counts as absent.

Known difference: Arrow's JSON parser accepts the non-standard literals ``NaN``/``Inf``/
``Infinity``, orjson does not. In the known numeric fields and in ``metadata`` they send
the block down the reference path (which counts the line corrupt); in any other field of
a memory record they are accepted by the fast path (the line is exported). Event blocks
containing them always take the reference path, since an event's whole text is kept.

Event-log records (the ``events`` table) are opaque: any JSON object is a row; ``type`` is
kept when a string; ``timestamp`` when it is ISO-8601 text or a number of Unix seconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fsmemory import _jsonutil
from fsmemory.export._schema import events_schema, memory_schema, require_pyarrow
from fsmemory.memory.entry import number_or_none as _number
from fsmemory.memory.entry import parse_timestamp, stable_id

__all__ = ["EventParser", "MemoryParser", "Parsed"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
#: Timestamps are kept within what Python's datetime can hold (years 1 - 9999).
_MIN_US = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _US
_MAX_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // _US
_US_PER_DAY = 86_400_000_000.0

# Every occurrence of the key text; the fast path understands only the layout every
# fsmemory writer produces: `"metadata":{...}` as the record's last member (or null).
_METADATA = re.compile(rb'"metadata"(?::(?:(\{[^\n]*\})\}[ \t\r]*\n|(null)))?')
_OPEN_OR_COMMA = (0x7B, 0x2C)  # `{` `,`: the byte before a member's key
# A NaN/Infinity literal where a JSON value starts (may also match inside a string: then
# the block merely takes the reference path).
_NONSTANDARD = re.compile(rb"[:\[,]\s*-?(?:NaN|Inf)")


@dataclass(slots=True)
class Parsed:
    """The rows of one block.

    Attributes:
        batch: the rows, in the table's file schema.
        dates: for event blocks, the partition day of each row (memory blocks: None,
            the day is the file's).
        corrupt: ``(line number, reason)`` of each skipped line.
        stop: for event blocks cut by ``until``: ``(byte offset, line number)`` of the
            first line not consumed; None when the whole block was consumed.
        out_of_window: rows dropped because they fall before ``since``.
        fast: True when the fast path produced the rows.
        lines: lines in the block (consumed or not).
    """

    batch: Any
    lines: int = 0
    dates: Any = None
    corrupt: list[tuple[int, str]] = field(default_factory=list)
    stop: tuple[int, int] | None = None
    out_of_window: int = 0
    fast: bool = False


def _ts_us(text: str) -> int | None:
    """Microseconds since the epoch of an ISO-8601 text, or None when unparseable.

    Python's parser first, then Arrow's (the fast path's): a value either accepts is kept,
    so both paths agree on which texts are timestamps.
    """
    try:
        return (parse_timestamp(text) - _EPOCH) // _US
    except (ValueError, OverflowError):
        pass
    pa = require_pyarrow()
    from fsmemory.export import _compute as pc

    try:
        value = pc.cast(pa.array([text], pa.string()), pa.timestamp("us", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    us = pc.cast(value, pa.int64())[0].as_py()
    if not isinstance(us, int) or not _MIN_US <= us <= _MAX_US:
        return None
    return us


def _split_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _numbered(
    lines: Sequence[bytes], first_line: int, offset: int
) -> Iterator[tuple[int, int, bytes]]:
    """Each line of :func:`_split_lines` with its number and the file offset it starts
    at: line ``first_line`` starts at byte ``offset``, and every line ends in one ``\\n``."""
    for number, raw in enumerate(lines, first_line):
        yield number, offset, raw
        offset += len(raw) + 1


class _Base:
    """Arrow handles shared by both parsers."""

    def __init__(self) -> None:
        self.pa = require_pyarrow()
        import pyarrow.json as pj

        from fsmemory.export import _compute as pc

        self.pc = pc
        self.pj = pj
        self.ts_type = self.pa.timestamp("us", tz="UTC")
        self.read_options = pj.ReadOptions(use_threads=True, block_size=1 << 20)
        self.serial_options = pj.ReadOptions(use_threads=False, block_size=1 << 20)

    def _read_json(self, data: Any, parse_options: Any) -> Any:
        """``pyarrow.json`` over ``data`` (bytes or an Arrow buffer), or None when it
        refuses the block. Blocks of a few MiB are parsed on this thread: Arrow's
        thread pool gains little there and keeps a memory heap per thread."""
        pa = self.pa
        options = self.read_options if len(data) > 4 << 20 else self.serial_options
        try:
            return self.pj.read_json(
                pa.BufferReader(data),
                read_options=options,
                parse_options=parse_options,
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None

    @staticmethod
    def _plain(data: bytes, end: int) -> bool:
        """False when ``data[:end]`` has invalid UTF-8 or a BOM (orjson refuses both,
        Arrow accepts them)."""
        if data.isascii():
            return True
        view = data[:end]
        if b"\xef\xbb\xbf" in view:
            return False
        try:
            view.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True


class MemoryParser(_Base):
    """Parse blocks of one memory log (``logs/YYYY-MM-DD.jsonl``) into ``memory`` rows.

    Args:
        root: the memory root relative to the export source.
        source_file: the log's path relative to that root.
        fast: allow the fast path (tests turn it off to compare both paths).
    """

    def __init__(self, root: str, source_file: str, *, fast: bool = True) -> None:
        super().__init__()
        pa = self.pa
        self.root = root
        self.source_file = source_file
        self.fast = fast
        self.schema = memory_schema()
        explicit = pa.schema(
            [
                ("id", pa.string()),
                ("timestamp", self.ts_type),
                ("category", pa.string()),
                ("content", pa.string()),
                ("persistent", pa.bool_()),
                ("importance", pa.float64()),
                ("ttl_days", pa.float64()),
                ("expires_at", self.ts_type),
                ("op", pa.string()),
                ("reason", pa.string()),
                # Only whether it is an object: the text comes from _metadata_texts.
                ("metadata", pa.struct([])),
            ]
        )
        self.parse_options = self.pj.ParseOptions(
            explicit_schema=explicit, unexpected_field_behavior="ignore"
        )

    def parse(
        self, data: bytes, first_line: int, base_offset: int, end: int | None = None
    ) -> Parsed:
        """Rows of ``data[:end]`` (complete lines); line ``first_line`` starts at byte
        ``base_offset`` of the file."""
        end = len(data) if end is None else end
        if self.fast:
            batch = self._fast(data, end, first_line)
            if batch is not None:
                return Parsed(batch, lines=batch.num_rows, fast=True)
        return self._reference(data[:end] if end < len(data) else data, first_line, base_offset)

    # -- reference path ----------------------------------------------------------------
    def _reference(self, data: bytes, first_line: int, base_offset: int) -> Parsed:
        cols: dict[str, list[Any]] = {c: [] for c in self.schema.names}
        corrupt: list[tuple[int, str]] = []
        lines = _split_lines(data)
        for number, line_offset, raw in _numbered(lines, first_line, base_offset):
            if not raw.strip():
                continue
            try:
                row = self._row(raw, line_offset)
            except ValueError as exc:
                corrupt.append((number, str(exc)))
                continue
            for name, value in zip(self.schema.names[3:], row, strict=True):
                cols[name].append(value)
            cols["line"].append(number)
        n = len(cols["line"])
        cols["root"] = [self.root] * n
        cols["source_file"] = [self.source_file] * n
        return Parsed(self._batch(cols), lines=len(lines), corrupt=corrupt)

    def _row(self, raw: bytes, line_offset: int) -> tuple[Any, ...]:
        """``(op, id, timestamp, category, content, persistent, importance, ttl_days,
        expires_at, metadata, reason)`` of one line.

        Raises:
            ValueError: the line is corrupt (the message says why).
        """
        try:
            record = _jsonutil.loads(raw)
        except _jsonutil.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON: {exc}") from None
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        op = record.get("op")
        if not isinstance(op, str):
            op = "remember"
        stamp = record.get("timestamp")
        if op == "forget":
            target = record.get("id")
            if not isinstance(target, str):
                raise ValueError("forget record without a string id")
            ts = _ts_us(stamp) if isinstance(stamp, str) else None
            reason = record.get("reason")
            return (op, target, ts, None, None, None, None, None, None, None,
                    reason if isinstance(reason, str) else None)  # fmt: skip
        content = record.get("content")
        if not isinstance(content, str):
            raise ValueError("record has no string 'content'")
        category = record.get("category")
        if category is None:
            category = "general"
        elif not isinstance(category, str):
            raise ValueError("record 'category' is not a string")
        entry_id = record.get("id")
        if not entry_id:
            entry_id = stable_id("log", self.source_file, str(line_offset))
        elif not isinstance(entry_id, str):
            raise ValueError("record 'id' is not a string")
        ts = None
        if isinstance(stamp, str):
            ts = _ts_us(stamp)
            if ts is None:
                raise ValueError(f"invalid timestamp {stamp[:40]!r}")
        importance = _number(record.get("importance"))
        if importance is None or importance != importance:
            importance = 0.5
        importance = min(1.0, max(0.0, importance))
        ttl = _number(record.get("ttl_days"))
        expires = _expires(record.get("expires_at"), ttl, ts)
        metadata = record.get("metadata")
        meta_text = _jsonutil.dumps(metadata).decode() if isinstance(metadata, dict) else None
        persistent = bool(record.get("persistent"))
        return (op, entry_id, ts, category, content, persistent, importance, ttl, expires,
                meta_text, None)  # fmt: skip

    def _batch(self, cols: dict[str, list[Any]]) -> Any:
        pa = self.pa
        arrays = [pa.array(cols[f.name], f.type) for f in self.schema]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    # -- fast path ---------------------------------------------------------------------
    def parse_many(self, pieces: Sequence[tuple[str, str, bytes, int, int]]) -> Any:
        """The rows of many blocks of complete lines as one table, through the fast path
        in one go; None when it refuses (then parse each block with :meth:`parse`).

        Args:
            pieces: ``(root, source_file, data, end, first_line)``: the lines
                ``data[:end]`` of ``source_file`` of ``root``, starting at line
                ``first_line``.
        """
        if not self.fast or not pieces:
            return None
        pa, pc = self.pa, self.pc
        joined = b"".join(d if e == len(d) else d[:e] for _, _, d, e, _ in pieces)
        columns = self._fast_columns(joined, len(joined))
        if columns is None:
            return None
        roots: dict[str, int] = {}
        files: dict[str, int] = {}
        root_index: list[int] = []
        file_index: list[int] = []
        lines: list[int] = []
        for root, source_file, data, end, first in pieces:
            count = data.count(b"\n", 0, end)
            root_index += [roots.setdefault(root, len(roots))] * count
            file_index += [files.setdefault(source_file, len(files))] * count
            lines += range(first, first + count)
        if len(lines) != len(columns[0]):
            return None
        arrays = [
            pc.take(pa.array(list(roots), pa.string()), pa.array(root_index, pa.int32())),
            pc.take(pa.array(list(files), pa.string()), pa.array(file_index, pa.int32())),
            pa.array(lines, pa.int64()),
            *columns,
        ]
        try:
            return pa.Table.from_arrays(arrays, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None

    def _fast(self, data: bytes, end: int, first_line: int) -> Any:
        """The rows of ``data[:end]`` through pyarrow.json, or None to use the reference
        path."""
        pa = self.pa
        columns = self._fast_columns(data, end)
        if columns is None:
            return None
        n = len(columns[0])
        arrays = [
            pa.repeat(pa.scalar(self.root), n),
            pa.repeat(pa.scalar(self.source_file), n),
            pa.array(range(first_line, first_line + n), pa.int64()),
            *columns,
        ]
        try:
            return pa.Table.from_arrays(arrays, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None

    def _fast_columns(self, data: bytes, end: int) -> list[Any] | None:
        """The columns after ``root, source_file, line`` of the rows of ``data[:end]``
        through pyarrow.json, or None to use the reference path."""
        pa, pc = self.pa, self.pc
        n_lines = data.count(b"\n", 0, end)
        if n_lines == 0 or data[end - 1] != 0x0A or not self._plain(data, end):
            return None
        buffer = pa.py_buffer(data)  # no copy
        table = self._read_json(buffer if end == len(data) else buffer.slice(0, end),
                                self.parse_options)  # fmt: skip
        if table is None or table.num_rows != n_lines:
            return None  # blank lines, or two objects on one line
        t = {name: table.column(name) for name in table.column_names}
        n = n_lines
        meta = self._metadata_texts(data, end, t["metadata"])
        if meta is None:
            return None
        op = t["op"]
        ids = t["id"]
        forget = None
        if op.null_count < n:
            op = pc.fill_null(op, "remember")
            is_forget = pc.equal(op, "forget")
            if pc.any_(is_forget).as_py():
                forget = is_forget
        else:
            op = pa.repeat(pa.scalar("remember"), n)
        remember = pc.invert(forget) if forget is not None else None
        content = t["content"]
        imp = t["importance"]
        ttl = t["ttl_days"]
        checks = [pc.is_nan(imp), pc.is_inf(imp), pc.is_nan(ttl), pc.is_inf(ttl)]
        if forget is None:
            checks += [pc.is_null(content), pc.is_null(ids), pc.equal(ids, "")]
        else:
            assert remember is not None
            checks += [
                pc.and_(remember, pc.is_null(content)),
                pc.and_(forget, pc.is_null(ids)),
                pc.and_(remember, pc.or_kleene(pc.is_null(ids), pc.equal(ids, ""))),
            ]
        for check in checks:
            if pc.any_(check).as_py():
                return None  # absent ids need byte offsets; the rest is corrupt or odd
        ts = t["timestamp"]
        category = pc.fill_null(t["category"], "general")
        persistent = pc.fill_null(t["persistent"], False)
        importance = pc.max_element_wise(pc.min_element_wise(pc.fill_null(imp, 0.5), 1.0), 0.0)
        expires = self._expires(ts, t["expires_at"], ttl)
        if expires is None:
            return None
        reason = pa.nulls(n, pa.string())
        if forget is not None:

            def keep(values: Any) -> Any:
                return pc.if_else(forget, pa.nulls(n, values.type), values)

            category, content, persistent, importance = (
                keep(category), keep(content), keep(persistent), keep(importance)
            )  # fmt: skip
            ttl, expires, meta = keep(ttl), keep(expires), keep(meta)
            reason = pc.if_else(forget, t["reason"], reason)
        return [op, ids, ts, category, content, persistent, importance, ttl, expires, meta,
                reason]  # fmt: skip

    def _expires(self, ts: Any, expires_at: Any, ttl: Any) -> Any:
        """``expires_at``, else ``timestamp + ttl_days`` (null outside years 1-9999);
        None when Arrow cannot compute it (the reference path decides)."""
        pa, pc = self.pa, self.pc
        need = pc.and_(pc.and_(pc.is_null(expires_at), pc.is_valid(ttl)), pc.is_valid(ts))
        if not pc.any_(need).as_py():
            return expires_at
        try:
            ttl_needed = pc.if_else(need, ttl, pa.nulls(len(ttl), ttl.type))
            delta = pc.cast(pc.trunc(pc.multiply(ttl_needed, _US_PER_DAY)), pa.int64())
            total = pc.add_checked(pc.cast(ts, pa.int64()), delta)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        in_range = pc.and_(pc.greater_equal(total, _MIN_US), pc.less_equal(total, _MAX_US))
        total = pc.if_else(in_range, total, pa.nulls(len(total), pa.int64()))
        return pc.coalesce(expires_at, pc.cast(total, self.ts_type))

    def _metadata_texts(self, data: bytes, end: int, objects: Any) -> Any:
        """The ``metadata`` column: compact JSON of each row's metadata object; None when
        a line needs the reference path.

        ``objects`` (from pyarrow.json) says which rows have a metadata object. Every
        occurrence of the key in the block must be the last member of its record and
        parse as an object; then the occurrences, in order, are exactly those rows'.
        """
        pa, pc = self.pa, self.pc
        n = len(objects)
        present = pc.is_valid(objects)
        count = n - objects.null_count
        if count == 0:
            return pa.nulls(n, pa.string())
        loads, dumps = _jsonutil.loads, _jsonutil.dumps
        texts: list[str] = []
        for match in _METADATA.finditer(data, 0, end):
            value_text, null = match.groups()
            if null is not None:
                continue  # `"metadata":null` means no metadata, wherever it is
            if value_text is None or data[match.start() - 1] not in _OPEN_OR_COMMA:
                return None
            try:
                value = loads(value_text)
            except _jsonutil.JSONDecodeError:
                return None  # not the last member, or a nested key
            if not isinstance(value, dict):
                return None
            # decode() at once: holding many orjson outputs as bytes is slow.
            texts.append(dumps(value).decode())
        if len(texts) != count:
            return None
        values = pa.array(texts, pa.string())
        position = pc.subtract(pc.cumulative_sum(pc.cast(present, pa.int64())), 1)
        index = pc.if_else(present, position, pa.nulls(n, pa.int64()))
        return pc.take(values, index)


class EventParser(_Base):
    """Parse blocks of one agent event log (``log/<stream>.jsonl``) into ``events`` rows.

    Args:
        root: the store root relative to the export source.
        source_file: the log's path relative to that root.
        carry_date: the partition day of the last event before this block, given to
            leading events without a timestamp.
        default_date: the day for events without a timestamp when nothing precedes them.
        since: drop events of days before this (``YYYY-MM-DD``).
        until: stop before the first event of a day after this.
        fast: allow the fast path.
    """

    def __init__(
        self,
        root: str,
        source_file: str,
        *,
        carry_date: str | None,
        default_date: str,
        since: str | None = None,
        until: str | None = None,
        fast: bool = True,
    ) -> None:
        super().__init__()
        pa = self.pa
        self.root = root
        self.source_file = source_file
        name = source_file.rsplit("/", 1)[-1]
        self.stream_id = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
        self.carry_date = carry_date
        self.default_date = default_date
        self.since = since
        self.until = until
        self.fast = fast
        self.schema = events_schema()
        explicit = pa.schema([("type", pa.string()), ("timestamp", self.ts_type)])
        self.parse_options = self.pj.ParseOptions(
            explicit_schema=explicit, unexpected_field_behavior="ignore"
        )

    def parse(
        self, data: bytes, first_line: int, base_offset: int, end: int | None = None
    ) -> Parsed:
        """Rows of ``data[:end]`` (complete lines); line ``first_line`` starts at byte
        ``base_offset`` of the file. Updates :attr:`carry_date`."""
        if end is not None and end < len(data):
            data = data[:end]
        parsed = self._fast(data, first_line, base_offset) if self.fast else None
        if parsed is None:
            parsed = self._reference(data, first_line, base_offset)
        return parsed

    # -- reference path ----------------------------------------------------------------
    def _reference(self, data: bytes, first_line: int, base_offset: int) -> Parsed:
        types: list[str | None] = []
        stamps: list[int | None] = []
        texts: list[str] = []
        numbers: list[int] = []
        starts: list[int] = []
        corrupt: list[tuple[int, str]] = []
        lines = _split_lines(data)
        for number, line_offset, raw in _numbered(lines, first_line, base_offset):
            text = raw.strip()
            if not text:
                continue
            try:
                event = _jsonutil.loads(text)
            except _jsonutil.JSONDecodeError as exc:
                corrupt.append((number, f"invalid JSON: {exc}"))
                continue
            if not isinstance(event, dict):
                corrupt.append((number, "not a JSON object"))
                continue
            kind = event.get("type")
            types.append(kind if isinstance(kind, str) else None)
            stamps.append(self._event_ts(event.get("timestamp")))
            texts.append(text.decode("utf-8"))
            numbers.append(number)
            starts.append(line_offset)
        pa, pc = self.pa, self.pc
        n = len(texts)
        arrays = [
            pa.repeat(pa.scalar(self.root), n),
            pa.repeat(pa.scalar(self.source_file), n),
            pa.repeat(pa.scalar(self.stream_id), n),
            pa.array(numbers, pa.int64()),
            pa.array(types, pa.string()),
            pc.cast(pa.array(stamps, pa.int64()), self.ts_type),
            pa.array(texts, pa.string()),
        ]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        parsed = self._window(batch, lambda i: starts[i])
        parsed.corrupt = corrupt
        parsed.lines = len(lines)
        return parsed

    @staticmethod
    def _event_ts(value: Any) -> int | None:
        if isinstance(value, str):
            return _ts_us(value)
        seconds = _number(value)
        if seconds is None or seconds != seconds or abs(seconds) > 1e13:
            return None
        us = int(seconds * 1_000_000)
        return us if _MIN_US <= us <= _MAX_US else None

    # -- fast path ---------------------------------------------------------------------
    def _fast(self, data: bytes, first_line: int, base_offset: int) -> Parsed | None:
        pa, pc = self.pa, self.pc
        if not data.endswith(b"\n") or len(data) < 2 or not self._plain(data, len(data)):
            return None
        if (b"NaN" in data or b"Inf" in data) and _NONSTANDARD.search(data):
            return None  # Arrow would accept what orjson (and JSON) refuses
        table = self._read_json(data, self.parse_options)
        if table is None:
            return None
        lines = pc.split_pattern(pa.array([data[:-1]], pa.string()), "\n").values
        n = len(lines)
        if table.num_rows != n:
            return None  # blank lines, or two objects on one line
        texts = pc.utf8_trim_whitespace(lines)
        ts = table.column("timestamp").combine_chunks()
        arrays = [
            pa.repeat(pa.scalar(self.root), n),
            pa.repeat(pa.scalar(self.source_file), n),
            pa.repeat(pa.scalar(self.stream_id), n),
            pa.array(range(first_line, first_line + n), pa.int64()),
            table.column("type").combine_chunks(),
            ts,
            texts,
        ]
        try:
            batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None
        ends: list[int] = []

        def start_of(i: int) -> int:
            if not ends:
                sizes = pc.add(pc.binary_length(lines), 1)
                ends.extend(pc.cumulative_sum(sizes).to_pylist())
            return base_offset + (ends[i - 1] if i else 0)

        parsed = self._window(batch, start_of)
        parsed.fast = True
        parsed.lines = n
        return parsed

    # -- days and the since/until window -----------------------------------------------
    def _window(self, batch: Any, start_of: Any) -> Parsed:
        """Give each row its partition day, cut at ``until`` and drop rows before
        ``since``."""
        pa, pc = self.pa, self.pc
        n = batch.num_rows
        if n == 0:
            return Parsed(batch, dates=pa.array([], pa.string()))
        days = pc.strftime(batch.column("timestamp"), "%Y-%m-%d")
        if days.null_count:
            days = pc.fill_null_forward(days)
            seed = self.carry_date or self.default_date
            days = pc.fill_null(days, seed)
        stop = None
        if self.until is not None:
            after = pc.greater(days, self.until)
            if pc.any_(after).as_py():
                first = pc.index(after, True).as_py()
                stop = (start_of(first), batch.column("line")[first].as_py())
                batch, days = batch.slice(0, first), days.slice(0, first)
        if len(days):
            self.carry_date = days[len(days) - 1].as_py()
        dropped = 0
        if self.since is not None and len(days):
            keep = pc.greater_equal(days, self.since)
            dropped = len(days) - pc.sum_(pc.cast(keep, pa.int64())).as_py()
            if dropped:
                batch, days = pc.filter_(batch, keep), pc.filter_(days, keep)
        return Parsed(batch, dates=days, stop=stop, out_of_window=dropped)


def _expires(raw: Any, ttl: float | None, ts: int | None) -> int | None:
    """A record's expiry in microseconds: its ``expires_at``, else ``timestamp +
    ttl_days`` (None when that leaves the timestamp range).

    Raises:
        ValueError: ``expires_at`` is a string but not a timestamp.
    """
    if isinstance(raw, str):
        expires = _ts_us(raw)
        if expires is None:
            raise ValueError(f"invalid expires_at {raw[:40]!r}")
        return expires
    if ttl is None or ts is None or ttl != ttl or abs(ttl) >= 1e300:
        return None
    expires = ts + int(ttl * _US_PER_DAY)
    return expires if _MIN_US <= expires <= _MAX_US else None
