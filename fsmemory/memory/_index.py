"""The in-process index behind ``recall`` and ``build_context``.

The files are the truth; this index is a cache of them that is refreshed only when a
listing shows a changed file. A changed log or MEMORY.md is fetched whole; when the
CRC-32 of the bytes parsed before still matches (see :mod:`fsmemory.memory._tail`), only
what follows them is parsed, otherwise (any edit in place, a same-length one included)
the file is parsed afresh.

Entries are held in columns: one row number per entry, with its id, content and
category strings and its times, importance and flags in flat arrays; a
:class:`~fsmemory.memory.entry.KnowledgeEntry` is built only for entries a caller gets
back. The BM25 ranker (:mod:`fsmemory.memory._rank`), the eviction heap and the
content counts of dedupe are built on first use.

Persistent entries live in two places, their log record and a bullet in MEMORY.md;
which record each bullet claims is decided in :mod:`fsmemory.memory._claims`.

Reading and parsing the files into rows is :mod:`fsmemory.memory._feed`; turning the
index into the index cache's parts and back is :mod:`fsmemory.memory._index_state`.
Each is a mixin of :class:`MemoryIndex`, which owns the rows.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, overload

from fsmemory._log import get_logger
from fsmemory.fs.base import FileInfo, StorageRoot
from fsmemory.memory._claims import (
    DEAD,
    HIDDEN,
    MD_CREATED,
    NEVER,
    PERSISTENT,
    Claims,
    Key,
    fact_key,
    fact_keys,
)
from fsmemory.memory._feed import Feeding
from fsmemory.memory._index_state import _LAZY, IndexState, _ColdParts, _OnFirstUse
from fsmemory.memory._index_state import _Strings as _Strings
from fsmemory.memory._rank import (
    BM25Index,
    analyze,
    query_terms,
    stem,
    term_pairs,
    top_accepted,
    typed_word_scores,
    words,
)
from fsmemory.memory._tail import FileCursor, must_read_whole
from fsmemory.memory.entry import (
    KnowledgeEntry,
    datetime_of,
    us_of,
)
from fsmemory.memory.layout import MEMORY_FILE, log_date
from fsmemory.memory.markdown import MemoryDocument

__all__ = ["MD_CREATED", "MemoryIndex", "fact_key"]

logger = get_logger(__name__)


_PERSISTENT, _DEAD, _HIDDEN, _NEVER = PERSISTENT, DEAD, HIDDEN, NEVER
_ROW_EPOCHS = itertools.count()


def _numpy() -> Any:
    """NumPy for a search heavy enough to add its scores up in arrays (None when it is
    not installed: the search stays in Python)."""
    try:
        import numpy
    except ImportError:
        return None
    return numpy


class _PriorityOrder(Sequence[int]):
    """:meth:`MemoryIndex.priority_order`, built only when a search walks it (its
    length, which decides whether to walk, is the row count)."""

    def __init__(self, index: MemoryIndex) -> None:
        self._index = index

    def __len__(self) -> int:
        return len(self._index._ids)

    @overload
    def __getitem__(self, at: int) -> int: ...
    @overload
    def __getitem__(self, at: slice) -> Sequence[int]: ...
    def __getitem__(self, at: int | slice) -> int | Sequence[int]:
        return self._index.priority_order()[at]

    def __iter__(self) -> Iterator[int]:
        return iter(self._index.priority_order())

    def __reversed__(self) -> Iterator[int]:
        return reversed(self._index.priority_order())


class MemoryIndex(Claims, Feeding, IndexState):
    """Entries, search postings, and parse cursors for one memory root."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything (the next refresh re-reads all files)."""
        # -- rows (columns) --
        self._ids: list[str] | _Strings = []
        self._contents: list[str] | _Strings = []
        self._cats: list[str] = []
        self._created = array("q")
        self._expires = array("q")
        self._importance = array("d")
        self._flags = bytearray()
        self._extras: dict[int, tuple[float | None, dict[str, Any] | None]] = {}
        self._row_of: dict[str, int] = {}
        self._interned: dict[str, str] = {}
        self._n_dead = 0
        self._n_hidden = 0
        # -- files --
        self._file_rows: dict[str, list[int]] = {}
        self._forgotten: dict[str, str] = {}
        self._logs: dict[str, FileCursor] = {}
        self._md: FileCursor | None = None
        self._doc = MemoryDocument()
        # -- time order of log rows --
        self._tl_stamp = array("q")
        self._tl_row = array("q")
        # -- bullets and records --
        self._fact_counts: Counter[Key] = Counter()
        self._claimed: dict[int, Key] = {}
        self._n_claimed: Counter[Key] = Counter()
        self._pending: dict[Key, list[int]] = {}
        self._md_rows: dict[Key, list[int]] = {}
        # -- built on first use --
        self._ranker: BM25Index | None = None  # built on the first search
        self._unranked: list[int] = []
        self._evict_heap: list[tuple[float, int, str, int]] | None = None
        self._order: list[int] | None = None  # rows by priority (priority_order)
        self._order_epoch = 0
        self._content_counts: dict[str, int] | None = None
        # Corrupt lines skipped, per log: a log dropped or read again takes its own along.
        self._corrupt: dict[str, int] = {}
        self.generation = 0
        # Changes whenever row numbers start again (a reset or a cache load): what is
        # kept per row elsewhere (the vector rows of hybrid recall) is then rebuilt.
        self.row_epoch = next(_ROW_EPOCHS)
        self.derived: dict[str, bytes | memoryview] = {}
        """Per-row values other modules derive from the rows (hybrid recall's text
        hashes, ``"text_hash"``: 8 bytes a row from row 0 on). They hold while
        :attr:`row_epoch` does (a reset starts them again), and the index cache carries
        them (see :mod:`fsmemory.memory._index_cache`)."""
        # -- a cache-loaded index: parts built on first use --
        self._cold: _ColdParts | None = None
        self._cold_doc: MemoryDocument | None = None  # MEMORY.md's header fields
        self._cold_sections: list[tuple[str, list[str | int], list[datetime | None] | None]]
        self._cold_sections = []
        self.cache_damaged = False
        """True once part of a loaded cache was found damaged (and rebuilt from the rows)."""

    # -- what callers read -----------------------------------------------------------
    @property
    def document(self) -> MemoryDocument:
        """MEMORY.md as last parsed (read it, never change it)."""
        return self._doc

    def live_facts(self, now: datetime) -> dict[str, list[str]]:
        """MEMORY.md's facts by category, expired ones left out (empty sections too)."""
        out: dict[str, list[str]] = {}
        for cat, facts in self._doc.sections.items():
            live = [f.content for f in facts if f.expires_at is None or f.expires_at > now]
            if live:
                out[cat] = live
        return out

    @property
    def corrupt_lines(self) -> int:
        """Lines skipped as corrupt in the logs the index holds."""
        return sum(self._corrupt.values())

    @property
    def last_category(self) -> str | None:
        """The section MEMORY.md currently ends in (where an appended bullet lands)."""
        return self._doc.last_category

    @property
    def loaded(self) -> bool:
        """True once a refresh has read the root (MEMORY.md or any log)."""
        return self._md is not None or bool(self._logs)

    def md_seen(self, info: FileInfo) -> bool:
        """True when the index has read MEMORY.md in the version ``info`` describes."""
        return self._md is not None and self._md.info.token == info.token

    def log_infos(self) -> list[FileInfo]:
        """The listing entries of the logs the index has read."""
        return [c.info for c in self._logs.values()]

    # -- refresh -------------------------------------------------------------------------
    def refresh(self, root: StorageRoot, listing: Iterable[FileInfo]) -> bool:
        """Bring the index up to date with ``listing`` (one listing of the root).

        Returns True when anything changed.
        """
        md_info: FileInfo | None = None
        logs: dict[str, FileInfo] = {}
        for info in listing:
            if info.path == MEMORY_FILE:
                md_info = info
            elif log_date(info.path) is not None:
                logs[info.path] = info
        # On a cold start read the logs first: their persistent records then wait for
        # MEMORY.md, which claims them directly instead of first creating md- entries.
        # Later, MEMORY.md goes first, because writers add a bullet before its record.
        cold = self._md is None
        changed = False if cold else self._refresh_md(root, md_info)
        for name in [n for n in self._logs if n not in logs]:
            self._drop_file(name)
            changed = True
        wanted = [logs[n] for n in sorted(logs)]
        if cold and md_info is not None:
            wanted.append(md_info)
        whole = self._fetch_whole(root, wanted)
        for info in wanted[: len(logs)]:
            if self._refresh_log(root, info, whole):
                changed = True
        # A log dropped on the way (it held entries whose forget records went with
        # another log) is read again.
        for info in [i for i in wanted[: len(logs)] if i.path not in self._logs]:
            self._refresh_log(root, info, whole)
            changed = True
        if cold and self._refresh_md(root, md_info, whole):
            changed = True
        if changed:
            self.generation += 1
        return changed

    def bytes_to_reread(self, root: StorageRoot, listing: Iterable[FileInfo]) -> tuple[int, int]:
        """``(bytes of MEMORY.md and logs that a refresh from listing would read whole,
        bytes of them all)``, judged from the listing alone."""
        stale = total = 0
        for info in listing:
            cur: FileCursor | None
            if info.path == MEMORY_FILE:
                cur, grows = self._md, False
            elif log_date(info.path) is not None:
                cur, grows = self._logs.get(info.path), True
            else:
                continue
            total += info.size
            if (cur is None or cur.info.token != info.token) and must_read_whole(
                root, cur, info, grows_only=grows
            ):
                stale += info.size
        return stale, total

    # -- rows ----------------------------------------------------------------------------
    def _new_row(
        self,
        entry_id: str,
        content: str,
        category: str,
        created_us: int,
        expires_us: int | None,
        importance: float,
        persistent: bool,
    ) -> int:
        row = len(self._ids)
        self._ids.append(entry_id)
        self._contents.append(content)
        self._cats.append(self._interned.setdefault(category, category))
        self._created.append(created_us)
        self._expires.append(_NEVER if expires_us is None else expires_us)
        self._importance.append(importance)
        self._flags.append(_PERSISTENT if persistent else 0)
        self._row_of[entry_id] = row
        if self._ranker is not None:
            self._unranked.append(row)
        counts = self._content_counts
        if counts is not None:
            counts[content] = counts.get(content, 0) + 1
        return row

    def add(self, entry: KnowledgeEntry, path: str) -> None:
        """Index a remembered entry read from (or appended to) log ``path``."""
        if entry.id in self._forgotten or entry.id in self._row_of:
            return
        row = self._new_row(
            entry.id,
            entry.content,
            entry.category,
            us_of(entry.created_at),
            None if entry.expires_at is None else us_of(entry.expires_at),
            entry.importance,
            entry.persistent,
        )
        if entry.ttl_days is not None or entry.metadata:
            self._extras[row] = (entry.ttl_days, entry.metadata)
        self._file_rows.setdefault(path, []).append(row)
        self._add_log_row(row)

    def _add_log_row(self, row: int) -> None:
        stamp = self._created[row]
        stamps = self._tl_stamp
        if stamps and stamp < stamps[-1]:
            at = bisect.bisect_right(stamps, stamp)
            stamps.insert(at, stamp)
            self._tl_row.insert(at, row)
        else:
            stamps.append(stamp)
            self._tl_row.append(row)
        if self._flags[row] & _PERSISTENT:
            key = fact_key(self._cats[row], self._contents[row], self._expires[row])
            self._pending.setdefault(key, []).append(row)
            self._flags[row] |= _HIDDEN
            self._n_hidden += 1
            if key in self._fact_counts or key in self._md_rows:
                self._rebalance(key)
        elif self._evict_heap is not None:
            heapq.heappush(self._evict_heap, self._evict_item(row))

    def _row_id(self, row: int) -> str:
        return self._ids[row]

    def _evict_item(self, row: int) -> tuple[float, int, str, int]:
        return (self._importance[row], self._created[row], self._ids[row], row)

    def forget(self, entry_id: str, path: str) -> None:
        """Apply a forget record found in ``path``."""
        self._forgotten[entry_id] = path
        row = self._row_of.get(entry_id)
        if row is not None:
            self._remove(row)

    def _kill(self, row: int) -> None:
        """Mark ``row`` removed (its id free again, its postings ignored)."""
        flags = self._flags
        if flags[row] & _HIDDEN:
            flags[row] &= ~_HIDDEN
            self._n_hidden -= 1
        flags[row] |= _DEAD
        self._n_dead += 1
        if self._ranker is not None:
            self._ranker.remove(row)
        entry_id = self._ids[row]
        if self._row_of.get(entry_id) == row:
            del self._row_of[entry_id]
        counts = self._content_counts
        if counts is not None:
            content = self._contents[row]
            left = counts.get(content, 0) - 1
            if left > 0:
                counts[content] = left
            else:
                counts.pop(content, None)
        self._extras.pop(row, None)

    def _remove(self, row: int) -> None:
        if self._flags[row] & _DEAD:
            return
        persistent = self._flags[row] & _PERSISTENT
        self._kill(row)
        if persistent:
            key = fact_key(self._cats[row], self._contents[row], self._expires[row])
            if self._claimed.pop(row, None) is not None:
                self._n_claimed[key] -= 1
            waiting = self._pending.get(key)
            if waiting and row in waiting:
                waiting.remove(row)
            self._rebalance(key)

    def _drop_file(self, path: str) -> None:
        for row in self._file_rows.pop(path, []):
            self._remove(row)
        self._corrupt.pop(path, None)
        self.compact_timeline()
        revived = {k for k, v in self._forgotten.items() if v == path}
        for entry_id in revived:
            del self._forgotten[entry_id]
        self._logs.pop(path, None)
        self.generation += 1
        if revived:
            # The entries these forget records removed are live again (a fresh reader
            # never removes them): the logs holding them are dropped too, and read
            # again whole by the refresh.
            ids, flags = self._ids, self._flags
            for other, rows in list(self._file_rows.items()):
                if other in self._file_rows and any(
                    flags[row] & _DEAD and ids[row] in revived for row in rows
                ):
                    self._drop_file(other)

    def has_content(self, text: str) -> bool:
        """True when some indexed entry (live or hidden) has exactly this content."""
        counts = self._content_counts
        if counts is None:
            counts = self._content_counts = {}
            flags, contents = self._flags, self._contents
            for row in range(len(flags)):
                if not flags[row] & _DEAD:
                    counts[contents[row]] = counts.get(contents[row], 0) + 1
        return counts.get(text, 0) > 0

    # -- entries -------------------------------------------------------------------------
    def _entry(self, row: int) -> KnowledgeEntry:
        ttl, metadata = self._extras.get(row, (None, None))
        expires = self._expires[row]
        return KnowledgeEntry(
            id=self._ids[row],
            content=self._contents[row],
            category=self._cats[row],
            persistent=bool(self._flags[row] & _PERSISTENT),
            importance=self._importance[row],
            ttl_days=ttl,
            created_at=datetime_of(self._created[row]),
            metadata=metadata if metadata is not None else {},
            expires_at=None if expires == _NEVER else datetime_of(expires),
        )

    def _live_row(self, row: int, now_us: int) -> bool:
        return not self._flags[row] & (_DEAD | _HIDDEN) and now_us < self._expires[row]

    def find(self, entry_id: str) -> KnowledgeEntry | None:
        """The indexed entry with this id (live, hidden or expired), or None."""
        row = self._row_of.get(entry_id)
        return None if row is None else self._entry(row)

    def is_live(self, entry_id: str, now: datetime) -> bool:
        """True when the entry exists, is not forgotten, hidden or expired."""
        row = self._row_of.get(entry_id)
        return row is not None and self._live_row(row, us_of(now))

    def live_entry(self, entry_id: str, now: datetime) -> KnowledgeEntry | None:
        """The entry with this id when it is live at ``now``, else None."""
        row = self._row_of.get(entry_id)
        if row is None or not self._live_row(row, us_of(now)):
            return None
        return self._entry(row)

    def live_count(self) -> int:
        """Entries that are neither forgotten nor hidden (expired ones included)."""
        return len(self._ids) - self._n_dead - self._n_hidden

    def live_entries(self, now: datetime) -> Iterator[KnowledgeEntry]:
        """Every live entry, in row order."""
        now_us = us_of(now)
        for row in range(len(self._ids)):
            if self._live_row(row, now_us):
                yield self._entry(row)

    def live_categories(self, now: datetime) -> tuple[int, set[str]]:
        """The number of live entries and their categories."""
        now_us = us_of(now)
        count = 0
        cats: set[str] = set()
        for row in range(len(self._ids)):
            if self._live_row(row, now_us):
                count += 1
                cats.add(self._cats[row])
        return count, cats

    def _newest_rows(self, now: datetime) -> Iterator[int]:
        now_us = us_of(now)
        rows = self._tl_row
        seen: set[int] = set()
        for i in range(len(rows) - 1, -1, -1):
            row = rows[i]
            if row not in seen and self._live_row(row, now_us):
                seen.add(row)
                yield row

    def newest(self, now: datetime) -> Iterator[KnowledgeEntry]:
        """Live log entries, newest first (each once, even if an entry was removed and
        indexed again, e.g. when its log left a listing and came back)."""
        for row in self._newest_rows(now):
            yield self._entry(row)

    def newest_texts(self, now: datetime) -> Iterator[tuple[datetime, str, str, int | None]]:
        """Like :meth:`newest`, as ``(created_at, category, content, expires_us)``
        (``expires_us``: microseconds since the epoch, None without expiry)."""
        for row in self._newest_rows(now):
            expires = self._expires[row]
            yield (
                datetime_of(self._created[row]),
                self._cats[row],
                self._contents[row],
                None if expires == _NEVER else expires,
            )

    def every_live_entry(self, now: datetime) -> list[KnowledgeEntry]:
        """Every live entry: log entries oldest first, then MEMORY.md-only facts."""
        logged = list(self._newest_rows(now))
        logged.reverse()
        seen = set(logged)
        now_us = us_of(now)
        rest = [r for r in range(len(self._ids)) if r not in seen and self._live_row(r, now_us)]
        if len(rest) > 1:
            # MEMORY.md-only facts in the file's order (not in the order rows were made).
            place: dict[Key, int] = {}
            for key in fact_keys(self._doc.sections):
                place.setdefault(key, len(place))
            rank = {
                row: (place.get(key, len(place)), i)
                for key, rows in self._md_rows.items()
                for i, row in enumerate(rows)
            }
            rest.sort(key=lambda row: rank.get(row, (len(place), row)))
        return [self._entry(row) for row in logged + rest]

    def compact_timeline(self) -> None:
        """Drop timeline slots of removed entries (after many forgets)."""
        flags = self._flags
        keep = [i for i, row in enumerate(self._tl_row) if not flags[row] & _DEAD]
        self._tl_stamp = array("q", (self._tl_stamp[i] for i in keep))
        self._tl_row = array("q", (self._tl_row[i] for i in keep))

    def eviction_candidates(self, n: int) -> list[str]:
        """Ids of up to ``n`` live non-persistent entries of lowest importance (then
        oldest), taken off the eviction queue (the caller forgets them)."""
        heap = self._evict_heap
        if heap is None:
            flags = self._flags
            heap = self._evict_heap = [
                self._evict_item(row)
                for row in range(len(flags))
                if not flags[row] & (_DEAD | _PERSISTENT)
            ]
            heapq.heapify(heap)
        victims: list[str] = []
        while len(victims) < n and heap:
            _importance, _stamp, entry_id, row = heapq.heappop(heap)
            if self._flags[row] & (_DEAD | _HIDDEN) or entry_id in victims:
                continue
            victims.append(entry_id)
        return victims

    # -- search --------------------------------------------------------------------------
    def search(
        self, query: str, limit: int, category: str | None, now: datetime
    ) -> list[KnowledgeEntry]:
        """Ranked search (BM25 over stemmed words of content and category, see
        :mod:`fsmemory.memory._rank`); equal scores rank by importance, then recency.

        A query without any word returns the most important entries; a query of
        stopwords only (which the index does not hold) is matched as typed against the
        entries' text (:meth:`typed_word_scores`).
        """
        if not words(query):
            return self.most_important(limit, category, now)
        # A loaded ranker knows the stems of its documents' words: no stemmer needed
        # for a query of known words.
        stem_of = stem if self._ranker is None else self._ranker.query_stem
        terms = query_terms(query, stem_of)
        if not terms:
            accept = self._row_acceptor(category, us_of(now))
            order = _PriorityOrder(self)
            scores = self.typed_word_scores(query)
            typed = top_accepted(scores, limit, accept, self._row_priority, order)
            return [self._entry(row) for _, row in typed]
        pairs = term_pairs(analyze(query, stem_of))
        for _attempt in range(2):  # again when a loaded ranker turned out damaged
            ranker = self._ranked()
            found = ranker.search(
                terms,
                limit,
                self._row_acceptor(category, us_of(now)),
                self._row_priority,
                pairs,
                _PriorityOrder(self),
                _numpy,
            )
            if not ranker.damaged:
                break
        return [self._entry(row) for _, row in found]

    def _ranked(self) -> BM25Index:
        """The BM25 index of the live rows, built on the first search, then kept up to
        date (rows added since the last search are analysed now)."""
        ranker = self._ranker
        if ranker is not None and ranker.damaged:
            logger.warning("the search postings of the index cache are damaged: rebuilt")
            self.cache_damaged = True
            ranker = None
        if ranker is None:
            ranker = self._ranker = BM25Index()
            self._unranked = [r for r in range(len(self._ids)) if not self._flags[r] & _DEAD]
        pending, self._unranked = self._unranked, []
        if not pending:
            return ranker
        contents, cats, flags = self._contents, self._cats, self._flags
        cat_terms: dict[str, list[str]] = {}  # a handful of categories: analyse each once

        def documents() -> Iterator[tuple[int, list[str]]]:
            for row in pending:
                if not flags[row] & _DEAD:
                    cat = cats[row]
                    terms = cat_terms.get(cat)
                    if terms is None:
                        terms = cat_terms[cat] = analyze(cat)
                    yield row, analyze(contents[row]) + terms

        ranker.add_many(documents())
        return ranker

    def _row_acceptor(self, category: str | None, now_us: int) -> Callable[[int], bool]:
        cats = self._cats

        def accept(row: int) -> bool:
            return self._live_row(row, now_us) and (category is None or cats[row] == category)

        return accept

    def _row_priority(self, row: int) -> tuple[float, float, str]:
        # The id last: equal scores, importance and times still rank the same in
        # every process, whatever order its rows were read in.
        return (self._importance[row], float(self._created[row]), self._ids[row])

    def typed_word_scores(self, query: str) -> dict[int, float]:
        """BM25 scores by row of a query of stopwords only, its words matched as typed
        in the text of every row the ranker indexes (:func:`typed_word_scores`)."""
        flags, contents, cats = self._flags, self._contents, self._cats
        rows = (row for row in range(len(flags)) if not flags[row] & _DEAD)
        return typed_word_scores(query, ((row, contents[row], cats[row]) for row in rows))

    def lexical_rows(self, np: Any, query: str, terms: dict[str, float]) -> Any:
        """BM25 scores of ``query`` as a NumPy array indexed by row (0 for rows matching
        no term, removed rows included; see :meth:`BM25Index.score_array`); without
        ``terms`` (stopwords only), :meth:`typed_word_scores`."""
        if not terms:
            out = np.zeros(len(self._ids), dtype=np.float64)
            for row, score in self.typed_word_scores(query).items():
                out[row] = score
            return out
        pairs = term_pairs(analyze(query))
        for _attempt in range(2):  # again when a loaded ranker turned out damaged
            ranker = self._ranked()
            scores = ranker.score_array(np, terms, pairs)
            if not ranker.damaged:
                break
        out = np.zeros(len(self._ids), dtype=np.float64)
        size = min(len(scores), len(out))
        out[:size] = scores[:size]
        return out

    def created_array(self, np: Any) -> Any:
        """Creation times of every row (microseconds since the epoch) as a NumPy int64
        array (a copy), removed rows included."""
        return np.array(self._created, dtype=np.int64)

    def live_mask(self, np: Any, now: datetime) -> Any:
        """A NumPy bool array over every row: True where the row is live at ``now`` (not
        forgotten, hidden or expired; the vectorised form of :meth:`row_acceptor`
        without a category)."""
        flags = np.array(self._flags, dtype=np.uint8)
        expires = np.array(self._expires, dtype=np.int64)
        return ((flags & (_DEAD | _HIDDEN)) == 0) & (expires > us_of(now))

    def row_ids(self, rows: Iterable[int]) -> list[str]:
        """Entry ids of ``rows`` (row numbers hold until :attr:`row_epoch` changes)."""
        ids = self._ids
        return [ids[row] for row in rows]

    def row_columns(self, start: int, end: int) -> tuple[list[str], list[str]]:
        """Entry ids and contents of rows ``start`` to ``end`` (excluded), read in bulk
        (a cache-loaded column is decoded at once, not row by row)."""
        return _column(self._ids, start, end), _column(self._contents, start, end)

    def row_id_column(self, start: int, end: int) -> list[str]:
        """Entry ids of rows ``start`` to ``end`` (excluded), read in bulk (see
        :meth:`row_columns`)."""
        return _column(self._ids, start, end)

    def row_id_bytes(self, start: int, end: int) -> tuple[bytes, array[int]] | None:
        """Entry ids of rows ``start`` to ``end`` (excluded) as the UTF-8 bytes of each
        back to back, and ``end - start + 1`` offsets: where each starts and the last
        ends, counted from where the first would be in a longer column (subtract the
        first offset). Only when the index holds the rows so (loaded from its cache);
        else None (see :meth:`row_id_column`)."""
        ids = self._ids
        if isinstance(ids, list) or not 0 <= start <= end <= ids._n:
            return None
        off = ids._off
        return bytes(ids._blob[off[start] : off[end]]), off[start : end + 1]

    def row_of(self, entry_id: str) -> int | None:
        """The row of the indexed entry with this id (live, hidden or expired)."""
        return self._row_of.get(entry_id)

    def row_acceptor(self, category: str | None, now: datetime) -> Callable[[int], bool]:
        """A predicate on rows: live at ``now`` and (if given) in ``category``."""
        return self._row_acceptor(category, us_of(now))

    def row_priority(self, row: int) -> tuple[float, float, str]:
        """Tie-break of equal scores by row: importance, then creation time (newer
        first), then the id."""
        return self._row_priority(row)

    def row_entry(self, row: int) -> KnowledgeEntry:
        """The entry of ``row``."""
        return self._entry(row)

    def row_content(self, row: int) -> str:
        """The content of ``row``."""
        return self._contents[row]

    def most_important(
        self, limit: int, category: str | None, now: datetime
    ) -> list[KnowledgeEntry]:
        """Live entries ranked by importance, then recency (then id): the first
        ``limit`` live ones of :meth:`priority_order` from its end."""
        now_us = us_of(now)
        cats = self._cats
        found: list[KnowledgeEntry] = []
        if limit <= 0:
            return found
        for row in reversed(self.priority_order()):
            if (category is None or cats[row] == category) and self._live_row(row, now_us):
                found.append(self._entry(row))
                if len(found) == limit:
                    break
        return found

    def priority_order(self) -> list[int]:
        """Every row in ascending :meth:`row_priority` (importance, creation time, id;
        equal ones by row), removed rows included: built on first use (three sorts
        with C-level keys), then extended as rows are added (a row's priority never
        changes; a reset starts it again)."""
        order = self._order
        if order is None or self._order_epoch != self.row_epoch:
            ids, created, importance = self._ids, self._created, self._importance
            order = sorted(range(len(ids)), key=ids.__getitem__)
            order.sort(key=created.__getitem__)
            order.sort(key=importance.__getitem__)
            self._order, self._order_epoch = order, self.row_epoch
        elif len(order) < len(self._ids):
            for row in range(len(order), len(self._ids)):
                bisect.insort(order, row, key=self._row_order_key)
        return order

    def _row_order_key(self, row: int) -> tuple[float, int, str]:
        return (self._importance[row], self._created[row], self._ids[row])

    # -- persisted form (the index cache, see fsmemory.memory._index_cache) --------------
    @property
    def rows(self) -> int:
        """Rows ever created (live, hidden and removed)."""
        return len(self._ids)

    @property
    def ranked(self) -> bool:
        """True once the BM25 index has been built."""
        return self._ranker is not None


