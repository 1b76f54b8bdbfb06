"""The in-process index behind ``recall`` and ``build_context``.

The files are the truth; this index is a cache of them that is refreshed only when a
listing shows a changed file. Logs are append-only, so a changed log is read from the
last parsed offset (after checking that the bytes before it are unchanged); MEMORY.md is
read incrementally when it was appended to and re-parsed when it was rewritten.

Persistent entries live in two places: their log record and a bullet in MEMORY.md. A
person may delete the bullet (the fact is then forgotten) or add one (a new fact with a
content-derived ``md-`` id). Records and bullets are matched as multisets by
``(category, escaped text)``: a persistent record is live while a bullet claims it.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from fsmemory import _jsonutil
from fsmemory.fs.base import FileInfo, StorageRoot
from fsmemory.memory._tail import FileCursor, read_appended
from fsmemory.memory.entry import KnowledgeEntry, stable_id
from fsmemory.memory.layout import MEMORY_FILE, log_date
from fsmemory.memory.markdown import Fact, MemoryDocument, decode_md, escape_line

__all__ = ["MemoryIndex", "fact_key", "tokenize"]

logger = logging.getLogger(__name__)

_TOKEN = re.compile(r"\w+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
    ]
)

Key = tuple[str, str]


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (Unicode-aware)."""
    return _TOKEN.findall(text.lower())


def fact_key(category: str, content: str) -> Key:
    """The key matching a persistent record to its MEMORY.md bullet."""
    return (category, escape_line(content.strip()))


