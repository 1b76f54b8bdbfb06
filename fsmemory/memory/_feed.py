"""Feeding :class:`fsmemory.memory._index.MemoryIndex`: MEMORY.md and log files read
(whole, or from a cursor on when the bytes before it are proven unchanged) and parsed
into rows.

Log lines are indexed column by column when a block of them is all records as fsmemory
writes them (:meth:`Feeding._bulk_feed`), one by one otherwise (forget records, other
fields, corrupt lines). MEMORY.md's bullets are counted per key and handed to the claims
(:mod:`fsmemory.memory._claims`).

:class:`Feeding` is a part of :class:`~fsmemory.memory._index.MemoryIndex` (a mixin), as
:class:`~fsmemory.memory._claims.Claims` is: the index owns the rows.
"""

from __future__ import annotations

import heapq
import operator
from collections import Counter
from datetime import UTC, datetime
from itertools import compress, repeat
from operator import itemgetter, methodcaller
from typing import Any

from fsmemory import _jsonutil
from fsmemory._log import get_logger
from fsmemory._records import NamedTuple
from fsmemory.fs.base import FileInfo, StorageRoot
from fsmemory.memory._claims import HIDDEN, NEVER, PERSISTENT, Key, expiry_us, fact_keys
from fsmemory.memory._fields import IndexFields
from fsmemory.memory._tail import FileCursor, Verified, read_verified
from fsmemory.memory.entry import decode_record, stable_id, us_of
from fsmemory.memory.layout import MEMORY_FILE
from fsmemory.memory.markdown import MemoryDocument, needs_escape

__all__ = ["Feeding"]

# The index's logger: a corrupt line is reported under the name it always was.
logger = get_logger("fsmemory.memory._index")

_PERSISTENT, _HIDDEN, _NEVER = PERSISTENT, HIDDEN, NEVER
# The fields of a record as fsmemory writes it (no metadata): six typed, two null.
_CANONICAL = (
    "id",
    "content",
    "category",
    "timestamp",
    "importance",
    "persistent",
    "ttl_days",
    "expires_at",
)
_canonical_fields = itemgetter(*_CANONICAL)
_FLAGS_OF = (0, _PERSISTENT | _HIDDEN)  # flags of a new log row: not persistent, persistent
_from_iso = datetime.fromisoformat
_BULK_LINES = 1024


def _one(row: int) -> list[int]:
    return [row]


