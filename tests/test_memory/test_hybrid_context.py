"""Context in hybrid recall: an entry gains a share of the best score among the live
entries written just before and after it (by creation time, within an hour), so a fact
noted right after the one a question matches comes back with it."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import InvalidInputError
from fsmemory.memory import _vecfile, _vectors
from fsmemory.memory._rank import query_terms
from fsmemory.memory.entry import us_of

from .conftest import FakeClock
from .test_embedder import WordEmbedder, fresh_vocabulary  # noqa: F401 (autouse)
from .test_index_cache import _seed_varied

np = pytest.importorskip("numpy")

FILLERS = [
    "Ben repaired the garden fence",
    "Cara bakes bread on Sundays",
    "Dev plays chess online",
    "Eli collects old stamps",
    "Fay adopted a grey cat",
    "Gus paints model trains",
    "Hal drives a red van",
    "Ivy studies Japanese grammar",
    "Jo grows tomatoes on the balcony",
    "Kim reads science fiction",
    "Lou swims in the lake",
    "Max fixes old radios",
]
MATCH = "Ann started training for the city marathon"
FOLLOW_UP = "She wants to finish in under four hours"  # no word of the question
TWIN = FOLLOW_UP  # the same words, written hours after MATCH (newer: first on a tie)
QUESTION = "How is Ann's marathon training going?"


def _story(
    location: str,
    clock: FakeClock,
    *,
    gap: timedelta = timedelta(minutes=1),
    match: dict[str, Any] | None = None,
    follow_up: dict[str, Any] | None = None,
    twin: dict[str, Any] | None = None,
    context: bool = True,
) -> tuple[KnowledgeMemory, dict[str, str]]:
    """Fillers three hours apart, the match, the follow-up ``gap`` later, more fillers,
    and the follow-up's twin far from the match."""
    location += uuid.uuid4().hex[:8]
    km = KnowledgeMemory(
        location, clock=clock, embedder=WordEmbedder("context"), recall_context=context
    )
    ids: dict[str, str] = {}
    for text in FILLERS[:6]:
        ids[text] = km.remember(text)
        clock.advance(hours=3)
    ids["match"] = km.remember(MATCH, **(match or {}))
    clock.now += gap
    ids["follow_up"] = km.remember(FOLLOW_UP, **(follow_up or {}))
    clock.advance(hours=3)
    for text in FILLERS[6:]:
        ids[text] = km.remember(text)
        clock.advance(hours=3)
    ids["twin"] = km.remember(TWIN, **(twin or {}))
    clock.advance(hours=3)
    return km, ids


def _names(km: KnowledgeMemory, ids: dict[str, str], limit: int = 3, **kw: Any) -> list[str]:
    by_id = {v: k for k, v in ids.items()}
    return [by_id[e.id] for e in km.recall(QUESTION, limit=limit, **kw)]


@pytest.mark.parametrize("context", [True, False])
def test_a_fact_written_next_to_the_match_is_recalled_with_it(
    context: bool, clock: FakeClock
) -> None:
    km, ids = _story("memory://context-next", clock, context=context)
    found = _names(km, ids)
    assert found[0] == "match"
    if context:
        assert found[1] == "follow_up"
    else:  # the control: without context the follow-up is nowhere near the top
        assert "follow_up" not in found


def test_entries_written_hours_apart_pass_nothing_on(clock: FakeClock) -> None:
    km, ids = _story(
        "memory://context-apart", clock, gap=_vectors.CONTEXT_GAP + timedelta(microseconds=1)
    )
    found = _names(km, ids)
    assert found[0] == "match"
    assert "follow_up" not in found
    # Within the gap, to the microsecond, it still counts.
    km, ids = _story("memory://context-edge", FakeClock(), gap=_vectors.CONTEXT_GAP)
    assert _names(km, ids)[:2] == ["match", "follow_up"]


def test_a_forgotten_or_expired_neighbour_passes_nothing_on(clock: FakeClock) -> None:
    km, ids = _story("memory://context-forgot", clock)
    assert _names(km, ids)[1] == "follow_up"
    assert km.forget(ids["match"])
    assert "follow_up" not in _names(km, ids)

    clock = FakeClock()
    km, ids = _story("memory://context-expired", clock, match={"ttl_days": 2})
    clock.now = km.get(ids["match"]).created_at + timedelta(days=1)  # type: ignore[union-attr]
    assert _names(km, ids)[:2] == ["match", "follow_up"]
    clock.advance(days=2)
    found = _names(km, ids)
    assert "match" not in found
    assert "follow_up" not in found


@pytest.mark.parametrize("context", [True, False])
def test_context_crosses_categories_and_the_filter_still_holds(
    context: bool, clock: FakeClock
) -> None:
    goals = {"category": "goals"}
    km, ids = _story(
        "memory://context-cats",
        clock,
        match={"category": "sport"},
        follow_up=goals,
        twin=goals,
        context=context,
    )
    found = _names(km, ids, limit=2, category="goals")
    assert sorted(found) == ["follow_up", "twin"]
    # The twin says the same thing and is newer: only context puts the follow-up first.
    assert found[0] == ("follow_up" if context else "twin")


