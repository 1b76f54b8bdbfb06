"""The binary vector file of hybrid recall: damage of every kind is detected and never
served (a flipped byte, a torn or truncated tail, a header of another dimension or
embedder, bytes of another program), rows are keyed by entry id and text hash, the
JSONL file of the version before is converted once, missing vectors are embedded in
batches (a failure mid-way keeps what was embedded), concurrent processes lose and
duplicate nothing, and hostile texts and ids round-trip. Stored rows (int8 codes and a
power-of-two exponent) widen, multiply and sum exactly, and a block's bytes round-trip
(quantize() and the float16 files of format version 1: test_vector_int8.py)."""

from __future__ import annotations

import base64
import json
import multiprocessing
import struct
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
import xxhash

from fsmemory import EmbedderError, KnowledgeMemory
from fsmemory.errors import InvalidInputError
from fsmemory.memory import _vecfile, _vecmath, _vectors

from .test_embedder import WordEmbedder, fresh_vocabulary  # noqa: F401 (autouse)

np = pytest.importorskip("numpy")

# The bytes of a stored row after its codes (its exponent first).
TAIL = _vecmath.TAIL_BYTES

TEXTS = [
    "apples ripen in the orchard",
    "the violin needs new strings",
    "marathon training starts monday",
    "tea tastes best at sunrise",
    "the river floods every spring",
]


def _rows(data: bytes) -> tuple[list[tuple[str, str]], int]:
    """(id, text hash) of the verified rows of a vector file, and the bytes skipped."""
    header = _vecfile.read_header(data)
    assert header is not None
    scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), header.dimension)
    keys = [k for b in scan.blocks for k in zip(b.ids, b.hashes, strict=True)]
    return keys, scan.skipped


def _memory(folder: Path, texts: Sequence[str] = TEXTS) -> tuple[list[str], Path]:
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"))
    ids = [km.remember(t) for t in texts]
    return ids, folder / "vectors" / "file-128.i8v"


def _reader(folder: Path) -> tuple[KnowledgeMemory, WordEmbedder]:
    embedder = WordEmbedder("file")
    return KnowledgeMemory(folder, embedder=embedder, index_cache=False), embedder


def _block_starts(data: bytes) -> list[int]:
    header = _vecfile.read_header(data)
    assert header is not None
    scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), header.dimension)
    return [b.vectors_at for b in scan.blocks]


def _embedded(embedder: WordEmbedder) -> list[str]:
    """Texts embedded other than queries (every query here has two words)."""
    return sorted(t for b in embedder.batches for t in b if len(t.split()) > 2)


def test_the_file_names_format_embedder_and_dimension(tmp_path: Path) -> None:
    ids, path = _memory(tmp_path / "m")
    data = path.read_bytes()
    header = _vecfile.read_header(data)
    assert header is not None
    assert (header.version, header.name, header.dimension) == (2, "file", 128)
    assert data[10] == 2  # dtype: int8 codes and an exponent per row
    keys, skipped = _rows(data)
    assert skipped == 0
    assert keys == [(i, _vectors.text_hash(t)) for i, t in zip(ids, TEXTS, strict=True)]
    # 133 bytes per vector of 128 dimensions (128 codes, an exponent, the codes' sum of
    # squares), plus the keys and block heads (float16 took 256).
    assert _vecfile.row_bytes(128) == 133
    assert len(data) < _vecfile.HEADER_SIZE + len(TEXTS) * (133 + 24 + 64)