class MemoryIndex:
    """Entries, search postings, and parse cursors for one memory root."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything (the next refresh re-reads all files)."""
        self.entries: dict[str, KnowledgeEntry] = {}
        self.file_ids: dict[str, list[str]] = {}
        self.forgotten: dict[str, str] = {}
        self.timeline: list[tuple[float, str]] = []
        self.tokens: dict[str, tuple[str, ...]] = {}
        self.postings: dict[str, set[str]] = {}
        self.vocab: list[str] = []
        self.evict_heap: list[tuple[float, float, str]] = []
        self.logs: dict[str, FileCursor] = {}
        self.md: FileCursor | None = None
        self.doc = MemoryDocument()
        self.fact_counts: Counter[Key] = Counter()
        self.claimed: dict[str, Key] = {}
        self.n_claimed: Counter[Key] = Counter()
        self.pending: dict[Key, list[str]] = {}
        self.hidden: set[str] = set()
        self.md_ids: dict[Key, list[str]] = {}
        self.content_counts: dict[str, int] = {}
        self.untokenized: list[str] = []
        self.corrupt_lines = 0
        self.generation = 0
        self.md_mtime: datetime = datetime.now(tz=UTC)

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
        cold = self.md is None
        changed = False if cold else self._refresh_md(root, md_info)
        for name in [n for n in self.logs if n not in logs]:
            self._drop_file(name)
            changed = True
        for name in sorted(logs):
            if self._refresh_log(root, logs[name]):
                changed = True
        if cold and self._refresh_md(root, md_info):
            changed = True
        if changed:
            self.generation += 1
        return changed

    def _refresh_md(self, root: StorageRoot, info: FileInfo | None) -> bool:
        cur = self.md
        if info is None:
            if cur is None and not self.fact_counts:
                return False
            self.md = None
            self._set_document(MemoryDocument())
            return True
        if cur is not None and cur.info.token == info.token:
            return False
        if info.mtime is not None:
            self.md_mtime = datetime.fromtimestamp(info.mtime, tz=UTC)
        new = read_appended(root, cur, info, grows_only=False)
        if new is None:
            data = _read_or_empty(root, MEMORY_FILE)
            doc = MemoryDocument()
            # A hand-edited file may lack the final newline: parse its last line too, and
            # re-read the whole file on its next change.
            doc.feed(_decode_lines(data))
            complete = data.endswith(b"\n") or not data
            self.md = FileCursor.after(info, data, len(data), complete)
            self._set_document(doc)
            return True
        assert cur is not None
        chunk, upto = new
        cur.info = info
        if upto > cur.parsed_upto:
            self.feed_md(chunk, cur.parsed_upto, upto)
        return bool(chunk)

    def feed_md(self, chunk: bytes, start: int, end: int) -> None:
        """Parse bullets appended to MEMORY.md between offsets ``start`` and ``end``."""
        cur = self.md
        if cur is None or cur.parsed_upto != start:
            return
        before = {k: len(v) for k, v in self.doc.sections.items()}
        self.doc.feed(_decode_lines(chunk))
        cur.advance(chunk[: end - start])
        for cat, facts in self.doc.sections.items():
            for fact in facts[before.get(cat, 0) :]:
                key = (cat, fact.text)
                self.fact_counts[key] += 1
                self._rebalance(key)
        self.generation += 1

    def _set_document(self, doc: MemoryDocument) -> None:
        old_keys = set(self.fact_counts)
        self.doc = doc
        self.fact_counts = Counter(
            (cat, f.text) for cat, facts in doc.sections.items() for f in facts
        )
        for key in old_keys | set(self.fact_counts) | set(self.n_claimed) | set(self.pending):
            self._rebalance(key)

    def _refresh_log(self, root: StorageRoot, info: FileInfo) -> bool:
        cur = self.logs.get(info.path)
        if cur is not None and cur.info.token == info.token:
            return False
        new = read_appended(root, cur, info)
        if new is None:
            if cur is not None:
                self._drop_file(info.path)
            data = _read_or_empty(root, info.path)
            upto = data.rfind(b"\n") + 1
            self.logs[info.path] = FileCursor.after(info, data, upto)
            self.feed_log(info.path, data[:upto], 0)
            return True
        assert cur is not None
        chunk, upto = new
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
        cur = self.md if path == MEMORY_FILE else self.logs.get(path)
        if cur is None:
            if offset != 0 or info is None:
                return False
            cur = FileCursor(info, 0, b"")
            if path == MEMORY_FILE:
                self.md = cur
            else:
                self.logs[path] = cur
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
        if len(chunk) < 1 << 16:
            self._feed_log(path, chunk, base_offset)
            return
        # A bulk load allocates many long-lived objects and no cycles: the cyclic
        # collector would only rescan them over and over.
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._feed_log(path, chunk, base_offset)
        finally:
            if enabled:
                gc.enable()

    def _feed_log(self, path: str, chunk: bytes, base_offset: int) -> None:
        offset = base_offset
        for raw in chunk.split(b"\n")[:-1] if chunk.endswith(b"\n") else chunk.split(b"\n"):
            line_offset = offset
            offset += len(raw) + 1
            if not raw.strip():
                continue
            try:
                record = _jsonutil.loads(raw)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                if record.get("op") == "forget":
                    target = record.get("id")
                    if not isinstance(target, str):
                        raise ValueError("forget record without id")
                    self.forget(target, path)
                    continue
                entry = KnowledgeEntry.from_dict(
                    record,
                    default_id="" if record.get("id") else stable_id("log", path, str(line_offset)),
                )
            except (ValueError, TypeError) as exc:
                self.corrupt_lines += 1
                logger.warning("skipping corrupt line at %s:%d (%s)", path, line_offset, exc)
                continue
            self.add(entry, path)

    # -- entries -------------------------------------------------------------------------
    def add(self, entry: KnowledgeEntry, path: str) -> None:
        """Index a remembered entry read from (or appended to) log ``path``."""
        if entry.id in self.forgotten or entry.id in self.entries:
            return
        self.entries[entry.id] = entry
        self.file_ids.setdefault(path, []).append(entry.id)
        stamp = entry.created_at.timestamp()
        if self.timeline and stamp < self.timeline[-1][0]:
            bisect.insort(self.timeline, (stamp, entry.id))
        else:
            self.timeline.append((stamp, entry.id))
        self._index_tokens(entry)
        if entry.persistent:
            key = fact_key(entry.category, entry.content)
            self.pending.setdefault(key, []).append(entry.id)
            self.hidden.add(entry.id)
            if key in self.fact_counts or key in self.md_ids:
                self._rebalance(key)
        else:
            heapq.heappush(self.evict_heap, (entry.importance, stamp, entry.id))

    def forget(self, entry_id: str, path: str) -> None:
        """Apply a forget record found in ``path``."""
        self.forgotten[entry_id] = path
        self._remove(entry_id)

    def _remove(self, entry_id: str) -> None:
        entry = self.entries.pop(entry_id, None)
        if entry is None:
            return
        self._uncount(entry.content)
        for tok in self.tokens.pop(entry_id, ()):
            ids = self.postings.get(tok)
            if ids is not None:
                ids.discard(entry_id)
        self.hidden.discard(entry_id)
        if entry.persistent:
            key = fact_key(entry.category, entry.content)
            if self.claimed.pop(entry_id, None) is not None:
                self.n_claimed[key] -= 1
            waiting = self.pending.get(key)
            if waiting and entry_id in waiting:
                waiting.remove(entry_id)
            self._rebalance(key)

    def _drop_file(self, path: str) -> None:
        for entry_id in self.file_ids.pop(path, []):
            self._remove(entry_id)
        self.compact_timeline()
        for entry_id in [k for k, v in self.forgotten.items() if v == path]:
            del self.forgotten[entry_id]
        self.logs.pop(path, None)
        self.generation += 1

    def has_content(self, text: str) -> bool:
        """True when some indexed entry (live or hidden) has exactly this content."""
        return self.content_counts.get(text, 0) > 0

    def _index_tokens(self, entry: KnowledgeEntry) -> None:
        # Search postings are built lazily, on the first search after entries arrive:
        # a cold start that only builds the context never tokenizes anything.
        counts = self.content_counts
        counts[entry.content] = counts.get(entry.content, 0) + 1
        self.untokenized.append(entry.id)

    def _flush_tokens(self) -> None:
        pending, self.untokenized = self.untokenized, []
        for entry_id in pending:
            entry = self.entries.get(entry_id)
            if entry is not None and entry_id not in self.tokens:
                self._tokenize_entry(entry)

    def _tokenize_entry(self, entry: KnowledgeEntry) -> None:
        toks = tuple(set(tokenize(entry.content)) | set(tokenize(entry.category)))
        self.tokens[entry.id] = toks
        for tok in toks:
            ids = self.postings.get(tok)
            if ids is None:
                ids = self.postings[tok] = set()
                bisect.insort(self.vocab, tok)
            ids.add(entry.id)

    def _rebalance(self, key: Key) -> None:
        """Make claims + md- entries for ``key`` equal the number of bullets."""
        waiting = self.pending.setdefault(key, [])
        md = self.md_ids.setdefault(key, [])
        while self.n_claimed[key] + len(md) < self.fact_counts[key]:
            if waiting:
                entry_id = waiting.pop(0)
                self.claimed[entry_id] = key
                self.n_claimed[key] += 1
                self.hidden.discard(entry_id)
            else:
                self._add_md_entry(key, len(md))
        while md and self.n_claimed[key] + len(md) > self.fact_counts[key]:
            self._remove_md_entry(key)
        while self.n_claimed[key] > self.fact_counts[key]:
            newest = max(
                (i for i, k in self.claimed.items() if k == key),
                key=lambda i: self.entries[i].created_at,
            )
            del self.claimed[newest]
            self.n_claimed[key] -= 1
            self.pending.setdefault(key, []).insert(0, newest)
            self.hidden.add(newest)
        while md and waiting:
            self._remove_md_entry(key)
            entry_id = waiting.pop(0)
            self.claimed[entry_id] = key
            self.n_claimed[key] += 1
            self.hidden.discard(entry_id)
        if not md:
            self.md_ids.pop(key, None)
        if not waiting:
            self.pending.pop(key, None)
        if not self.n_claimed[key]:
            self.n_claimed.pop(key, None)

    def _add_md_entry(self, key: Key, occurrence: int) -> None:
        category, text = key
        fact = self._find_fact(key)
        entry = KnowledgeEntry(
            id=stable_id("md", category, text, str(occurrence)),
            content=fact.content if fact else text,
            category=category,
            persistent=True,
            importance=0.5,
            created_at=self.md_mtime,
            expires_at=fact.expires_at if fact else None,
        )
        self.md_ids.setdefault(key, []).append(entry.id)
        self.entries[entry.id] = entry
        self._index_tokens(entry)

    def _remove_md_entry(self, key: Key) -> None:
        entry_id = self.md_ids[key].pop()
        removed = self.entries.pop(entry_id, None)
        if removed is not None:
            self._uncount(removed.content)
        for tok in self.tokens.pop(entry_id, ()):
            ids = self.postings.get(tok)
            if ids is not None:
                ids.discard(entry_id)

    def _uncount(self, content: str) -> None:
        left = self.content_counts.get(content, 0) - 1
        if left > 0:
            self.content_counts[content] = left
        else:
            self.content_counts.pop(content, None)

    def _find_fact(self, key: Key) -> Fact | None:
        for fact in self.doc.sections.get(key[0], ()):
            if fact.text == key[1]:
                return fact
        return None

    # -- queries -------------------------------------------------------------------------
    def is_live(self, entry_id: str, now: datetime) -> bool:
        """True when the entry exists, is not forgotten, hidden or expired."""
        entry = self.entries.get(entry_id)
        return entry is not None and entry_id not in self.hidden and not entry.expired_at(now)

    def live_count(self) -> int:
        """Entries that are neither forgotten nor hidden (expired ones included)."""
        return len(self.entries) - len(self.hidden)

    def newest(self, now: datetime) -> Iterator[KnowledgeEntry]:
        """Live log entries, newest first (each once, even if an entry was removed and
        indexed again, e.g. when its log left a listing and came back)."""
        timeline = self.timeline
        seen: set[str] = set()
        for i in range(len(timeline) - 1, -1, -1):
            entry_id = timeline[i][1]
            if entry_id not in seen and self.is_live(entry_id, now):
                seen.add(entry_id)
                yield self.entries[entry_id]

    def compact_timeline(self) -> None:
        """Drop timeline slots of removed entries (after many forgets)."""
        self.timeline = [t for t in self.timeline if t[1] in self.entries]

    def search(
        self, query: str, limit: int, category: str | None, now: datetime
    ) -> list[KnowledgeEntry]:
        """Keyword search: exact token matches score 1, prefix matches 0.6, and the whole
        query as a substring adds 0.5; ties broken by importance, then recency."""
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms:
            return self.most_important(limit, category, now)
        if self.untokenized:
            self._flush_tokens()
        meaningful = [t for t in terms if t not in _STOPWORDS]
        terms = meaningful or terms
        phrase = " ".join(tokenize(query))
        wanted = max(limit * 4, limit)
        results: list[tuple[float, float, float, str]] = []
        # The best possible score, one per term, is reached exactly by the entries that
        # hold every term. When they alone give `wanted` live hits the ranking equals the
        # full scoring below, which costs a dict update per posting (tens of thousands
        # for common words at 100k entries); the set intersection runs in C.
        exact_sets = [ids for term in terms if (ids := self.postings.get(term))]
        if len(exact_sets) == len(terms):
            smallest, *others = sorted(exact_sets, key=len)
            best = {float(len(terms)): list(smallest.intersection(*others))}
            results = self._collect(best, wanted, category, now)
        if len(results) < wanted:
            results = self._collect(self._score(terms), wanted, category, now)
        top = heapq.nlargest(wanted, results)
        if len(terms) > 1:
            boosted = []
            for score, importance, stamp, entry_id in top:
                text = " ".join(tokenize(self.entries[entry_id].content))
                bonus = 0.5 if phrase and phrase in text else 0.0
                boosted.append((score + bonus, importance, stamp, entry_id))
            top = sorted(boosted, reverse=True)
        return [self.entries[r[3]] for r in top[:limit]]

    def _score(self, terms: list[str]) -> dict[float, list[str]]:
        """Entry ids by score: exact token matches score 1, prefix matches 0.6."""
        scores: dict[str, float] = {}
        for term in terms:
            exact = self.postings.get(term, set())
            for entry_id in exact:
                scores[entry_id] = scores.get(entry_id, 0.0) + 1.0
            if len(term) < 3:
                continue
            lo = bisect.bisect_left(self.vocab, term)
            seen: set[str] = set()
            for word in self.vocab[lo:]:
                if not word.startswith(term):
                    break
                if word == term:
                    continue
                for entry_id in self.postings.get(word, ()):
                    if entry_id not in exact and entry_id not in seen:
                        seen.add(entry_id)
                        scores[entry_id] = scores.get(entry_id, 0.0) + 0.6
        buckets: dict[float, list[str]] = {}
        for entry_id, score in scores.items():
            buckets.setdefault(score, []).append(entry_id)
        return buckets

    def _collect(
        self, buckets: dict[float, list[str]], wanted: int, category: str | None, now: datetime
    ) -> list[tuple[float, float, float, str]]:
        """Live hits as (score, importance, time, id), visiting the best score first so a
        common word does not make us rank every entry that contains it: stops after the
        bucket in which ``wanted`` hits were reached."""
        results: list[tuple[float, float, float, str]] = []
        for score in sorted(buckets, reverse=True):
            for entry_id in buckets[score]:
                if not self.is_live(entry_id, now):
                    continue
                entry = self.entries[entry_id]
                if category is not None and entry.category != category:
                    continue
                results.append((score, entry.importance, entry.created_at.timestamp(), entry_id))
            if len(results) >= wanted:
                break
        return results

    def most_important(
        self, limit: int, category: str | None, now: datetime
    ) -> list[KnowledgeEntry]:
        """Live entries ranked by importance, then recency."""
        candidates = (
            (e.importance, e.created_at.timestamp(), e.id)
            for e in self.entries.values()
            if (category is None or e.category == category) and self.is_live(e.id, now)
        )
        return [self.entries[c[2]] for c in heapq.nlargest(limit, candidates)]


def _read_or_empty(root: StorageRoot, path: str) -> bytes:
    try:
        return root.read_bytes(path)
    except FileNotFoundError:
        return b""


def _decode_lines(data: bytes) -> list[str]:
    return decode_md(data).split("\n")
