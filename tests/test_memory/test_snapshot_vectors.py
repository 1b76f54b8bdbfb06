"""Vectors travel with a snapshot: a save's delta carries the new entries' vectors, a
fold carries the live ones into the base, a restore installs them so that recall()
embeds only the query; damaged parts cost embeddings, never an answer."""

from __future__ import annotations

import hashlib
import shutil
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory._delta import fold_state
from fsmemory.memory._vecfile import HEADER_SIZE, read_header, row_bytes, scan_blocks
from fsmemory.memory._vectravel import VectorFold
from fsmemory.snapshot import FsspecBackend, pack_archive
from fsmemory.snapshot.archive import (
    RawMember,
    encode_derived,
    unpack_archive_parts,
    unpack_derived,
)

np = pytest.importorskip("numpy")

DIM = 384
QUERIES = ["python", "project atlas deadline", "coffee", "fact 7", "zzz"]
TOPICS = ["python", "coffee", "atlas", "deadline", "garden", "music", "travel"]


class CountingEmbedder:
    """Deterministic: a text's vector is the sum of its words' pseudo-random vectors
    (seeded by the word), so that instances agree; counts every text it embeds."""

    name = "fake"
    dimension = DIM

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += texts
        out = []
        for text in texts:
            vec = np.zeros(DIM)
            for word in text.lower().split():
                seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest())
                vec += np.random.default_rng(seed).standard_normal(DIM)
            out.append(vec.tolist())
        return out


def _text(i: int) -> str:
    return f"fact {i}: the user talked about {TOPICS[i % 7]} and {TOPICS[(i * 3) % 7]}"


def _url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return f"memory://vectravel/{uuid.uuid4().hex}.snapshot"
    return (tmp_path / "store" / "mem.snapshot").as_uri()


def _ranking(km: KnowledgeMemory) -> list[list[str]]:
    return [[e.id for e in km.recall(q, limit=6)] for q in QUERIES]


def _write(folder: Path, url: str, n: int, *, compact_after: int = 1000) -> KnowledgeMemory:
    km = KnowledgeMemory(
        folder,
        backend=FsspecBackend(url),
        embedder=CountingEmbedder(),
        snapshot_compact_after=compact_after,
    )
    for i in range(n):
        km.remember(_text(i))
    return km


def _vector_rows(folder: Path) -> list[tuple[str, str]]:
    """The (id, hash) of every verified row of the folder's vector file."""
    data = (folder / "vectors" / f"fake-{DIM}.i8v").read_bytes()
    assert read_header(data) is not None
    scan = scan_blocks(data, HEADER_SIZE, len(data), DIM)
    assert scan.skipped == 0
    return [k for b in scan.blocks for k in zip(b.ids, b.hashes, strict=True)]


@pytest.mark.parametrize("kind", ["folder", "memory"])
@pytest.mark.parametrize("compact_after", [1000, 7])
def test_a_restore_embeds_only_the_query(tmp_path: Path, kind: str, compact_after: int) -> None:
    url = _url(kind, tmp_path)
    writer = _write(tmp_path / "w", url, 30, compact_after=compact_after)
    writer.forget(writer.recall("fact 3", limit=1)[0].id)
    expected = _ranking(writer)
    state = FsspecBackend(url).load_state()
    assert compact_after == 1000 or state.base is not None  # folds happened
    embedder = CountingEmbedder()
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url), embedder=embedder)
    assert _ranking(restored) == expected
    # the queries only: no stored entry was embedded again
    assert embedder.texts == QUERIES
    rows = _vector_rows(tmp_path / "r")
    assert len(rows) == len(set(rows))


def test_a_save_of_one_entry_adds_only_its_vector(tmp_path: Path) -> None:
    sizes = []
    for embedder in (None, CountingEmbedder()):
        km = KnowledgeMemory(
            tmp_path / str(embedder is None),
            backend=FsspecBackend(_url("memory", tmp_path)),
            embedder=embedder,
            snapshot_compact_after=1000,
        )
        for i in range(20):
            km.remember(_text(i))
        assert km._replica is not None
        before = km._replica.bytes_uploaded
        km.remember("one new entry about the garden")
        sizes.append(km._replica.bytes_uploaded - before)
    without, with_vectors = sizes
    assert with_vectors > without + row_bytes(DIM)  # the vector travels (a stored row)
    # the target: at most a float16 vector's bytes (dimension x 2) and 1 KiB more
    assert with_vectors <= without + DIM * 2 + 1024, (without, with_vectors)