class Feeding(IndexFields):
    """Reading and parsing MEMORY.md and the logs into the rows of
    :class:`~fsmemory.memory._index.MemoryIndex`.

    It holds no state of its own: its fields are the index's, and so are the row
    and claim methods it calls (all declared by
    :class:`~fsmemory.memory._fields.IndexFields`).
    """

    # -- reading -------------------------------------------------------------------------
    def _fetch_whole(self, root: StorageRoot, infos: list[FileInfo]) -> dict[str, bytes]:
        """Files never read before, fetched together (one batch on remote roots)."""
        paths = [
            i.path
            for i in infos
            if (self._md if i.path == MEMORY_FILE else self._logs.get(i.path)) is None
        ]
        # Only where it pays: local roots read a file as fast one at a time, and holding
        # every file at once would only raise the peak memory.
        if len(paths) < 2 or root.capabilities.local_io:
            return {}
        datas = root.read_ranges([(path, 0, None) for path in paths])
        return {p: d for p, d in zip(paths, datas, strict=True) if d is not None}

    def _refresh_md(
        self, root: StorageRoot, info: FileInfo | None, whole: dict[str, bytes] | None = None
    ) -> bool:
        cur = self._md
        if info is None:
            if cur is None and not self._fact_counts:
                return False
            self._md = None
            self._set_document(MemoryDocument())
            return True
        if cur is not None and cur.info.token == info.token:
            return False
        # Read from the cursor on only when the bytes before it are proven unchanged
        # (a CRC-32 of all of them: an edit in place that kept the length is seen).
        got = read_verified(root, cur, info, grows_only=False)
        if got.appended and got.upto < info.size:
            # What was appended ends in a line without its line break (a hand edit):
            # parse the whole file, which parses that line too, as a fresh reader does.
            got = Verified(got.whole, False)
        if not got.appended:
            data = got.data
            if data is None:
                data = (whole or {}).pop(MEMORY_FILE, None)
            if data is None:
                data = _read_or_empty(root, MEMORY_FILE)
            doc = MemoryDocument()
            # A hand-edited file may lack the final newline: parse its last line too, and
            # re-read the whole file on its next change. Bullets share the text strings
            # of the records waiting for them.
            doc.feed_data(data, known={key[1]: key[1] for key in self._pending})
            complete = data.endswith(b"\n") or not data
            self._md = FileCursor.after(info, data, len(data), complete)
            self._set_document(doc)
            return True
        assert cur is not None and got.data is not None
        chunk, upto = got.data, got.upto
        cur.info = info
        if upto > cur.parsed_upto:
            self.feed_md(chunk, cur.parsed_upto, upto)
        return bool(chunk)

    def feed_md(self, chunk: bytes, start: int, end: int) -> None:
        """Parse bullets appended to MEMORY.md between offsets ``start`` and ``end``."""
        cur = self._md
        if cur is None or cur.parsed_upto != start:
            return
        # Counted from the document as it was: of a cache-loaded index the counts are
        # built from it on first use, which must not see the bullets fed below.
        counts = self._fact_counts
        before = {k: len(v) for k, v in self._doc.sections.items()}
        self._doc.feed_data(chunk)
        cur.advance(chunk[: end - start])
        for cat, facts in self._doc.sections.items():
            for fact in facts[before.get(cat, 0) :]:
                key = (cat, fact.text, expiry_us(fact))
                counts[key] += 1
                self._rebalance(key)
        self.generation += 1

    def _set_document(self, doc: MemoryDocument) -> None:
        old_keys = set(self._fact_counts)
        self._doc = doc
        counts = self._fact_counts = Counter(fact_keys(doc.sections))
        if not old_keys and not self._n_claimed and not self._md_rows:
            self._claim_fresh()
            return
        for key in old_keys | set(counts) | set(self._n_claimed) | set(self._pending):
            self._rebalance(key)

    def _refresh_log(self, root: StorageRoot, info: FileInfo, whole: dict[str, bytes]) -> bool:
        cur = self._logs.get(info.path)
        if cur is not None and cur.info.token == info.token:
            return False
        got = read_verified(root, cur, info)
        if not got.appended:
            if cur is not None:
                self._drop_file(info.path)
            data = got.data
            if data is None:
                data = whole.pop(info.path, None) if cur is None else None
            if data is None:
                data = _read_or_empty(root, info.path)
            upto = data.rfind(b"\n") + 1
            self._logs[info.path] = FileCursor.after(info, data, upto)
            self.feed_log(info.path, data[:upto], 0)
            return True
        assert cur is not None and got.data is not None
        chunk = got.data
        cur.info = info
        if chunk:
            self.feed_log(info.path, chunk, cur.parsed_upto)
            cur.advance(chunk)
        return bool(chunk)

    def note_append(self, path: str, offset: int, data: bytes, info: FileInfo | None) -> bool:
        """Account for bytes this process appended at ``offset``.

        Returns True when the index could advance without reading (nothing unread
        before ``offset``); the caller then need not re-read the file.
        """
        cur = self._md if path == MEMORY_FILE else self._logs.get(path)
        if cur is None:
            if offset != 0 or info is None:
                return False
            cur = FileCursor(info, 0, b"", crc=0)
            if path == MEMORY_FILE:
                self._md = cur
            else:
                self._logs[path] = cur
        if cur.parsed_upto != offset:
            return False
        if path == MEMORY_FILE:
            self.feed_md(data, offset, offset + len(data))
        else:
            self.feed_log(path, data, offset)
            cur.advance(data)
        if info is not None:
            cur.info = info
        self.generation += 1
        return True

    # -- parsing -------------------------------------------------------------------------
    def feed_log(self, path: str, chunk: bytes, base_offset: int) -> None:
        """Parse complete JSONL lines of log ``path`` starting at ``base_offset``."""
        # (The cyclic garbage collector is left alone: pausing it is the host's
        # business, and a bulk load measured no faster with it paused.)
        self._feed_log(path, chunk, base_offset)

    def _feed_log(self, path: str, chunk: bytes, base_offset: int) -> None:
        lines = chunk.split(b"\n")
        if chunk.endswith(b"\n"):
            lines.pop()
        offset = base_offset
        # Blocks of lines, so that the bulk path's parsed records stay few at a time.
        for first in range(0, len(lines), _BULK_LINES):
            block = lines[first : first + _BULK_LINES]
            if len(block) < 2 or not self._bulk_feed(path, block):
                self._feed_lines(path, block, offset)
            offset += sum(map(len, block)) + len(block)

    def _feed_lines(self, path: str, lines: list[bytes], offset: int) -> None:
        """Index lines one by one (any record, forget records, corrupt lines)."""
        loads = _jsonutil.loads
        from_iso = datetime.fromisoformat
        row_of, forgotten = self._row_of, self._forgotten
        file_rows = self._file_rows.setdefault(path, [])
        for raw in lines:
            line_offset = offset
            offset += len(raw) + 1
            try:
                record = loads(raw)
                if type(record) is not dict:
                    raise ValueError("not a JSON object")
                get = record.get
                entry_id = get("id")
                if get("op") == "forget":
                    self._feed_forget(entry_id, path)
                    continue
                content = get("content")
                category = get("category")
                stamp = get("timestamp")
                importance = get("importance")
                persistent = get("persistent")
                if (
                    # The record as fsmemory writes it: no normalization needed.
                    type(entry_id) is str
                    and entry_id
                    and type(content) is str
                    and type(category) is str
                    and type(stamp) is str
                    and stamp[-1:] == "Z"
                    and type(importance) is float
                    and 0.0 <= importance <= 1.0
                    and type(persistent) is bool
                    and get("ttl_days") is None
                    and get("expires_at") is None
                    and not get("metadata")
                ):
                    created = round(from_iso(stamp).timestamp() * 1e6)
                    expires = None
                    extras = None
                else:
                    (
                        entry_id,
                        content,
                        category,
                        importance,
                        persistent,
                        created,
                        expires,
                        extras,
                    ) = _decoded(record, entry_id, path, line_offset)
            except (ValueError, TypeError, OverflowError) as exc:
                self._skip_corrupt(path, raw, line_offset, exc)
                continue
            if entry_id in forgotten or entry_id in row_of:
                continue
            row = self._new_row(
                entry_id, content, category, created, expires, importance, persistent
            )
            if extras is not None:
                self._extras[row] = extras
            file_rows.append(row)
            self._add_log_row(row)

    def _feed_forget(self, entry_id: Any, path: str) -> None:
        """Apply a forget record of log ``path`` (``ValueError``: it names no id)."""
        if not isinstance(entry_id, str):
            raise ValueError("forget record without id")
        self.forget(entry_id, path)

    def _skip_corrupt(self, path: str, raw: bytes, offset: int, exc: Exception) -> None:
        """Count and report a line that is no record (a blank line is no line at all)."""
        if not raw.strip():
            return
        self._corrupt[path] = self._corrupt.get(path, 0) + 1
        logger.warning("skipping corrupt line at %s:%d (%s)", path, offset, exc)

    def _bulk_feed(self, path: str, lines: list[bytes]) -> bool:
        """Index many lines column by column (C-level passes instead of a Python loop per
        line) when every one is a record as fsmemory writes it and nothing else is
        waiting; False (nothing done) otherwise, and the line-by-line path takes them.
        """
        if self._fact_counts or self._md_rows or self._content_counts is not None:
            return False
        block = _canonical_block(lines)
        if (
            block is None
            or not self._row_of.keys().isdisjoint(block.ids)
            or not self._forgotten.keys().isdisjoint(block.ids)
        ):
            return False
        base = len(self._ids)
        waiting = self._waiting_facts(block, base)
        if waiting is None:
            return False
        created = block.created
        if created != sorted(created) or (self._tl_stamp and created[0] < self._tl_stamp[-1]):
            return False  # (the timeline would need sorting)
        self._append_block(path, block, base, waiting)
        return True

    def _waiting_facts(self, block: _Block, base: int) -> tuple[list[Key], list[int]] | None:
        """The keys of the persistent records of ``block`` (their rows from ``base`` on)
        that wait for a bullet, and their rows; None when one of them needs the
        line-by-line path (text to strip or escape, a key already waiting or twice)."""
        persistent = block.persistent
        if not any(persistent):
            return [], []
        texts = list(compress(block.contents, persistent))
        # One search over all texts: a space cannot join two halves of "<!--".
        if list(map(str.strip, texts)) != texts or needs_escape(" ".join(texts)):
            return None
        keys = list(
            zip(compress(block.cats, persistent), texts, repeat(_NEVER, len(texts)), strict=True)
        )
        if not self._pending.keys().isdisjoint(keys) or len(set(keys)) != len(keys):
            return None
        return keys, list(compress(range(base, base + len(persistent)), persistent))

    def _append_block(
        self, path: str, block: _Block, base: int, waiting: tuple[list[Key], list[int]]
    ) -> None:
        """Add the rows of a checked block of log ``path`` (see :meth:`_bulk_feed`)."""
        ids, created, persistent = block.ids, block.created, block.persistent
        keys, persistent_rows = waiting
        rows = range(base, base + len(ids))
        self._ids.extend(ids)
        self._contents.extend(block.contents)
        self._cats.extend(map(self._interned.setdefault, block.cats, block.cats))
        self._created.extend(created)
        self._expires.extend(repeat(_NEVER, len(ids)))
        self._importance.extend(block.importance)
        self._flags.extend(map(_FLAGS_OF.__getitem__, persistent))
        self._row_of.update(zip(ids, rows, strict=True))
        if self._ranker is not None:  # (a log read again whole by a searched index)
            self._unranked.extend(rows)
        self._file_rows.setdefault(path, []).extend(rows)
        self._tl_stamp.extend(created)
        self._tl_row.extend(rows)
        self._pending.update(zip(keys, map(_one, persistent_rows), strict=True))
        self._n_hidden += len(persistent_rows)
        if self._evict_heap is not None:
            for row in rows:
                if not self._flags[row] & _PERSISTENT:
                    heapq.heappush(self._evict_heap, self._evict_item(row))


