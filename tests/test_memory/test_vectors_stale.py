"""Hybrid recall answers from the live entries and their texts alone: the mean vector and
every standardisation are taken over the live entries (not forgotten, not expired), so
deleting ``vectors/`` (or restoring a snapshot, which ships none) changes no ranking;
and a vector serves an entry only while the entry's text is the one it was made from (a
log line a person fixed is embedded again; a line of the older format, which names no
text, is never served)."""

from __future__ import annotations

import base64
import hashlib
import random
import shutil
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _vecfile, _vectors

from .conftest import FakeClock
from .test_embedder import WordEmbedder, fresh_vocabulary  # noqa: F401 (autouse)

np = pytest.importorskip("numpy")

WORDS = [
    "tea",
    "garden",
    "sunrise",
    "lisbon",
    "violin",
    "paint",
    "marathon",
    "river",
    "kitchen",
    "guitar",
    "budget",
    "travel",
    "python",
    "chess",
    "bread",
    "lake",
    "radio",
    "stamps",
    "tomato",
    "fence",
    "grammar",
    "cat",
    "train",
    "van",
]


class HashEmbedder:
    """Deterministic and stateless: each word adds +-1 to a bucket chosen by its hash,
    and every text shares one direction (as sentence embeddings do, which is what
    centring takes away)."""

    name = "hashed"
    dimension = 48

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            vec[0] = 2.5
            for word in text.lower().split():
                h = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vec[1 + h[0] % (self.dimension - 1)] += 1.0 if h[1] & 1 else -1.0
            out.append(vec)
        return out