def test_a_flipped_byte_in_a_vector_is_never_served(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    ids, path = _memory(folder)
    data = bytearray(path.read_bytes())
    at = _block_starts(bytes(data))[2] + 17
    data[at] ^= 0x40
    path.write_bytes(bytes(data))
    reader, embedder = _reader(folder)
    assert reader.recall("marathon training", limit=1)[0].id == ids[2]
    # Only the damaged row was embedded again; the file was written again whole.
    assert _embedded(embedder) == [TEXTS[2]]
    keys, skipped = _rows(path.read_bytes())
    assert skipped == 0
    assert sorted(keys) == sorted(
        (i, _vectors.text_hash(t)) for i, t in zip(ids, TEXTS, strict=True)
    )
    # A third process reads everything from the file.
    third, again = _reader(folder)
    assert third.recall("violin strings", limit=1)[0].id == ids[1]
    assert _embedded(again) == []


@pytest.mark.parametrize("where", ["keys", "head"])
def test_a_flipped_byte_in_keys_or_block_head_is_never_served(where: str, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    ids, path = _memory(folder)
    data = bytearray(path.read_bytes())
    start = _block_starts(bytes(data))[3]
    head = data.rfind(b"FSVB", 0, start)
    data[head + 5 if where == "head" else head + _vecfile.BLOCK_HEAD + 3] ^= 0x01
    path.write_bytes(bytes(data))
    reader, embedder = _reader(folder)
    assert reader.recall("tea sunrise", limit=1)[0].id == ids[3]
    assert _embedded(embedder) == [TEXTS[3]]


def test_a_truncated_tail_is_ignored_and_the_next_writer_heals_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    ids, path = _memory(folder)
    data = path.read_bytes()
    path.write_bytes(data[:-100])  # a writer killed mid-append
    reader, embedder = _reader(folder)
    assert reader.recall("river floods", limit=1)[0].id == ids[4]
    assert _embedded(embedder) == [TEXTS[4]]
    # Its block was appended after the torn bytes: the next reader skips them, and
    # writes the file again whole.
    third, again = _reader(folder)
    assert third.recall("river floods", limit=1)[0].id == ids[4]
    assert _embedded(again) == []
    keys, skipped = _rows(path.read_bytes())
    assert skipped == 0 and len(keys) == len(set(keys)) == len(TEXTS)


def test_a_block_still_being_written_is_read_once_whole(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    _ids, path = _memory(folder)
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"))
    store = km._vectors
    assert store is not None
    store.dimension = 128
    store.load()
    assert len(store._ids) == len(TEXTS)
    ones = _vecmath.quantize(np, np.ones((1, 128)))
    block = _vecfile.encode_block(["late"], ["0123456789abcdef"], ones)
    with path.open("ab") as handle:
        handle.write(block[:-9])
    store.load()  # cut short at the end: not served, not counted as damage
    assert store._ids[-1] != "late"
    assert store._file is not None and store._file.needs_rewrite is None
    with path.open("ab") as handle:
        handle.write(block[-9:])
    store.load()
    assert store._ids[-1] == "late"
    assert np.array_equal(store._stacked()[-1], np.ones(128, np.float32))


@pytest.mark.parametrize("kind", ["dimension", "name", "magic", "garbage", "empty"])
def test_a_foreign_file_is_rebuilt_never_served(kind: str, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    ids, path = _memory(folder)
    data = path.read_bytes()
    body = data[_vecfile.HEADER_SIZE :]
    foreign = {
        "dimension": _vecfile.encode_header("file", 64) + body,
        "name": _vecfile.encode_header("other", 128) + body,
        "magic": b"\x89NOTVEC\n" + data[8:],
        "garbage": bytes(range(256)) * 40,
        "empty": b"",
    }[kind]
    path.write_bytes(foreign)
    reader, embedder = _reader(folder)
    assert reader.recall("apples orchard", limit=1)[0].id == ids[0]
    assert _embedded(embedder) == sorted(TEXTS)  # nothing of the file was served
    keys, skipped = _rows(path.read_bytes())
    assert skipped == 0 and sorted(keys) == sorted(
        (i, _vectors.text_hash(t)) for i, t in zip(ids, TEXTS, strict=True)
    )


def test_rows_are_keyed_by_id_and_text_hash(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    ids, path = _memory(folder, TEXTS[:2])
    # A row of the right id made from another text (its hash says so): never served.
    wrong = _vecfile.encode_block(
        [ids[0]],
        [_vectors.text_hash("something else")],
        _vecmath.quantize(np, np.ones((1, 128))),
    )
    data = path.read_bytes()
    path.write_bytes(data[: _vecfile.HEADER_SIZE] + wrong + data[_vecfile.HEADER_SIZE :])
    # The row verifies (it is read, and its hash then refuses it).
    assert _rows(path.read_bytes()) == (
        [(ids[0], _vectors.text_hash("something else"))]
        + [(i, _vectors.text_hash(t)) for i, t in zip(ids, TEXTS[:2], strict=True)],
        0,
    )
    reader, embedder = _reader(folder)
    store = reader._vectors
    assert store is not None
    reader.recall("apples orchard")
    assert _embedded(embedder) == []
    _rows_live, vecs = store.live_rows(reader._index, reader._clock())
    served = {store._ids[v]: store.hash_of(v) for v in vecs.tolist()}
    assert served == {i: _vectors.text_hash(t) for i, t in zip(ids, TEXTS[:2], strict=True)}


def legacy_jsonl(ids: Sequence[str], texts: Sequence[str], embedder: WordEmbedder) -> bytes:
    """The vector file the version before wrote (checked byte for byte against it when
    this test was written): one line per vector, ``{"id", "h": text_hash, "v": base64 of
    the L2-normed float32 vector}``."""
    out = b""
    for entry_id, text, vector in zip(ids, texts, embedder(list(texts)), strict=True):
        v = np.asarray(vector, dtype=np.float32)
        v = v / np.linalg.norm(v)
        b64 = base64.b64encode(v.astype("<f4").tobytes()).decode()
        out += orjson.dumps({"id": entry_id, "h": _vectors.text_hash(text), "v": b64}) + b"\n"
    return out


@pytest.mark.parametrize("first", ["recall", "remember"])
def test_the_jsonl_file_is_converted_once(first: str, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder)
    ids = [plain.remember(t) for t in TEXTS]
    legacy = folder / "vectors" / "file-128.jsonl"
    legacy.parent.mkdir()
    # A line without a hash and a damaged line are left out (embedded again).
    lines = legacy_jsonl(ids, TEXTS, WordEmbedder("x")).splitlines(keepends=True)
    record = orjson.loads(lines[1])
    del record["h"]
    lines[1] = orjson.dumps(record) + b"\n"
    lines[2] = lines[2][:30] + b"\n"
    legacy.write_bytes(b"".join(lines))
    before = legacy.read_bytes()
    reader, embedder = _reader(folder)
    if first == "remember":
        reader.remember("a sixth note about plums")
    assert reader.recall("violin strings", limit=1)[0].id == ids[1]
    assert _embedded(embedder) == sorted(
        [TEXTS[1], TEXTS[2], *(["a sixth note about plums"] if first == "remember" else [])]
    )
    # Kept byte for byte, for the versions that wrote it (a recall converted it: a
    # read never deletes), and never read again: the binary file exists.
    assert legacy.read_bytes() == before
    legacy.write_bytes(b"not read again\n")
    again, again_embedder = _reader(folder)
    assert again.recall("violin strings", limit=1)[0].id == ids[1]
    assert _embedded(again_embedder) == []
    assert legacy.read_bytes() == b"not read again\n"
    legacy.write_bytes(before)
    keys, skipped = _rows((folder / "vectors" / "file-128.i8v").read_bytes())
    assert skipped == 0
    assert {i for i, _ in keys} >= set(ids)
    # The converted vectors rank as freshly embedded ones.
    fresh = KnowledgeMemory(tmp_path / "ref", embedder=WordEmbedder("file"))
    for text in TEXTS:
        fresh.remember(text)
    if first == "remember":
        fresh.remember("a sixth note about plums")
    for query in ("apples orchard", "tea sunrise", "river spring"):
        got = [e.content for e in reader.recall(query, limit=3)]
        assert got == [e.content for e in fresh.recall(query, limit=3)], query


class Flaky(WordEmbedder):
    """Fails (or times out) on call ``fail_at`` and after, when ``failing``."""

    def __init__(self, fail_at: int, error: Exception) -> None:
        super().__init__("file")
        self.fail_at, self.error, self.failing, self.calls = fail_at, error, True, 0

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.failing and self.calls >= self.fail_at:
            raise self.error
        return super().__call__(texts)


@pytest.mark.parametrize(
    "error", [RuntimeError("service down"), TimeoutError("timed out")], ids=["fails", "timeout"]
)
def test_a_failure_mid_way_keeps_the_batches_embedded(error: Exception, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder)
    texts = [f"note {i} about {w}" for i, w in enumerate(["tea", "figs", "jam"] * 8)][:23]
    ids = [plain.remember(t) for t in texts]
    flaky = Flaky(fail_at=4, error=error)  # the query, two batches, then a failure
    km = KnowledgeMemory(folder, embedder=flaky, embed_batch_size=5)
    with pytest.raises(EmbedderError, match="after embedding 10 of 23 missing vectors"):
        km.recall("figs jam")
    assert [len(b) for b in flaky.batches] == [1, 5, 5]
    keys, _ = _rows((folder / "vectors" / "file-128.i8v").read_bytes())
    assert len(keys) == 10
    flaky.failing = False
    assert km.recall("note 7 figs", limit=1)[0].id == ids[7]
    assert [len(b) for b in flaky.batches] == [1, 5, 5, 1, 5, 5, 3]
    # Another process serves all 23 from the file.
    reader, embedder = _reader(folder)
    reader.recall("figs jam")
    assert _embedded(embedder) == []


def test_remember_embeds_its_own_text_only(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder)
    for i in range(150):
        plain.remember(f"old note {i} about pears")
    embedder = WordEmbedder("file")
    km = KnowledgeMemory(folder, embedder=embedder, embed_batch_size=64)
    km.remember("a new note about plums")
    assert embedder.batches == [["a new note about plums"]]
    km.recall("pears plums")
    assert [len(b) for b in embedder.batches[1:]] == [1, 64, 64, 22]


@pytest.mark.parametrize("size", [0, -1, True, 1.5, "8"])
def test_embed_batch_size_is_checked(size: object, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="embed_batch_size"):
        KnowledgeMemory(tmp_path / "m", embedder=WordEmbedder(), embed_batch_size=size)  # type: ignore[arg-type]
    # a store made directly refuses it with the same error
    root = KnowledgeMemory("memory://direct-batch").root
    with pytest.raises(InvalidInputError, match="embed_batch_size must be a positive int"):
        _vectors.VectorStore(root, WordEmbedder(), batch_size=size)  # type: ignore[arg-type]


def _append_worker(folder: str, tag: str, count: int, start: float) -> list[str]:
    import time

    from tests.test_memory.test_embedder import WordEmbedder as Words

    while time.time() < start:
        time.sleep(0.001)
    km = KnowledgeMemory(folder, embedder=Words("file"), index_cache=False)
    return [km.remember(f"{tag} note {i} about plums") for i in range(count)]


def test_two_processes_appending_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    import time

    folder = tmp_path / "m"
    KnowledgeMemory(folder).remember("a first note")
    ctx = multiprocessing.get_context("spawn")
    start = time.time() + 2.0
    with ctx.Pool(2) as pool:
        results = [pool.apply_async(_append_worker, (str(folder), tag, 40, start)) for tag in "ab"]
        ids = [i for r in results for i in r.get(timeout=120)]
    assert len(ids) == 80
    keys, skipped = _rows((folder / "vectors" / "file-128.i8v").read_bytes())
    assert skipped == 0
    assert {i for i, _ in keys} == set(ids)
    reader, embedder = _reader(folder)
    reader.recall("plums note")
    assert _embedded(embedder) == ["a first note"]
    store = reader._vectors
    assert store is not None
    assert len(store._ids) == len(set(store._ids)) == 81


def test_threads_appending_to_one_root_lose_nothing() -> None:
    root_url = "memory://vectors-threads"
    KnowledgeMemory(root_url).remember("a first note")

    def work(tag: str) -> None:
        km = KnowledgeMemory(root_url, embedder=WordEmbedder("file"))
        for i in range(25):
            km.remember(f"{tag} thread note {i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reader = KnowledgeMemory(root_url, embedder=(embedder := WordEmbedder("file")))
    reader.recall("thread note")
    assert _embedded(embedder) == ["a first note"]
    data = reader.root.read_bytes("vectors/file-128.i8v")
    keys, skipped = _rows(data)
    assert skipped == 0 and len(keys) == len(set(keys)) == 76


HOSTILE = [
    "nul \x00 in the middle \x00",
    'quotes " and backslashes \\ and newlines \n and \u2028',
    "emoji \U0001f350 and accents \u00e9\u00e0",
]


def test_hostile_texts_round_trip(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    huge = "word " * 60_000 + "needle"
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"), max_content_bytes=1 << 20)
    ids = [km.remember(t) for t in [*HOSTILE, huge]]
    # A lone surrogate is refused before anything is embedded or written.
    with pytest.raises(InvalidInputError, match="surrogate"):
        km.remember("a lone surrogate \ud800 refused")
    assert _vectors.text_hash("\ud800") != _vectors.text_hash("\udfff")
    texts = [*HOSTILE, huge]
    reader, embedder = _reader(folder)
    assert reader.recall("needle word", limit=1)[0].id == ids[3]
    assert reader.recall("emoji accents", limit=1)[0].id == ids[2]
    assert _embedded(embedder) == []
    keys, skipped = _rows((folder / "vectors" / "file-128.i8v").read_bytes())
    assert skipped == 0
    assert keys == [(i, _vectors.text_hash(t)) for i, t in zip(ids, texts, strict=True)]


def test_hostile_ids_round_trip_in_a_block() -> None:
    ids = ["\x00", "\ud800", '"}]', "é" * 1000, ""]
    hashes = [_vectors.text_hash(i) for i in ids]
    vectors = _vecmath.quantize(np, np.arange(5 * 4, dtype=np.float64).reshape(5, 4) - 9)
    data = _vecfile.encode_header("h", 4) + _vecfile.encode_block(ids, hashes, vectors)
    scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), 4)
    (block,) = scan.blocks
    assert (block.ids, block.hashes) == (ids, hashes)
    got = np.frombuffer(data, dtype=np.int8, count=vectors.size, offset=block.vectors_at)
    assert np.array_equal(got.reshape(vectors.shape), vectors)
    # Every single flipped bit of the block is caught.
    for at in range(_vecfile.HEADER_SIZE, len(data)):
        for bit in (0x01, 0x80):
            bad = bytearray(data)
            bad[at] ^= bit
            assert not _vecfile.scan_blocks(bytes(bad), _vecfile.HEADER_SIZE, len(bad), 4).blocks


def _decoded(rows: Any) -> Any:
    """Stored rows decoded in float64 (codes times 2**e), independently of _vecmath."""
    array = np.asarray(rows)
    scale = np.exp2(array[:, -TAIL].astype(np.float64))
    return array[:, :-TAIL].astype(np.float64) * scale[:, None]


def _every_code_and_exponent() -> Any:
    """One row per exponent of the format, each of every int8 code (-128, never
    written, included)."""
    exponents = np.arange(_vecmath.EXP_MIN, _vecmath.EXP_MAX + 1)
    codes = np.broadcast_to(np.arange(-128, 128), (len(exponents), 256))
    return _vecmath.pack_rows(np, codes, exponents)


def test_widening_is_exact_for_every_code_and_exponent() -> None:
    rows = _every_code_and_exponent()
    exponents = rows[:, -TAIL].astype(np.float64)
    wide = _vecmath.widen(np, rows)
    assert wide.dtype == np.float32 and wide.shape == (len(rows), 256)
    assert np.array_equal(wide.astype(np.float64), _decoded(rows))
    assert np.array_equal(_vecmath.row_scales(np, rows).astype(np.float64), np.exp2(exponents))
    out = np.full((len(rows) + 3, 256), np.nan, dtype=np.float32)
    codes = _vecmath.widen_rows(np, rows, out, scaled=False)
    assert codes.shape == (len(rows), 256)
    assert np.array_equal(codes, np.broadcast_to(np.arange(-128, 128), codes.shape))
    assert np.array_equal(_vecmath.widen_rows(np, rows, out).astype(np.float64), _decoded(rows))
    # A pass over many rows (several steps) gives the same floats, in place or chunk by
    # chunk, and so do the codes and scales it yields.
    many = np.tile(rows, (70, 1))
    truth = _decoded(many)
    given = np.full((len(many), 256), np.nan, dtype=np.float32)
    assert _vecmath.widen(np, many, given) is given
    assert np.array_equal(given.astype(np.float64), truth)
    seen = 0
    for at, part in _vecmath.chunks(np, many):
        assert at == seen
        assert np.array_equal(part.astype(np.float64), truth[at : at + len(part)])
        seen += len(part)
    assert seen == len(many)
    picked = np.arange(3, len(many), 7)
    for at, stored, part_codes, scales in _vecmath.code_chunks(np, many, picked):
        assert np.array_equal(stored, many[picked[at : at + len(part_codes)]])
        rows_at = picked[at : at + len(part_codes)]
        assert np.array_equal(part_codes, many[rows_at, :-TAIL])
        assert np.array_equal(scales.astype(np.float64), np.exp2(many[rows_at, -TAIL]))


def test_products_on_the_codes_are_the_floats_of_the_decoded_rows() -> None:
    """widen_dot takes the products on the codes and scales each by its row's 2**e:
    every score is the same float as dot_rows gives on the decoded rows, rows of the
    smallest and the largest exponent and of codes +-127 included, tiny and large
    weights, one column or several alike; and each is the float64 product to float32
    precision."""
    rng = np.random.default_rng(3)
    matrix = _vecmath.quantize(np, rng.standard_normal((1500, 96)) / 20)
    matrix[::7, -TAIL] = _vecmath.EXP_MIN
    matrix[3::11, -TAIL] = _vecmath.EXP_MAX
    matrix[5, :-TAIL] = 127
    matrix[6, :-TAIL] = -127
    matrix[8, :-TAIL] = 1
    wide = _vecmath.widen(np, matrix)
    decoded = _decoded(matrix)
    for scale in (1.0, 1e-20, 1e20):
        weights = (rng.standard_normal((96, 2)) * scale).astype(np.float32)
        out = np.full((1500, 2), np.nan, dtype=np.float32)
        _vecmath.widen_dot(np, matrix, weights, out)
        exact = np.empty((1500, 2), dtype=np.float32)
        _vecmath.dot_rows(np, wide, np.ascontiguousarray(weights.T), exact)
        assert np.array_equal(out, exact)
        one = np.full((1500, 1), np.nan, dtype=np.float32)
        _vecmath.widen_dot(np, matrix, weights[:, 1:], one)
        assert np.array_equal(one[:, 0], exact[:, 1])
        truth = decoded @ weights.astype(np.float64)
        bound = 1e-5 * (np.abs(decoded) @ np.abs(weights.astype(np.float64)))
        assert (np.abs(out - truth) <= bound).all()


def test_the_column_sum_is_exact_in_any_order() -> None:
    """The sum of the decoded rows is exact (every value is a whole number of
    2**EXP_MIN): the integer sum of the codes in those units, whatever the order of the
    rows; a block of SUM_ROWS rows or more carries it."""
    rng = np.random.default_rng(5)
    n, dim = 1300, 32
    codes = rng.integers(-127, 128, (n, dim))
    exponents = rng.integers(_vecmath.EXP_MIN, _vecmath.EXP_MAX + 1, n)
    codes[:4], exponents[:4] = 127, _vecmath.EXP_MAX  # the largest values
    codes[4:8], exponents[4:8] = -127, _vecmath.EXP_MAX
    codes[8:12], exponents[8:12] = 1, _vecmath.EXP_MIN  # the smallest
    rows = _vecmath.pack_rows(np, codes, exponents)
    shifts = rows[:, -TAIL].astype(np.int64) - _vecmath.EXP_MIN
    units = (rows[:, :-TAIL].astype(np.int64) << shifts[:, None]).sum(axis=0)
    assert np.abs(units).max() < 2**53  # float64 holds it
    exact = units.astype(np.float64) * 2.0**_vecmath.EXP_MIN
    total = _vecmath.column_sum(np, rows)
    assert total.dtype == np.float64
    assert np.array_equal(total, exact)
    assert np.array_equal(_vecmath.column_sum(np, rows[::-1]), exact)
    assert np.array_equal(_vecmath.column_sum(np, rows[rng.permutation(n)]), exact)
    ids = [f"r{i}" for i in range(n)]
    data = _vecfile.encode_header("h", dim) + _vecfile.encode_block(ids, bytes(8 * n), rows)
    (block,) = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), dim).blocks
    assert block.sums == exact.tolist()


def test_a_block_of_stored_rows_round_trips_byte_for_byte(tmp_path: Path) -> None:
    """A block's vectors are the stored rows' bytes as they are (from an array or from
    its bytes alike), and a reader of the file gets the same rows back."""
    from fsmemory.fs.local import LocalRoot

    rng = np.random.default_rng(11)
    n, dim = _vecfile.SUM_ROWS + 9, 24
    rows = _vecmath.quantize(
        np, rng.standard_normal((n, dim)) * np.geomspace(1e-6, 1e3, n)[:, None]
    )
    assert len(set(rows[:, -TAIL].tolist())) > 20  # many exponents
    ids = [f"entry-{i}" for i in range(n)]
    hashes = [f"{i:016x}" for i in range(n)]
    block = _vecfile.encode_block(ids, hashes, rows)
    assert _vecfile.encode_block(ids, hashes, rows.tobytes()) == block
    assert rows.tobytes() in block
    data = _vecfile.encode_header("h", dim) + block
    (found,) = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), dim).blocks
    assert (found.ids, found.hashes, found.end) == (ids, hashes, len(data))
    assert found.end - found.vectors_at == n * _vecfile.row_bytes(dim)
    got = np.frombuffer(data, dtype=np.int8, count=rows.size, offset=found.vectors_at)
    assert np.array_equal(got.reshape(n, _vecfile.row_bytes(dim)), rows)
    (tmp_path / "vectors").mkdir()
    (tmp_path / "vectors" / f"h-{dim}.i8v").write_bytes(data)
    file = _vecfile.VectorFile(LocalRoot(str(tmp_path)), f"vectors/h-{dim}.i8v", "x", "h", dim)
    (read,) = file.read_new()
    assert file.needs_rewrite is None
    assert (read.ids, read.hashes) == (ids, hashes)
    assert read.vectors.dtype == np.int8 and np.array_equal(read.vectors, rows)
    assert np.array_equal(read.sums, _vecmath.column_sum(np, rows))


def test_the_mean_from_a_block_sum_is_the_mean_of_the_vectors(tmp_path: Path) -> None:
    """A block of SUM_ROWS rows or more carries the sum of its vectors: a fresh reader
    takes the live entries' mean from it (less the rows that are not live), and gets
    exactly the sum of the live vectors."""
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder)
    words = ["tea", "figs", "jam", "river", "violin", "paint"]
    n = _vecfile.SUM_ROWS + 44
    ids = [plain.remember(f"note {i} {words[i % 6]} {words[i * 7 % 6]}") for i in range(n)]
    KnowledgeMemory(folder, embedder=WordEmbedder("file"), embed_batch_size=1000).recall("tea jam")
    data = (folder / "vectors" / "file-128.i8v").read_bytes()
    (block,) = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), 128).blocks
    assert block.sums is not None and len(block.sums) == 128
    for entry_id in ids[::5]:
        plain.forget(entry_id)
    reader, embedder = _reader(folder)
    reader.recall("figs river")
    assert _embedded(embedder) == []
    store = reader._vectors
    assert store is not None and store._piece_sums
    _live, vecs = store.live_rows(reader._index, reader._clock())
    assert len(vecs) == n - len(ids[::5])
    exact = store._stacked()[vecs].astype(np.float64).sum(axis=0)
    assert np.array_equal(store._fixed_sum, np.rint(exact * 2.0**40).astype(np.int64))


