"""Matching index rows to stored vectors: the index cache carries every row's text
hash (a fresh process hashes none of the cached rows), a hand edit that keeps a log
line's length still has its entry embedded again, a vector file in another order than
the index (and texts several entries share) maps each entry to its own vector, and a
derived column of the wrong length is neither stored nor loaded, and what an embedder
returns is checked alike whatever its form."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache, _vecfile, _vectors
from fsmemory.memory._index import MemoryIndex

from .test_embedder import WordEmbedder, fresh_vocabulary  # noqa: F401 (autouse)

np = pytest.importorskip("numpy")

WORDS = ["kitchen", "garden", "violin", "harbor", "lantern", "meadow", "pepper", "quartz"]


def _text(i: int) -> str:
    return f"{WORDS[i % 8]} {WORDS[(i // 8) % 8]} note {i:04d}"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts hashed to match index rows to vectors (every call of the hash)."""
    seen: list[str] = []
    real = _vectors._digest

    def digest(text: str) -> bytes:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(_vectors, "_digest", digest)
    yield seen


def _cached_memory(folder: Path, monkeypatch: pytest.MonkeyPatch, n: int = 300) -> list[str]:
    """A memory of ``n`` entries whose index cache was written after a hybrid recall."""
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 0)
    km = KnowledgeMemory(folder, embedder=WordEmbedder("dig"))
    ids = [km.remember(_text(i)) for i in range(n)]
    km.recall("kitchen garden", limit=5)
    assert (folder / ".fsmemory-cache.index").exists()
    return ids


def _ranked(km: KnowledgeMemory, queries: list[str]) -> list[list[str]]:
    return [[e.id for e in km.recall(q, limit=8)] for q in queries]


QUERIES = ["kitchen garden", "violin note", "quartz meadow 0042", "lantern harbor pepper"]


def test_the_index_cache_carries_the_text_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[str]
) -> None:
    _cached_memory(tmp_path, monkeypatch)
    meta, blobs = _index_cache.decode((tmp_path / ".fsmemory-cache.index").read_bytes())
    index = MemoryIndex()
    index.load_state(meta, blobs)
    texts = [index.row_content(r) for r in range(index.rows)]
    assert bytes(blobs["derived_text_hash"]) == b"".join(_vectors._digest(t) for t in texts)
    counted.clear()
    embedder = WordEmbedder("dig")
    fresh = KnowledgeMemory(tmp_path, embedder=embedder)
    got = _ranked(fresh, QUERIES)
    assert counted == []  # every row's hash came with the cache
    assert embedder.batches == [[q] for q in QUERIES]  # only the queries are embedded
    # The same answers as a process that reads no cache (and hashes every row).
    plain = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"), index_cache=False)
    assert _ranked(plain, QUERIES) == got
    assert len(counted) == 300


def test_a_cache_written_without_text_hashes_gets_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[str]
) -> None:
    # A cache written by a process without an embedder (or by an older version)
    # carries no text hashes: the first process with an embedder hashes every row and
    # writes the cache again once; the next fresh process hashes none.
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 0)
    plain = KnowledgeMemory(tmp_path)
    for i in range(300):
        plain.remember(_text(i))
    plain.recall("kitchen garden", limit=5)
    cache = tmp_path / ".fsmemory-cache.index"
    assert "derived_text_hash" not in _index_cache.decode(cache.read_bytes())[1]
    first = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    got = _ranked(first, QUERIES)
    assert len(counted) == 300  # no hashes in the cache: every row hashed
    blobs = _index_cache.decode(cache.read_bytes())[1]
    assert len(blobs["derived_text_hash"]) == 8 * 300  # written again, with them
    written = cache.read_bytes()
    _ranked(first, QUERIES)
    assert cache.read_bytes() == written  # once: later recalls leave the cache alone
    counted.clear()
    second = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    assert _ranked(second, QUERIES) == got
    assert counted == []


def test_a_same_length_edit_is_embedded_again_despite_the_cached_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[str]
) -> None:
    ids = _cached_memory(tmp_path, monkeypatch)
    (log,) = (tmp_path / "logs").glob("*.jsonl")
    data = log.read_bytes()
    old, new = _text(42), _text(42).replace("note", "nota")
    assert len(old) == len(new) and data.count(old.encode()) == 1
    log.write_bytes(data.replace(old.encode(), new.encode()))
    embedder = WordEmbedder("dig")
    fresh = KnowledgeMemory(tmp_path, embedder=embedder)
    fresh.recall("nota", limit=3)
    assert [new] in embedder.batches  # the fixed text got a vector of its own
    store = fresh._vectors
    assert store is not None
    index = fresh._index
    row = index.row_of(ids[42])
    assert row is not None and index.row_content(row) == new
    vec = int(store._vec_of[row])
    assert store._ids[vec] == ids[42] and store.hash_of(vec) == _vectors.text_hash(new)


