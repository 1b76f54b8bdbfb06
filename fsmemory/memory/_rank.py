"""Lexical ranking for ``recall``: text analysis and an incremental BM25 index.

Text analysis (:func:`analyze`) turns a text into index terms:

* Unicode-aware word split after NFKC normalisation and case folding, so punctuation,
  apostrophes and hyphens separate words, numbers stay whole (``2023``, ``3.5`` gives
  ``3`` and ``5``), full-width forms match their ASCII twins and accents are dropped
  from Latin-script words (``café`` matches ``cafe``, ``Straße`` matches ``strasse``);
* scripts written without spaces (Han, Hiragana, Katakana, Hangul, Thai) are indexed
  as overlapping character pairs, so a word inside a sentence can still be found;
* common English function words (:data:`STOPWORDS`) are dropped;
* irregular English forms are mapped to their base (``went`` -> ``go``, ``children``
  -> ``child``), then every word is reduced by the English Snowball stemmer
  (``painted``, ``painting`` and ``paints`` all give ``paint``). The stemmer comes
  from the ``snowballstemmer`` package, which uses ``PyStemmer`` (C) when installed.

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
import heapq
import itertools
import math
import re
import unicodedata
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from operator import itemgetter
from typing import Any, Generic, TypeVar

__all__ = [
    "STOPWORDS",
    "BM25Index",
    "analyze",
    "english_stemmer",
    "query_terms",
    "stem",
    "term_pairs",
    "words",
]

K = TypeVar("K", bound=Hashable)

_WORD = re.compile(r"\w+")
# Scripts without spaces between words: indexed as overlapping character pairs.
_UNSPACED = re.compile(
    "["
    "\u0e00-\u0e7f"  # Thai
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "]+"
)

_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been
before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers herself him himself his
how i if in into is it its itself just me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such
than that the their theirs them themselves then there these they this those through
to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves s t d ll m re ve don
kind type
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
"""English function words (and the question fillers ``kind`` / ``type``) that never
make a match on their own."""

# Irregular English forms and their base: one group per line, base first.
_IRREGULAR_GROUPS = """
arise arose arisen|awake awoke awoken|bear bore borne born|beat beaten|become became
begin began begun|bend bent|bind bound|bite bit bitten|bleed bled|blow blew blown
break broke broken|breed bred|bring brought|build built|burn burnt|buy bought
catch caught|choose chose chosen|cling clung|come came|creep crept|deal dealt|dig dug
draw drew drawn|dream dreamt|drink drank drunk|drive drove driven|eat ate eaten
fall fell fallen|feed fed|feel felt|fight fought|find found|flee fled|fly flew flown
forbid forbade forbidden|forget forgot forgotten|forgive forgave forgiven
freeze froze frozen|get got gotten|give gave given|go went gone|grow grew grown
hang hung|hear heard|hide hid hidden|hold held|keep kept|kneel knelt|know knew known
lay laid|lead led|leap leapt|learn learnt|leave left|lend lent|lie lain|light lit
lose lost|make made|mean meant|meet met|pay paid|ride rode ridden|ring rang rung
rise rose risen|run ran|say said|see saw seen|seek sought|sell sold|send sent
shake shook shaken|shine shone|shoot shot|show shown|shrink shrank shrunk|sing sang sung
sink sank sunk|sit sat|sleep slept|slide slid|speak spoke spoken|speed sped|spend spent
spin spun|spring sprang sprung|stand stood|steal stole stolen|stick stuck|sting stung
strike struck|swear swore sworn|sweep swept|swim swam swum|swing swung|take took taken
teach taught|tear tore torn|tell told|think thought|throw threw thrown
understand understood|wake woke woken|wear wore worn|weave wove woven|weep wept|win won
withdraw withdrew withdrawn|write wrote written|overcome overcame|undergo underwent
rebuild rebuilt|mislead misled|misunderstand misunderstood|withstand withstood
oversee oversaw overseen|foresee foresaw foreseen|child children|man men|woman women
person people|foot feet|tooth teeth|mouse mice|goose geese
"""


def _irregular_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for group in _IRREGULAR_GROUPS.replace("\n", "|").split("|"):
        forms = group.split()
        for form in forms[1:]:
            table.setdefault(form, forms[0])
    return table


_IRREGULAR = _irregular_table()
_STEMMERS: list[Any] = []  # loaded on first use: a cold start that never searches skips it
_STEM_CACHE: dict[str, str] = {}
_STEM_CACHE_MAX = 200_000
_MIN_PREFIX = 4
_PREFIX_WEIGHT = 0.5
_NAME_WEIGHT = 2.0
# Bonus per query term pair found side by side in an entry.
_PAIR_BONUS = 0.5


def english_stemmer() -> Any:
    """The English Snowball stemmer (``snowballstemmer``; PyStemmer when installed)."""
    if not _STEMMERS:
        import snowballstemmer

        _STEMMERS.append(snowballstemmer.stemmer("english"))
    return _STEMMERS[0]


def stem(word: str) -> str:
    """The index form of one lower-case word: irregular forms to their base, then the
    English Snowball stem (cached)."""
    out = _STEM_CACHE.get(word)
    if out is None:
        base = _IRREGULAR.get(word, word)
        out = english_stemmer().stemWord(base)
        if len(_STEM_CACHE) >= _STEM_CACHE_MAX:
            _STEM_CACHE.clear()
        _STEM_CACHE[word] = out
    return out


def words(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (NFKC, case-folded; spaceless scripts split
    into overlapping character pairs). Stopwords are kept."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for token in _WORD.findall(folded):
        if token.isascii():
            out.append(token)
        elif _UNSPACED.search(token) is None:
            out.append(_fold_latin(token))
        else:
            out.extend(_split_unspaced(token))
    return out


def _fold_latin(token: str) -> str:
    """``café`` -> ``cafe``: accents dropped from words written in Latin letters (other
    scripts keep their marks, which may distinguish words)."""
    parts = unicodedata.normalize("NFD", token)
    if any(ord(ch) >= 0x250 and not unicodedata.combining(ch) for ch in parts):
        return token
    return "".join(ch for ch in parts if not unicodedata.combining(ch))


def _split_unspaced(token: str) -> list[str]:
    out: list[str] = []
    pos = 0
    for run in _UNSPACED.finditer(token):
        if run.start() > pos:
            out.append(token[pos : run.start()])
        chars = run.group()
        if len(chars) == 1:
            out.append(chars)
        else:
            out.extend(chars[i : i + 2] for i in range(len(chars) - 1))
        pos = run.end()
    if pos < len(token):
        out.append(token[pos:])
    return out


def analyze(text: str) -> list[str]:
    """Index terms of ``text``: :func:`words` without stopwords, stemmed."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def term_pairs(terms: Iterable[str]) -> set[tuple[str, str]]:
    """Adjacent pairs of a sequence of analysed terms."""
    seq = list(terms)
    return set(itertools.pairwise(seq))


