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

import logging
import zlib
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from operator import itemgetter
from typing import Any

import orjson

from fsmemory import _jsonutil
from fsmemory.errors import FsMemoryError
from fsmemory.fs.base import FileInfo, StorageRoot
from fsmemory.memory._index import MemoryIndex
from fsmemory.memory.entry import datetime_of, decode_record, stable_id, us_of
from fsmemory.memory.layout import MEMORY_FILE, log_date
from fsmemory.memory.markdown import MemoryDocument, blocks_of, escape_line, plain_spans

__all__ = [
    "PLAIN_CACHE",
    "PLAIN_CACHE_MIN_BYTES",
    "Contexts",
    "Recent",
    "fact_texts",
    "newest_from_tails",
    "plain_facts",
    "render_context",
]

logger = logging.getLogger(__name__)

# A fresh process's build_context() reads the logs backwards in blocks of this size.
_TAIL_BLOCK = 64 * 1024

#: The cache file (``StorageRoot.read_cache``) that keeps where a plain MEMORY.md's
#: sections are, so a fresh process checks one CRC instead of every line.
PLAIN_CACHE = "context"
#: MEMORY.md files smaller than this are checked line by line faster than the cache
#: file is read: no cache is looked for or written.
PLAIN_CACHE_MIN_BYTES = 64 * 1024
_PLAIN_MAGIC = b"fsmemory-plain 1\n"

#: A recent entry: ``(created_at, category, content, expires_us or None)``.
Recent = tuple[datetime, str, str, int | None]


class Contexts:
    """Renders :meth:`KnowledgeMemory.build_context` and keeps the last text until the
    memory changes, the minute turns, or the first expiry it shows passes."""

    def __init__(self, *, use_cache: bool = True) -> None:
        self.use_cache = use_cache
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
        """The context of an instance that has indexed nothing: MEMORY.md and the ends of
        the newest logs only, cached by the listing (None: the index is needed). A plain
        MEMORY.md (:func:`~fsmemory.memory.markdown.plain_blocks`, the form fsmemory
        writes) is cut into sections without parsing a bullet at a time."""
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
            assert md is not None
            facts = plain_facts(root, data, md.token, use_cache=self.use_cache)
        if facts is None:
            facts = MemoryDocument()
            facts.feed_data(data)
        logs = [i for i in listing if log_date(i.path) is not None]
        newest = newest_from_tails(root, logs, partial(fact_texts, facts), now, max_entries)
        if newest is None:
            return None
        text, valid_until = render_context(
            facts, newest, now, max_entries=max_entries, max_chars=max_chars
        )
        self._cold = (signature, minute, valid_until, text)
        return text


def plain_facts(
    root: StorageRoot, data: bytes, token: str, *, use_cache: bool = True
) -> dict[str, str] | None:
    """:func:`~fsmemory.memory.markdown.plain_blocks` of MEMORY.md's bytes ``data``
    (change token ``token``), with the verdict kept in the root's cache file
    ``.fsmemory-cache.context`` on a local root for files of
    :data:`PLAIN_CACHE_MIN_BYTES` or more.

    The cache holds the size, CRC-32 and change token of the file it describes and
    its sections' byte spans. It is used only when all three match ``data`` and every
    span starts a line with a bullet and cuts the bytes at character boundaries, so
    any edit (by hand or by another writer) is checked line by line again; deleting
    it changes no answer. Remote roots never use it: a second request costs more than
    the check.
    """
    cached = use_cache and root.capabilities.local_io and len(data) >= PLAIN_CACHE_MIN_BYTES
    if cached:
        blocks = _cached_blocks(root, data, token)
        if blocks is not None:
            return blocks
    spans = plain_spans(data)
    if spans is None:
        return None
    if cached:
        record = {"size": len(data), "crc32": zlib.crc32(data), "token": token, "spans": spans}
        try:
            root.write_cache(PLAIN_CACHE, _PLAIN_MAGIC + orjson.dumps(record))
        except (OSError, FsMemoryError) as exc:
            logger.info("plain MEMORY.md cache of %s not written: %s", root, exc)
    return blocks_of(data, spans)


def _cached_blocks(root: StorageRoot, data: bytes, token: str) -> dict[str, str] | None:
    """The blocks the cache file records for exactly these bytes; None when there is
    no such file or it describes other bytes or is damaged."""
    try:
        raw = root.read_cache(PLAIN_CACHE)
    except (OSError, FsMemoryError) as exc:
        logger.info("plain MEMORY.md cache of %s not read: %s", root, exc)
        return None
    if not raw or not raw.startswith(_PLAIN_MAGIC):
        return None
    try:
        record = orjson.loads(memoryview(raw)[len(_PLAIN_MAGIC) :])
        if (
            type(record) is not dict
            or record.get("size") != len(data)
            or record.get("token") != token
            or record.get("crc32") != zlib.crc32(data)
        ):
            return None
        spans: list[tuple[str, int, int]] = []
        previous = 0
        for name, start, end in record["spans"]:
            if (
                type(name) is not str
                or type(start) is not int
                or type(end) is not int
                or not previous < start < end <= len(data)
                or data[start - 1] != 0x0A
                or not data.startswith(b"- ", start)
            ):
                return None
            spans.append((name, start, end))
            previous = end
        blocks = blocks_of(data, spans)
    except (ValueError, TypeError, KeyError):  # (UnicodeDecodeError is a ValueError)
        return None
    return blocks if len(blocks) == len(spans) else None


