"""Hybrid recall keyed by rows: BM25 scores as one array per index row, the index rows
mapped to vector rows (and back) through arrays that follow every change of the index
(appends, forgets, logs read again, a reset, a cache load), and dense scores centred on
the mean vector."""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache
from fsmemory.memory._index import _Strings
from fsmemory.memory._rank import BM25Index
from fsmemory.memory._vecmath import quantize

from .conftest import FakeClock
from .test_embedder import WordEmbedder, fresh_vocabulary  # noqa: F401 (autouse)
from .test_index_cache import QUERIES, WORDS, _seed, random_bm25

np = pytest.importorskip("numpy")


def _check_same(index: BM25Index, query: dict[str, float], pairs: set[tuple[str, str]]) -> None:
    expected = index.scores(query, pairs)
    got = index.score_array(np, query, pairs)
    assert len(got) == index.key_space
    for key in range(index.key_space):
        assert got[key] == pytest.approx(expected.get(key, 0.0), abs=1e-9), key
    assert set(np.flatnonzero(got).tolist()) <= set(expected)


@pytest.mark.parametrize("b", [0.0, 0.75])
def test_score_array_equals_scores_on_random_corpora(b: float) -> None:
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(12)] + ["mentorship", "mentor"]
    for _trial in range(25):
        index, _live = random_bm25(rng, vocab, rng.randint(10, 150), 120, b)
        meta, blobs = index.state()
        loaded = BM25Index.from_state(orjson.loads(orjson.dumps(meta)), blobs)
        for _ in range(6):
            # "mentors" matches no term: it falls back to the terms it is a prefix of.
            query = {w: rng.choice([1.0, 2.0]) for w in rng.sample([*vocab, "mentors"], 3)}
            first, second = rng.sample(sorted(query), 2)
            pairs = {(first, second), (second, first)}
            _check_same(index, query, pairs)
            _check_same(loaded, query, pairs)
        assert not loaded.damaged


def test_score_array_of_an_empty_index_and_of_unknown_words() -> None:
    index = BM25Index()
    assert index.score_array(np, {"tea": 1.0}).tolist() == []
    index.add(0, ["tea", "cup"])
    index.add(3, ["cup", "tea", "cup"])
    assert (
        index.score_array(np, {"coffee": 1.0, "tea": 1.0}, {("coffee", "tea")}).tolist()[1:3]
        == [0.0] * 2
    )
    assert index.score_array(np, {"coffee": 1.0}).tolist() == [0.0] * 4
    index.remove(0)
    got = index.score_array(np, {"tea": 1.0, "cup": 1.0}, {("cup", "tea")})
    assert got[0] == 0.0  # removed
    assert got[3] == pytest.approx(index.scores({"tea": 1.0, "cup": 1.0}, {("cup", "tea")})[3])


def _ids(km: KnowledgeMemory, query: str, **kwargs: object) -> list[str]:
    return [e.id for e in km.recall(query, limit=8, **kwargs)]  # type: ignore[arg-type]


def test_a_cache_loaded_index_ranks_as_a_fresh_one_and_embeds_only_queries(
    tmp_path: Path, clock: FakeClock
) -> None:
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("cached"))
    ids = _seed(km, clock=clock)
    km.recall("tea")  # writes the index cache
    assert km.root.read_cache(_index_cache.CACHE_NAME) is not None
    queries = [q for q in QUERIES if q] + ["painting sunrise", "#17 tea"]
    embedder = WordEmbedder("cached")
    cached = KnowledgeMemory(folder, clock=clock, embedder=embedder)
    uncached = KnowledgeMemory(
        folder, clock=clock, index_cache=False, embedder=WordEmbedder("cached")
    )
    for q in queries:
        assert _ids(cached, q) == _ids(uncached, q), q
        assert _ids(cached, q, category="home") == _ids(uncached, q, category="home"), q
    assert cached._cache_loaded
    # Every entry's vector was read from the file: only the queries were embedded.
    assert all(len(batch) == 1 for batch in embedder.batches)
    # After forgets and new entries the cached instance still agrees with a fresh one.
    gone = [i for i in ids[:40] if i]
    for entry_id in gone:
        cached.forget(entry_id)
    added = cached.remember("tea ceremony in lisbon at sunrise")
    again = KnowledgeMemory(folder, clock=clock, index_cache=False, embedder=WordEmbedder("cached"))
    for q in queries:
        found = _ids(cached, q)
        assert found == _ids(again, q), q
        assert not set(found) & set(gone)
    assert _ids(cached, "tea ceremony lisbon sunrise")[0] == added


def test_row_columns_read_ids_and_contents_in_bulk(tmp_path: Path, clock: FakeClock) -> None:
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock)
    _seed(km, clock=clock)
    km.remember("café naïve résumé ✓ tea")  # a column that is not all ASCII
    km.recall("tea")  # writes the index cache
    cached = KnowledgeMemory(folder, clock=clock)
    cached.recall("tea")
    extra = cached.remember("a row added after the cache was read")
    cached.remember("another one, déjà vu")
    assert isinstance(cached._index._contents, _Strings)  # columns read from the cache
    for index in (km._index, cached._index):
        n = index.rows
        every = list(range(n))
        whole = (index.row_ids(every), [index.row_content(r) for r in every])
        assert "café naïve résumé ✓ tea" in whole[1]
        assert index.row_columns(0, n) == whole
        for a, b in [(3, n - 2), (n - 3, n), (n - 1, n + 5), (0, 1), (n, n), (5, 5)]:
            assert index.row_columns(a, b) == (whole[0][a:b], whole[1][a:b]), (a, b)
    assert cached._cache_loaded
    assert cached._index.row_columns(0, cached._index.rows)[0][-2] == extra


