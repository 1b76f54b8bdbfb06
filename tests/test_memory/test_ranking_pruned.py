"""The pruned search (MaxScore, the NumPy sum, the priority walk) answers exactly as
scoring every document does.

Reference: :meth:`BM25Index.scores` (every matching document scored, term by term)
then :func:`top_accepted` without a priority order. Corpora are made of a small
vocabulary so that scores tie in large groups, words repeat inside entries, and a
word can stand in every entry; the limits of the pruned paths are lowered so that a
few hundred documents take every path (and a loaded index, which looks its terms up
in its stored term text, answers as the one it was saved from).
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _rank, _topk
from fsmemory.memory._rank import BM25Index, analyze, query_terms, term_pairs, top_accepted

VOCAB = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta"]


def _corpus(rng: random.Random, n: int) -> list[str]:
    docs = []
    for i in range(n):
        words = [rng.choice(VOCAB[: rng.randint(2, len(VOCAB))]) for _ in range(rng.randint(1, 9))]
        if i % 3 == 0:
            words.append("everywhere")
        docs.append("everywhere " + " ".join(words) + (f" rare{i % 17}" if i % 5 == 0 else ""))
    return docs


def _queries(rng: random.Random) -> list[str]:
    made = ["everywhere", "everywhere alpha", "rare3 everywhere", "alpha beta", "zeta"]
    made += [" ".join(rng.sample(VOCAB, k)) for k in (3, 5, 10)]
    made += [" ".join(rng.choices(VOCAB, k=8)) + " everywhere alpha beta"]  # repeated pairs
    made += ["Alpha beta gamma", "alph", "rare1 rare2 alpha", "nothing here", "qwxz42 vvbnq"]
    return made


@pytest.fixture(params=[0.0, 0.75], ids=["b0", "b075"])
def b(request: pytest.FixtureRequest) -> float:
    return float(request.param)


@pytest.mark.parametrize("seed", range(6))
def test_pruned_search_equals_scoring_everything(
    seed: int, b: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every path of ``search`` (whole, MaxScore, NumPy; with and without the priority
    order) gives the reference answer: same keys, same scores, same order."""
    rng = random.Random(seed)
    docs = _corpus(rng, 400)
    index = BM25Index(b=b)
    index.add_many((key, analyze(text)) for key, text in enumerate(docs))
    for key in rng.sample(range(len(docs)), 40):  # removed documents
        index.remove(key)
    importance = [rng.choice([0.1, 0.5, 0.5, 0.9]) for _ in docs]
    created = [rng.randrange(20) for _ in docs]  # equal times too

    def priority(key: int) -> tuple[Any, ...]:
        return (importance[key], created[key], f"id{key:04d}")

    order = sorted(range(len(docs)), key=priority)
    rejected = set(rng.sample(range(len(docs)), 60))

    def accept(key: int) -> bool:
        return key not in rejected

    monkeypatch.setattr(_rank, "_SMALL", 8)
    monkeypatch.setattr(_topk, "_WALK_MIN", 16)  # groups of equal scores walked too
    monkeypatch.setattr(_topk, "_SAMPLE", 16)  # best_first's threshold from a sample
    loaded = BM25Index.from_state(*index.state())  # term lookups in the stored text
    for query in _queries(rng):
        terms = query_terms(query)
        pairs = term_pairs(analyze(query))
        for limit in (1, 5, 30):
            want = top_accepted(index.scores(terms, pairs), limit, accept, priority)
            for budget in (10**9, 0):  # MaxScore in Python; the NumPy sum
                monkeypatch.setattr(_rank, "_BUDGET", budget)
                for given in (None, order):
                    for searched in (index, loaded):
                        got = searched.search(
                            terms, limit, accept, priority, pairs, given, lambda: numpy
                        )
                        assert got == want, (query, limit, budget, given is None)


def test_a_word_in_every_entry_walks_no_posting_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """``rare everywhere``: once the rare word's documents are scored, the word in
    every entry is read from those documents' own terms, not from its postings."""
    index = BM25Index()
    docs = [
        f"everywhere word{i % 50} filler" + (" rare" if i % 100 == 0 else "") for i in range(5000)
    ]
    index.add_many((key, analyze(text)) for key, text in enumerate(docs))
    walked: list[int] = []
    real = BM25Index._add_postings

    def counting(self: BM25Index, acc: dict[int, float], tid: int, w: float) -> None:
        walked.append(self._df[tid])
        real(self, acc, tid, w)

    monkeypatch.setattr(BM25Index, "_add_postings", counting)
    terms = query_terms("rare everywhere")
    found = index.search(terms, 5, lambda key: True, lambda key: (0.5, key, ""))
    assert [key for _, key in found] == [4900, 4800, 4700, 4600, 4500]
    assert walked == [50]  # the rare word's postings only