def test_vectors_in_another_order_than_the_index_map_to_their_entries(
    tmp_path: Path,
) -> None:
    km = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    # Several entries share a text: each keeps its own vector row.
    texts = [_text(i) for i in range(40)] + ["same words here"] * 5 + [_text(7)] * 2
    ids = [km.remember(t) for t in texts]
    expected = _ranked(km, [*QUERIES, "same words here"])
    store = km._vectors
    assert store is not None
    held = store._held()
    order = list(reversed(range(len(held.ids))))
    data = _vecfile.encode_header("dig", 128) + _vecfile.encode_block(
        [held.ids[i] for i in order],
        [held.hashes[i] for i in order],
        held.vectors[order],
    )
    (tmp_path / "vectors" / "dig-128.i8v").write_bytes(data)
    embedder = WordEmbedder("dig")
    fresh = KnowledgeMemory(tmp_path, embedder=embedder, index_cache=False)
    assert _ranked(fresh, [*QUERIES, "same words here"]) == expected
    assert all(len(batch) == 1 for batch in embedder.batches)  # queries only
    fresh_store = fresh._vectors
    assert fresh_store is not None
    vec_of = fresh_store._vec_of
    for entry_id, text in zip(ids, texts, strict=True):
        row = fresh._index.row_of(entry_id)
        assert row is not None
        vec = int(vec_of[row])
        assert fresh_store._ids[vec] == entry_id
        assert fresh_store.hash_of(vec) == _vectors.text_hash(text)


def test_a_derived_column_of_the_wrong_length_is_neither_stored_nor_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cached_memory(tmp_path, monkeypatch)
    km = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    km.recall("kitchen", limit=1)
    index = km._index
    assert len(index.derived["text_hash"]) == 8 * index.rows
    index.derived["text_hash"] = bytes(8 * (index.rows - 1))
    data = _index_cache.encode(index)
    assert data is not None
    _, blobs = _index_cache.decode(data)
    assert "derived_text_hash" not in blobs
    # A cache whose column is short (written by hand): the rows load, the column not.
    meta, blobs = _index_cache.decode(data)
    blobs = {**blobs, "derived_text_hash": bytes(8)}
    forged = _index_cache._assemble(orjson.dumps(meta), blobs)
    loaded = MemoryIndex()
    assert _index_cache.fill(km.root, loaded, forged)
    assert loaded.rows == index.rows and "text_hash" not in loaded.derived


def test_ids_are_compared_even_where_the_hashes_line_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Entries sharing a text, whose vector rows stand in the index's order but name
    # each other's ids: every hash lines up, the ids do not (a cache-loaded index
    # compares them as bytes).
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 0)
    km = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    texts = [_text(i) if i % 10 else "shared words" for i in range(300)]
    ids = [km.remember(t) for t in texts]
    km.recall("kitchen garden", limit=5)
    store = km._vectors
    assert store is not None
    held = store._held()
    assert held.ids == ids  # written in the index's order
    shared = [n for n, t in enumerate(texts) if t == "shared words"]
    swapped = list(held.ids)
    for a, b in zip(shared, shared[1:] + shared[:1], strict=True):
        swapped[a] = held.ids[b]
    data = _vecfile.encode_header("dig", 128) + _vecfile.encode_block(
        swapped, held.digests, held.vectors
    )
    (tmp_path / "vectors" / "dig-128.i8v").write_bytes(data)
    embedder = WordEmbedder("dig")
    fresh = KnowledgeMemory(tmp_path, embedder=embedder)
    assert _ranked(fresh, QUERIES) == _ranked(km, QUERIES)
    assert all(len(batch) == 1 for batch in embedder.batches)  # queries only
    fresh_store = fresh._vectors
    assert fresh_store is not None
    assert fresh._index.row_id_bytes(0, 300) is not None  # the bytes were compared
    for entry_id in ids:
        row = fresh._index.row_of(entry_id)
        assert row is not None
        assert fresh_store._ids[int(fresh_store._vec_of[row])] == entry_id


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ([[None, 1.0, 0.0]], "must return a sequence of float sequences"),
        ([[float("nan"), 1.0, 0.0]], "returned a non-finite value"),
        ([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "returned 2 vectors for 1 texts"),
        ([[1.0, 0.0]], r"vectors of dimension \[2\], expected 3"),
        ([[1.0, 0.0, 0.0, 1.0]], r"vectors of dimension \[4\], expected 3"),
        ("abc", "must return a sequence of float sequences"),
    ],
)
def test_what_an_embedder_returns_is_checked_whatever_its_form(
    returned: object, message: str
) -> None:
    def embedder(texts: object) -> Any:
        return returned

    store = _vectors.VectorStore(KnowledgeMemory("memory://checked").root, embedder)
    store.dimension = 3
    with pytest.raises(_vectors.EmbedderError, match=message):
        store.embed(["one text"])