def _crafted_block(items: list[object], vectors: object) -> bytes:
    """A block with these keys items, its checksums right (what a careless writer of
    the format could produce)."""
    keys = json.dumps(items).encode("ascii")
    keys += b" " * (-len(keys) % 8)
    body: bytes = keys + np.asarray(vectors, dtype=np.int8).tobytes()
    rows = len(items[0]) if isinstance(items[0], list) else 0
    head = struct.pack(
        "<4sIIII", b"FSVB", rows, len(keys), 0, xxhash.xxh3_64_intdigest(body) & 0xFFFFFFFF
    )
    return head + struct.pack("<I", zlib.crc32(head)) + body


@pytest.mark.parametrize(
    ("sums", "valid"),
    [([1.0, 2.0, 3.0, 4.0], True), ([1.0, 2.0, 3.0], False), (["1", 2, 3, 4], False), (7, False)],
    ids=["right", "short", "not-numbers", "not-a-list"],
)
def test_a_block_sum_of_the_wrong_shape_fails_to_verify(sums: object, valid: bool) -> None:
    block = _crafted_block([["x"], "0" * 16, sums], np.ones((1, _vecfile.row_bytes(4))))
    data = _vecfile.encode_header("h", 4) + block
    found = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), 4).blocks
    assert bool(found) is valid
    assert bool(_vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), 4).skipped) is not valid