def test_a_fold_drops_vectors_of_forgotten_and_expired_entries(tmp_path: Path) -> None:
    url = _url("memory", tmp_path)
    km = _write(tmp_path / "w", url, 12)
    gone = [e.id for e in km.recall("fact", limit=12)[:3]]
    for entry_id in gone:
        km.forget(entry_id)
    km.remember("short lived", ttl_days=0)
    km.remember("kept one")
    folder = KnowledgeMemory(
        tmp_path / "w",
        backend=FsspecBackend(url),
        embedder=CountingEmbedder(),
        snapshot_compact_after=1,
    )
    folder.remember("the fold")
    assert folder._replica is not None and folder._replica.folds == 1
    state = FsspecBackend(url).load_state()
    assert state.base is not None
    _, derived = unpack_archive_parts(state.base)
    fold = VectorFold()
    fold.add(f"vectors/fake-{DIM}.i8v", unpack_derived(derived[f"vectors/fake-{DIM}.i8v"]))
    ids = {i for i, _ in fold.keys(f"vectors/fake-{DIM}.i8v")}
    live = {e.id for e in folder.entries()}
    assert ids == live
    assert not ids & set(gone)


def _flip_in_blocks(url: str) -> None:
    backend = FsspecBackend(url)
    state = backend.load_state()
    assert state.base is not None
    path = f"vectors/fake-{DIM}.i8v"
    files, stored = unpack_archive_parts(state.base)
    derived = {k: unpack_derived(v) or b"" for k, v in stored.items()}
    part = bytearray(derived[path])
    part[len(part) - 5] ^= 0x10  # a vector byte of the block
    derived[path] = RawMember(bytes(part))
    new = backend.save_base(pack_archive(files, derived), folded=[], expected=state)
    assert new is not None


def test_a_damaged_vector_part_costs_embeddings_never_an_answer(tmp_path: Path) -> None:
    url = _url("memory", tmp_path)
    _write(tmp_path / "w", url, 25, compact_after=1)
    assert FsspecBackend(url).load_state().base is not None
    _flip_in_blocks(url)
    embedder = CountingEmbedder()
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url), embedder=embedder)
    got = _ranking(restored)
    # the damaged block was not served: its entries were embedded again
    assert len(embedder.texts) > len(QUERIES)
    fresh_dir = tmp_path / "fresh"
    shutil.copytree(tmp_path / "r", fresh_dir)
    shutil.rmtree(fresh_dir / "vectors")
    fresh = KnowledgeMemory(fresh_dir, embedder=CountingEmbedder())
    assert got == _ranking(fresh)


def test_an_edited_entry_is_embedded_again_after_a_restore(tmp_path: Path) -> None:
    url = _url("memory", tmp_path)
    _write(tmp_path / "w", url, 10)
    restore_dir = tmp_path / "r"
    embedder = CountingEmbedder()
    KnowledgeMemory(restore_dir, backend=FsspecBackend(url), embedder=embedder)
    (log,) = (restore_dir / "logs").iterdir()
    log.write_bytes(log.read_bytes().replace(b"fact 4:", b"fact 44:"))
    km = KnowledgeMemory(restore_dir, embedder=embedder)
    km.recall("python")
    assert [t for t in embedder.texts if t != "python"] == [_text(4).replace("fact 4:", "fact 44:")]


def test_concurrent_writers_lose_no_vector_and_duplicate_none(tmp_path: Path) -> None:
    url = _url("folder", tmp_path)
    texts: dict[str, list[str]] = {"a": [], "b": []}

    def run(name: str) -> None:
        km = KnowledgeMemory(
            tmp_path / name,
            backend=FsspecBackend(url),
            embedder=CountingEmbedder(),
            snapshot_compact_after=5,
        )
        for i in range(15):
            text = f"{name} writer note {i} about {TOPICS[i % 7]}"
            km.remember(text)
            texts[name].append(text)

    threads = [threading.Thread(target=run, args=(n,)) for n in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    embedder = CountingEmbedder()
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url), embedder=embedder)
    assert len(restored.entries()) == 30
    restored.recall("python")
    assert embedder.texts == ["python"]
    rows = _vector_rows(tmp_path / "r")
    assert len(rows) == len(set(rows))
    assert {i for i, _ in rows} >= {e.id for e in restored.entries()}


def test_an_old_snapshot_without_vectors_restores_as_before(tmp_path: Path) -> None:
    url = _url("memory", tmp_path)
    _write(tmp_path / "w", url, 8)
    backend = FsspecBackend(url)
    state = backend.load_state()
    # the deltas as an older writer saved them: no "derived" key
    plain = KnowledgeMemory(tmp_path / "plain")
    for i in range(8):
        plain.remember(_text(i))
    files = {
        str(p.relative_to(tmp_path / "plain")): p.read_bytes()
        for p in (tmp_path / "plain").rglob("*")
        if p.is_file() and "vectors" not in p.parts and not p.name.startswith(".")
    }
    old = backend.save_base(
        pack_archive(files), folded=[n for n, _ in state.deltas], expected=state
    )
    assert old is not None
    embedder = CountingEmbedder()
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url), embedder=embedder)
    restored.recall("python")
    assert sorted(embedder.texts) == sorted([*(_text(i) for i in range(8)), "python"])