def test_the_empty_query_walks_the_priority_order(tmp_path: Path) -> None:
    """The empty query gives the most important live entries (then newest, then id),
    in a category too; the order follows entries remembered after it was built."""
    clock_now = [datetime(2026, 1, 1, tzinfo=UTC)]

    def clock() -> datetime:
        clock_now[0] += timedelta(seconds=1)
        return clock_now[0]

    km = KnowledgeMemory(tmp_path / "m", clock=clock)
    ids = {}
    for i, imp in enumerate([0.5, 0.9, 0.1, 0.9, 0.5, 0.7]):
        ids[i] = km.remember(f"fact {i}", importance=imp, category="a" if i % 2 else "b")
    assert [e.id for e in km.recall("", limit=3)] == [ids[3], ids[1], ids[5]]
    newer = km.remember("fact new", importance=0.9)
    km.forget(ids[3])
    assert [e.id for e in km.recall("", limit=3)] == [newer, ids[1], ids[5]]
    assert [e.id for e in km.recall("", limit=2, category="b")] == [ids[4], ids[0]]
    fresh = KnowledgeMemory(tmp_path / "m", clock=clock)
    assert [e.id for e in fresh.recall("", limit=10)] == [e.id for e in km.recall("", limit=10)]


def test_the_priority_order_is_the_row_priority() -> None:
    """``top_accepted`` with an order walks it only for a large group, and gives what
    sorting the group gives."""
    rng = random.Random(3)
    scores = {key: 1.0 for key in range(2000)} | {key: 2.0 for key in range(2000, 2003)}
    prio: Callable[[int], tuple[Any, ...]] = lambda key: ((key * 7919) % 13, key)  # noqa: E731
    order = sorted(scores, key=prio)
    rejected = set(rng.sample(range(2000), 500))
    for limit in (1, 4, 10, 300):
        want = top_accepted(scores, limit, lambda k: k not in rejected, prio)
        assert top_accepted(scores, limit, lambda k: k not in rejected, prio, order) == want


class _CountingText(str):
    """A term text that counts the scans made of it."""

    scans = 0

    def find(self, *args: Any) -> int:  # type: ignore[override]
        _CountingText.scans += 1
        return super().find(*args)

    def __contains__(self, part: object) -> bool:
        _CountingText.scans += 1
        return super().__contains__(part)  # type: ignore[operator]


def test_a_loaded_index_never_scans_its_term_text() -> None:
    """A loaded index finds a word (a term, a prefix, a stem) by bisection in the
    tables stored with it: no scan of its term or stem text, whatever the word, and
    the answers of the index it was saved from."""
    index = BM25Index()
    docs = [f"alpha word{i} mentorship" for i in range(50)]
    index.add_many((key, analyze(text)) for key, text in enumerate(docs))
    loaded = BM25Index.from_state(*index.state())
    loaded._term_text = _CountingText(loaded._term_text)
    loaded._stem_text = _CountingText(loaded._stem_text)
    _CountingText.scans = 0
    for query in ["qwxzqwxzqwxz", "mentor", "alpha", "word7", "mentorship", "nothing", "wor"]:
        assert loaded.scores(query_terms(query)) == index.scores(query_terms(query)), query
    assert _CountingText.scans == 0


@pytest.mark.parametrize("sample", [16, 1024])
def test_best_first_takes_the_largest_values(sample: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``best_first`` gives at least ``want`` indices (all when fewer), best first with
    equal values in index order, and no value left out is above one taken: on values
    with few distinct levels (a word's scores), ties at the threshold, and zeros."""
    monkeypatch.setattr(_topk, "_SAMPLE", sample)
    rng = numpy.random.default_rng(7)
    for size in (1, 5, 300, 5000):
        for levels in (1, 2, 5, 10**6):
            values = rng.integers(0, levels, size).astype(numpy.float64) / 7
            values[rng.random(size) < 0.3] = 0.0
            for want in (1, 16, 80, 1300, 6000):
                got = _topk.best_first(numpy, values, want)
                assert len(got) >= min(want, size)
                assert len(set(got.tolist())) == len(got)
                taken = values[got]
                assert list(taken) == sorted(taken, reverse=True)
                for value in set(taken.tolist()):  # equal values in index order
                    same = got[taken == value]
                    assert list(same) == sorted(same)
                left = numpy.setdiff1d(numpy.arange(size), got)
                assert not len(left) or values[left].max() <= taken.min()


@pytest.mark.parametrize("with_numpy", [False, True])
@pytest.mark.parametrize("flaw", ["row", "tf", "max_tf"])
def test_a_damaged_stored_posting_matches_nothing(with_numpy: bool, flaw: str) -> None:
    """A loaded term whose stored postings are out of range (a row past the keys, a tf
    of 0 or above the term's max) marks the index damaged and matches nothing, whether
    its first use checks it in Python or with NumPy."""
    index = BM25Index()
    index.add_many((key, analyze(f"alpha beta{key % 3}")) for key in range(40))
    meta, blobs = index.state()
    tid = str(blobs["terms"], "utf-8").split("\n").index("alpha")
    rows = bytearray(blobs["rows"])
    tfs = bytearray(blobs["tfs"])
    at = 4 * int.from_bytes(blobs["offsets"][8 * tid : 8 * tid + 8], "little") + 4
    if flaw == "row":
        rows[at : at + 4] = (10**6).to_bytes(4, "little")
    else:
        tfs[at : at + 4] = (0 if flaw == "tf" else 7).to_bytes(4, "little")
    loaded = BM25Index.from_state(meta, {**blobs, "rows": bytes(rows), "tfs": bytes(tfs)})
    assert loaded._post(tid, numpy if with_numpy else None) == (array("I"), array("I"))
    assert loaded.damaged
    fine = BM25Index.from_state(meta, blobs)
    assert len(fine._post(tid, numpy if with_numpy else None)[0]) == 40
    assert not fine.damaged