def _fresh(
    cache: tuple[Any, str, datetime | None, str] | None, key: tuple[Any, str], now: datetime
) -> bool:
    return cache is not None and cache[:2] == key and (cache[2] is None or now < cache[2])


def fact_texts(facts: MemoryDocument | Mapping[str, str], category: str) -> Container[str]:
    """The fact texts (escaped, as in the file) of one category of MEMORY.md, parsed or
    as :func:`~fsmemory.memory.markdown.plain_blocks`."""
    if isinstance(facts, MemoryDocument):
        return set(map(itemgetter(0), facts.sections.get(category, ())))
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
    valid_until: datetime | None = None
    long_term: list[str] = []
    if not isinstance(facts, MemoryDocument):
        for cat, block in facts.items():
            if max_chars is None:
                long_term += [f"## {cat}", block, ""]  # (a block is copied once, by the join)
            else:
                long_term += [f"## {cat}", *block.split("\n"), ""]
        sections = {}
    else:
        sections = facts.sections
    for cat, bullets in sections.items():
        if max_chars is None and all(fact.expires_at is None for fact in bullets):
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
    recent: list[str] = []
    if max_entries:
        for created_at, category, content, expires_us in newest:
            if expires_us is not None:
                valid_until = _earliest(valid_until, datetime_of(expires_us))
            stamp = created_at.strftime("%Y-%m-%d %H:%M")
            recent.append(f"- [{stamp}] ({category}) {escape_line(content)}")
            if len(recent) >= max_entries:
                break
        recent.reverse()
    while long_term and not long_term[-1]:
        long_term.pop()
    text = _assemble(long_term, recent)
    if max_chars is not None and len(text) > max_chars:
        while recent and len(text) > max_chars:
            recent.pop(0)
            text = _assemble(long_term, recent)
        while long_term and len(text) > max_chars:
            long_term.pop()
            while long_term and (not long_term[-1] or long_term[-1].startswith("## ")):
                long_term.pop()
            text = _assemble(long_term, recent)
    return text, valid_until


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


def newest_from_tails(
    root: StorageRoot,
    logs: Sequence[FileInfo],
    texts_of: Callable[[str], Container[str]],
    now: datetime,
    count: int,
) -> list[Recent] | None:
    """The ``count`` newest live log entries, read from the ends of the logs only.

    What a fresh process's ``build_context()`` needs, without indexing the memory: the
    logs are read backwards, newest first, block by block, until ``count`` live entries
    are found. Forget records (always newer than what they forget), TTLs and MEMORY.md
    claims are honoured: a persistent record is shown while a bullet of its category
    and text exists. Returns None when the window holds what only the whole index can
    decide (the same id or the same persistent fact twice): the caller then indexes.

    Args:
        root: the memory root.
        logs: the daily logs of one listing.
        texts_of: the fact texts of a category of MEMORY.md (see :func:`fact_texts`).
        now: the current time.
        count: how many entries to return.
    """
    now_us = us_of(now)
    out: list[Recent] = []
    forgotten: set[str] = set()
    seen_ids: set[str] = set()
    seen_facts: set[tuple[str, str]] = set()
    bullets: dict[str, Container[str]] = {}
    for info in sorted(logs, key=lambda i: i.path, reverse=True):
        end = info.size
        carry = b""
        while end > 0 and len(out) < count:
            start = max(0, end - _TAIL_BLOCK)
            block = root.read_range(info.path, start, end) + carry
            lines = block.split(b"\n")
            if end == info.size:
                lines.pop()  # "" after the last line break, or a line still being written
            carry = lines.pop(0) if start > 0 else b""
            for raw in reversed(lines):
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
                        forgotten.add(entry_id)
                    continue
                if not entry_id:
                    return None  # its id depends on its offset: leave it to the index
                try:
                    rec = decode_record(record, default_id=stable_id("log", info.path, "?"))
                except ValueError:
                    continue
                if rec.id in seen_ids:
                    return None
                seen_ids.add(rec.id)
                if rec.id in forgotten:
                    continue
                if rec.expires_us is not None and rec.expires_us <= now_us:
                    continue
                if rec.persistent:
                    key = (rec.category, escape_line(rec.content.strip()))
                    if key in seen_facts:
                        return None
                    seen_facts.add(key)
                    texts = bullets.get(rec.category)
                    if texts is None:
                        texts = bullets[rec.category] = texts_of(rec.category)
                    if key[1] not in texts:
                        continue
                created = (
                    datetime.now(tz=UTC) if rec.created_us is None else datetime_of(rec.created_us)
                )
                out.append((created, rec.category, rec.content, rec.expires_us))
                if len(out) >= count:
                    break
            end = start
        if len(out) >= count:
            break
    out.sort(key=lambda r: r[0], reverse=True)
    return out