def test_a_reader_that_ignores_derived_folds_the_same_files(tmp_path: Path) -> None:
    url = _url("memory", tmp_path)
    _write(tmp_path / "w", url, 6)
    state = FsspecBackend(url).load_state()
    assert all(b'"derived"' in data for _, data in state.deltas)
    stripped = []
    for name, data in state.deltas:
        delta: dict[str, Any] = orjson.loads(data)
        delta.pop("derived")
        stripped.append((name, orjson.dumps(delta)))
    assert fold_state(state) == fold_state(type(state)(state.base, deltas=stripped))


def test_vectors_travel_through_s3(
    s3_root_url: str, s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    url = f"{s3_root_url}/vectors-{uuid.uuid4().hex}.snapshot"

    def backend() -> FsspecBackend:
        return FsspecBackend(url, storage_options=s3_storage_options)

    writer = KnowledgeMemory(
        tmp_path / "w", backend=backend(), embedder=CountingEmbedder(), snapshot_compact_after=4
    )
    for i in range(10):
        writer.remember(_text(i))
    expected = _ranking(writer)
    embedder = CountingEmbedder()
    restored = KnowledgeMemory(tmp_path / "r", backend=backend(), embedder=embedder)
    assert _ranking(restored) == expected
    assert embedder.texts == QUERIES


def test_damaged_or_foreign_delta_parts_are_skipped_and_the_others_kept(
    tmp_path: Path,
) -> None:
    url = _url("memory", tmp_path)
    _write(tmp_path / "w", url, 4)
    deltas = FsspecBackend(url).load_state().deltas
    path = f"vectors/fake-{DIM}.i8v"
    parts = [unpack_derived(orjson.loads(data)["derived"][path]) or b"" for _, data in deltas]
    assert len(parts) == 4
    flipped = bytearray(parts[0])
    flipped[-3] ^= 0x01
    foreign = parts[2]

    def delta(entry: dict[str, Any]) -> bytes:
        return orjson.dumps({"format": "fsmemory-delta", "version": 1, "derived": entry})

    mangled = [
        ("d0", delta({path: encode_derived(bytes(flipped))})),
        ("d1", delta({path: {"encoding": "zlib-base64", "content": "!!not base64"}})),
        ("d2", delta({"vectors/other-384.i8v": encode_derived(foreign)})),
        ("d3", deltas[3][1]),
    ]
    fold = VectorFold()
    fold.add_deltas(mangled)
    assert list(fold.files) == [path]
    # only the intact fourth delta's row is taken
    assert len(_keys(parts[3])) == 1
    assert fold.keys(path) == _keys(parts[3])


def _keys(part: bytes) -> set[tuple[str, str]]:
    fold = VectorFold()
    fold.add(f"vectors/fake-{DIM}.i8v", part)
    return fold.keys(f"vectors/fake-{DIM}.i8v")


@pytest.mark.parametrize("warm", [True, False])
def test_a_delta_carries_only_the_vectors_the_snapshot_lacks(tmp_path: Path, warm: bool) -> None:
    url = _url("memory", tmp_path)
    _write(tmp_path / "w", url, 6)
    # a warm reopen of the same folder, or a cold restore into a new one
    folder = tmp_path / ("w" if warm else "r")
    km = KnowledgeMemory(
        folder, backend=FsspecBackend(url), embedder=CountingEmbedder(), snapshot_compact_after=1000
    )
    km.recall("python")  # reads (or embeds nothing into) the vector file
    new = km.remember("one more about music")
    _, data = FsspecBackend(url).load_state().deltas[-1]
    path = f"vectors/fake-{DIM}.i8v"
    part = unpack_derived(orjson.loads(data)["derived"][path])
    assert {i for i, _ in _keys(part or b"")} == {new}


def test_a_restore_decodes_each_blocks_hashes_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a block's hashes decodes all of them; a restore that read them once per
    kept row took time quadratic in the entries (28 s at 10k). Count the decodes."""
    from fsmemory.memory import _vecfile

    url = _url("folder", tmp_path)
    _write(tmp_path / "w", url, 120, compact_after=7)
    decoded = []
    real = _vecfile.split_digests

    def counting(digests: bytes) -> list[str]:
        decoded.append(len(digests) // 8)
        return real(digests)

    monkeypatch.setattr(_vecfile, "split_digests", counting)
    restored = KnowledgeMemory(
        tmp_path / "r", backend=FsspecBackend(url), embedder=CountingEmbedder()
    )
    assert len(restored.recall("fact", limit=200)) == 120
    # a handful of decodes per block, never one per row
    assert 0 < len(decoded) < 40, decoded