def test_context_follows_creation_time_not_the_order_rows_were_read_in(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("context"))
    ids = {"match": km.remember(MATCH)}
    start = clock.now
    for text in FILLERS:
        clock.advance(hours=3)
        ids[text] = km.remember(text)
    # Written last, stamped a minute after the match (a clock set back, an import).
    clock.now = start + timedelta(minutes=1)
    ids["follow_up"] = km.remember(FOLLOW_UP)
    clock.now = start + timedelta(days=3)
    assert _names(km, ids)[:2] == ["match", "follow_up"]
    fresh = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("context"))
    assert _names(fresh, ids)[:2] == ["match", "follow_up"]


def _expected(
    km: KnowledgeMemory, base: Any, live: tuple[Any, Any], clock: FakeClock
) -> dict[int, float]:
    """The definition, entry by entry: the score of each live entry plus the context
    weight times the best positive score among the live entries at most CONTEXT_SPAN
    places away among the live entries in (creation time, row) order, and at most
    CONTEXT_GAP apart in time (keyed by place in ``live``)."""
    store, index = km._vectors, km._index
    assert store is not None
    rows, vecs = live
    now_us = us_of(clock.now)
    # Every live entry is ranked, and nothing else; each by the vector of its own id
    # and text.
    assert rows.tolist() == [r for r in range(index.rows) if index._live_row(r, now_us)]
    for row, v in zip(rows.tolist(), vecs.tolist(), strict=True):
        assert store._ids[v] == index.row_ids([row])[0]
        assert store.hash_of(v) == _vectors.text_hash(index.row_content(row))
    entries = sorted((index._created[row], row, i) for i, row in enumerate(rows.tolist()))
    gap = _vectors.CONTEXT_GAP // timedelta(microseconds=1)
    out = {}
    for i, (created, _row, place) in enumerate(entries):
        near = [
            float(base[other_place])
            for j, (other, _r, other_place) in enumerate(entries)
            if j != i and abs(j - i) <= _vectors.CONTEXT_SPAN and abs(other - created) <= gap
        ]
        best = max([0.0, *near])
        out[place] = float(base[place]) + _vectors.CONTEXT_WEIGHT * best
    return out


def _standardised(x: Any) -> Any:
    return (x - x.mean()) / x.std() if x.std() else np.zeros_like(x)


def _check_definition(km: KnowledgeMemory, query: str, clock: FakeClock) -> None:
    km.recall(query)  # embeds what is missing and brings the row maps up to date
    store, index = km._vectors, km._index
    assert store is not None
    qv = store.embed([query])[0]
    lexical = index.lexical_rows(np, query, query_terms(query))
    live = store.live_rows(index, clock.now)
    base = store.fused_scores(qv, lexical, live)
    # The base score: both parts standardised over the live entries, the cosines
    # taken about the (shrunk) mean of the live entries' vectors.
    rows, vecs = live
    vectors = store._stacked()[vecs].astype(np.float64)
    mu = vectors.sum(axis=0) / (len(vecs) + 4)
    centred = vectors - mu
    dense = centred @ (qv - mu) / np.linalg.norm(centred, axis=1)
    weight = _vectors.LEXICAL_WEIGHT
    definition = weight * _standardised(lexical[rows]) + (1 - weight) * _standardised(dense)
    assert np.allclose(base, definition, atol=1e-5)
    full = store.fused_scores(qv, lexical, live, store.context_of(index, rows))
    expected = _expected(km, base, live, clock)
    assert expected
    assert len(full) == len(expected)
    for place, score in expected.items():
        assert full[place] == pytest.approx(score, abs=1e-9), place


@pytest.mark.parametrize("seed", range(6))
def test_fused_scores_follow_the_definition_on_random_memories(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    clock = FakeClock()
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("definition"))
    words = ["tea", "garden", "sunrise", "lisbon", "violin", "paint", "marathon", "river"]
    ids: list[str] = []

    def write(n: int) -> None:
        for _ in range(n):
            # Gaps around the hour, and some entries stamped at the same instant.
            clock.advance(minutes=rng.choice([0, 0, 5, 30, 59, 60, 61, 180]))
            ttl = rng.choice([None, None, None, 0.01])
            ids.append(km.remember(" ".join(rng.sample(words, 3)), ttl_days=ttl))

    write(rng.randint(20, 60))
    for entry_id in rng.sample(ids, 5):
        km.forget(entry_id)
    for query in ("tea garden", "violin sunrise", "marathon river kitchen"):
        _check_definition(km, query, clock)
    clock.advance(minutes=20)  # some entries expire
    write(rng.randint(5, 15))  # the pairs are built again
    _check_definition(km, "paint lisbon", clock)
    # A second instance, reading the logs, agrees.
    again = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("definition"))
    _check_definition(again, "paint lisbon", clock)
    assert [e.id for e in again.recall("tea paint", limit=10)] == [
        e.id for e in km.recall("tea paint", limit=10)
    ]