def _corpus(seed: int, n: int) -> list[tuple[str, float | None, bool]]:
    """``n`` (text, ttl_days, forget) triples: distinct texts of 3-6 words; about a
    quarter forgotten and a fifth expiring (ttl 1 day)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[tuple[str, float | None, bool]] = []
    while len(out) < n:
        text = " ".join(rng.sample(WORDS, rng.randint(3, 6)))
        if text in seen:
            continue
        seen.add(text)
        fate = rng.random()
        out.append((text, 1.0 if fate < 0.2 else None, 0.2 <= fate < 0.45))
    return out


QUERIES = [
    "tea garden",
    "violin sunrise lisbon",
    "marathon river",
    "kitchen guitar budget",
    "python chess",
    "bread lake radio",
    "stamps tomato",
    "cat train van fence",
    "paint",
    "travel grammar",
]
ONE_WORD = ["tea", "violin", "marathon", "kitchen", "chess", "radio", "tomato", "van"]
NO_WORD_IN_COMMON = ["harbour", "moonlight symphony", "quantum"]


def _write(
    km: KnowledgeMemory,
    clock: FakeClock,
    corpus: Sequence[tuple[str, float | None, bool]],
    *,
    live_only: bool = False,
) -> list[str]:
    """Write ``corpus`` at fixed instants (some within an hour of each other: context
    counts); with ``live_only``, only the entries that stay live. The ids, in order
    (None for an entry left out)."""
    start = clock.now
    ids: list[str] = []
    for i, (text, ttl, forget) in enumerate(corpus):
        clock.now = start + timedelta(minutes=17 * i)
        if live_only and (ttl is not None or forget):
            ids.append("")
            continue
        ids.append(km.remember(text, ttl_days=ttl))
    if not live_only:
        for entry_id, (_text, _ttl, forget) in zip(ids, corpus, strict=True):
            if forget:
                assert km.forget(entry_id)
    clock.now = start + timedelta(minutes=17 * len(corpus), days=2)  # the TTLs ran out
    return ids


def _ranked(km: KnowledgeMemory, queries: list[str]) -> list[list[str]]:
    return [[e.content for e in km.recall(q, limit=10)] for q in queries]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_deleting_the_vector_file_changes_no_ranking(seed: int, tmp_path: Path) -> None:
    clock = FakeClock()
    folder = tmp_path / "m"
    corpus = _corpus(seed, 90)
    km = KnowledgeMemory(folder, clock=clock, embedder=HashEmbedder())
    _write(km, clock, corpus)
    queries = QUERIES + ONE_WORD + NO_WORD_IN_COMMON
    warm = _ranked(km, queries)
    vectors = folder / "vectors" / "hashed-48.i8v"
    # The file holds the vectors of the forgotten and expired entries too.
    assert len(_file_rows(vectors.read_bytes())) == len(corpus)
    with_file = KnowledgeMemory(folder, clock=clock, embedder=HashEmbedder())
    assert _ranked(with_file, queries) == warm
    shutil.rmtree(folder / "vectors")
    embedder = HashEmbedder()
    without = KnowledgeMemory(folder, clock=clock, embedder=embedder)
    assert _ranked(without, queries) == warm
    # Only the live entries were embedded again.
    live = [t for t, ttl, forget in corpus if ttl is None and not forget]
    assert sorted(t for b in embedder.batches if len(b) > 1 for t in b) == sorted(live)


@pytest.mark.parametrize("forgets", [False, True], ids=["expired", "expired+forgotten"])
@pytest.mark.parametrize("seed", [4, 5, 6])
def test_forgotten_and_expired_entries_weigh_nothing(
    seed: int, forgets: bool, tmp_path: Path
) -> None:
    """A memory whose entries expired (and some were forgotten) ranks exactly as a
    fresh memory that only ever held its live entries (written at the same instants)."""
    corpus = [(t, ttl, forget and forgets) for t, ttl, forget in _corpus(seed, 90)]
    clock = FakeClock()
    km = KnowledgeMemory(tmp_path / "a", clock=clock, embedder=HashEmbedder())
    _write(km, clock, corpus)
    fresh_clock = FakeClock()
    fresh = KnowledgeMemory(tmp_path / "b", clock=fresh_clock, embedder=HashEmbedder())
    _write(fresh, fresh_clock, corpus, live_only=True)
    assert clock.now == fresh_clock.now
    # BM25 counts an expired entry among its documents until it is pruned (the IDF of a
    # word), so the two agree on queries of one word (standardised, an IDF is a scale)
    # and on words no entry has: the rest of the ranking is the vectors' and the
    # context's, over the live entries alone.
    queries = ONE_WORD + NO_WORD_IN_COMMON
    assert _ranked(km, queries) == _ranked(fresh, queries)
    # The same from a process that reads the files.
    again = KnowledgeMemory(tmp_path / "a", clock=clock, embedder=HashEmbedder())
    assert _ranked(again, queries) == _ranked(fresh, queries)


@pytest.mark.parametrize("seed", [7, 8])
def test_forgotten_entries_weigh_nothing_on_any_query(seed: int, tmp_path: Path) -> None:
    """Without expiry every query agrees (a forgotten entry leaves BM25 too)."""
    corpus = [(text, None, forget) for text, _ttl, forget in _corpus(seed, 90)]
    clock = FakeClock()
    km = KnowledgeMemory(tmp_path / "a", clock=clock, embedder=HashEmbedder())
    _write(km, clock, corpus)
    fresh_clock = FakeClock()
    fresh = KnowledgeMemory(tmp_path / "b", clock=fresh_clock, embedder=HashEmbedder())
    _write(fresh, fresh_clock, corpus, live_only=True)
    queries = QUERIES + ONE_WORD + NO_WORD_IN_COMMON
    assert _ranked(km, queries) == _ranked(fresh, queries)
    again = KnowledgeMemory(tmp_path / "a", clock=clock, embedder=HashEmbedder())
    assert _ranked(again, queries) == _ranked(fresh, queries)


OLD = "booked the automobile for repair"
FIXED = "booked the piano tuner for friday afternoon"  # another length


def _fix_log_line(folder: Path, old: str, new: str) -> None:
    """What a person does in an editor: the line's content changed, its id kept."""
    (log,) = (folder / "logs").iterdir()
    data = log.read_bytes()
    assert data.count(old.encode()) == 1
    log.write_bytes(data.replace(old.encode(), new.encode()))


OTHERS = ("dinner at the harbour", "the piano lesson moved", "friday market")
FIX_QUERIES = ["car", "piano tuner friday", "harbour dinner", "automobile repair"]


def _hand_fix_story(folder: Path, clock: FakeClock, first: str) -> list[str]:
    start = clock.now
    km = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("fix"))
    ids = []
    for i, text in enumerate((first, *OTHERS)):
        clock.now = start + timedelta(minutes=3 * i)
        ids.append(km.remember(text))
    return ids


