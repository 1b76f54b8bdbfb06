"""Lexical ranking for ``recall``: an incremental BM25 index over analysed terms.

Texts and queries are turned into terms by :mod:`fsmemory.memory._analysis` (its
names are also importable from here), and the best accepted results are picked by
:func:`fsmemory.memory._topk.top_accepted` (also importable from here).

:class:`BM25Index` keeps postings per term and is updated one document at a time, so
``remember()`` and ``forget()`` cost O(terms of the entry). Scores are Okapi BM25 with
``k1`` = 1.2 and, by default, no length normalisation (``b`` = 0, the BM15 variant):
memories are short single facts, so a longer one is not a less focused one, and two
entries matching the same words equally tie and are ordered by importance (measured on
the LoCoMo development split, ``b`` = 0 ranks as well as 0.75 at five results and
better at one). Query terms can carry weights (:func:`query_terms`
doubles the weight of capitalised words inside a query, usually names). A query term
that occurs in no document falls back to the indexed terms it is a prefix of, or that
are a prefix of it (at least four characters, half weight), which catches words the
stemmer leaves apart (``mentorship`` / ``mentor``) and clipped typos. Each pair of
query terms that also stands side by side in an entry (once
stopwords are dropped: "Melanie painted a sunrise" holds ``melani paint`` and ``paint
sunris``) adds a fixed bonus, so phrases rank above scattered words.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import sys
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any

from fsmemory.memory._analysis import (
    PAIR_BONUS,
    STOPWORDS,
    analyze,
    english_stemmer,
    known_stems,
    query_terms,
    stem,
    term_pairs,
    typed_word_scores,
    typed_words,
    words,
)
from fsmemory.memory._rank_all import all_terms_likely, search_all_terms
from fsmemory.memory._rank_arrays import (
    _side_by_side,
    completed_score,
    entry_array,
    top_of_entries,
)
from fsmemory.memory._topk import SCORE_EPS, kth_accepted, top_accepted

__all__ = [
    "STOPWORDS",
    "BM25Index",
    "analyze",
    "english_stemmer",
    "query_terms",
    "stem",
    "term_pairs",
    "top_accepted",
    "typed_word_scores",
    "typed_words",
    "words",
]

# Stems found so far (the live cache: a query of known words looks them up directly).
_STEM_CACHE = known_stems()
_MIN_PREFIX = 4
_PREFIX_WEIGHT = 0.5
#: postings a query may hold in all and still be scored whole (no pruning)
_SMALL = 4096
#: postings :meth:`BM25Index.search` walks in Python before NumPy (when given) adds
#: up the scores instead (importing it pays off)
_BUDGET = 64_000
#: the same once NumPy is imported (and at least a sixteenth of the key space: an
#: array pass over every key costs about that many postings walked in Python)
_LOADED_BUDGET = 8192


class BM25Index:
    """Okapi BM25 over documents (keyed by small non-negative ints, e.g. row numbers)
    added and removed one at a time.

    The index is held in flat arrays, not in Python objects per posting: a term id per
    distinct term, each document's term ids in one shared array, and per term the
    documents holding it with their term frequency. A removed document stays in the
    postings, marked dead (its document frequencies are decremented at once), and the
    postings are compacted when dead ones outnumber live ones. :meth:`state` and
    :meth:`from_state` turn the index into a few byte strings and back without
    re-analysing anything (the persisted index cache of ``KnowledgeMemory``).

    A loaded index does only what a search needs: a term (or a word's stem) is found
    by bisection in a table stored with the index, without building a dictionary of
    every term or scanning the term list, and a term's postings are
    copied out of the stored arrays (and checked) when first used. A stored posting
    found out of range marks the index :attr:`damaged` (the term then matches nothing)
    instead of failing: the owner rebuilds the index from its documents.

    Args:
        k1: term-frequency saturation.
        b: document-length normalisation (0 = none, 1 = full).
    """

    def __init__(self, k1: float = 1.2, b: float = 0.0) -> None:
        self.k1 = k1
        self.b = b
        # term -> term id and term id -> term; None while a loaded index still holds
        # them as _term_text only (built on the first change of the vocabulary).
        self._tid: dict[str, int] | None = {}
        self._terms: list[str] | None = []
        self._term_text = "\n"  # a loaded index's terms: "\n" + one per line
        # A loaded index's word stems: "\n" + "word\tstem" per line ("word\t" when
        # the stem is the word), so a query of known words needs no stemmer.
        self._stem_text = "\n"
        # A loaded index's lookup tables (see _Sorted): its terms by term, its stem
        # lines (stored sorted by word); None while none was loaded.
        self._term_table: _Sorted | None = None
        self._stem_table: _Sorted | None = None
        self._df = array("I")  # term id -> live documents holding it
        self._max_tf = array("I")  # term id -> upper bound of tf (never lowered)
        # term id -> documents holding it (dead ones included) and their tf; None while
        # a loaded term's postings are still slices of _base_rows / _base_tfs.
        self._rows: list[array[int] | None] = []
        self._tfs: list[array[int] | None] = []
        # Native uint32 bytes (a view of a loaded file is not copied).
        self._base_rows: bytes | memoryview = b""
        self._base_tfs: bytes | memoryview = b""
        self._base_off = array("q", [0])
        self._seq = array("I")  # every document's term ids, one after the other
        self._start = array("q")  # key -> offset in _seq (-1: never added)
        self._length = array("I")  # key -> number of terms
        self._alive = bytearray()  # key -> 1 while indexed
        self._n_docs = 0
        self._n_postings = 0  # postings in _rows, dead ones included
        self._n_live_postings = 0
        self._total = 0
        self._vocab: list[str] | None = None  # sorted terms, built on first prefix lookup
        self._min_length = 0
        self.damaged = False
        """True once a stored posting was found out of range (see the class notes)."""

    def __len__(self) -> int:
        return self._n_docs

    def __contains__(self, key: object) -> bool:
        return type(key) is int and 0 <= key < len(self._alive) and bool(self._alive[key])

    @property
    def key_space(self) -> int:
        """One more than the largest key ever added (0 when empty)."""
        return len(self._alive)

    def _vocabulary(self) -> tuple[dict[str, int], list[str]]:
        """Term -> id and id -> term (built from a loaded index's term text once)."""
        tid, terms = self._tid, self._terms
        if tid is None or terms is None:
            terms = self._term_text[1:-1].split("\n") if len(self._term_text) > 1 else []
            tid = dict(zip(terms, range(len(terms)), strict=True))
            self._tid, self._terms = tid, terms
        return tid, terms

    def _find_term(self, term: str) -> int | None:
        """The id of ``term`` (found in a loaded index's stored table, without building
        its vocabulary)."""
        tid = self._tid
        if tid is not None:
            return tid.get(term)
        table = self._term_table
        return None if table is None else table.find(term)

    def query_stem(self, word: str) -> str:
        """:func:`stem` of ``word``, found in a loaded index's stored stems when the
        word occurs in its documents (a cold process then loads no stemmer)."""
        found = _STEM_CACHE.get(word)
        if found is not None:
            return found
        table = self._stem_table
        line = None if table is None else table.find(word)
        if table is None or line is None:
            return stem(word)
        return table.value(line) or word

    def _stems(self) -> str:
        """The stem lines :meth:`state` stores: every word this process has stemmed (or
        a loaded index stored) whose stem is one of the index's terms."""
        vocab = self._vocabulary()[0]
        known: dict[str, str] = {}
        text = self._stem_text
        if len(text) > 1:
            for line in text[1:-1].split("\n"):
                word, _, found = line.partition("\t")
                known[word] = found or word
        known.update(_STEM_CACHE)
        lines = [
            f"{word}\t{'' if found == word else found}"
            for word, found in known.items()
            if found in vocab
        ]
        # Sorted by word (a loaded index finds a word by bisection, see _Sorted): the
        # lines themselves, as the tab sorts before any character of a word.
        lines.sort()
        return "\n" + "\n".join(lines) + "\n" if lines else "\n"

    def _term_id(self, term: str) -> int:
        vocab, terms = self._vocabulary()
        tid = vocab.get(term)
        if tid is None:
            tid = vocab[term] = len(terms)
            terms.append(term)
            self._df.append(0)
            self._max_tf.append(0)
            self._rows.append(array("I"))
            self._tfs.append(array("I"))
            if self._vocab is not None:
                bisect.insort(self._vocab, term)
        return tid

    def add(self, key: int, terms: Iterable[str]) -> None:
        """Index document ``key`` with its analysed ``terms`` (replaces an older one)."""
        self.add_many([(key, terms)])

    def add_many(self, docs: Iterable[tuple[int, Iterable[str]]]) -> None:
        """:meth:`add` each ``(key, terms)`` in turn (one loop for a whole build)."""
        term_id, post = self._term_id, self._post
        df, max_tf, alive = self._df, self._max_tf, self._alive
        tid_get: Callable[[str], int | None] | None = None
        for key, terms in docs:
            if tid_get is None:  # not before a first document: a loaded index's
                tid_get = self._vocabulary()[0].get  # vocabulary is built on demand
            if key < 0:
                raise ValueError("document keys are non-negative ints")
            if key in self:
                self.remove(key)
            if key < len(self._start) and self._start[key] >= 0:
                self._purge(key)
            seq = []
            for term in terms:
                tid = tid_get(term)
                seq.append(term_id(term) if tid is None else tid)
            distinct = set(seq)
            if len(distinct) == len(seq):  # the usual case: every term once
                counts: Iterable[tuple[int, int]] = zip(seq, repeat(1))
            else:
                tally: dict[int, int] = {}
                for tid in seq:
                    tally[tid] = tally.get(tid, 0) + 1
                counts = tally.items()
            for tid, tf in counts:
                rows, tfs = post(tid)
                rows.append(key)
                tfs.append(tf)
                df[tid] += 1
                if tf > max_tf[tid]:
                    max_tf[tid] = tf
            grow = key + 1 - len(alive)
            if grow > 0:
                self._start.extend(repeat(-1, grow))
                self._length.extend(repeat(0, grow))
                alive.extend(bytes(grow))
            n = len(seq)
            self._n_postings += len(distinct)
            self._n_live_postings += len(distinct)
            if not self._n_docs or n < self._min_length:
                self._min_length = n
            self._start[key] = len(self._seq)
            self._length[key] = n
            self._seq.extend(seq)
            alive[key] = 1
            self._n_docs += 1
            self._total += n

    def remove(self, key: int) -> None:
        """Drop document ``key`` (no-op when absent)."""
        if key not in self:
            return
        self._alive[key] = 0
        self._n_docs -= 1
        length = self._length[key]
        self._total -= length
        start = self._start[key]
        df = self._df
        distinct = {t for t in self._seq[start : start + length] if t < len(df)}
        for tid in distinct:
            if df[tid]:
                df[tid] -= 1
        self._n_live_postings -= len(distinct)
        if self._n_postings - self._n_live_postings > max(4096, self._n_live_postings):
            self._compact()

    def _purge(self, key: int) -> None:
        """Take the dead postings of a removed ``key`` out (before it is added again)."""
        at, length = self._start[key], self._length[key]
        for tid in set(self._seq[at : at + length]):
            if tid >= len(self._rows):
                continue
            rows, tfs = self._post(tid)
            try:
                i = rows.index(key)
            except ValueError:
                continue
            del rows[i]
            del tfs[i]
            self._n_postings -= 1
        self._start[key] = -1

    def _compact(self) -> None:
        """Drop dead documents from the postings and the term sequence."""
        alive = self._alive
        for tid in range(len(self._rows)):
            if self._size(tid) != self._df[tid]:
                rows, tfs = self._post(tid)
                keep = [i for i, row in enumerate(rows) if alive[row]]
                self._rows[tid] = array("I", [rows[i] for i in keep])
                self._tfs[tid] = array("I", [tfs[i] for i in keep])
        seq, start, length = self._seq, self._start, self._length
        packed = array("I")
        for key in range(len(alive)):
            if alive[key]:
                at = start[key]
                start[key] = len(packed)
                packed.extend(seq[at : at + length[key]])
            else:
                start[key] = -1
        self._seq = packed
        self._n_postings = self._n_live_postings

    def _size(self, tid: int) -> int:
        """Postings of term ``tid``, dead ones included."""
        rows = self._rows[tid]
        if rows is None:
            return self._base_off[tid + 1] - self._base_off[tid]
        return len(rows)

    def _post(self, tid: int, np: Any = None) -> tuple[array[int], array[int]]:
        """The postings of term ``tid`` (a loaded term's are copied out of the base
        arrays on first use, and checked: with NumPy when ``np`` gives it)."""
        rows, tfs = self._rows[tid], self._tfs[tid]
        if rows is None or tfs is None:
            a, b = self._base_off[tid], self._base_off[tid + 1]
            rows, tfs = array("I"), array("I")
            if 0 <= a <= b <= len(self._base_rows) // 4 and b - a >= self._df[tid]:
                rows.frombytes(self._base_rows[4 * a : 4 * b])
                tfs.frombytes(self._base_tfs[4 * a : 4 * b])
            if np is None or not rows:
                top, low, high = (max(rows), min(tfs), max(tfs)) if rows else (0, 1, 0)
            else:  # views only while reduced (a view would pin the arrays)
                view = np.frombuffer(rows, dtype=np.uint32), np.frombuffer(tfs, dtype=np.uint32)
                top, low, high = (int(x) for x in (view[0].max(), view[1].min(), view[1].max()))
                del view
            if len(rows) < self._df[tid] or (
                rows and (top >= len(self._alive) or low < 1 or high > self._max_tf[tid])
            ):
                # A stored posting out of range: match nothing, and tell the owner.
                self.damaged = True
                rows, tfs = array("I"), array("I")
            self._rows[tid], self._tfs[tid] = rows, tfs
        return rows, tfs

    def _posting(self, tid: int) -> Iterator[tuple[int, int]]:
        """Live ``(key, tf)`` pairs of term ``tid``."""
        rows, tfs = self._post(tid)
        pairs = zip(rows, tfs, strict=True)
        if len(rows) == self._df[tid]:
            return pairs
        alive = self._alive
        return (pair for pair in pairs if alive[pair[0]])

    def _live_tid(self, term: str) -> int | None:
        tid = self._find_term(term)
        return tid if tid is not None and self._df[tid] else None

    def _expand(self, term: str) -> list[tuple[int, float]]:
        """Indexed term ids standing in for ``term`` with their weight factor."""
        tid = self._live_tid(term)
        if tid is not None:
            return [(tid, 1.0)]
        if len(term) < _MIN_PREFIX or not self._has_prefix(term[:_MIN_PREFIX]):
            return []
        out: list[tuple[int, float]] = []
        for longer in self._terms_starting(term):
            found = self._live_tid(longer)
            if found is not None:
                out.append((found, _PREFIX_WEIGHT))
        for size in range(len(term) - 1, _MIN_PREFIX - 1, -1):
            found = self._live_tid(term[:size])
            if found is not None:
                out.append((found, _PREFIX_WEIGHT))
                break
        return out

    def _has_prefix(self, prefix: str) -> bool:
        """Whether a loaded index holds a term starting with ``prefix`` (found in its
        stored table; True once the vocabulary is built): a word that matches nothing
        is then not looked up once per prefix length."""
        table = self._term_table
        if self._tid is not None or table is None:
            return True
        return bool(table.starting(prefix, 1))

    def _terms_starting(self, prefix: str) -> list[str]:
        """Indexed terms that start with ``prefix``, in sorted order."""
        table = self._term_table
        if self._vocab is None and self._tid is None and table is not None:
            # A loaded index: its stored table is in term order (no sort of every term).
            return [table.key(n) for n in table.starting(prefix)]
        if self._vocab is None:
            self._vocab = sorted(self._vocabulary()[0])
        vocab = self._vocab
        i = bisect.bisect_left(vocab, prefix)
        j = i
        while j < len(vocab) and vocab[j].startswith(prefix):
            j += 1
        return vocab[i:j]

    def verify(self) -> bool:
        """Check every stored posting not yet used (what :meth:`_post` checks one term
        at a time); False marks the index :attr:`damaged`."""
        off, n_rows = self._base_off, len(self._base_rows) // 4
        unused = [tid for tid, rows in enumerate(self._rows) if rows is None]
        if unused:
            rows, tfs = array("I"), array("I")
            rows.frombytes(self._base_rows[: 4 * n_rows])
            tfs.frombytes(self._base_tfs[: 4 * n_rows])
            ok = (
                len(tfs) == n_rows
                and off[0] == 0
                and all(map(operator.le, off, itertools.islice(off, 1, None)))
                and off[-1] <= n_rows
                and all(off[t + 1] - off[t] >= self._df[t] for t in unused)
                and (not rows or max(rows) < len(self._alive))
                and (not tfs or min(tfs) >= 1)
                and all(max(tfs[off[t] : off[t + 1]], default=0) <= self._max_tf[t] for t in unused)
            )
            if not ok:
                self.damaged = True
        return not self.damaged

    def _norms(self) -> tuple[float, float, float]:
        """(k1 + 1, constant and per-length parts of the tf normaliser)."""
        k1 = self.k1
        avg = self._total / self._n_docs or 1.0
        return k1 + 1.0, k1 * (1.0 - self.b), k1 * self.b / avg

    def _idf(self, df: int) -> float:
        return math.log(1.0 + (self._n_docs - df + 0.5) / (df + 0.5))

    def _entries(self, query: Mapping[str, float]) -> list[tuple[int, float, float]]:
        """``(term id, weight, upper bound)`` of every indexed term standing in for a
        query term, highest upper bound first (equal bounds in query order).

        The weight is the term's part of the score per unit of ``tf / (tf + norm)``;
        the upper bound, the most it adds to any document. Every scorer adds the terms'
        parts in this order (then the pair bonuses), so a score is the same float
        whichever way it was reached.
        """
        k1p, base, per_len = self._norms()
        found: list[tuple[int, float, float]] = []
        for term, weight in query.items():
            for tid, factor in self._expand(term):
                w = weight * factor * self._idf(self._df[tid]) * k1p
                top = self._max_tf[tid] or 1
                found.append((tid, w, w * top / (top + base + per_len * self._min_length)))
        found.sort(key=lambda entry: -entry[2])  # stable: equal bounds keep query order
        return found

    def _pair_tids(self, pairs: Collection[tuple[str, str]]) -> list[tuple[int, int]]:
        """The term ids of the pairs whose both terms are indexed (in sorted order, so
        bonuses are added in the same order in every process)."""
        found: list[tuple[int, int]] = []
        for first, second in sorted(pairs):
            a, b = self._live_tid(first), self._live_tid(second)
            if a is not None and b is not None:
                found.append((a, b))
        return found

    def _add_postings(self, acc: dict[int, float], tid: int, w: float) -> None:
        """Add term ``tid``'s part to every live document holding it."""
        _, base, per_len = self._norms()
        get = acc.get
        if per_len:
            lengths = self._length
            for key, tf in self._posting(tid):
                acc[key] = get(key, 0.0) + w * tf / (tf + base + per_len * lengths[key])
        else:
            for key, tf in self._posting(tid):
                acc[key] = get(key, 0.0) + w * tf / (tf + base)

    def scores(
        self, query: Mapping[str, float], pairs: Collection[tuple[str, str]] = ()
    ) -> dict[int, float]:
        """BM25 score of every document matching at least one query term.

        Args:
            query: term -> weight (as from :func:`query_terms`).
            pairs: adjacent query term pairs (:func:`term_pairs`); each one found side
                by side in a document adds a fixed bonus to it.
        """
        if not self._n_docs:
            return {}
        acc: dict[int, float] = {}
        for tid, w, _ in self._entries(query):
            self._add_postings(acc, tid, w)
        self._add_pair_bonus(acc, self._pair_tids(pairs))
        return acc

    def score_array(
        self, np: Any, query: Mapping[str, float], pairs: Collection[tuple[str, str]] = ()
    ) -> Any:
        """:meth:`scores` as a NumPy float64 array indexed by key (0 for keys matching
        no term, removed ones included), computed a posting list at a time; each score
        is the same float as :meth:`scores` gives.

        ``np`` is the NumPy module: this module never imports it, so only a caller that
        already uses NumPy (hybrid recall) pays for it.
        """
        if not self._n_docs:
            return np.zeros(len(self._alive), dtype=np.float64)
        return entry_array(self, np, self._entries(query), self._pair_tids(pairs))

    def _add_pair_bonus(self, acc: dict[int, float], pairs: Sequence[tuple[int, int]]) -> None:
        """Add the pair bonus to the documents of ``acc`` holding a pair side by side."""
        seq, start, length = self._seq, self._start, self._length
        for a, b in pairs:
            rows_a, rows_b = self._post(a)[0], self._post(b)[0]
            if len(rows_a) > len(rows_b):
                rows_a, rows_b = rows_b, rows_a
            both = set(rows_a).intersection(rows_b)
            for key in both:
                if key in acc:  # live (a removed document has no score)
                    at = start[key]
                    if _side_by_side(seq[at : at + length[key]], a, b):
                        acc[key] += PAIR_BONUS

    def search(
        self,
        query: Mapping[str, float],
        limit: int,
        accept: Callable[[int], bool],
        priority: Callable[[int], tuple[Any, ...]],
        pairs: Collection[tuple[str, str]] = (),
        order: Sequence[int] | None = None,
        numpy: Callable[[], Any] | None = None,
    ) -> list[tuple[float, int]]:
        """The best ``limit`` accepted documents as ``(score, key)``, best first: the
        first ``limit`` accepted keys of :meth:`scores` by :func:`top_accepted`, without
        scoring what cannot reach them.

        Equal scores (to nine decimals) are ordered by ``priority(key)``, higher first
        (e.g. importance, then recency); ``order`` (every key in ascending priority)
        lets a large group of equal scores be walked instead of sorted.

        Terms are taken highest upper bound first (MaxScore, as Lucene and tantivy
        prune): once the documents scored so far hold ``limit`` accepted ones that no
        document missing every term taken can reach, the remaining terms only complete
        the scores of documents that still can, read from each document's own term
        sequence (a word in every entry costs a lookup per candidate, not a pass over
        its postings). When that would still walk more than :data:`_BUDGET` postings
        (:data:`_LOADED_BUDGET` once NumPy is imported) and ``numpy`` gives the NumPy
        module (None when it is not installed), the scores are added up a posting list
        at a time in NumPy (:func:`top_of_entries`, the same floats): it is imported only
        then.
        """
        if not self._n_docs or limit <= 0:
            return []
        entries = self._entries(query)
        tids = self._pair_tids(pairs)
        total = sum(self._df[tid] for tid, _, _ in entries)
        if total <= _SMALL:
            acc: dict[int, float] = {}
            for tid, w, _ in entries:
                self._add_postings(acc, tid, w)
            self._add_pair_bonus(acc, tids)
            return top_accepted(acc, limit, accept, priority, order)
        walks = self._walks(entries, tids)
        if walks > total // 4 and all_terms_likely(self, entries, limit):
            found = search_all_terms(self, entries, tids, limit, accept, priority, order)
            if found is not None:
                return found
        heavy = walks > _BUDGET or (
            walks > max(_LOADED_BUDGET, len(self._alive) // 16) and "numpy" in sys.modules
        )
        np = numpy() if numpy is not None and heavy else None
        if np is not None:
            return top_of_entries(self, np, entries, tids, limit, accept, priority, order)
        scored = self._max_score(entries, tids, limit, accept)
        return top_accepted(scored, limit, accept, priority, order)

    def _bounds(
        self, entries: Sequence[tuple[int, float, float]], pairs: Sequence[tuple[int, int]]
    ) -> list[float]:
        """``bounds[j]``: the most a document holding none of the first ``j`` entries'
        terms can score (the rest's upper bounds, and the bonus of each pair both of
        whose terms are among the rest)."""
        bounds = [0.0] * (len(entries) + 1)
        taken: set[int] = set()
        for j in range(len(entries) + 1):
            rest = sum(ub for _, _, ub in entries[j:])
            open_pairs = sum(1 for a, b in pairs if a not in taken and b not in taken)
            bounds[j] = rest + PAIR_BONUS * open_pairs
            if j < len(entries):
                taken.add(entries[j][0])
        return bounds

    def _walks(
        self, entries: Sequence[tuple[int, float, float]], pairs: Sequence[tuple[int, int]]
    ) -> int:
        """The fewest postings :meth:`_max_score` must walk before it can stop adding
        documents: terms are taken while even the best score reachable from the terms
        taken (their bounds added up) does not clear what the rest could add."""
        bounds = self._bounds(entries, pairs)
        reach, walked = 0.0, 0
        for j, (tid, _, ub) in enumerate(entries):
            if j and bounds[j] < reach - SCORE_EPS:
                break
            walked += self._df[tid]
            reach += ub
        return walked

    def _max_score(
        self,
        entries: Sequence[tuple[int, float, float]],
        pairs: Sequence[tuple[int, int]],
        limit: int,
        accept: Callable[[int], bool],
    ) -> dict[int, float]:
        """The scores of every document that can rank among the first ``limit``
        accepted ones (each the float :meth:`scores` gives it; documents that cannot
        reach them are left out)."""
        bounds = self._bounds(entries, pairs)
        acc: dict[int, float] = {}
        theta = -math.inf
        j = 0
        while j < len(entries):
            unseen = bounds[j]
            if len(acc) >= limit and unseen < max(acc.values()) - SCORE_EPS:
                theta = kth_accepted(acc, limit, accept)
                if unseen < theta - SCORE_EPS:
                    break
            tid, w, _ = entries[j]
            self._add_postings(acc, tid, w)
            j += 1
        if j == len(entries):
            self._add_pair_bonus(acc, pairs)
            return acc
        # Only documents already scored can still reach the first ``limit``: finish
        # theirs from their own term sequences.
        most = sum(ub for _, _, ub in entries[j:]) + PAIR_BONUS * len(pairs)
        rest = [(tid, w) for tid, w, _ in entries[j:]]
        _, base, per_len = self._norms()
        seq, start, length = self._seq, self._start, self._length
        done: dict[int, float] = {}
        for key, score in acc.items():
            if score + most < theta - SCORE_EPS:
                continue
            terms = seq[start[key] : start[key] + length[key]]
            done[key] = completed_score(terms, score, rest, pairs, base, per_len)
        return done

    # -- persisted form ------------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, bytes]]:
        """The index as plain values and byte strings (see :meth:`from_state`)."""
        if self._n_postings != self._n_live_postings:
            self._compact()
        base_rows, base_tfs, off = self._base_rows, self._base_tfs, self._base_off
        width = 4
        rows_parts: list[bytes] = []
        tfs_parts: list[bytes] = []
        for tid in range(len(self._rows)):
            rows, tfs = self._rows[tid], self._tfs[tid]
            if rows is None or tfs is None:
                a, b = off[tid] * width, off[tid + 1] * width
                rows_parts.append(bytes(base_rows[a:b]))
                tfs_parts.append(bytes(base_tfs[a:b]))
            else:
                rows_parts.append(rows.tobytes())
                tfs_parts.append(tfs.tobytes())
        terms = self._terms
        meta: dict[str, Any] = {
            "k1": self.k1,
            "b": self.b,
            "n_docs": self._n_docs,
            "total": self._total,
            "min_length": self._min_length,
        }
        # Offsets of each term's postings, so a loaded index need not add up every df.
        offsets = array("q", itertools.accumulate(map(len, rows_parts), initial=0))
        term_text = self._term_text[1:-1] if terms is None else "\n".join(terms)
        term_list = term_text.split("\n") if term_text or terms else []
        stem_text = self._stems()
        blobs = {
            "terms": term_text.encode(),
            "term_order": array(
                "I", sorted(range(len(term_list)), key=term_list.__getitem__)
            ).tobytes(),
            "term_starts": _line_starts(term_list, 0, term_text.isascii()).tobytes(),
            "stems": stem_text.encode(),
            "stem_starts": _line_starts(
                stem_text[1:-1].split("\n") if len(stem_text) > 1 else [], 1, stem_text.isascii()
            ).tobytes(),
            "offsets": array("q", (o // width for o in offsets)).tobytes(),
            "df": self._df.tobytes(),
            "max_tf": self._max_tf.tobytes(),
            "rows": b"".join(rows_parts),
            "tfs": b"".join(tfs_parts),
            "seq": self._seq.tobytes(),
            "start": self._start.tobytes(),
            "length": self._length.tobytes(),
            "alive": bytes(self._alive),
        }
        return meta, blobs

    @classmethod
    def from_state(
        cls, meta: Mapping[str, Any], blobs: Mapping[str, bytes | memoryview]
    ) -> BM25Index:
        """Rebuild an index from :meth:`state` (``ValueError`` when the parts do not fit
        together). The checks here cost no more than the search needs: lengths and
        counts now, each term's postings when it is first used (see :attr:`damaged`);
        document offsets need none, as a slice out of range is merely empty."""
        index = cls(float(meta["k1"]), float(meta["b"]))
        text = str(blobs["terms"], "utf-8")
        n_terms = text.count("\n") + 1 if text else 0
        df, max_tf = _arr("I", blobs["df"]), _arr("I", blobs["max_tf"])
        offsets, seq = _arr("q", blobs["offsets"]), _arr("I", blobs["seq"])
        start, length = _arr("q", blobs["start"]), _arr("I", blobs["length"])
        rows, tfs = blobs["rows"], blobs["tfs"]
        alive = bytearray(blobs["alive"])
        n_keys = len(alive)
        n_docs = int(meta["n_docs"])
        if (
            len(df) != n_terms
            or len(max_tf) != n_terms
            or len(offsets) != n_terms + 1
            or len(rows) % 4
            or len(tfs) != len(rows)
            or len(start) != n_keys
            or len(length) != n_keys
            or alive.count(1) != n_docs
            or alive.count(0) + alive.count(1) != n_keys
        ):
            raise ValueError("index parts do not fit together")
        index._tid = index._terms = None
        index._term_text = "\n" + text + "\n"
        stems = str(blobs["stems"], "utf-8")
        if stems[:1] != "\n" or stems[-1:] != "\n":
            raise ValueError("bad stem list")
        index._stem_text = stems
        tables = [blobs.get(name) for name in ("term_starts", "term_order", "stem_starts")]
        if any(table is None or len(table) % 4 for table in tables):
            raise ValueError("index lookup tables missing")
        # (views of the stored bytes: nothing copied; the cache's byte order is ours)
        term_starts, term_order, stem_starts = (memoryview(t or b"").cast("I") for t in tables)
        index._term_table = _Sorted(blobs["terms"], term_starts, term_order, 0)
        index._stem_table = _Sorted(blobs["stems"], stem_starts, None, 1)
        if index._term_table.count != n_terms:
            raise ValueError("index lookup tables do not fit the terms")
        index._df, index._max_tf, index._seq = df, max_tf, seq
        index._start, index._length, index._alive = start, length, alive
        index._base_rows, index._base_tfs, index._base_off = rows, tfs, offsets
        index._rows = [None] * n_terms
        index._tfs = [None] * n_terms
        index._n_docs = n_docs
        # After compaction every posting is live.
        index._n_postings = index._n_live_postings = len(rows) // 4
        index._total = int(meta["total"])
        index._min_length = int(meta["min_length"])
        return index


def _line_starts(lines: Sequence[str], first: int, ascii: bool = False) -> array[int]:
    """Where each of ``lines`` starts in their UTF-8 text joined by line breaks from
    byte ``first`` on, then where a line after the last would start (``ascii``: the
    lines are ASCII, a character a byte)."""
    if ascii:
        sizes = (len(line) + 1 for line in lines)
    else:
        sizes = (len(line.encode("utf-8")) + 1 for line in lines)
    return array("I", itertools.accumulate(sizes, initial=first))


class _Sorted:
    """Lines of a stored text found by bisection: a loaded index's terms (``order``
    lists the line numbers by term, as the lines are in term-id order) or its stem
    lines (stored sorted by word: ``order`` is None). A line's key is what precedes
    its first tab (all of a term line); lines compare as UTF-8 bytes, the order of
    their code points. Stored with the text (under the cache's checksum), so looking
    a word up costs a few slices rather than a scan of the text or building a
    dictionary of every line (0.7 ms and 35 ms for the terms of 100k entries).

    Args:
        text: the stored text.
        starts: where each line starts (bytes), then where the next would.
        order: the line numbers in key order (None: the lines are in key order).
        first: where the first line starts.

    Raises:
        ValueError: tables whose lengths do not fit the text.
    """

    __slots__ = ("count", "order", "starts", "text")

    def __init__(
        self,
        text: bytes | memoryview,
        starts: Sequence[int],
        order: Sequence[int] | None,
        first: int,
    ) -> None:
        self.count = max(len(starts) - 1, 0)
        if (
            not len(starts)
            or starts[0] != first
            or (self.count and starts[-1] != len(text) + 1 - first)
            or (order is not None and len(order) != self.count)
        ):
            raise ValueError("a lookup table does not fit its text")
        self.text = memoryview(text)
        self.starts = starts
        self.order = order

    def _line(self, n: int) -> bytes:
        """The ``n``-th line in key order (empty when the tables point outside the
        text: they are checked as a whole, by the cache's checksum, not line by line;
        a damaged table can only make a lookup miss)."""
        at = n if self.order is None else self.order[n]
        if not 0 <= at < self.count:
            return b""
        return bytes(self.text[self.starts[at] : self.starts[at + 1] - 1])

    def _key(self, n: int) -> bytes:
        line = self._line(n)
        tab = line.find(b"\t")
        return line if tab < 0 or self.order is not None else line[:tab]

    def key(self, n: int) -> str:
        """The key of the ``n``-th line in key order."""
        return self._key(n).decode("utf-8")

    def value(self, n: int) -> str:
        """What follows the key of the ``n``-th line in key order and a tab."""
        line = self._line(n)
        return line[line.find(b"\t") + 1 :].decode("utf-8")

    def find(self, key: str) -> int | None:
        """The line number of ``key`` (for terms: the term id; for stem lines, the
        position in key order), or None."""
        try:
            wanted = key.encode("utf-8")
        except UnicodeEncodeError:  # (a lone surrogate: never stored)
            return None
        n = bisect.bisect_left(range(self.count), wanted, key=self._key)
        if n == self.count or self._key(n) != wanted:
            return None
        return n if self.order is None else self.order[n]

    def starting(self, prefix: str, most: int | None = None) -> list[int]:
        """The positions in key order of the keys that start with ``prefix`` (at most
        ``most``)."""
        try:
            wanted = prefix.encode("utf-8")
        except UnicodeEncodeError:
            return []
        n = bisect.bisect_left(range(self.count), wanted, key=self._key)
        out: list[int] = []
        while n < self.count and (most is None or len(out) < most):
            if not self._key(n).startswith(wanted):
                break
            out.append(n)
            n += 1
        return out


def _arr(code: str, data: bytes | memoryview) -> array[int]:
    out = array(code)
    out.frombytes(data)
    return out