# Installed after the class body, so that type checkers see the plain attributes
# that reset() assigns.
for _name, _builder in _LAZY.items():
    setattr(MemoryIndex, _name, _OnFirstUse(_name, getattr(MemoryIndex, _builder)))


def _column(strings: list[str] | _Strings, start: int, end: int) -> list[str]:
    """Rows ``start`` to ``end`` (excluded) of a string column, as a list: the rows a
    cache-loaded column holds as bytes are decoded in one step (as ``tolist`` does)."""
    if isinstance(strings, list):
        return strings[start:end]
    start, end = max(start, 0), min(end, len(strings))
    held = strings._n  # rows still held as UTF-8 bytes, the rest as strings
    out: list[str] = []
    if start < min(end, held):
        off = strings._off
        stop = min(end, held)
        first = off[start]
        data = bytes(strings._blob[first : off[stop]])
        bounds = [at - first for at in off[start : stop + 1]]
        if data.isascii():  # byte offsets are character offsets
            text = data.decode("ascii")
            out = list(map(text.__getitem__, map(slice, bounds, bounds[1:])))
        else:
            out = [str(data[a:b], "utf-8", "replace") for a, b in itertools.pairwise(bounds)]
    if end > held:
        out.extend(strings._more[max(start - held, 0) : end - held])
    return out
