"""Version-3 archives: a base whose vector parts travel as raw binary members of a
frame. Round trips, old (version-2, zlib-base64) bases still restoring with their
vectors, hostile frames refused without a crash or a huge allocation, and damaged
members costing embeddings, never an answer."""

from __future__ import annotations

import shutil
import struct
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import SnapshotError
from fsmemory.memory import _index_cache
from fsmemory.memory._vecfile import HEADER_SIZE, encode_block, encode_header, row_bytes
from fsmemory.memory._vecmath import pack_rows
from fsmemory.memory._vectravel import WHOLE_ROWS, Dead, VectorFold
from fsmemory.snapshot import FsspecBackend, pack_archive, unpack_archive
from fsmemory.snapshot.archive import (
    FRAME_MAGIC,
    INFLATE_RATIO,
    INFLATE_SLACK,
    Member,
    RawMember,
    encode_derived,
    is_framed,
    unpack_archive_parts,
    unpack_derived,
)

np = pytest.importorskip("numpy")

from tests.test_memory.test_snapshot_vectors import DIM, CountingEmbedder  # noqa: E402

PATH = f"vectors/fake-{DIM}.i8v"
QUERIES = ["python", "garden music", "fact 7"]
TOPICS = ["python", "coffee", "atlas", "deadline", "garden", "music", "travel"]
FILES = {"MEMORY.md": b"# Agent Memory\n", "logs/2026-03-13.jsonl": b'{"id": "a"}\n'}


def _text(i: int) -> str:
    return f"fact {i}: the user talked about {TOPICS[i % 7]} and {TOPICS[(i * 3) % 7]}"


def _stored(n: int) -> Any:
    """``n`` stored rows (int8 codes, an exponent, the codes' squares), each other than
    the next."""
    codes = np.arange(n * DIM).reshape(n, DIM) % 255 - 127
    return pack_rows(np, codes, -7 - np.arange(n) % 8)


def _part(ids: Sequence[str]) -> bytes:
    vectors = _stored(len(ids))
    hashes = [f"{n:016x}" for n in range(len(ids))]
    return encode_header("fake", DIM, bytes(16)) + encode_block(list(ids), hashes, vectors)


def _frame(document: dict[str, Any], payload: bytes = b"", *, size: int | None = None) -> bytes:
    """A version-3 frame of ``document`` (its checksum right) and ``payload``."""
    text = orjson.dumps(document)
    head = struct.pack(
        "<8sHHIQ", FRAME_MAGIC, 3, 0, zlib.crc32(text), len(text) if size is None else size
    )
    return head + text + payload


def _document(members: dict[str, Any], payload: int, **files: Any) -> dict[str, Any]:
    return {
        "format": "fsmemory-archive",
        "version": 3,
        "files": files or {"MEMORY.md": {"encoding": "utf-8", "content": "# M\n"}},
        "members": members,
        "payload": payload,
    }


# -- the format ----------------------------------------------------------------------
def test_raw_members_round_trip_as_they_are() -> None:
    part = _part(["a", "b", "c"])
    archive = pack_archive(FILES, {PATH: RawMember(part), "index": b"cache " * 100})
    assert is_framed(archive)
    assert part in archive  # stored as it is: no base64, no zlib
    files, derived = unpack_archive_parts(archive)
    assert files == FILES
    assert unpack_archive(archive) == FILES
    assert isinstance(derived[PATH], Member) and derived[PATH].encoding == "raw"
    assert unpack_derived(derived[PATH]) == part
    assert derived["index"].encoding == "zlib"
    assert unpack_derived(derived["index"]) == b"cache " * 100
    fold = VectorFold()
    fold.add(PATH, unpack_derived(derived[PATH]))
    assert {i for i, _ in fold.keys(PATH)} == {"a", "b", "c"}


def test_without_raw_members_the_archive_stays_version_2_json() -> None:
    archive = pack_archive(FILES, {"index": b"cache"})
    document = orjson.loads(archive)  # what an older fsmemory reads
    assert document["version"] == 2
    assert document["derived"]["index"]["encoding"] == "zlib-base64"