def test_a_hand_fixed_log_line_is_embedded_again(tmp_path: Path, clock: FakeClock) -> None:
    folder = tmp_path / "m"
    target, *others = _hand_fix_story(folder, clock, OLD)
    km = KnowledgeMemory(folder, clock=clock, embedder=WordEmbedder("fix"))
    assert km.recall("car", limit=1)[0].id == target  # "car" and "automobile" agree
    # The same memory, had the entry been written with the fixed text.
    ref_clock = FakeClock()
    _hand_fix_story(tmp_path / "ref", ref_clock, FIXED)
    reference = KnowledgeMemory(tmp_path / "ref", clock=ref_clock, embedder=WordEmbedder("fix"))
    expected = _ranked(reference, FIX_QUERIES)
    assert expected[0][0] != FIXED  # nothing is about a car now
    vectors = folder / "vectors" / "fix-128.i8v"
    before = vectors.read_bytes()
    _fix_log_line(folder, OLD, FIXED)

    embedder = WordEmbedder("fix")
    reader = KnowledgeMemory(folder, clock=clock, embedder=embedder, index_cache=False)
    assert _ranked(reader, FIX_QUERIES) == expected
    assert reader.recall("car", limit=1)[0].id != target
    # The fixed text was embedded once (after the first query), nothing else was.
    assert embedder.batches[:2] == [["car"], [FIXED]]
    assert all(len(b) == 1 for b in embedder.batches[2:])
    # The vector file only grew: the old row is still there, byte for byte, and the
    # new one names the entry and the hash of its new text.
    after = vectors.read_bytes()
    assert after.startswith(before)
    assert _file_rows(after)[len(_file_rows(before)) :] == [(target, _vectors.text_hash(FIXED))]

    # A later process reads both lines and serves the one of the current text.
    later = WordEmbedder("fix")
    third = KnowledgeMemory(folder, clock=clock, embedder=later, index_cache=False)
    assert _ranked(third, FIX_QUERIES) == expected
    assert all(len(b) == 1 for b in later.batches)
    assert set(others) <= {e.id for e in third.entries()}
    # Fixed back: the first vector of the original text serves again, nothing embedded.
    _fix_log_line(folder, FIXED, OLD)
    back = WordEmbedder("fix")
    fourth = KnowledgeMemory(folder, clock=clock, embedder=back, index_cache=False)
    assert fourth.recall("car", limit=1)[0].id == target
    assert back.batches == [["car"]]
    assert vectors.read_bytes() == after


def _file_rows(data: bytes) -> list[tuple[str, str]]:
    """(entry id, text hash) of every verified row of a binary vector file."""
    header = _vecfile.read_header(data)
    assert header is not None
    scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), header.dimension)
    assert scan.skipped == 0
    return [key for b in scan.blocks for key in zip(b.ids, b.hashes, strict=True)]


def _legacy_file(km: KnowledgeMemory) -> bytes:
    """The JSONL vector file the version before the binary file wrote for the vectors
    ``km`` holds: one line per vector, ``{"id", "h", "v": base64 float32}``."""
    store = km._vectors
    assert store is not None
    return b"".join(
        orjson.dumps({"id": i, "h": h, "v": base64.b64encode(v.astype("<f4").tobytes()).decode()})
        + b"\n"
        for i, h, v in zip(
            store._ids, map(store.hash_of, range(len(store._ids))), store._stacked(), strict=True
        )
    )


def _old_format(data: bytes, shuffle: bool) -> bytes:
    """The vector lines as an older version wrote them (no text hash), with the
    vectors handed to the wrong entries when ``shuffle``."""
    records = [orjson.loads(line) for line in data.splitlines()]
    vectors = [r["v"] for r in records]
    if shuffle:
        vectors = vectors[1:] + vectors[:1]
    return b"".join(
        orjson.dumps({"id": r["id"], "v": v}) + b"\n" for r, v in zip(records, vectors, strict=True)
    )