def test_row_maps_follow_a_reset_and_a_log_read_again(tmp_path: Path, clock: FakeClock) -> None:
    folder = tmp_path / "m"
    embedder = WordEmbedder("maps")
    km = KnowledgeMemory(folder, clock=clock, embedder=embedder)
    old = [km.remember(f"{w} note about the garden") for w in WORDS]
    assert _ids(km, "guitar garden")[0] == old[WORDS.index("guitar")]
    km.clear()  # the index starts its rows again
    assert km.recall("guitar garden") == []
    new = [km.remember(f"{w} entry about the kitchen") for w in reversed(WORDS)]
    found = _ids(km, "guitar kitchen")
    assert found[0] == new[list(reversed(WORDS)).index("guitar")]
    assert set(found) <= set(new)
    # A log changed in place is read again: its entries get new rows, same ids; the
    # texts changed, so their vectors are made again (a vector serves only the text it
    # was made from), once, and nothing else is.
    clock.advance(milliseconds=1)
    log = next((folder / "logs").iterdir())
    data = log.read_bytes()
    with open(log, "r+b") as handle:
        handle.write(data.replace(b"kitchen", b"kitchem"))
    os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 1_000_000))
    before = len(embedder.batches)
    found = _ids(km, "guitar kitchem")
    assert found[0] == new[list(reversed(WORDS)).index("guitar")]
    assert set(found) <= set(new)
    changed = sorted(f"{w} entry about the kitchem" for w in WORDS)
    assert [sorted(b) for b in embedder.batches[before:]] == [["guitar kitchem"], changed]
    _ids(km, "guitar kitchem")
    assert len(embedder.batches) == before + 3  # only the query


def test_entries_without_a_vector_are_embedded_once_in_row_order(tmp_path: Path) -> None:
    plain = KnowledgeMemory(tmp_path / "m")
    ids = [plain.remember(f"entry {i} about pears") for i in range(5)]
    plain.forget(ids[1])
    embedder = WordEmbedder("order")
    km = KnowledgeMemory(tmp_path / "m", embedder=embedder)
    assert _ids(km, "entry 3 pears")[0] == ids[3]
    # The query, then the four live entries in one batch, in the order they were written.
    assert embedder.batches[1] == [f"entry {i} about pears" for i in (0, 2, 3, 4)]
    km.recall("pears")
    assert len(embedder.batches) == 3
    # An entry another writer adds is embedded by the next recall, alone.
    late = plain.remember("entry 9 about plums")
    assert _ids(km, "plums")[0] == late
    assert embedder.batches[-1] == ["entry 9 about plums"]


def test_centred_cosines_rank_like_the_centred_vectors() -> None:
    from fsmemory.memory._vectors import VectorStore

    class Fixed:
        name = "fixed"
        dimension = 6

        def __call__(self, texts: object) -> list[list[float]]:
            raise AssertionError("not called")

    rng = np.random.default_rng(3)
    store = VectorStore(KnowledgeMemory("memory://centred").root, Fixed())
    # A shared direction in every vector, as sentence embeddings have.
    raw = rng.normal(size=(40, 6)).astype(np.float32) + np.array([4, 0, 0, 0, 0, 0], np.float32)
    vectors = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    store._add([f"e{i}" for i in range(40)], np.zeros(40, dtype="=u8"), quantize(np, vectors))
    # Vectors are kept as stored rows: the definition is over what is kept.
    vectors = store._stacked().astype(np.float64)
    query = vectors[7] + 0.1 * vectors[3]
    query /= np.linalg.norm(query)
    mu = vectors.mean(axis=0) * (40 / (40 + 4))
    centred = vectors - mu
    expected = centred @ (query - mu) / np.linalg.norm(centred, axis=1)
    got = store.dense_scores(query)
    assert np.allclose(got, expected, atol=1e-5)
    assert int(np.argmax(got)) == 7
    # A row added later joins the mean of every stored vector (no live rows given).
    store._add(["late"], np.zeros(1, dtype="=u8"), quantize(np, vectors[:1]))
    both = np.vstack([vectors, vectors[:1]])
    mu = both.mean(axis=0) * (41 / (41 + 4))
    centred = both - mu
    expected = centred @ (query - mu) / np.linalg.norm(centred, axis=1)
    assert np.allclose(store.dense_scores(query), expected, atol=1e-5)
    # Over some rows only: the mean of those rows.
    some = np.array([3, 7, 11, 40])
    mu = both[some].mean(axis=0) * (4 / (4 + 4))
    centred = both[some] - mu
    expected = centred @ (query - mu) / np.linalg.norm(centred, axis=1)
    assert np.allclose(store.dense_scores(query, some), expected, atol=1e-5)
