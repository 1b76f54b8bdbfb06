"""A query made only of stopwords: the index holds none, so its words are matched as typed.

``recall("before")`` used to return nothing even when an entry is exactly "before". The
words of such a query are matched whole against the entries' text (normalised as the
index normalises words, not stemmed) and ranked by BM25 over those words. The answer is
the same for a fresh instance, one loaded from the index cache, one without a cache, and
with an embedder (the typed-word scores stand in for the lexical part).
"""

from __future__ import annotations

import itertools
import random
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache
from fsmemory.memory._rank import (
    STOPWORDS,
    BM25Index,
    query_terms,
    typed_word_scores,
    typed_words,
    words,
)
from tests.test_memory.conftest import FakeClock


@pytest.fixture(autouse=True)
def _cache_every_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small memories write and load the index cache too (the thresholds only decide
    whether a cache pays; the code paths are the same)."""
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 0)
    monkeypatch.setattr(_index_cache, "MIN_NEW_ROWS", 1)


ENTRIES = [
    ("before", "misc", 0.5),
    ("not", "misc", 0.5),
    ("Not now: BEFORE lunch, not after.", "plans", 0.5),
    ("do it before noon", "plans", 0.9),
    ("beforehand we knotted the rope", "misc", 0.5),  # no whole word "before"/"not"
    ("ｎｏｔ in full width", "misc", 0.5),
    ("what is the plan for it", "misc", 0.5),
    ("unrelated fact about tea", "misc", 0.5),
    ("the", "the", 0.5),  # a stopword category
]


def _fill(km: KnowledgeMemory, clock: FakeClock) -> dict[str, str]:
    ids = {}
    for content, category, importance in ENTRIES:
        ids[content] = km.remember(content, category=category, importance=importance)
        clock.advance(seconds=1)
    return ids


QUERIES = ["before", "not", "Before?", "NOT before", "what is the", "the", "it"]


def _answers(km: KnowledgeMemory, **kw: Any) -> dict[str, list[str]]:
    return {q: [e.content for e in km.recall(q, limit=20, **kw)] for q in QUERIES}


def test_stopword_queries_find_entries_in_every_mode(
    make_km: Callable[..., KnowledgeMemory], clock: FakeClock
) -> None:
    writer = make_km()
    ids = _fill(writer, clock)
    gone = writer.remember("not this one, it was forgotten")
    writer.forget(gone)
    brief = writer.remember("not for long", ttl_days=1)
    clock.advance(days=2)  # ``brief`` has expired
    live = _answers(writer)
    # Every entry holding the word whole, and only those.
    assert sorted(live["before"]) == sorted(
        ["before", "Not now: BEFORE lunch, not after.", "do it before noon"]
    )
    assert sorted(live["not"]) == sorted(
        ["not", "Not now: BEFORE lunch, not after.", "ｎｏｔ in full width"]
    )
    assert live["Before?"] == live["before"]
    # Two "not" in one short entry rank it first; the entry that is the word itself
    # comes right after it (equal scores: importance, then the newest).
    assert live["not"][0] == "Not now: BEFORE lunch, not after."
    # Both words, side by side ("not before" is not in any entry, "now: before" is),
    # then one word each.
    assert live["NOT before"][0] == "Not now: BEFORE lunch, not after."
    assert set(live["NOT before"]) == set(live["not"]) | set(live["before"])
    assert live["what is the"][0] == "what is the plan for it"
    assert "the" in live["the"]  # its category is "the"
    assert writer.recall("before", category="plans")[0].content == "do it before noon"
    assert [e.content for e in writer.recall("before", limit=1)] == [live["before"][0]]
    assert writer.get(brief) is None and writer.get(gone) is None
    assert ids["before"] in {e.id for e in writer.recall("before")}

    assert writer.recall("tea")  # a ranked search: the writer saves the index cache
    fresh = make_km()  # loads the index cache the writer saved
    assert _answers(fresh) == live
    assert fresh._cache_loaded
    no_cache = make_km(index_cache=False)
    assert _answers(no_cache) == live
    assert not no_cache._cache_loaded
    # A second fresh instance after more writes: the cache is updated, answers follow.
    writer.remember("before dawn", importance=1.0)
    again = make_km()
    assert again.recall("before")[0].content == "before dawn"
    assert _answers(again) == _answers(make_km(index_cache=False)) == _answers(writer)


def test_a_query_with_any_other_word_is_unchanged(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m")
    km.remember("what is the plan for it")
    km.remember("before the plan")
    # "plan" is an index term: stopwords are dropped as before, both entries match.
    assert len(km.recall("what is the plan")) == 2
    assert km.recall("beforehand") == []  # not a stopword, no prefix of an indexed word
    assert len(km.recall("  ?! ")) == 2  # no word at all: the most important entries


def _hash_embedder(texts: Sequence[str]) -> list[list[float]]:
    out = []
    for text in texts:
        vec = [0.0] * 64
        for word in words(text):
            vec[zlib.crc32(word.encode()) % 64] += 1.0
        vec[63] += 0.5  # never all zero
        out.append(vec)
    return out


_hash_embedder.name = "hash-words"  # type: ignore[attr-defined]


def test_hybrid_recall_matches_stopword_queries_too(
    make_km: Callable[..., KnowledgeMemory], clock: FakeClock
) -> None:
    pytest.importorskip("numpy")
    writer = make_km(embedder=_hash_embedder)
    _fill(writer, clock)
    live = {q: [e.content for e in writer.recall(q, limit=3)] for q in QUERIES}
    assert all(live.values()), live
    assert live["before"][0] in {"before", "do it before noon"}
    assert live["not"][0] in {"not", "Not now: BEFORE lunch, not after."}
    for km in (
        make_km(embedder=_hash_embedder),
        make_km(embedder=_hash_embedder, index_cache=False),
    ):
        assert {q: [e.content for e in km.recall(q, limit=3)] for q in QUERIES} == live


def test_typed_words_only_for_stopword_queries() -> None:
    assert typed_words("Before, NOT before?") == ["before", "not"]
    assert typed_words("before lunch") == []
    assert typed_words("?!") == []
    assert typed_words("ｔｈｅ") == ["the"]
    assert typed_word_scores("before lunch", [(0, "before lunch", "misc")]) == {}


def test_typed_word_scores_equal_bm25_over_unstemmed_words() -> None:
    """The scan scores exactly as a BM25 index of the same words (stopwords kept)."""
    rng = random.Random(25)
    stop = sorted(STOPWORDS)[:12]
    vocab = [*stop, "tea", "lunch", "rope", "noon"]
    for _trial in range(30):
        docs = []
        index = BM25Index()
        for key in range(rng.randint(1, 60)):
            content = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 8)))
            category = rng.choice(["misc", "the", "plans"])
            docs.append((key, content, category))
            index.add(key, words(content) + words(category))
        for _ in range(5):
            query = " ".join(rng.sample(stop, rng.randint(1, 3)))
            assert not query_terms(query)
            # Words present somewhere (an absent one would make the index fall back
            # to prefixes, which typed words never do).
            present = [
                w for w in typed_words(query) if any(w in words(d[1] + "\n" + d[2]) for d in docs)
            ]
            if len(present) != len(typed_words(query)):
                continue
            pairs = set(itertools.pairwise(words(query)))
            expected = index.scores(dict.fromkeys(present, 1.0), pairs)
            got = typed_word_scores(query, docs)
            assert got.keys() == expected.keys()
            for key, score in expected.items():
                assert got[key] == pytest.approx(score, rel=1e-12)