def test_an_older_reader_fails_on_a_frame_instead_of_misreading_it() -> None:
    archive = pack_archive(FILES, {PATH: RawMember(_part(["a"]))})
    # an fsmemory before version 3 parses every archive as JSON: it raises
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(archive)


def test_a_frame_cut_anywhere_or_extended_is_refused() -> None:
    archive = pack_archive(FILES, {PATH: RawMember(_part(["a", "b"])), "index": b"x" * 50})
    for cut in [0, 4, 8, 12, 23, 24, 25, 60, len(archive) // 2, len(archive) - 1]:
        with pytest.raises(SnapshotError):
            unpack_archive_parts(archive[:cut])
    with pytest.raises(SnapshotError):
        unpack_archive_parts(archive + b"\0")


@pytest.mark.parametrize(
    "spec",
    [
        {"encoding": "raw", "offset": 0, "length": 11},  # past the end
        {"encoding": "raw", "offset": 2**62, "length": 2**62},  # huge
        {"encoding": "raw", "offset": -1, "length": 2},
        {"encoding": "raw", "offset": 0.0, "length": 2},
        {"encoding": "raw", "offset": True, "length": 2},
        {"encoding": "raw", "offset": 0},
        {"encoding": "raw", "offset": "0", "length": "2"},
        "raw",
    ],
)
def test_a_member_outside_the_frame_is_refused(spec: object) -> None:
    with pytest.raises(SnapshotError):
        unpack_archive_parts(_frame(_document({PATH: spec}, 10), b"0123456789"))


@pytest.mark.parametrize(
    "frame",
    [
        # a document size far past the end: refused before anything is allocated
        _frame(_document({}, 0), size=2**64 - 1),
        _frame(_document({}, 0), size=2**40),
        # a payload of another size than the document says
        _frame(_document({}, 5), b"1234"),
        _frame(_document({}, -1)),
        _frame(_document({}, 0), b"\0"),
        # not an archive's document, or no members object
        _frame({**_document({}, 0), "format": "other"}),
        _frame({**_document({}, 0), "members": []}),
        _frame([1, 2]),  # type: ignore[arg-type]
        # another frame version, a reserved field set
        b"".join([FRAME_MAGIC, struct.pack("<HHIQ", 4, 0, 0, 0)]),
        b"".join([FRAME_MAGIC, struct.pack("<HHIQ", 3, 1, 0, 0)]),
        # unsafe paths and NUL, as in any archive
        _frame(_document({}, 0, **{"../x": {"encoding": "utf-8", "content": "x"}})),
        _frame(_document({}, 0, **{"a\0b": {"encoding": "utf-8", "content": "x"}})),
        _frame(_document({}, 0, **{"/etc/x": {"encoding": "utf-8", "content": "x"}})),
        _frame(_document({}, 0, **{"a.md": {"encoding": "base64", "content": "!!"}})),
    ],
)
def test_a_hostile_frame_raises_a_snapshot_error(frame: bytes) -> None:
    with pytest.raises(SnapshotError):
        unpack_archive_parts(frame)


def test_a_document_that_fails_its_checksum_is_refused() -> None:
    archive = bytearray(pack_archive(FILES, {PATH: RawMember(_part(["a"]))}))
    at = archive.index(b"Agent Memory")
    archive[at] ^= 0x20  # still valid JSON, another content
    with pytest.raises(SnapshotError, match="checksum"):
        unpack_archive_parts(bytes(archive))


def test_an_unreadable_member_is_no_cache() -> None:
    good = zlib.compress(b"cache")
    payload = b"RAW" + good[:-2] + b"\xff\xff"
    frame = _frame(
        _document(
            {
                "a": {"encoding": "brotli", "offset": 0, "length": 3},
                "b": {"encoding": "zlib", "offset": 3, "length": len(good)},
                "c": {"encoding": None, "offset": 0, "length": 0},
            },
            len(payload),
        ),
        payload,
    )
    _, derived = unpack_archive_parts(frame)
    assert [unpack_derived(derived[k]) for k in "abc"] == [None, None, None]


def test_a_derived_entry_that_would_inflate_past_its_bound_is_no_cache() -> None:
    # zlib reaches about 1000:1: a few hundred KB of stream would be hundreds of MB
    bomb = zlib.compress(bytes(INFLATE_SLACK + INFLATE_RATIO * 200_000), 9)
    assert len(bomb) < 200_000
    fits = zlib.compress(bytes(INFLATE_RATIO * 1000), 9)  # well within its bound
    stored = encode_derived(bytes(64 * 1024 * 1024))  # a version-2 entry, base64 text
    assert unpack_derived(Member("zlib", memoryview(bomb))) is None
    assert unpack_derived(stored) is None
    assert unpack_derived(Member("zlib", memoryview(fits))) == bytes(INFLATE_RATIO * 1000)
    cut = zlib.compress(b"cache " * 100)[:-4]  # a stream that does not end
    assert unpack_derived(Member("zlib", memoryview(cut))) is None
    assert unpack_derived(encode_derived(b"cache " * 100)) == b"cache " * 100


def test_a_damaged_or_foreign_raw_part_serves_no_row() -> None:
    part = bytearray(_part(["a", "b", "c"]))
    part[-3] ^= 0x01  # a vector byte: the block's checksum fails
    fold = VectorFold()
    assert fold.add(PATH, bytes(part)) >= 0
    assert fold.keys(PATH) == set()
    other = encode_header("other", DIM, bytes(16)) + _part(["d"])[HEADER_SIZE:]
    assert fold.add(PATH, other) == -1  # a part of another file is skipped whole
    assert fold.keys(PATH) == set()


def test_a_restore_writes_large_blocks_as_they_are_and_rows_in_order() -> None:
    many = [f"a{n}" for n in range(WHOLE_ROWS)]
    first, second = _part(many), _part(["c", "d"])
    fold = VectorFold()
    fold.add(PATH, first)
    fold.add(PATH, second, known={("c", f"{0:016x}")})  # one row of it known already
    fold.add(PATH, _part(["e"]))
    part = fold.encode(PATH)
    assert isinstance(part, RawMember)
    assert first[HEADER_SIZE:] in bytes(part)  # the large block, untouched
    again = VectorFold()
    again.add(PATH, part)
    runs = again.files[PATH].runs
    assert [len(r.ids) for r in runs] == [WHOLE_ROWS, 2]  # the small ones merged
    assert [i for r in runs for i in r.ids] == [*many, "d", "e"]
    vectors = [
        np.frombuffer(r.raw(DIM, range(len(r.ids))), dtype=np.int8).reshape(-1, row_bytes(DIM))
        for r in runs
    ]
    rows = _stored(WHOLE_ROWS)
    assert not np.array_equal(rows[0], rows[1])
    assert np.array_equal(vectors[0], rows)
    assert np.array_equal(vectors[1], np.concatenate([rows[1:2], rows[:1]]))
    # a fold (rows of no live entry left out) writes one block
    folded = fold.encode(PATH, Dead(forgotten={"a0"}, records={}))
    again = VectorFold()
    again.add(PATH, folded)
    assert [len(r.ids) for r in again.files[PATH].runs] == [WHOLE_ROWS + 1]


# -- through a snapshot ----------------------------------------------------------------
def _url() -> str:
    return f"memory://framed/{uuid.uuid4().hex}.snapshot"


def _folded(tmp_path: Path, url: str, n: int = 20) -> list[list[str]]:
    """A memory of ``n`` entries folded into a base with its vectors; its rankings."""
    km = KnowledgeMemory(tmp_path / "w", backend=FsspecBackend(url), embedder=CountingEmbedder())
    for i in range(n):
        km.remember(_text(i))
    km.recall("python")  # writes the index cache, where the folder is large enough
    folder = KnowledgeMemory(
        tmp_path / "w",
        backend=FsspecBackend(url),
        embedder=CountingEmbedder(),
        snapshot_compact_after=1,
    )
    folder.remember(_text(n))
    assert folder._replica is not None and folder._replica.folds == 1
    return [[e.id for e in folder.recall(q, limit=5)] for q in QUERIES]


def _restored(folder: Path, url: str) -> tuple[KnowledgeMemory, CountingEmbedder]:
    embedder = CountingEmbedder()
    return KnowledgeMemory(folder, backend=FsspecBackend(url), embedder=embedder), embedder


def test_a_base_carries_its_vectors_as_a_raw_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an index cache for a few entries, so that the base carries one beside the vectors
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 1024)
    monkeypatch.setattr(_index_cache, "MIN_NEW_ROWS", 5)
    url = _url()
    expected = _folded(tmp_path, url)
    backend = FsspecBackend(url)
    state = backend.load_state()
    assert state.base is not None and is_framed(state.base)
    assert state.base_name is not None and state.base_name.endswith(".bin")
    _, derived = unpack_archive_parts(state.base)
    assert derived[PATH].encoding == "raw"
    assert derived[_index_cache.CACHE_NAME].encoding == "zlib"
    restored, embedder = _restored(tmp_path / "r", url)
    # the base's index cache was installed with the files
    assert restored.root.read_cache(_index_cache.CACHE_NAME)
    assert [[e.id for e in restored.recall(q, limit=5)] for q in QUERIES] == expected
    assert embedder.texts == QUERIES  # no stored entry embedded again