def query_terms(query: str) -> dict[str, float]:
    """Distinct terms of a query with their weights: capitalised words that do not
    start the query (usually names) weigh double, the others 1."""
    weights: dict[str, float] = {}
    first = True
    for raw in _WORD.findall(unicodedata.normalize("NFKC", query)):
        weight = _NAME_WEIGHT if not first and raw[:1].isupper() else 1.0
        first = False
        for term in analyze(raw):
            if weights.get(term, 0.0) < weight:
                weights[term] = weight
    return weights


class BM25Index(Generic[K]):
    """Okapi BM25 over documents added and removed one at a time.

    Args:
        k1: term-frequency saturation.
        b: document-length normalisation (0 = none, 1 = full).
    """

    def __init__(self, k1: float = 1.2, b: float = 0.0) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[K, int]] = {}
        self._lengths: dict[K, int] = {}
        self._terms: dict[K, tuple[str, ...]] = {}
        self._total = 0
        self._vocab: list[str] | None = None
        # Upper bounds for pruning: never lowered on remove, so they stay valid bounds.
        self._max_tf: dict[str, int] = {}
        self._min_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, key: object) -> bool:
        return key in self._lengths

    def add(self, key: K, terms: Iterable[str]) -> None:
        """Index document ``key`` with its analysed ``terms`` (replaces an older one)."""
        if key in self._lengths:
            self.remove(key)
        seq = tuple(terms)
        counts: dict[str, int] = {}
        for term in seq:
            counts[term] = counts.get(term, 0) + 1
        length = len(seq)
        postings = self._postings
        vocab = self._vocab
        max_tf = self._max_tf
        for term, tf in counts.items():
            post = postings.get(term)
            if post is None:
                post = postings[term] = {}
                if vocab is not None:
                    bisect.insort(vocab, term)
            post[key] = tf
            if tf > max_tf.get(term, 0):
                max_tf[term] = tf
        if not self._lengths or length < self._min_length:
            self._min_length = length
        self._lengths[key] = length
        self._terms[key] = seq
        self._total += length

    def remove(self, key: K) -> None:
        """Drop document ``key`` (no-op when absent)."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total -= length
        for term in set(self._terms.pop(key, ())):
            post = self._postings.get(term)
            if post is not None:
                post.pop(key, None)
                if not post:
                    del self._postings[term]
                    if self._vocab is not None:
                        i = bisect.bisect_left(self._vocab, term)
                        if i < len(self._vocab) and self._vocab[i] == term:
                            del self._vocab[i]

    def _expand(self, term: str) -> list[tuple[str, float]]:
        """Indexed terms standing in for ``term`` with their weight factor."""
        if term in self._postings:
            return [(term, 1.0)]
        if len(term) < _MIN_PREFIX:
            return []
        if self._vocab is None:
            self._vocab = sorted(self._postings)
        vocab = self._vocab
        out: list[tuple[str, float]] = []
        i = bisect.bisect_left(vocab, term)
        while i < len(vocab) and vocab[i].startswith(term):
            out.append((vocab[i], _PREFIX_WEIGHT))
            i += 1
        for size in range(len(term) - 1, _MIN_PREFIX - 1, -1):
            if term[:size] in self._postings:
                out.append((term[:size], _PREFIX_WEIGHT))
                break
        return out

    def _norms(self) -> tuple[float, float, float]:
        """(k1 + 1, constant and per-length parts of the tf normaliser)."""
        k1 = self.k1
        avg = self._total / len(self._lengths) or 1.0
        return k1 + 1.0, k1 * (1.0 - self.b), k1 * self.b / avg

    def _idf(self, df: int) -> float:
        n_docs = len(self._lengths)
        return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))

    def scores(
        self, query: Mapping[str, float], pairs: Collection[tuple[str, str]] = ()
    ) -> dict[K, float]:
        """BM25 score of every document matching at least one query term.

        Args:
            query: term -> weight (as from :func:`query_terms`).
            pairs: adjacent query term pairs (:func:`term_pairs`); each one found side
                by side in a document adds a fixed bonus to it.
        """
        if not self._lengths:
            return {}
        k1p, base, per_len = self._norms()
        lengths = self._lengths
        acc: dict[K, float] = {}
        get = acc.get
        for term, weight in query.items():
            for found, factor in self._expand(term):
                post = self._postings[found]
                w = weight * factor * self._idf(len(post)) * k1p
                for key, tf in post.items():
                    acc[key] = get(key, 0.0) + w * tf / (tf + base + per_len * lengths[key])
        self._add_pair_bonus(acc, pairs, None)
        return acc

    def _add_pair_bonus(
        self, acc: dict[K, float], pairs: Collection[tuple[str, str]], among: set[K] | None
    ) -> None:
        """Add the pair bonus to the documents of ``acc`` holding a pair side by side
        (only those in ``among`` when given: they hold every query term)."""
        postings = self._postings
        for first, second in pairs:
            a = postings.get(first)
            b = postings.get(second)
            if not a or not b:
                continue
            both = among if among is not None else a.keys() & b.keys()
            terms = self._terms
            for key in both:
                if _side_by_side(terms[key], first, second):
                    acc[key] += _PAIR_BONUS

    def search(
        self,
        query: Mapping[str, float],
        limit: int,
        accept: Callable[[K], bool],
        priority: Callable[[K], tuple[float, ...]],
        pairs: Collection[tuple[str, str]] = (),
    ) -> list[tuple[float, K]]:
        """The best ``limit`` accepted documents as ``(score, key)``, best first.

        Equal scores (to nine decimals) are ordered by ``priority(key)``, higher first
        (e.g. importance, then recency). When enough accepted documents hold every
        query term and no document missing one can reach them, only those are scored.
        """
        found = self._search_all_terms(query, limit, accept, priority, pairs)
        if found is not None:
            return found
        return top_accepted(self.scores(query, pairs), limit, accept, priority)

    def _search_all_terms(
        self,
        query: Mapping[str, float],
        limit: int,
        accept: Callable[[K], bool],
        priority: Callable[[K], tuple[float, ...]],
        pairs: Collection[tuple[str, str]],
    ) -> list[tuple[float, K]] | None:
        """The exact result from the documents holding every term, or None when a
        document missing a term might still rank among the first ``limit``."""
        if len(query) < 2 or not self._lengths:
            return None
        posts = [self._postings.get(term) for term in query]
        if any(not post for post in posts):
            return None
        ordered = sorted((p for p in posts if p is not None), key=len)
        every = set(ordered[0]).intersection(*(p.keys() for p in ordered[1:]))
        if len(every) < limit:
            return None
        k1p, base, per_len = self._norms()
        lengths = self._lengths
        acc: dict[K, float] = dict.fromkeys(every, 0.0)
        bounds: list[float] = []
        for (term, weight), post in zip(query.items(), posts, strict=True):
            assert post is not None
            w = weight * self._idf(len(post)) * k1p
            if per_len:
                for key in every:
                    tf = post[key]
                    acc[key] += w * tf / (tf + base + per_len * lengths[key])
            else:
                for key in every:
                    tf = post[key]
                    acc[key] += w * tf / (tf + base)
            top_tf = self._max_tf.get(term, 1)
            bounds.append(w * top_tf / (top_tf + base + per_len * self._min_length))
        self._add_pair_bonus(acc, pairs, every)
        found = top_accepted(acc, limit, accept, priority)
        if len(found) < limit:
            return None
        # A document missing term t scores at most the bounds of the other terms plus
        # the bonus of the pairs without t.
        total = sum(bounds)
        terms = list(query)
        reach = max(
            total - bounds[i] + _PAIR_BONUS * sum(1 for p in pairs if terms[i] not in p)
            for i in range(len(terms))
        )
        return found if found[-1][0] > reach + 1e-9 else None


def _side_by_side(seq: tuple[str, ...], first: str, second: str) -> bool:
    """True when ``second`` directly follows ``first`` somewhere in ``seq``."""
    try:
        i = seq.index(first)
        while True:
            if i + 1 < len(seq) and seq[i + 1] == second:
                return True
            i = seq.index(first, i + 1)
    except ValueError:
        return False


def top_accepted(
    scores: Mapping[K, float],
    limit: int,
    accept: Callable[[K], bool],
    priority: Callable[[K], tuple[float, ...]],
) -> list[tuple[float, K]]:
    """The ``limit`` best accepted keys of ``scores`` as ``(score, key)``.

    Looks at the best few first and widens only while rejected keys leave the result
    short, so a common word does not make every match pay for the ordering. Scores
    equal to nine decimals are ordered by ``priority``, higher first.
    """
    if not scores:
        return []
    want = max(limit * 4, 16)
    while True:
        best = heapq.nlargest(want, scores.items(), key=itemgetter(1))
        complete = len(best) >= len(scores)
        if not complete:
            # Bring in every key tied with the last one so the tie-break sees them all.
            edge = best[-1][1] - 1e-9
            best = [kv for kv in scores.items() if kv[1] >= edge]
        # Every key outside ``best`` scores below every key in it: the first ``limit``
        # accepted keys in this order are the answer (accept() runs only until then).
        ranked = sorted(best, key=lambda kv: (round(kv[1], 9), priority(kv[0])), reverse=True)
        found: list[tuple[float, K]] = []
        for key, score in ranked:
            if accept(key):
                found.append((round(score, 9), key))
                if len(found) == limit:
                    return found
        if complete:
            return found
        want *= 4