@pytest.mark.parametrize("form", [list, tuple, "float32", "int"])
def test_vectors_of_every_form_embed_alike(form: object) -> None:
    values = [[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]]

    def embedder(texts: object) -> Any:
        if form == "float32":
            return np.array(values, dtype=np.float32)
        if form == "int":
            return [[int(x) for x in row] for row in values]
        assert callable(form)
        return form(form(row) for row in values)

    store = _vectors.VectorStore(KnowledgeMemory("memory://forms").root, embedder)
    got = store.embed(["a", "b"])
    assert store.dimension == 3  # learnt from the first vectors
    assert got.dtype == np.float32
    assert got.tolist() == [[0.6000000238418579, 0.800000011920929, 0.0], [0.0, 0.0, 1.0]]


def test_the_widened_copy_is_made_by_the_second_product(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    for i in range(50):
        km.remember(_text(i))
    fresh = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    first = [e.id for e in fresh.recall("kitchen garden", limit=10)]
    store = fresh._vectors
    assert store is not None and store._wide is None  # one recall: rows widened in passes
    query = store.embed(["kitchen garden"])[0]
    live = store.live_rows(fresh._index, fresh._clock())
    passes = store.dense_scores(query, live[1])
    assert store._wide is not None  # the second product made the copy
    assert np.allclose(store.dense_scores(query, live[1]), passes, rtol=0, atol=1e-6)
    assert [e.id for e in fresh.recall("kitchen garden", limit=10)] == first


class _PackedIds:
    """The two views of an index's ids that matching reads: packed (bytes and offsets,
    as a cached index holds them) and as strings."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids

    def row_id_bytes(self, start: int, end: int) -> tuple[bytes, Any]:
        from array import array

        raw = [i.encode() for i in self.ids]
        offsets = array("I", [7])  # counted from where a longer column would start
        for r in raw:
            offsets.append(offsets[-1] + len(r))
        return b"".join(raw[start:end]), offsets[start : end + 1]

    def row_id_column(self, start: int, end: int) -> list[str]:
        return self.ids[start:end]


@pytest.mark.parametrize(
    ("held", "indexed", "same"),
    [
        (["ab", "c", "def"], ["ab", "c", "def"], True),
        (["ab", "c", "def"], ["a", "bc", "def"], False),  # the same bytes cut elsewhere
        (["ab", "c", "def"], ["ab", "c", "deg"], False),
        (["ab", "", "c"], ["ab", "c", ""], False),
        (["a\0b", "c"], ["a\0b", "c"], True),  # a NUL in an id: compared as strings
        (["a\0b", "c"], ["a", "\0bc"], False),
        (["x"], ["x"], True),
        (["é", "c"], ["é", "c"], True),  # not ASCII: compared as strings
    ],
)
def test_ids_matched_in_order_compare_where_each_id_ends(
    held: list[str], indexed: list[str], same: bool, tmp_path: Path
) -> None:
    from fsmemory.fs.local import LocalRoot

    store = _vectors.VectorStore(LocalRoot(str(tmp_path)), WordEmbedder("w"))
    store._ids = ["zz", *held]
    index: Any = _PackedIds(["yy", "yy", *indexed])
    assert store._same_ids(index, 2, 2 + len(indexed), 1) is same


def test_a_fresh_process_that_remembers_first_keeps_the_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A restored memory's first remember appends to a vector file this process has not
    # read: the rows it holds then follow the file, and so the index, and every row is
    # matched by a compare, none by a join; the answers are those of a process that
    # read the file first.
    _cached_memory(tmp_path, monkeypatch)
    reader = KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig"))
    reader.recall("kitchen", limit=3)
    embedder = WordEmbedder("dig")
    fresh = KnowledgeMemory(tmp_path, embedder=embedder)
    joined: list[int] = []
    real = _vectors.VectorStore._find

    def find(self: _vectors.VectorStore, ids: Any, digests: Any) -> Any:
        joined.append(len(ids))
        return real(self, ids, digests)

    monkeypatch.setattr(_vectors.VectorStore, "_find", find)
    new = [fresh.remember("violin harbor fresh one"), fresh.remember("quartz pepper two")]
    found = _ranked(fresh, QUERIES)
    assert joined == []
    store = fresh._vectors
    assert store is not None
    rows = fresh._index.rows
    assert store._ids == fresh._index.row_id_column(0, rows)
    assert store._ids[-2:] == new
    assert [b for b in embedder.batches if len(b) > 1] == []  # nothing embedded again
    monkeypatch.undo()
    assert _ranked(KnowledgeMemory(tmp_path, embedder=WordEmbedder("dig")), QUERIES) == found
    # the reader, which held the file before those two were appended, ranks alike
    assert _ranked(reader, QUERIES) == found