class _Block(NamedTuple):
    """A block of log lines that are all records as fsmemory writes them, by column."""

    ids: tuple[str, ...]
    contents: tuple[str, ...]
    cats: tuple[str, ...]
    created: list[int]
    importance: tuple[float, ...]
    persistent: tuple[bool, ...]


def _canonical_block(lines: list[bytes]) -> _Block | None:
    """``lines`` by column when every one is a record exactly as fsmemory writes it
    (the fields of ``_CANONICAL``, typed, no TTL or expiry, distinct non-empty ids);
    None otherwise."""
    try:
        records = _jsonutil.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        return None
    if set(map(type, records)) != {dict} or set(map(len, records)) != {len(_CANONICAL)}:
        return None
    try:
        columns = list(zip(*map(_canonical_fields, records), strict=True))
    except KeyError:  # another set of fields (an op, metadata, ...)
        return None
    ids, contents, cats, stamps, importance, persistent, ttl, expiry = columns
    if (
        set(ttl) != {None}
        or set(expiry) != {None}
        or set(map(type, ids)) != {str}
        or set(map(type, contents)) != {str}
        or set(map(type, cats)) != {str}
        or set(map(type, stamps)) != {str}
        or set(map(type, importance)) != {float}
        or set(map(type, persistent)) - {bool}
        or set(map(itemgetter(-1), stamps)) != {"Z"}
        or min(importance) < 0.0
        or max(importance) > 1.0
        or min(map(len, ids)) == 0
        or len(set(ids)) != len(ids)
    ):
        return None
    try:
        seconds = map(methodcaller("timestamp"), map(_from_iso, stamps))
        created = list(map(round, map(operator.mul, seconds, repeat(1e6))))
    except ValueError:
        return None
    return _Block(ids, contents, cats, created, importance, persistent)


def _decoded(
    record: dict[str, Any], entry_id: Any, path: str, offset: int
) -> tuple[
    str, str, str, float, bool, int, int | None, tuple[float | None, dict[str, Any] | None] | None
]:
    """A record not as fsmemory writes it, normalised (``ValueError``, ``TypeError``:
    a corrupt line): its id (from its place in the log when it has none), content,
    category, importance, persistence, creation and expiry times, and its TTL and
    metadata when it has either."""
    decoded = decode_record(
        record, default_id="" if entry_id else stable_id("log", path, str(offset))
    )
    created = us_of(datetime.now(tz=UTC)) if decoded.created_us is None else decoded.created_us
    extras = (
        (decoded.ttl_days, decoded.metadata)
        if decoded.ttl_days is not None or decoded.metadata
        else None
    )
    return (
        decoded.id,
        decoded.content,
        decoded.category,
        decoded.importance,
        decoded.persistent,
        created,
        decoded.expires_us,
        extras,
    )


def _read_or_empty(root: StorageRoot, path: str) -> bytes:
    try:
        return root.read_bytes(path)
    except FileNotFoundError:
        return b""