@pytest.mark.parametrize(
    "hash_field",
    [None, 5, "", "zz", ["x"], {"h": 1}],
    ids=["missing", "number", "empty", "not-hex", "list", "object"],
)
def test_vector_lines_without_a_true_text_hash_are_never_served(
    hash_field: object, tmp_path: Path, clock: FakeClock
) -> None:
    folder = tmp_path / "m"
    corpus = [(t, None, False) for t, _ttl, _f in _corpus(9, 40)]
    km = KnowledgeMemory(folder, clock=clock, embedder=HashEmbedder())
    _write(km, clock, corpus)
    queries = QUERIES + ONE_WORD + NO_WORD_IN_COMMON
    expected = _ranked(km, queries)
    # The JSONL file of the version before the binary one, with vectors handed to the
    # wrong entries and no hash (or a hash that is none): converted without them.
    binary = folder / "vectors" / "hashed-48.i8v"
    vectors = folder / "vectors" / "hashed-48.jsonl"
    vectors.write_bytes(_legacy_file(km))
    binary.unlink()
    old = _old_format(vectors.read_bytes(), shuffle=True)
    if hash_field is not None:  # a hash of the wrong kind (or of no text) is no hash
        lines = [orjson.loads(line) for line in old.splitlines()]
        old = b"".join(orjson.dumps({**r, "h": hash_field}) + b"\n" for r in lines)
    vectors.write_bytes(old)
    embedder = HashEmbedder()
    reader = KnowledgeMemory(folder, clock=clock, embedder=embedder)
    assert _ranked(reader, queries) == expected
    # Every entry was embedded again (once), none took a vector it cannot check.
    assert sorted(t for b in embedder.batches if len(b) > 1 for t in b) == sorted(
        t for t, _ttl, _f in corpus
    )
    assert len(embedder.batches) == len(queries) + 1
    assert vectors.read_bytes() == old  # read once, converted, kept byte for byte
    rows = _file_rows(binary.read_bytes())
    assert sorted(rows) == sorted((e.id, _vectors.text_hash(e.content)) for e in reader.entries())


def test_a_foreign_vector_of_the_right_shape_is_normalised_once(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A vector stored at another length (written by another tool) is normalised on
    load; ours are read back bit for bit."""
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock, embedder=HashEmbedder())
    entry = km.remember("tea garden sunrise")
    store = km._vectors
    assert store is not None
    ours = store._stacked()[0].copy()
    reader = _vectors.VectorStore(km.root, HashEmbedder())
    reader.load()
    assert np.array_equal(reader._stacked()[0], ours)  # bit for bit
    # A JSONL file of the version before (converted once) with a vector at 3x length.
    vectors = folder / "vectors" / "hashed-48.jsonl"
    record = orjson.loads(_legacy_file(km))
    scaled = np.frombuffer(base64.b64decode(record["v"]), dtype="<f4") * np.float32(3.0)
    record["v"] = base64.b64encode(scaled.astype("<f4").tobytes()).decode()
    vectors.write_bytes(orjson.dumps(record) + b"\n")
    (folder / "vectors" / "hashed-48.i8v").unlink()
    foreign = _vectors.VectorStore(km.root, HashEmbedder())
    foreign.load()
    assert np.allclose(foreign._stacked()[0], ours, atol=1e-3)
    assert foreign._ids == [entry]


def test_a_restored_snapshot_ranks_as_the_memory_it_came_from(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A snapshot carries the vectors: the restored memory embeds only the queries and
    ranks exactly as the memory that saved it, whose vector file also holds the
    forgotten and expired entries."""
    from fsmemory.snapshot import FsspecBackend

    url = str(tmp_path / "snap" / "memory.snapshot")
    km = KnowledgeMemory(
        tmp_path / "a", clock=clock, backend=FsspecBackend(url), embedder=HashEmbedder()
    )
    corpus = _corpus(11, 60)
    _write(km, clock, corpus)
    queries = ONE_WORD + NO_WORD_IN_COMMON + QUERIES
    expected = _ranked(km, queries)
    embedder = HashEmbedder()
    restored = KnowledgeMemory(
        tmp_path / "b", clock=clock, backend=FsspecBackend(url), embedder=embedder
    )
    assert _ranked(restored, queries) == expected
    # no stored entry was embedded again: only queries
    assert not [t for b in embedder.batches for t in b if t not in queries]
