"""Text analysis for ``recall``: a text into index terms, a query into weighted terms.

* Unicode-aware word split after NFKC normalisation and case folding, so punctuation,
  apostrophes and hyphens separate words, numbers stay whole (``2023``, ``3.5`` gives
  ``3`` and ``5``), full-width forms match their ASCII twins and accents are dropped
  from Latin-script words (``café`` matches ``cafe``, ``Straße`` matches ``strasse``);
* scripts written without spaces (Han, Hiragana, Katakana, Hangul, Thai) are indexed
  as overlapping character pairs, so a word inside a sentence can still be found;
* common English function words (:data:`STOPWORDS`) are dropped (a query made of
  stopwords only is matched word for word against the documents' text instead, see
  :func:`typed_words` and :func:`fsmemory.memory._rank.typed_word_scores`);
* irregular English forms are mapped to their base (``went`` -> ``go``, ``children``
  -> ``child``), then every word is reduced by the English Snowball stemmer
  (``painted``, ``painting`` and ``paints`` all give ``paint``). The stemmer comes
  from the ``snowballstemmer`` package, which uses ``PyStemmer`` (C) when installed.

A query's terms carry weights (:func:`query_terms` doubles the weight of capitalised
words inside a query, usually names), and its adjacent terms make the pairs
(:func:`term_pairs`) that the ranking rewards when they stand side by side in an entry.
The ranking itself is :mod:`fsmemory.memory._rank`.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "PAIR_BONUS",
    "STOPWORDS",
    "analyze",
    "english_stemmer",
    "known_stems",
    "query_terms",
    "stem",
    "term_pairs",
    "typed_word_scores",
    "typed_words",
    "words",
]

_WORD = re.compile(r"\w+")
# Scripts without spaces between words: indexed as overlapping character pairs.
_UNSPACED_PATTERN = (
    "["
    "\u0e00-\u0e7f"  # Thai
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "]+"
)


@functools.cache
def _unspaced() -> re.Pattern[str]:
    """The spaceless-script pattern, compiled on first use: its ranges of tens of
    thousands of characters take ``re`` milliseconds to compile, which a memory of
    ASCII text (never tested against it) does not pay, nor ``import fsmemory``."""
    return re.compile(_UNSPACED_PATTERN)


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
_NAME_WEIGHT = 2.0
#: Bonus per query term pair found side by side in an entry (see :func:`term_pairs`).
PAIR_BONUS = 0.5


def english_stemmer() -> Any:
    """The English Snowball stemmer (``snowballstemmer``; PyStemmer when installed)."""
    if not _STEMMERS:
        # The English one only: ``snowballstemmer`` itself imports every language
        # (or, with PyStemmer, only wraps it).
        try:
            import Stemmer  # type: ignore[import-not-found,unused-ignore]

            _STEMMERS.append(Stemmer.Stemmer("english"))
        except ImportError:
            from snowballstemmer.english_stemmer import EnglishStemmer

            _STEMMERS.append(EnglishStemmer())
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
        elif _unspaced().search(token) is None:
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
    for run in _unspaced().finditer(token):
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


def analyze(text: str, stem_of: Callable[[str], str] = stem) -> list[str]:
    """Index terms of ``text``: :func:`words` without stopwords, stemmed (by
    ``stem_of``: :func:`stem` or a function giving the same stems, such as
    :meth:`BM25Index.query_stem`)."""
    return [stem_of(w) for w in words(text) if w not in STOPWORDS]


def typed_words(query: str) -> list[str]:
    """The distinct words of a query made of stopwords only, as typed (:func:`words`:
    normalised and case-folded, not stemmed), in query order; ``[]`` when the query
    has a word that is not a stopword, or no word at all.

    The index drops stopwords, so such a query has no index term: recall then matches
    these words against the entries' text instead (:func:`typed_word_scores`)."""
    found = words(query)
    if not found or any(w not in STOPWORDS for w in found):
        return []
    return list(dict.fromkeys(found))


def typed_word_scores(
    query: str, documents: Iterable[tuple[int, str, str]], k1: float = 1.2
) -> dict[int, float]:
    """BM25 scores of a stopword-only query (:func:`typed_words`) over documents given
    by their text, for the documents holding at least one of its words.

    The words are matched whole, as typed (after the normalisation of :func:`words`,
    without stemming): ``before`` finds "before" and "Before!", not "beforehand".
    Scoring is that of :class:`~fsmemory.memory._rank.BM25Index` with ``b`` = 0: idf
    over the documents given, ``k1`` saturation, one :data:`PAIR_BONUS` per pair of
    query words standing side by side in a document. The text of every document is
    read, so the cost is a scan.

    Args:
        query: the query (any other query scores nothing: ``{}``).
        documents: ``(key, content, category)`` of every indexed document (the
            document's words are those of its content, then of its category).
        k1: term-frequency saturation.
    """
    wanted = typed_words(query)
    if not wanted:
        return {}
    pairs = set(itertools.pairwise(words(query)))
    # A whole-word match of an ASCII text is a case-insensitive regex search (NFKC and
    # case folding leave ASCII as lower-casing does); other texts are split by words().
    quick = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, wanted)) + r")(?!\w)", re.IGNORECASE)
    wanted_set = set(wanted)
    n_docs = 0
    tfs: dict[int, dict[str, int]] = {}
    bonus: dict[int, int] = {}
    for key, content, category in documents:
        n_docs += 1
        text = f"{content}\n{category}"
        if text.isascii() and quick.search(text) is None:
            continue
        seq = words(text)
        counts: dict[str, int] = {}
        for w in seq:
            if w in wanted_set:
                counts[w] = counts.get(w, 0) + 1
        if not counts:
            continue
        tfs[key] = counts
        if pairs:
            hits = sum(1 for pair in set(itertools.pairwise(seq)) if pair in pairs)
            if hits:
                bonus[key] = hits
    df: dict[str, int] = {}
    for counts in tfs.values():
        for w in counts:
            df[w] = df.get(w, 0) + 1
    weight = {w: math.log(1.0 + (n_docs - d + 0.5) / (d + 0.5)) * (k1 + 1.0) for w, d in df.items()}
    scores: dict[int, float] = {}
    for key, counts in tfs.items():
        score = sum(weight[w] * tf / (tf + k1) for w, tf in counts.items())
        scores[key] = score + PAIR_BONUS * bonus.get(key, 0)
    return scores


def term_pairs(terms: Iterable[str]) -> set[tuple[str, str]]:
    """Adjacent pairs of a sequence of analysed terms."""
    seq = list(terms)
    return set(itertools.pairwise(seq))


def query_terms(query: str, stem_of: Callable[[str], str] = stem) -> dict[str, float]:
    """Distinct terms of a query with their weights: capitalised words that do not
    start the query (usually names) weigh double, the others 1 (``stem_of``: see
    :func:`analyze`)."""
    weights: dict[str, float] = {}
    first = True
    for raw in _WORD.findall(unicodedata.normalize("NFKC", query)):
        weight = _NAME_WEIGHT if not first and raw[:1].isupper() else 1.0
        first = False
        for term in analyze(raw, stem_of):
            if weights.get(term, 0.0) < weight:
                weights[term] = weight
    return weights


def known_stems() -> Mapping[str, str]:
    """The stems :func:`stem` has found in this process so far (word -> stem): the live
    cache itself, not a copy (read it; it is emptied, never replaced, when full)."""
    return _STEM_CACHE