def test_an_old_base_with_zlib_base64_vectors_still_restores_with_them(tmp_path: Path) -> None:
    url = _url()
    expected = _folded(tmp_path, url)
    backend = FsspecBackend(url)
    state = backend.load_state()
    assert state.base is not None
    # the same base as version 2 wrote it: every derived entry zlib-base64 in the JSON
    files, stored = unpack_archive_parts(state.base)
    old = pack_archive(files, {k: bytes(unpack_derived(v) or b"") for k, v in stored.items()})
    document = orjson.loads(old)
    assert document["version"] == 2 and document["derived"][PATH]["encoding"] == "zlib-base64"
    assert backend.save_base(old, folded=[], expected=state) is not None
    restored, embedder = _restored(tmp_path / "r", url)
    assert [[e.id for e in restored.recall(q, limit=5)] for q in QUERIES] == expected
    assert embedder.texts == QUERIES  # its vectors were used: 0 stored entries embedded


def test_a_damaged_raw_member_is_embedded_again_never_served(tmp_path: Path) -> None:
    url = _url()
    _folded(tmp_path, url)
    backend = FsspecBackend(url)
    state = backend.load_state()
    assert state.base is not None
    _, stored = unpack_archive_parts(state.base)
    part = bytes(stored[PATH].data)
    end = state.base.index(part) + len(part)
    damaged = bytearray(state.base)
    damaged[end - 7] ^= 0x40  # a vector byte of the part's block (no frame checksum on it)
    assert backend.save_base(bytes(damaged), folded=[], expected=state) is not None
    restored, embedder = _restored(tmp_path / "r", url)
    got = [[e.id for e in restored.recall(q, limit=5)] for q in QUERIES]
    stored_texts = [t for t in embedder.texts if t not in QUERIES]
    assert len(stored_texts) == 21  # the damaged block's rows (all of them) embedded again
    shutil.copytree(tmp_path / "r", tmp_path / "fresh")
    shutil.rmtree(tmp_path / "fresh" / "vectors")
    fresh = KnowledgeMemory(tmp_path / "fresh", embedder=CountingEmbedder())
    assert got == [[e.id for e in fresh.recall(q, limit=5)] for q in QUERIES]


def test_a_same_length_edit_after_a_restore_is_embedded_again(tmp_path: Path) -> None:
    url = _url()
    _folded(tmp_path, url, 10)
    _, embedder = _restored(tmp_path / "r", url)
    (log,) = (tmp_path / "r" / "logs").iterdir()
    data = log.read_bytes()
    line = next(ln for ln in data.split(b"\n") if b'"fact 4: the user talked' in ln)
    edited = line.replace(b"talked", b"walked")  # same length, another text
    assert len(edited) == len(line)
    log.write_bytes(data.replace(line, edited))
    km = KnowledgeMemory(tmp_path / "r", embedder=embedder)
    km.recall("python")
    assert [t for t in embedder.texts if t != "python"] == [_text(4).replace("talked", "walked")]