def test_a_cache_loaded_memory_follows_the_definition(tmp_path: Path) -> None:
    """Every kind of row the index holds (persistent facts, hidden records, a
    MEMORY.md-only fact, TTLs, non-ASCII text), sittings hours apart, read back from
    the index cache."""
    clock = FakeClock()
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("definition"))
    ids = _seed_varied(km, clock, n=300)
    clock.advance(hours=2)
    ids += [km.remember(f"evening note {i} about tea and guitar") for i in range(5)]
    for entry_id in ids[10:40:3]:
        km.forget(entry_id)
    queries = ["guitar tea", "lisbon", "rust note", "evening tea"]
    for query in queries:
        _check_definition(km, query, clock)
    again = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("definition"))
    for query in queries:
        _check_definition(again, query, clock)
        assert [e.id for e in again.recall(query, limit=10)] == [
            e.id for e in km.recall(query, limit=10)
        ]
    assert again._cache_loaded


@pytest.mark.parametrize("bad", ["yes", 1, 0.25, None, [True]])
def test_recall_context_must_be_a_bool(bad: object, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="recall_context"):
        KnowledgeMemory(
            tmp_path / "m",
            embedder=WordEmbedder("context"),
            recall_context=bad,  # type: ignore[arg-type]
        )
    assert not (tmp_path / "m").exists()  # nothing was created


def test_without_an_embedder_recall_context_changes_nothing(tmp_path: Path) -> None:
    texts = [MATCH, FOLLOW_UP, *FILLERS]
    plain = KnowledgeMemory(tmp_path / "a", recall_context=True)
    other = KnowledgeMemory(tmp_path / "b", recall_context=False)
    for text in texts:
        plain.remember(text)
        other.remember(text)
    found = [e.content for e in plain.recall(QUESTION)]
    assert found[0] == MATCH
    assert FOLLOW_UP not in found  # BM25 alone: no word of the question, no context
    assert [e.content for e in other.recall(QUESTION)] == found


def test_context_scores_pass_on_only_positive_scores_of_close_rows() -> None:
    fused = np.array([3.0, -1.0, 0.5, 2.0, 1.0, 9.0])
    # Written in the order 4, 0, 1, 2, 3 (row 5 is not live); row 3 two hours late.
    order = np.array([4, 0, 1, 2, 3])
    hour = 3_600_000_000
    stamps = np.array([0, 10, 20, 30, 30 + 2 * hour])
    near = _vectors.context_scores(np, fused, order, stamps, span=1)
    assert near.tolist() == [1.0, 3.0, 0.0, 0.0, 3.0, 0.0]
    got = _vectors.context_scores(np, fused, order, stamps)
    assert got.tolist() == [1.0, 3.0, 3.0, 0.0, 3.0, 0.0]
    wide = _vectors.context_scores(np, fused, order, stamps, gap=timedelta(hours=3))
    assert wide.tolist() == [1.0, 3.0, 3.0, 0.5, 3.0, 0.0]
    one = _vectors.context_scores(np, fused, order[:1], stamps[:1])
    assert one.tolist() == [0.0] * 6
    assert _vectors.context_scores(np, fused, order[:0], stamps[:0]).tolist() == [0.0] * 6


def test_an_entry_embedded_twice_by_two_writers_keeps_one_vector(tmp_path: Path) -> None:
    """Two writers that embed the same entries at once both append their vectors: a
    reader keeps one vector row per entry (else an entry would be its own neighbour)."""
    clock = FakeClock()
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder, clock=clock)
    for i in range(6):
        clock.advance(minutes=1)
        plain.remember(f"note {i} about tea in {FILLERS[i]}")
    first = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("twice"))
    first.recall("tea")  # embeds the six and appends their vectors
    vectors = folder / "vectors" / "twice-128.i8v"
    once = vectors.read_bytes()
    header = _vecfile.read_header(once)
    assert header is not None
    blocks = _vecfile.scan_blocks(once, _vecfile.HEADER_SIZE, len(once), 128).blocks
    assert sum(len(b.ids) for b in blocks) == 6
    with open(vectors, "ab") as handle:  # what a second writer racing the first appends
        handle.write(once[_vecfile.HEADER_SIZE :])
    once += once[_vecfile.HEADER_SIZE :]
    reader = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("twice"))
    _check_definition(reader, "tea", clock)
    store = reader._vectors
    assert store is not None
    assert sorted(store._ids) == sorted(set(store._ids)) and len(store._ids) == 6
    assert vectors.read_bytes() == once  # the file is derived data, left as it is
    # The writer that had them already reads the duplicates and keeps its rows.
    assert first._vectors is not None
    first._vectors.load()
    assert len(first._vectors._ids) == 6