@pytest.mark.parametrize(
    ("ids", "valid"),
    [(["x", "y"], True), (["x", 1], False), ([None, "y"], False), (["x", ["y"]], False)],
    ids=["strings", "a-number", "null", "a-list"],
)
def test_a_block_whose_ids_are_not_all_strings_fails_to_verify(
    ids: list[object], valid: bool
) -> None:
    block = _crafted_block([ids, "0" * 32], np.ones((2, _vecfile.row_bytes(4))))
    data = _vecfile.encode_header("h", 4) + block
    found = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), 4).blocks
    assert bool(found) is valid


def test_appends_to_a_file_another_writer_created_send_one_request_each(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    _ids, path = _memory(folder, TEXTS[:1])  # another writer created the file
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"))
    store = km._vectors
    assert store is not None
    km.remember(TEXTS[1])  # this instance finds the file there (a create that conflicts)
    calls: list[str] = []
    for name in ("write", "read_bytes", "append"):
        original = getattr(km.root, name)

        def spy(*args: object, _name: str = name, _f: object = original, **kw: object) -> object:
            calls.append(_name)
            return _f(*args, **kw)  # type: ignore[operator]

        setattr(km.root, name, spy)
    km.remember(TEXTS[2])
    assert calls.count("append") == 2  # the log line and the vector block
    assert "write" not in calls and "read_bytes" not in calls
    keys, skipped = _rows(path.read_bytes())
    assert skipped == 0 and len(keys) == 3


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_vector_file_reached_through_a_symlink_out_of_the_root_is_not_read(
    link: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    _memory(outside)  # a valid vector file of the same embedder, elsewhere
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder)
    ids = [plain.remember(t) for t in TEXTS]
    if link == "file":
        (folder / "vectors").mkdir()
        (folder / "vectors" / "file-128.i8v").symlink_to(outside / "vectors" / "file-128.i8v")
    else:
        (folder / "vectors").symlink_to(outside / "vectors")
    reader, embedder = _reader(folder)
    assert reader.recall("violin strings", limit=1)[0].id == ids[1]
    assert _embedded(embedder) == sorted(TEXTS)  # nothing read from outside


def test_the_widened_copy_and_the_widening_pass_score_alike(tmp_path: Path) -> None:
    """A memory keeps a float32 copy of its vectors for warm recalls (made by the
    second recall, extended as entries come); one whose copy would pass
    ``vector_cache_bytes`` widens a few hundred rows per product: the scores are the
    same floats, before and after new entries."""
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"))
    for i in range(300):
        km.remember(f"note {i} {TEXTS[i % 5]}")
    queries = ["violin strings", "tea sunrise", "river floods spring", "apples"]
    store = km._vectors
    assert store is not None
    km.recall("first", limit=1)
    assert store._wide is None  # a process that recalls once makes no copy
    widened = {q: [e.id for e in km.recall(q, limit=10)] for q in queries}
    assert store._wide is not None and store._wide_rows == 300
    qv = store.embed(["violin strings"])[0]
    _live, vecs = store.live_rows(km._index, km._clock())
    with_copy = store.dense_scores(qv, vecs)

    def without_copy() -> tuple[dict[str, list[str]], object]:
        reader = KnowledgeMemory(folder, embedder=WordEmbedder("file"), vector_cache_bytes=0)
        ranked = {q: [e.id for e in reader.recall(q, limit=10)] for q in queries}
        other = reader._vectors
        assert other is not None and other._wide is None
        _live2, vecs2 = other.live_rows(reader._index, reader._clock())
        return ranked, other.dense_scores(qv, vecs2)

    ranked, scores = without_copy()
    assert ranked == widened
    assert np.allclose(scores, with_copy, rtol=0, atol=1e-6)
    for i in range(40):  # the copy grows with the memory
        km.remember(f"later {i} {TEXTS[(i + 2) % 5]} strings")
    grown = {q: [e.id for e in km.recall(q, limit=10)] for q in queries}
    assert store._wide is not None and store._wide_rows == 340
    _live, vecs = store.live_rows(km._index, km._clock())
    ranked, scores = without_copy()
    assert ranked == grown
    assert np.allclose(scores, store.dense_scores(qv, vecs), rtol=0, atol=1e-6)


def test_a_memory_past_the_vector_cache_bytes_keeps_no_copy(tmp_path: Path) -> None:
    """The copy is kept only while it fits (300 vectors of 128 floats: 153,600 bytes);
    past that, the recall widens the rows again and ranks as an instance without it."""
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"), vector_cache_bytes=153_600)
    for i in range(300):
        km.remember(f"note {i} {TEXTS[i % 5]}")
    store = km._vectors
    assert store is not None and store.dimension == 128
    first = [e.id for e in km.recall("violin strings", limit=10)]
    assert [e.id for e in km.recall("violin strings", limit=10)] == first
    assert store._wide is not None and store._wide_rows == 300
    km.remember("one more note about violin strings")
    after = [e.id for e in km.recall("violin strings", limit=10)]
    assert store._wide is None
    reader = KnowledgeMemory(folder, embedder=WordEmbedder("file"), vector_cache_bytes=0)
    assert [e.id for e in reader.recall("violin strings", limit=10)] == after


@pytest.mark.parametrize("size", [-1, True, 1.5, "1", 2**70 * -1])
def test_vector_cache_bytes_is_checked(size: object, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="vector_cache_bytes"):
        KnowledgeMemory(tmp_path / "m", embedder=WordEmbedder(), vector_cache_bytes=size)  # type: ignore[arg-type]
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(None, 256 << 20), (512 << 20, 128 << 20), (8 << 30, 256 << 20), (100, 25)],
)
def test_the_vector_cache_bytes_default_follows_the_memory_the_process_may_use(
    limit: int | None, expected: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``vector_cache_bytes``, the copy may take a quarter of the memory the
    process may use, at most 256 MiB: a 512 MB function keeps no copy of 100k x 384
    vectors (154 MB) it has no room for. The limit is read when the copy is first
    wanted (the second recall), once per memory: opening one reads nothing."""
    asked: list[int | None] = []

    def memory_limit() -> int | None:
        asked.append(limit)
        return limit

    monkeypatch.setattr(_vectors, "memory_limit", memory_limit)
    assert _vectors.auto_cache_bytes() == expected
    asked.clear()
    km = KnowledgeMemory(tmp_path / "m", embedder=WordEmbedder())
    assert km._vectors is not None and km._vectors._wide_limit is None and not asked
    km.remember("violin strings")
    km.recall("violin", limit=1)
    assert km._vectors._wide_limit is None and not asked  # one recall: no copy wanted
    for _ in range(3):
        km.recall("violin", limit=1)
    assert km._vectors._wide_limit == expected and len(asked) == 1
    assert (km._vectors._wide is not None) == (expected >= 128 * 4)
    given = KnowledgeMemory(tmp_path / "m", embedder=WordEmbedder(), vector_cache_bytes=7)
    assert given._vectors is not None and given._vectors._wide_limit == 7
    for _ in range(2):
        given.recall("violin", limit=1)
    assert given._vectors._wide_limit == 7 and given._vectors._wide is None and len(asked) == 1


@pytest.mark.parametrize("size", [-1, True, 1.5, "1"])
def test_a_store_made_directly_checks_its_cache_bytes(size: object) -> None:
    """VectorStore is private (KnowledgeMemory checks ``vector_cache_bytes`` before it
    opens anything); made directly, it refuses a bad size with the same error."""
    root = KnowledgeMemory("memory://direct").root
    with pytest.raises(InvalidInputError, match="vector_cache_bytes must be a non-negative int"):
        _vectors.VectorStore(root, WordEmbedder(), cache_bytes=size)  # type: ignore[arg-type]


def test_memory_limit_reads_a_cgroup_limit_below_the_physical_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cgroup v2 limit, "max" (none), or a v1 limit when there is no v2 file; a file
    that says something else is no limit."""
    v2, v1 = tmp_path / "memory.max", tmp_path / "limit_in_bytes"
    monkeypatch.setattr(_vectors, "_CGROUP_LIMITS", (str(v2), str(v1)))
    physical = _vectors.memory_limit()  # neither file exists
    assert physical is not None and physical > 1 << 20
    v2.write_text("1073741824\n")
    assert _vectors.memory_limit() == min(physical, 1 << 30)
    v2.write_text("max\n")
    v1.write_text("4096\n")
    assert _vectors.memory_limit() == physical  # the v2 file says there is no limit
    v2.unlink()
    assert _vectors.memory_limit() == 4096
    v1.write_text("-1\x00\n")
    assert _vectors.memory_limit() == physical


def _resident_kb(path: Path) -> int | None:
    """Resident KB of this process's mappings of ``path`` (None without smaps)."""
    smaps = Path("/proc/self/smaps")
    if not smaps.exists():
        return None
    total, inside = 0, False
    for line in smaps.read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
            inside = line.endswith(str(path))
        elif inside and fields[:1] == ["Rss:"]:
            total += int(fields[1])
    return total


def test_a_large_mapped_vector_file_is_checked_and_read_without_staying_resident(
    tmp_path: Path,
) -> None:
    """A block larger than one checksum step (its CRC taken a few MB at a time) verifies,
    a flipped byte deep in it does not, and neither the check nor a widening pass over
    its mapped rows leaves the file's pages resident; the widened rows are exact."""
    rng = np.random.default_rng(7)
    rows, dim = 40000, 384  # 15 MB of stored rows: several steps of CHECK_BYTES
    assert rows * _vecfile.row_bytes(dim) > max(3 * _vecmath.CHECK_BYTES, _vecmath.RELEASE_BYTES)
    vectors = _vecmath.pack_rows(
        np, rng.integers(-127, 128, (rows, dim)), rng.integers(-12, -5, rows)
    )
    decoded = _decoded(vectors)
    ids = [f"e{i}" for i in range(rows)]
    data = _vecfile.encode_header("big", dim) + _vecfile.encode_block(ids, bytes(8 * rows), vectors)
    (tmp_path / "vectors").mkdir()
    path = tmp_path / "vectors" / "big-384.i8v"
    path.write_bytes(data)
    from fsmemory.fs.local import LocalRoot

    file = _vecfile.VectorFile(LocalRoot(str(tmp_path)), "vectors/big-384.i8v", "x", "big", dim)
    (found,) = file.read_new()
    assert found.ids == ids and file.needs_rewrite is None
    before = _resident_kb(path)
    if before is None:
        pytest.skip("no /proc/self/smaps")
    # The checksum pass read all 15 MB of it; what stays is a page or a few (the page
    # cache may map 2 MB at a time).
    assert before < 5 << 10
    wide = np.empty((rows, dim), dtype=np.float32)
    for at, part in _vecmath.chunks(np, found.vectors):
        wide[at : at + len(part)] = part
    assert np.array_equal(wide, decoded)
    assert (_resident_kb(path) or 0) < 5 << 10
    # widen into a given array gives its pages back alike.
    wide[:] = np.nan
    assert _vecmath.widen(np, found.vectors, wide) is wide
    assert np.array_equal(wide, decoded)
    assert (_resident_kb(path) or 0) < 5 << 10
    bad = bytearray(data)
    bad[len(data) - 1000] ^= 0x10  # in the last checksum step
    assert not _vecfile.scan_blocks(bytes(bad), _vecfile.HEADER_SIZE, len(bad), dim).blocks
    path.write_bytes(bytes(bad))
    reader = _vecfile.VectorFile(LocalRoot(str(tmp_path)), "vectors/big-384.i8v", "x", "big", dim)
    assert reader.read_new() == [] and reader.needs_rewrite is not None
