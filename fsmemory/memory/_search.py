"""Keyword search over the memory index: which rows hold which query words.

The one interface (tokens in, matching rows out) between the index and any ranking:
:meth:`SearchIndex.term_matches` gives, per query term, the rows holding it as a whole
word and the rows holding a longer word it starts; :func:`score` turns that into score
buckets. Rows are the index's integer row numbers; the index decides which rows are
live and breaks ties.

Nothing is tokenized until the first search. A fresh process's first search scans the
texts in bulk (one lower-cased string, searched with a compiled pattern per term, in C)
and parses nothing else; the word postings are built on the second search and kept up
to date from then on, so later searches are lookups.
"""

from __future__ import annotations

import bisect
import operator
import re
from array import array
from collections.abc import Callable, Collection, Sequence
from itertools import accumulate

__all__ = ["STOPWORDS", "SearchIndex", "score", "tokenize"]

_TOKEN = re.compile(r"\w+")
#: Query words ignored when the query has other words.
STOPWORDS = frozenset(
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
#: Terms shorter than this match whole words only (no prefix matches).
_MIN_PREFIX = 3
#: Rows per block of the bulk scan.
_SCAN_ROWS = 4096

Matches = tuple[Collection[int], Collection[int]]


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (Unicode-aware)."""
    return _TOKEN.findall(text.lower())


class SearchIndex:
    """Word postings over rows, built lazily.

    Args:
        columns: ``() -> (contents, categories, skip)``: the index's columns, where row
            ``i`` has text ``contents[i]`` and category ``categories[i]``, and rows with
            ``skip[i]`` set are left out of postings (removed rows). Callers filter the
            rows they get back (live or not) themselves.
    """

    def __init__(
        self, columns: Callable[[], tuple[Sequence[str], Sequence[str], Sequence[int]]]
    ) -> None:
        self._columns = columns
        self.clear()

    def clear(self) -> None:
        """Forget every posting (rows are re-read on the next search)."""
        self._postings: dict[str, list[int]] | None = None
        self._vocab: list[str] = []
        self._vocab_sorted = True
        self._pending: list[int] = []
        self._searches = 0

    def add(self, row: int) -> None:
        """A new row exists (tokenized on the next search that uses postings)."""
        if self._postings is not None:
            self._pending.append(row)

    def add_many(self, rows: range) -> None:
        """New rows exist (as :meth:`add`)."""
        if self._postings is not None:
            self._pending.extend(rows)

    def term_matches(self, terms: Sequence[str]) -> list[Matches]:
        """Per term: (rows with it as a word, rows with a longer word starting with it).

        Terms are lower-case word tokens (see :func:`tokenize`). The prefix rows exclude
        the whole-word rows; terms shorter than 3 characters have no prefix rows.
        """
        self._searches += 1
        if self._postings is None and self._searches == 1:
            return self._scan(terms)
        postings = self._ensure_postings()
        out: list[Matches] = []
        for term in terms:
            exact = postings.get(term, ())
            prefix: set[int] = set()
            if len(term) >= _MIN_PREFIX:
                vocab = self._sorted_vocab()
                for i in range(bisect.bisect_left(vocab, term), len(vocab)):
                    word = vocab[i]
                    if not word.startswith(term):
                        break
                    if word != term:
                        prefix.update(postings[word])
                prefix.difference_update(exact)
            out.append((exact, prefix))
        return out

    # -- postings ----------------------------------------------------------------------
    def _ensure_postings(self) -> dict[str, list[int]]:
        postings = self._postings
        contents, categories, skip = self._columns()
        if postings is None:
            postings = self._postings = {}
            self._pending = [row for row in range(len(contents)) if not skip[row]]
        if self._pending:
            pending, self._pending = self._pending, []
            findall = _TOKEN.findall
            new_words = False
            for row in pending:
                words = set(findall(contents[row].lower()))
                words.update(findall(categories[row].lower()))
                for word in words:
                    ids = postings.get(word)
                    if ids is None:
                        postings[word] = [row]
                        self._vocab.append(word)
                        new_words = True
                    else:
                        ids.append(row)
            if new_words:
                self._vocab_sorted = False
        return postings

    def _sorted_vocab(self) -> list[str]:
        if not self._vocab_sorted:
            self._vocab.sort()
            self._vocab_sorted = True
        return self._vocab

    # -- the bulk scan of a fresh process's first search --------------------------------
    def _scan(self, terms: Sequence[str]) -> list[Matches]:
        contents, categories, _skip = self._columns()
        # The literal first lets the regex engine skip ahead; the look-behind keeps only
        # occurrences that start a word; the group tells a whole word from a prefix.
        patterns = [
            re.compile(re.escape(term) + r"(?<!\w" + re.escape(term) + r")(\w*)") for term in terms
        ]
        exact: list[set[int]] = [set() for _ in terms]
        prefix: list[set[int]] = [set() for _ in terms]
        for first in range(0, len(contents), _SCAN_ROWS):
            # Texts are scanned a block of rows at a time, which bounds the memory a
            # fresh process's first search needs beside the index itself.
            block = contents[first : first + _SCAN_ROWS]
            lengths = array("q", map(len, block))
            lowered = "\x00".join(block).lower()
            if len(lowered) != sum(lengths) + len(lengths) - 1:
                # A character whose lower case is longer: lower each text on its own.
                lowered_texts = [c.lower() for c in block]
                lowered = "\x00".join(lowered_texts)
                lengths = array("q", map(len, lowered_texts))
            # ends[i]: the offset of the separator after the block's row i, so a match
            # at offset p lies in the block's row bisect_right(ends, p).
            ends = array("q", map(operator.add, accumulate(lengths), range(len(lengths))))
            for k, pattern in enumerate(patterns):
                whole_rows, prefix_rows = exact[k], prefix[k]
                short = len(terms[k]) < _MIN_PREFIX
                for match in pattern.finditer(lowered):
                    row = first + bisect.bisect_right(ends, match.start())
                    if not match.group(1):
                        whole_rows.add(row)
                    elif not short:
                        prefix_rows.add(row)
        category_words = {cat: set(tokenize(cat)) for cat in set(categories)}
        out: list[Matches] = []
        for k, term in enumerate(terms):
            whole = {cat for cat, words in category_words.items() if term in words}
            starts: set[str] = set()
            if len(term) >= _MIN_PREFIX:
                starts = {
                    cat
                    for cat, words in category_words.items()
                    if cat not in whole and any(w.startswith(term) and w != term for w in words)
                }
            if whole or starts:
                for row, cat in enumerate(categories):
                    if cat in whole:
                        exact[k].add(row)
                    elif cat in starts:
                        prefix[k].add(row)
            prefix[k].difference_update(exact[k])
            out.append((exact[k], prefix[k]))
        return out


def score(matches: Sequence[Matches]) -> dict[float, list[int]]:
    """Rows by score: each term adds 1 for a whole-word match, 0.6 for a prefix match."""
    scores: dict[int, float] = {}
    get = scores.get
    for exact, prefix in matches:
        for row in exact:
            scores[row] = get(row, 0.0) + 1.0
        for row in prefix:
            scores[row] = get(row, 0.0) + 0.6
    buckets: dict[float, list[int]] = {}
    for row, value in scores.items():
        buckets.setdefault(value, []).append(row)
    return buckets
