"""Ranking properties of recall(): stemming, stopwords, importance ties, live-entry rules."""

from __future__ import annotations

from pathlib import Path

from fsmemory import KnowledgeMemory
from fsmemory.memory._rank import BM25Index, analyze, query_terms, top_accepted, words
from tests.test_memory.conftest import FakeClock


def test_stemmed_and_irregular_forms_match(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m")
    painted = km.remember("Melanie painted a sunrise")
    km.remember("Caroline went hiking")
    assert km.recall("What did Melanie paint?")[0].id == painted
    assert [e.content for e in km.recall("does Caroline go hikes")] == ["Caroline went hiking"]


def test_stopwords_alone_are_matched_as_typed(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m")
    km.remember("what is the plan for it")
    km.remember("tea after lunch")
    # The index holds no stopword: a query of stopwords only is matched word for word.
    assert [e.content for e in km.recall("what is the")] == ["what is the plan for it"]
    assert km.recall("would they") == []
    # A query without any word returns the most important entries.
    assert len(km.recall("  ?! ")) == 2


def test_importance_breaks_ties(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m")
    low = km.remember("deploy the service", importance=0.1)
    high = km.remember("deploy the website", importance=0.9)
    assert [e.id for e in km.recall("deploy")] == [high, low]


def test_forgotten_expired_and_category_rules(tmp_path: Path) -> None:
    clock = FakeClock()
    km = KnowledgeMemory(tmp_path / "m", clock=clock)
    gone = km.remember("python tips one", category="tech")
    brief = km.remember("python tips two", category="tech", ttl_days=1)
    other = km.remember("python tips three", category="misc")
    km.forget(gone)
    clock.advance(days=2)
    assert [e.id for e in km.recall("python tips")] == [other]
    assert km.recall("python tips", category="tech") == []
    assert brief not in [e.id for e in km.recall("", limit=10)]


def test_tokenizer_handles_punctuation_numbers_and_unspaced_scripts() -> None:
    assert words("Hello, world! It's 2023-05-01.") == [
        "hello",
        "world",
        "it",
        "s",
        "2023",
        "05",
        "01",
    ]
    assert words("ＡＢＣ") == ["abc"]
    assert words("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert analyze("The children were running") == ["child", "run"]
    assert query_terms("What did Melanie paint") == {"melani": 2.0, "paint": 1.0}


def test_bm25_index_add_remove_and_prefix_fallback() -> None:
    index = BM25Index()
    index.add(0, analyze("mentor program for youth"))
    index.add(1, analyze("cooking class"))
    assert set(index.scores({"mentorship": 1.0})) == {0}
    index.remove(0)
    assert 0 not in index and index.scores({"mentor": 1.0}) == {}
    assert len(index) == 1
    # A removed key added again holds only its new terms.
    index.add(0, analyze("cooking lesson"))
    assert set(index.scores({"mentor": 1.0})) == set()
    assert set(index.scores({"cook": 1.0})) == {0, 1}
    assert len(index) == 2


def test_recall_quality_benchmark_runs(tmp_path: Path) -> None:
    """The benchmark's code path on a slice of one conversation (numbers not checked)."""
    import json
    import subprocess
    import sys

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    data = json.loads((bench / "data" / "locomo" / "conv-26.json").read_text(encoding="utf-8"))
    data["observations"] = data["observations"][:40]
    (tmp_path / "conv-26.json").write_text(json.dumps(data), encoding="utf-8")
    args = ["--data", str(tmp_path), "--no-model", "--sizes", "300", "--embedder-sizes", ""]
    done = subprocess.run(
        [sys.executable, str(bench / "bench_recall_quality.py"), *args, "--repeat", "2"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| default (BM25) | 0." in done.stdout
    assert "| 300 | " in done.stdout


def test_accents_and_scripts(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m")
    cafe = km.remember("Número 42, café con leche")
    street = km.remember("Die Straße ist lang")
    tower = km.remember("東京タワーに行った")
    greek = km.remember("Καλημέρα κόσμε")
    assert [e.id for e in km.recall("numero cafe")] == [cafe]
    assert [e.id for e in km.recall("STRASSE")] == [street]
    assert [e.id for e in km.recall("タワー")] == [tower]
    assert [e.id for e in km.recall("καλημέρα")] == [greek]


def test_search_equals_full_scoring_on_random_corpora() -> None:
    """The all-terms shortcut returns exactly what scoring every match returns."""
    import random

    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(12)]
    for trial in range(40):
        index = BM25Index(b=0.0 if trial % 2 else 0.75)
        for key in range(rng.randint(5, 120)):
            index.add(key, [rng.choice(vocab) for _ in range(rng.randint(1, 9))])
        prio = {key: (rng.choice([0.1, 0.5, 0.9]), float(key)) for key in range(120)}
        for _ in range(5):
            words_ = rng.sample(vocab, rng.randint(2, 3))
            query = {w: rng.choice([1.0, 2.0]) for w in words_}
            pairs = {(words_[0], words_[1])}
            limit = rng.randint(1, 6)
            accept = (lambda k: True) if trial % 3 else (lambda k: k % 2 == 0)
            full = top_accepted(index.scores(query, pairs), limit, accept, prio.__getitem__)
            assert index.search(query, limit, accept, prio.__getitem__, pairs) == full


class _Asked:
    """A priority function that records which keys it was asked about."""

    def __init__(self, prio: dict[int, tuple[float, float, str]]) -> None:
        self.prio, self.asked = prio, set[int]()

    def __call__(self, key: int) -> tuple[float, float, str]:
        self.asked.add(key)
        return self.prio[key]


def test_top_accepted_equals_sorting_everything() -> None:
    """The widening, run-by-run selection gives what ordering every key by (score to
    nine decimals, priority) and keeping the first accepted ones gives, with many ties
    (a common word in equally long entries), near-ties below 1e-9 and rejected keys."""
    import random

    rng = random.Random(11)
    for trial in range(400):
        n = rng.randint(0, 300)
        levels = [rng.choice([1.0, 2.5, 2.5 + 4e-10, 2.5 - 4e-10, 3.25]) for _ in range(4)]
        jitter = trial % 4 == 0
        scores = {k: rng.choice(levels) + (rng.random() if jitter else 0.0) for k in range(n)}
        prio = {k: (rng.choice([0.1, 0.5]), float(rng.randint(0, 3)), str(k)) for k in range(n)}
        reject = rng.choice([set(), set(range(0, n, 2)), set(range(n - n // 10))])
        limit = rng.randint(1, 8)
        ranked = sorted(scores, key=lambda k: (round(scores[k], 9), prio[k]), reverse=True)
        expected = [(round(scores[k], 9), k) for k in ranked if k not in reject][:limit]
        got = top_accepted(scores, limit, lambda k, r=reject: k not in r, _Asked(prio))
        assert got == expected, trial
    # A word in 132 equally scored entries below 11 better ones: only the 11 are ordered.
    scores = {k: 2.67 if k < 11 else 1.94 for k in range(143)}
    priority = _Asked({k: (0.5, float(k % 7), str(k)) for k in range(143)})
    top = top_accepted(scores, 5, lambda k: True, priority)
    assert [k for _, k in top] == sorted(range(11), key=priority.prio.__getitem__, reverse=True)[:5]
    assert priority.asked == set(range(11))
