"""The prompt block of :meth:`KnowledgeMemory.build_context`, rendered from parsed parts.

::

    [Long-term Memory]
    ## <category>
    - <fact>

    [Recent Memory]
    - [YYYY-MM-DD HH:MM] (<category>) <content>

Content is rendered on one line (newlines escaped), so remembered text cannot open a
section or forge a bullet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from datetime import datetime
from functools import cache, partial
from operator import itemgetter
from typing import Any

from fsmemory import _jsonutil
from fsmemory._log import get_logger
from fsmemory.fs.base import FileInfo, StorageRoot
from fsmemory.memory._index import MemoryIndex
from fsmemory.memory.entry import datetime_of, decode_record, format_timestamp, us_of
from fsmemory.memory.layout import MEMORY_FILE, log_date
from fsmemory.memory.markdown import Fact, MemoryDocument, blocks_of, escape_line, plain_spans

__all__ = [
    "Contexts",
    "Recent",
    "fact_texts",
    "newest_from_logs",
    "plain_facts",
    "render_context",
]

logger = get_logger(__name__)

# A fresh process's build_context() also reads this much of the end of the log before
# the ones it reads whole (forget records of writers whose clock ran behind).
_TAIL_BLOCK = 64 * 1024

#: A recent entry: ``(created_at, category, content, expires_us or None)``.
Recent = tuple[datetime, str, str, int | None]


class Contexts:
    """Renders :meth:`KnowledgeMemory.build_context` and keeps the last text until the
    memory changes, the minute turns, or the first expiry it shows passes."""

    def __init__(self) -> None:
        self._indexed: tuple[int, str, datetime | None, str] | None = None
        self._cold: tuple[tuple[Any, ...], str, datetime | None, str] | None = None

    def indexed(
        self, index: MemoryIndex, now: datetime, *, max_entries: int, max_chars: int | None
    ) -> str:
        """The context from the index (cached by the index's generation)."""
        minute = now.strftime("%Y-%m-%d %H:%M")
        cache = self._indexed
        if _fresh(cache, (index.generation, minute), now):
            assert cache is not None
            return cache[3]
        text, valid_until = render_context(
            index.document,
            index.newest_texts(now),
            now,
            max_entries=max_entries,
            max_chars=max_chars,
        )
        self._indexed = (index.generation, minute, valid_until, text)
        return text

    def cold(
        self,
        root: StorageRoot,
        listing: Sequence[FileInfo],
        now: datetime,
        *,
        max_entries: int,
        max_chars: int | None,
    ) -> str | None:
        """The context of an instance that has indexed nothing: MEMORY.md and the newest
        logs only (:func:`newest_from_logs`), cached by the listing (None: the index is
        needed). A plain MEMORY.md (:func:`~fsmemory.memory.markdown.plain_blocks`, the
        form fsmemory writes) is cut into sections without parsing a bullet at a time."""
        signature = tuple((i.path, i.token, i.size) for i in listing)
        minute = now.strftime("%Y-%m-%d %H:%M")
        cache = self._cold
        if _fresh(cache, (signature, minute), now):
            assert cache is not None
            return cache[3]
        md = next((i for i in listing if i.path == MEMORY_FILE), None)
        data = root.read_bytes(MEMORY_FILE) if md is not None else b""
        facts: MemoryDocument | Mapping[str, str] | None = {}
        if data:
            facts = plain_facts(data)
        if facts is None:
            facts = MemoryDocument()
            facts.feed_data(data)
        logs = [i for i in listing if log_date(i.path) is not None]
        newest = newest_from_logs(root, logs, partial(fact_texts, facts), now, max_entries)
        if newest is None:
            return None
        text, valid_until = render_context(
            facts, newest, now, max_entries=max_entries, max_chars=max_chars
        )
        self._cold = (signature, minute, valid_until, text)
        return text


def plain_facts(data: bytes) -> dict[str, str] | None:
    """:func:`~fsmemory.memory.markdown.plain_blocks` of MEMORY.md's bytes ``data``
    (None: the file is not plain and is parsed)."""
    spans = plain_spans(data)
    return None if spans is None else blocks_of(data, spans)


def _fresh(
    cache: tuple[Any, str, datetime | None, str] | None, key: tuple[Any, str], now: datetime
) -> bool:
    return cache is not None and cache[:2] == key and (cache[2] is None or now < cache[2])


def fact_texts(facts: MemoryDocument | Mapping[str, str], category: str) -> Container[str]:
    """The texts (escaped, as in the file) of the facts without an expiry of one category
    of MEMORY.md, parsed or as :func:`~fsmemory.memory.markdown.plain_blocks`: the
    bullets a persistent record without expiry can claim (a bullet with an expiry
    comment belongs to a record of that expiry)."""
    if isinstance(facts, MemoryDocument):
        return {f.text for f in facts.sections.get(category, ()) if f.expires_at is None}
    return _BlockFacts(facts.get(category, ""))


class _BlockFacts:
    """``text in facts`` for one plain block (``- a\\n- b``) without splitting it: the
    facts a fresh process asks about are the newest ones, at the end of their section,
    so the block is searched backwards."""

    __slots__ = ("_block",)

    def __init__(self, block: str) -> None:
        self._block = block

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        block, needle = self._block, "- " + text
        end = len(block)
        while (at := block.rfind(needle, 0, end)) >= 0:
            after = at + len(needle)
            if (at == 0 or block[at - 1] == "\n") and (after == len(block) or block[after] == "\n"):
                return True
            end = after - 1
        return False


def render_context(
    facts: MemoryDocument | Mapping[str, str],
    newest: Iterable[Recent],
    now: datetime,
    *,
    max_entries: int,
    max_chars: int | None,
) -> tuple[str, datetime | None]:
    """The context text and the moment it stops being valid (the first expiry of a
    fact or entry it shows; None: valid until the memory changes).

    Args:
        facts: MEMORY.md as parsed (facts expired at ``now`` are left out), or its
            plain blocks (:func:`~fsmemory.memory.markdown.plain_blocks`), shown as
            they are.
        newest: live log entries, newest first (only the first ``max_entries`` are read).
        now: the current time.
        max_entries: how many recent entries to show.
        max_chars: when set, the oldest recent entries, then the last facts, are dropped
            until the text fits.
    """
    if isinstance(facts, MemoryDocument):
        long_term, facts_until = _fact_lines(facts.sections, now, whole=max_chars is None)
    else:
        long_term, facts_until = _block_lines(facts, whole=max_chars is None), None
    while long_term and not long_term[-1]:
        long_term.pop()
    recent, recent_until = _recent_lines(newest, max_entries)
    valid_until = facts_until if recent_until is None else _earliest(facts_until, recent_until)
    return _fit(long_term, recent, max_chars), valid_until


def _block_lines(blocks: Mapping[str, str], *, whole: bool) -> list[str]:
    """The long-term lines of MEMORY.md's plain blocks (``whole``: a block stays one
    string, as nothing will be cut from it)."""
    long_term: list[str] = []
    for cat, block in blocks.items():
        if whole:
            long_term += [f"## {cat}", block, ""]  # (a block is copied once, by the join)
        else:
            long_term += [f"## {cat}", *block.split("\n"), ""]
    return long_term


def _fact_lines(
    sections: Mapping[str, Sequence[Fact]], now: datetime, *, whole: bool
) -> tuple[list[str], datetime | None]:
    """The long-term lines of MEMORY.md's parsed sections (facts expired at ``now``
    left out) and the first expiry of a fact shown (``whole``: a section without
    expiries is one string, as nothing will be cut from it)."""
    valid_until: datetime | None = None
    long_term: list[str] = []
    for cat, bullets in sections.items():
        if whole and all(fact.expires_at is None for fact in bullets):
            # One block per section: no string per fact is made (at 100k entries
            # MEMORY.md holds tens of thousands of bullets).
            if bullets:
                long_term.append(f"## {cat}\n- " + "\n- ".join(map(itemgetter(0), bullets)))
                long_term.append("")
            continue
        lines = []
        for fact in bullets:
            if fact.expires_at is not None:
                if fact.expires_at <= now:
                    continue
                valid_until = _earliest(valid_until, fact.expires_at)
            lines.append(f"- {fact.text}")
        if lines:
            long_term.append(f"## {cat}")
            long_term.extend(lines)
            long_term.append("")
    return long_term, valid_until


def _recent_lines(newest: Iterable[Recent], max_entries: int) -> tuple[list[str], datetime | None]:
    """The recent lines (oldest first) of the first ``max_entries`` of ``newest``, and
    the first expiry among them."""
    valid_until: datetime | None = None
    recent: list[str] = []
    if not max_entries:
        return recent, None
    for created_at, category, content, expires_us in newest:
        if expires_us is not None:
            valid_until = _earliest(valid_until, datetime_of(expires_us))
        stamp = created_at.strftime("%Y-%m-%d %H:%M")
        recent.append(f"- [{stamp}] ({category}) {escape_line(content)}")
        if len(recent) >= max_entries:
            break
    recent.reverse()
    return recent, valid_until


def _fit(long_term: list[str], recent: list[str], max_chars: int | None) -> str:
    """The context text, the oldest recent lines, then the last facts dropped until it
    is at most ``max_chars`` long (the lists are cut in place)."""
    text = _assemble(long_term, recent)
    if max_chars is None or len(text) <= max_chars:
        return text
    while recent and len(text) > max_chars:
        recent.pop(0)
        text = _assemble(long_term, recent)
    while long_term and len(text) > max_chars:
        long_term.pop()
        while long_term and (not long_term[-1] or long_term[-1].startswith("## ")):
            long_term.pop()
        text = _assemble(long_term, recent)
    return text


def _assemble(long_term: list[str], recent: list[str]) -> str:
    # One join: the long-term block can be megabytes, so no intermediate copies.
    lines: list[str] = []
    if long_term:
        lines += ["[Long-term Memory]", *long_term]
    if recent:
        lines += ["", "[Recent Memory]", *recent] if lines else ["[Recent Memory]", *recent]
    return "\n".join(lines)


def _earliest(current: datetime | None, candidate: datetime) -> datetime:
    return candidate if current is None or candidate < current else current


@cache
def _head() -> re.Pattern[bytes]:
    """The start of a log line exactly as fsmemory writes it (after the line break
    before it): its id, then its timestamp in the one fixed-width form (so the strings
    sort as the moments do). Compiled on first use."""
    return re.compile(
        rb'\n\{"id":"([^"\\]+)","timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)"'
    )


class _LogScan:
    """The records of one daily log that recency needs."""

    __slots__ = ("forgotten", "ids", "lines", "order", "path", "stamps")

    def __init__(self, path: str, lines: list[bytes]) -> None:
        self.path = path
        self.lines = lines
        #: The line numbers of the entries, newest first (by timestamp; equal ones the
        #: last line first, as the index orders them).
        self.order: list[int] = []
        #: The id (UTF-8) and canonical timestamp of each entry line, by line number.
        self.ids: dict[int, bytes] | list[bytes] = {}
        self.stamps: dict[int, bytes] | list[bytes] = {}
        #: The ids (UTF-8) its forget records name.
        self.forgotten: set[bytes] = set()


def _key(entry_id: str) -> bytes:
    return entry_id.encode("utf-8", "surrogatepass")


def _scan_log(path: str, data: bytes, date: str) -> _LogScan | None:
    """Scan the complete lines of one log (None: only the whole index can decide: a
    record without an id, or dated on another day than its log)."""
    body = data[: data.rfind(b"\n") + 1]  # a last line still being written waits
    lines = body.split(b"\n")
    lines.pop()
    scan = _LogScan(path, lines)
    head = _head()
    heads = head.findall(body)  # (the lines after the first)
    if lines:
        heads[:0] = head.findall(b"\n" + lines[0] + b"\n")
    day = f"{date}T".encode()
    if (
        len(heads) == len(lines)
        and b'"op"' not in body
        and b"\\u" not in body
        and body.count(b'"timestamp"') == len(lines)
        and body.count(b'"id"') == len(lines)
    ):
        # Every line is an entry as fsmemory writes it on this date, with one id and
        # one timestamp (no escapes, so no hidden key) and no forget record among them:
        # the heads say all that recency needs.
        scan.ids = [h[0] for h in heads]
        in_line = scan.stamps = [h[1] for h in heads]
        if in_line and not min(in_line)[:11] == day == max(in_line)[:11]:
            return None
        scan.order = sorted(range(len(in_line)), key=in_line.__getitem__)  # (linear in order)
        scan.order.reverse()
        return scan
    return _scan_records(scan, day)


def _scan_records(scan: _LogScan, day: bytes) -> _LogScan | None:
    """Fill ``scan`` by parsing each of its lines (a log not all of whose lines are
    entries as fsmemory writes them on ``day``; None: see :func:`_scan_log`)."""
    ids: dict[int, bytes] = {}
    stamps: dict[int, bytes] = {}
    for i, raw in enumerate(scan.lines):
        if not raw.strip():
            continue
        try:
            record = _jsonutil.loads(raw)
        except ValueError:
            continue
        if type(record) is not dict:
            continue
        entry_id = record.get("id")
        if record.get("op") == "forget":
            if isinstance(entry_id, str):
                scan.forgotten.add(_key(entry_id))
            continue
        if not entry_id:
            return None  # its id depends on its offset: leave it to the index
        try:
            rec = decode_record(record)
        except ValueError:
            continue
        if rec.created_us is None:
            return None  # dated "now" by the index
        stamp = format_timestamp(datetime_of(rec.created_us)).encode()
        if stamp[:11] != day:
            return None
        ids[i] = _key(rec.id)
        stamps[i] = stamp
    scan.ids, scan.stamps = ids, stamps
    scan.order = sorted(ids, key=stamps.__getitem__)
    scan.order.reverse()
    return scan


def _tail_forgets(block: bytes, whole: bool) -> set[bytes]:
    """The ids named by forget records in ``block``, the end of a log (``whole``: the
    block starts the file)."""
    if b'"op"' not in block and b"\\u" not in block:
        return set()
    lines = block.split(b"\n")
    if not whole:
        lines.pop(0)  # (a partial line)
    ids: set[bytes] = set()
    for raw in lines:
        if b'"op"' not in raw and b"\\u" not in raw:
            continue
        try:
            record = _jsonutil.loads(raw)
        except ValueError:
            continue
        if type(record) is dict and record.get("op") == "forget":
            entry_id = record.get("id")
            if isinstance(entry_id, str):
                ids.add(_key(entry_id))
    return ids


class _Undecidable(Exception):
    """What was read holds what only the whole index can decide."""


def newest_from_logs(
    root: StorageRoot,
    logs: Sequence[FileInfo],
    texts_of: Callable[[str], Container[str]],
    now: datetime,
    count: int,
) -> list[Recent] | None:
    """The ``count`` newest live log entries, as the index's ``newest`` picks them
    (the latest timestamps; equal ones by log name, then line, the last first),
    reading the newest logs only.

    What a fresh process's ``build_context()`` needs, without indexing the memory. The
    logs are read whole, newest first, until they hold ``count`` live entries: a log
    holds the records of its own UTC date (fsmemory writes each record to the log of
    its timestamp; a log read here that breaks this is left to the index), so older
    logs cannot hold a later entry. A forget record is never in an older log than its
    entry (:meth:`KnowledgeMemory.forget` writes it to the entry's log when that one is
    dated later); for records written before that rule, the end of the next older log
    is read too. TTLs and MEMORY.md claims are honoured: a persistent record is shown
    while a bullet of its category and text exists. Returns None when what is read
    holds what only the whole index can decide (the same id or the same persistent
    fact twice, a live persistent record with an expiry, a record without an id or
    dated on another day than its log).

    Args:
        root: the memory root.
        logs: the daily logs of one listing.
        texts_of: the fact texts of a category of MEMORY.md (see :func:`fact_texts`).
        now: the current time.
        count: how many entries to return.
    """
    if count <= 0:
        return []
    picker = _Picker(texts_of, us_of(now))
    ordered = sorted(logs, key=lambda i: i.path, reverse=True)
    for read, info in enumerate(ordered):
        requests: list[tuple[str, int, int | None]] = [(info.path, 0, info.size)]
        older = ordered[read + 1] if read + 1 < len(ordered) else None
        if older is not None:
            # Forget records an older writer put in the log before (its clock running
            # behind) sit at its end: read with this log, in one round trip.
            requests.append((older.path, max(0, older.size - _TAIL_BLOCK), older.size))
        blobs = root.read_ranges(requests)
        date = log_date(info.path)
        if blobs[0] is None or date is None:
            return None
        try:
            picker.add(_scan_log(info.path, blobs[0], date))
            if older is not None and blobs[1] is not None:
                picker.forget(_tail_forgets(blobs[1], older.size <= _TAIL_BLOCK))
            out = picker.pick(count)
        except _Undecidable:
            return None
        if len(out) >= count:
            return out
    try:
        return picker.pick(count)
    except _Undecidable:
        return None


class _Picker:
    """The newest live entries of the logs read so far (added newest log first)."""

    def __init__(self, texts_of: Callable[[str], Container[str]], now_us: int) -> None:
        self._texts_of = texts_of
        self._now_us = now_us
        self._scans: list[_LogScan] = []
        self._ids: set[bytes] = set()
        self._forgotten: set[bytes] = set()
        self._decoded: dict[tuple[str, int], tuple[Recent, bool] | None] = {}
        self._bullets: dict[str, Container[str]] = {}

    def add(self, scan: _LogScan | None) -> None:
        """Take the entries and forget records of the next older log."""
        if scan is None:
            raise _Undecidable
        new_ids = scan.ids.values() if isinstance(scan.ids, dict) else scan.ids
        if len(set(new_ids)) != len(new_ids) or not self._ids.isdisjoint(new_ids):
            raise _Undecidable  # the same id twice: the first one read wins in the index
        self._ids.update(new_ids)
        self._scans.append(scan)
        self._forgotten |= scan.forgotten

    def forget(self, ids: set[bytes]) -> None:
        """Take forget records found elsewhere."""
        self._forgotten |= ids

    def pick(self, count: int) -> list[Recent]:
        """The first ``count`` live entries, newest first (the logs are of distinct
        dates, each one's entries of its own, so the newest log's come first)."""
        out: list[Recent] = []
        seen_facts: set[tuple[str, str]] = set()
        forgotten, decoded = self._forgotten, self._decoded
        for scan in self._scans:
            path, ids, stamps = scan.path, scan.ids, scan.stamps
            for line in scan.order:
                entry_id = ids[line]
                if entry_id in forgotten:
                    continue
                key = (path, line)
                if key in decoded:
                    got = decoded[key]
                else:
                    got = decoded[key] = _decode(scan.lines[line], entry_id, stamps[line])
                if got is None:
                    continue  # (a line the index skips too)
                recent, persistent = got
                _created, category, content, expires_us = recent
                if expires_us is not None and expires_us <= self._now_us:
                    continue
                if persistent:
                    if expires_us is not None:
                        raise _Undecidable  # whether a bullet of its own expiry claims it
                    fact = (category, escape_line(content.strip()))
                    if fact in seen_facts:
                        raise _Undecidable  # which record a bullet belongs to
                    seen_facts.add(fact)
                    texts = self._bullets.get(category)
                    if texts is None:
                        texts = self._bullets[category] = self._texts_of(category)
                    if fact[1] not in texts:
                        continue
                out.append(recent)
                if len(out) >= count:
                    return out
        return out


def _decode(raw: bytes, entry_id: bytes, stamp: bytes) -> tuple[Recent, bool] | None:
    """One entry line as a recent entry and whether it is persistent (None: a line the
    index skips as corrupt)."""
    try:
        record = _jsonutil.loads(raw)
        if type(record) is not dict:
            return None
        rec = decode_record(record)
    except (ValueError, TypeError):
        return None
    if _key(rec.id) != entry_id or rec.created_us is None:
        raise _Undecidable
    created = datetime_of(rec.created_us)
    written = record.get("timestamp")
    if not (type(written) is str and written.encode() == stamp) and (
        format_timestamp(created).encode() != stamp
    ):
        raise _Undecidable
    return (created, rec.category, rec.content, rec.expires_us), rec.persistent
