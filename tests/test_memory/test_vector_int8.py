"""Stored vector rows of format version 2: int8 codes and a power-of-two exponent per
row. quantize() rounds each value to within half a step, with the smallest exponent
that keeps the row's largest magnitude within 127 codes (clipped to the format's range
for hostile magnitudes, the codes always within +-127); unit vectors' cosines barely
move; float16 rows convert alike; and the float16 file of format version 1 is converted
once, end to end (nothing embedded again, the old file left as it was), a damaged one
costing embeddings, never a wrong answer."""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fsmemory import EmbedderError, KnowledgeMemory
from fsmemory.memory import _vecfile, _vecmath, _vectors

from .test_embedder import WordEmbedder, fresh_vocabulary  # noqa: F401 (autouse)
from .test_vectors_file import TEXTS as FILE_TEXTS

np = pytest.importorskip("numpy")

# The bytes of a stored row after its codes (its exponent first).
TAIL = _vecmath.TAIL_BYTES

EXP_MIN, EXP_MAX = _vecmath.EXP_MIN, _vecmath.EXP_MAX


def _decoded(rows: Any) -> Any:
    """Stored rows decoded in float64 (codes times 2**e)."""
    scale = np.exp2(rows[:, -TAIL].astype(np.float64))
    return rows[:, :-TAIL].astype(np.float64) * scale[:, None]


def _check_stored(values: Any, rows: Any) -> None:
    """What every stored row of ``values`` must be: int8, codes within +-127, the
    exponent in range and the smallest that keeps the row's largest magnitude within
    127 codes, and each value within half a step (2**(e-1)) of its code times 2**e."""
    values = np.asarray(values, dtype=np.float64)
    assert rows.dtype == np.int8 and rows.shape == (values.shape[0], values.shape[1] + TAIL)
    codes, exponents = rows[:, :-TAIL].astype(np.int64), rows[:, -TAIL].astype(np.int64)
    squares = np.ascontiguousarray(rows[:, 1 - TAIL :]).view("<u4")[:, 0]
    assert squares.tolist() == (codes * codes).sum(axis=1).tolist()  # the row's norm
    assert (np.abs(codes) <= 127).all()
    assert ((exponents >= EXP_MIN) & (exponents <= EXP_MAX)).all()
    step = np.exp2(exponents.astype(np.float64))
    assert (np.abs(_decoded(rows) - values) <= step[:, None] / 2).all()
    peak = np.abs(values).max(axis=1)
    # Within 127 codes (the float64 peak / 127 may round up by an ulp, no more)...
    assert (peak <= 127 * step * (1 + 2**-50)).all()
    # ... and one step lower would not be (unless the exponent is the smallest, or the
    # row is all zeros: any exponent stores it exactly; quantize gives it 0).
    lower = peak > 127 * step / 2
    assert (lower | (exponents == EXP_MIN) | (peak == 0)).all()


# -- quantize ------------------------------------------------------------------------
def test_values_round_to_within_half_a_step_with_the_smallest_exponent() -> None:
    rng = np.random.default_rng(1)
    n, dim = 600, 48
    values = rng.standard_normal((n, dim))
    values /= np.abs(values).max(axis=1, keepdims=True)
    # Peaks from well below 127 * 2**EXP_MIN up to 127 * 2**EXP_MAX (no code clipped).
    values *= np.geomspace(1e-9, 127 * 2.0**EXP_MAX, n)[:, None]
    rows = _vecmath.quantize(np, values)
    _check_stored(values, rows)
    assert set(rows[:, -TAIL].tolist()) == set(range(EXP_MIN, EXP_MAX + 1))  # every exponent
    # float32 input (what embed() gives) is taken as it is.
    single = values.astype(np.float32)
    assert np.array_equal(
        _vecmath.quantize(np, single), _vecmath.quantize(np, single.astype(np.float64))
    )
    _check_stored(single, _vecmath.quantize(np, single))
    # The sign only changes the codes' signs.
    negated = _vecmath.quantize(np, -values)
    assert np.array_equal(negated[:, :-TAIL], -rows[:, :-TAIL])
    assert np.array_equal(negated[:, -TAIL], rows[:, -TAIL])


@pytest.mark.parametrize(
    ("peak", "exponent", "code"),
    [
        (127.0, 0, 127),  # 127 * 2**k: the largest code exactly
        (127 * 2.0**-6, -6, 127),
        (127 * 2.0**-6 * (1 - 2**-40), -6, 127),
        (127 * 2.0**-6 * (1 + 2**-40), -5, 64),  # just past it: one step up
        (1.0, -6, 64),  # a power of two: 64 codes of 2**-6 (128 would not fit)
        (0.5, -7, 64),
        (2.0**-20, EXP_MIN, 16),  # below 127 * 2**EXP_MIN: the smallest exponent
        (127 * 2.0**EXP_MAX, EXP_MAX, 127),
    ],
)
def test_the_exponent_at_the_edges(peak: float, exponent: int, code: int) -> None:
    values = np.array([[peak, -peak / 4, 0.0], [-peak, peak / 8, peak / 2]])
    rows = _vecmath.quantize(np, values)
    _check_stored(values, rows)
    assert rows[:, -TAIL].tolist() == [exponent, exponent]
    assert rows[0, 0] == code and rows[1, 0] == -code
    if (peak / 2.0**exponent).is_integer():
        assert np.array_equal(_decoded(rows)[:, 0], values[:, 0])  # exactly representable


def test_zero_rows_and_no_rows() -> None:
    values = np.zeros((3, 16))
    values[1, 4] = 0.25
    rows = _vecmath.quantize(np, values)
    _check_stored(values, rows)
    assert not rows[0, :-TAIL].any() and not rows[2, :-TAIL].any()
    assert rows[1, : 1 - TAIL].tolist()[-2:] == [0, -8] and rows[1, 4] == 64
    assert not _decoded(rows)[[0, 2]].any()
    assert _vecmath.quantize(np, np.zeros((0, 16))).shape == (0, 16 + TAIL)
    assert _vecmath.widen(np, rows[[0]]).tolist() == [[0.0] * 16]


def test_huge_values_clip_the_exponent_and_stay_finite_codes() -> None:
    values = np.array(
        [
            [1e30, -1e30, 1.0, 0.0],
            [3e38, 1e20, -7.0, 1e-30],  # float32's largest order of magnitude
            [-1e30, -1e29, -1e28, -1e27],
        ]
    )
    rows = _vecmath.quantize(np, values)
    assert rows.dtype == np.int8
    assert rows[:, -TAIL].tolist() == [EXP_MAX] * 3
    codes = rows[:, :-TAIL].astype(np.int64)
    assert (np.abs(codes) <= 127).all()
    assert codes[:, 0].tolist() == [127, 127, -127]
    assert codes[0, 1] == -127 and codes[2].tolist() == [-127] * 4
    # Small values beside them keep their nearest code (whole steps of 2**EXP_MAX).
    assert codes[0, 2] == 0 and codes[1, 2] == 0 and codes[1, 3] == 0
    wide = _vecmath.widen(np, rows)
    assert np.isfinite(wide).all()
    assert wide[0, 0] == 127 * 2.0**EXP_MAX


def test_tiny_values_round_to_whole_steps_of_the_smallest_exponent() -> None:
    values = np.array([[1e-12, -1e-12, 3e-13, 0.0], [2.0**-26, -(2.0**-25), 2.0**-24, 1e-12]])
    rows = _vecmath.quantize(np, values)
    _check_stored(values, rows)
    assert rows[:, -TAIL].tolist() == [EXP_MIN, EXP_MIN]
    assert rows[0, :-TAIL].tolist() == [0, 0, 0, 0]
    # 2**-26 rounds to 0, -(2**-25) is half a step: to the even code 0; 2**-24 is one step.
    assert rows[1, :-TAIL].tolist() == [0, 0, 1, 0]
    assert (np.abs(_decoded(rows) - values) <= 2.0 ** (EXP_MIN - 1)).all()


def test_negative_values() -> None:
    values = np.array([[-1.0, -0.25, -0.5, -0.125], [-3.0, 2.0, -1e-3, 0.0]])
    rows = _vecmath.quantize(np, values)
    _check_stored(values, rows)
    assert rows[0, : 1 - TAIL].tolist() == [-64, -16, -32, -8, -6]
    assert rows[1, -TAIL] == -5 and rows[1, 0] == -96 and rows[1, 1] == 64
    assert (rows[:, :-TAIL] >= -127).all()  # -128 is never written


@pytest.mark.parametrize("dim", [8, 128, 384, 1536])
def test_unit_vectors_cosines_move_by_less_than_2e_2(dim: int) -> None:
    rng = np.random.default_rng(dim)
    vectors = rng.standard_normal((300, dim))
    vectors[:20] = 0.0
    vectors[np.arange(20), np.arange(20) % dim] = 1.0  # one-hot, bag-of-words like
    vectors[20:40] = np.abs(vectors[20:40]) ** 4  # a few large coordinates
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = _vecmath.quantize(np, vectors.astype(np.float32))
    _check_stored(vectors.astype(np.float32), rows)
    decoded = _decoded(rows)
    assert np.abs(np.linalg.norm(decoded, axis=1) - 1).max() < 2e-2
    cosines = vectors @ vectors.T
    unit = decoded / np.linalg.norm(decoded, axis=1, keepdims=True)
    assert np.abs(unit @ unit.T - cosines).max() < 2e-2
    assert np.abs(decoded @ vectors.T - cosines).max() < 2e-2


def test_float16_rows_convert_as_their_values() -> None:
    rng = np.random.default_rng(4)
    halves = (rng.standard_normal((200, 64)) / 10).astype(np.float16)
    halves[0] = np.float16(6e-8)  # the smallest subnormal float16
    halves[1, ::2] = np.float16(65504)  # the largest
    halves[1, 1::2] = np.float16(-65504)
    halves[2] = 0
    halves[3, 5] = np.float16(-1.0)
    halves[3, 6] = np.float16(2**-14)
    rows = _vecmath.from_float16(np, halves)
    assert np.array_equal(rows, _vecmath.quantize(np, halves.astype(np.float64)))
    fits = [0, *range(2, 200)]  # row 1 is past 127 * 2**EXP_MAX: its codes clip
    _check_stored(halves.astype(np.float64)[fits], rows[fits])
    assert rows[0, : 1 - TAIL].tolist() == [1] * 64 + [EXP_MIN]  # 2**-24: one step, exactly
    assert rows[1, -TAIL] == EXP_MAX and (np.abs(rows[1, :-TAIL]) == 127).all()
    assert rows[2, :-TAIL].tolist() == [0] * 64
    assert rows[3, -TAIL] == -6 and rows[3, 5] == -64 and rows[3, 6] == 0
    # An (n, d) float16 view of a file's bytes converts alike.
    view = np.frombuffer(halves.astype("<f2").tobytes(), dtype="<f2").reshape(200, 64)
    assert np.array_equal(_vecmath.from_float16(np, view), rows)


# -- the float16 file of format version 1 ----------------------------------------------
TEXTS = [*FILE_TEXTS, "violin lessons on monday evenings"]
QUERIES = ["violin strings", "apples orchard", "river spring", "monday training"]


def v1_header(name: str, dimension: int, generation: bytes) -> bytes:
    """The file header of format version 1 (dtype 1: float16)."""
    raw = name.encode("ascii")
    fixed = struct.pack("<8sHBBIH16s", b"\x89FSMVEC\n", 1, 1, 0, dimension, len(raw), generation)
    body = (fixed + raw).ljust(_vecfile.HEADER_SIZE - 4, b"\0")
    return body + struct.pack("<I", zlib.crc32(body))


def v1_block(ids: Sequence[str], hashes: Sequence[str], halves: Any) -> bytes:
    """A block of format version 1: its keys, then the float16 rows (little-endian);
    a block of 256 rows or more carries the sum of its vectors."""
    items: list[Any] = [list(ids), "".join(hashes)]
    if len(ids) >= 256:
        items.append(halves.astype(np.float64).sum(axis=0).tolist())
    keys = json.dumps(items, ensure_ascii=True).encode("ascii")
    keys += b" " * (-len(keys) % 8)
    body: bytes = keys + halves.astype("<f2").tobytes()
    head = struct.pack("<4sIIII", b"FSVB", len(ids), len(keys), 0, zlib.crc32(body))
    return head + struct.pack("<I", zlib.crc32(head)) + body


def v1_halves(texts: Sequence[str]) -> Any:
    """The rows version 1 stored: the embedder's vectors L2-normed, as float16."""
    vectors = np.asarray(WordEmbedder("file")(list(texts)), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float16)


def _old_memory(folder: Path, texts: Sequence[str] = TEXTS) -> tuple[list[str], bytes, Any]:
    """A memory of ``texts`` whose only vector file is one version 1 wrote (three
    blocks, the last repeating a row of the first, as two writers may): the ids, the
    file's bytes, and its rows (float16)."""
    plain = KnowledgeMemory(folder)
    ids = [plain.remember(t) for t in texts]
    hashes = [_vectors.text_hash(t) for t in texts]
    halves = v1_halves(texts)
    data = (
        v1_header("file", 128, os.urandom(16))
        + v1_block(ids[:2], hashes[:2], halves[:2])
        + v1_block(ids[2:], hashes[2:], halves[2:])
        + v1_block(ids[1:2], hashes[1:2], halves[1:2])
    )
    (folder / "vectors").mkdir()
    (folder / "vectors" / "file-128.f16v").write_bytes(data)
    return ids, data, halves


def _file_rows(data: bytes) -> tuple[list[str], list[str], Any]:
    """The ids, text hashes and stored rows of a vector file (every byte verifying)."""
    header = _vecfile.read_header(data)
    assert header is not None and header.version == _vecfile.FORMAT_VERSION
    scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), header.dimension)
    assert scan.skipped == 0 and scan.end == len(data)
    width = _vecfile.row_bytes(header.dimension)
    parts = [
        np.frombuffer(data, dtype=np.int8, count=len(b.ids) * width, offset=b.vectors_at)
        for b in scan.blocks
    ]
    rows = np.concatenate(parts).reshape(-1, width)
    return [i for b in scan.blocks for i in b.ids], [h for b in scan.blocks for h in b.hashes], rows


def _fresh(folder: Path, texts: Sequence[str] = TEXTS) -> KnowledgeMemory:
    """A memory of the same texts, each embedded afresh (no vector file before)."""
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"))
    for text in texts:
        km.remember(text)
    return km


def _ranked(km: KnowledgeMemory) -> list[list[str]]:
    return [[e.content for e in km.recall(q, limit=3)] for q in QUERIES]


@pytest.mark.parametrize("first", ["recall", "remember"])
def test_a_version_1_file_is_converted_once_and_left_as_it_was(first: str, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    ids, data, halves = _old_memory(folder)
    old = folder / "vectors" / "file-128.f16v"
    new = folder / "vectors" / "file-128.i8v"
    embedder = WordEmbedder("file")
    km = KnowledgeMemory(folder, embedder=embedder)
    if first == "remember":
        ids.append(km.remember("a seventh note about plums"))
    assert km.recall("violin strings", limit=1)[0].id == ids[1]
    # Only the query (and the new note) embedded: every stored entry came from the file.
    expected = [["a seventh note about plums"]] if first == "remember" else []
    assert embedder.batches == [*expected, ["violin strings"]]
    assert old.read_bytes() == data  # left byte for byte, for earlier versions
    got_ids, got_hashes, rows = _file_rows(new.read_bytes())
    assert got_ids == ids  # the repeated row once
    texts = [*TEXTS, "a seventh note about plums"][: len(ids)]
    assert got_hashes == [_vectors.text_hash(t) for t in texts]
    assert np.array_equal(rows[: len(TEXTS)], _vecmath.from_float16(np, halves))
    # A second reader reads the new file: nothing embedded, nothing converted again.
    again = WordEmbedder("file")
    reader = KnowledgeMemory(folder, embedder=again, index_cache=False)
    assert _ranked(reader) == _ranked(km)
    assert again.batches == [[q] for q in QUERIES]
    assert old.read_bytes() == data
    assert _file_rows(new.read_bytes())[0] == ids
    # They rank as freshly embedded vectors.
    fresh = _fresh(tmp_path / "ref", texts)
    assert _ranked(reader) == _ranked(fresh)


def _converted(folder: Path) -> tuple[list[str], bytes, Path]:
    """:func:`_old_memory`, its file converted by a recall: the ids, the version-1
    file's bytes, and the new file."""
    ids, data, _halves = _old_memory(folder)
    KnowledgeMemory(folder, embedder=WordEmbedder("file")).recall("tea")
    return ids, data, folder / "vectors" / "file-128.i8v"


def test_a_version_1_file_is_converted_again_when_the_new_file_is_deleted(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "m"
    ids, data, new = _converted(folder)
    converted = _file_rows(new.read_bytes())
    new.unlink()
    embedder = WordEmbedder("file")
    assert KnowledgeMemory(folder, embedder=embedder).recall("tea sunrise")[0].id == ids[3]
    assert embedder.batches == [["tea sunrise"]]
    again = _file_rows(new.read_bytes())
    assert again[:2] == converted[:2] and np.array_equal(again[2], converted[2])
    assert (folder / "vectors" / "file-128.f16v").read_bytes() == data


def test_a_version_1_block_carrying_its_sum_converts(tmp_path: Path) -> None:
    words = ["tea", "figs", "jam", "river", "violin", "paint"]
    texts = [f"note {i} {words[i % 6]} {words[i * 7 % 6]}" for i in range(_vecfile.SUM_ROWS + 4)]
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder)
    ids = [plain.remember(t) for t in texts]
    halves = v1_halves(texts)
    data = v1_header("file", 128, os.urandom(16)) + v1_block(
        ids, [_vectors.text_hash(t) for t in texts], halves
    )
    (folder / "vectors").mkdir()
    (folder / "vectors" / "file-128.f16v").write_bytes(data)
    embedder = WordEmbedder("file")
    km = KnowledgeMemory(folder, embedder=embedder)
    assert km.recall("note 7 figs", limit=1)[0].id == ids[7]
    assert embedder.batches == [["note 7 figs"]]
    got_ids, _hashes, rows = _file_rows((folder / "vectors" / "file-128.i8v").read_bytes())
    assert got_ids == ids
    assert np.array_equal(rows, _vecmath.from_float16(np, halves))
    new = (folder / "vectors" / "file-128.i8v").read_bytes()
    (block,) = _vecfile.scan_blocks(new, _vecfile.HEADER_SIZE, len(new), 128).blocks
    assert block.sums == _vecmath.column_sum(np, rows).tolist()  # of the stored rows


def _damage(data: bytes, where: str) -> tuple[bytes, set[int]]:
    """``data`` with one byte flipped in ``where``, and the indexes of the texts whose
    rows it costs (the rows of the block it lies in; a row repeated in an intact block
    survives)."""
    scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), 128, float16=True)
    first, second, _third = scan.blocks
    damaged = bytearray(data)
    if where == "header":
        damaged[20] ^= 0x01  # the generation: the header's checksum fails
        lost = set(range(len(TEXTS)))
    elif where == "vector":
        damaged[second.vectors_at + 2 * 128 + 9] ^= 0x40  # a float16 of the second block
        lost = set(range(2, len(TEXTS)))
    elif where == "keys":
        head = data.rfind(b"FSVB", 0, first.vectors_at)
        damaged[head + _vecfile.BLOCK_HEAD + 3] ^= 0x01
        lost = {0}  # row 1 is repeated in the third block
    else:  # "name": a header that verifies, of another embedder
        damaged[: _vecfile.HEADER_SIZE] = v1_header("elif", 128, bytes(16))
        lost = set(range(len(TEXTS)))
    return bytes(damaged), lost


@pytest.mark.parametrize("where", ["header", "vector", "keys", "name"])
def test_a_damaged_version_1_file_costs_embeddings_never_an_answer(
    where: str, tmp_path: Path
) -> None:
    folder = tmp_path / "m"
    ids, data, halves = _old_memory(folder)
    old = folder / "vectors" / "file-128.f16v"
    damaged, lost = _damage(data, where)
    old.write_bytes(damaged)
    embedder = WordEmbedder("file")
    km = KnowledgeMemory(folder, embedder=embedder, index_cache=False)
    ranked = _ranked(km)
    embedded = sorted(t for b in embedder.batches for t in b if t not in QUERIES)
    assert embedded == sorted(TEXTS[n] for n in lost)
    assert ranked == _ranked(_fresh(tmp_path / "ref"))
    assert old.read_bytes() == damaged  # reads never alter it
    # What was converted is the intact rows, as they were; the rest was embedded.
    got_ids, _hashes, rows = _file_rows((folder / "vectors" / "file-128.i8v").read_bytes())
    assert sorted(got_ids) == sorted(ids)
    kept = [n for n in range(len(TEXTS)) if n not in lost]
    converted = {
        ids[n]: row for n, row in zip(kept, _vecmath.from_float16(np, halves[kept]), strict=True)
    }
    for entry_id, row in zip(got_ids, rows, strict=True):
        if entry_id in converted:
            assert np.array_equal(row, converted.pop(entry_id))
    assert not converted
    # The next reader embeds nothing more.
    again = WordEmbedder("file")
    assert _ranked(KnowledgeMemory(folder, embedder=again)) == ranked
    assert again.batches == [[q] for q in QUERIES]


def test_processes_that_remember_first_convert_the_version_1_file_no_more(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "m"
    ids, data, new = _converted(folder)
    for n in range(3):  # later processes, each remembering before any read
        embedder = WordEmbedder("file")
        ids.append(KnowledgeMemory(folder, embedder=embedder).remember(f"later note {n}"))
        assert embedder.batches == [[f"later note {n}"]]
    assert (folder / "vectors" / "file-128.f16v").read_bytes() == data
    got_ids, _hashes, _rows = _file_rows(new.read_bytes())
    assert got_ids == ids  # each row once: the version-1 rows were not appended again


def test_a_process_that_remembers_first_does_not_read_the_version_1_file(
    tmp_path: Path,
) -> None:
    """Once the new file exists, its creator converted the float16 file: a process
    whose first vector write is an append reads the new file's existence, not the
    float16 file (80 MB at 100k vectors)."""
    folder = tmp_path / "m"
    _ids, data, _new = _converted(folder)
    km = KnowledgeMemory(folder, embedder=WordEmbedder("file"))
    read: list[str] = []
    real = km.root.read_bytes

    def reading(path: str) -> bytes:
        read.append(path)
        return real(path)

    km.root.read_bytes = reading  # type: ignore[method-assign]
    km.remember("a later note")
    assert "vectors/file-128.f16v" not in read
    assert (folder / "vectors" / "file-128.f16v").read_bytes() == data


def test_a_version_1_row_of_nan_or_inf_is_embedded_again(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    plain = KnowledgeMemory(folder)
    ids = [plain.remember(t) for t in TEXTS]
    halves = v1_halves(TEXTS)
    halves[1, 3] = np.nan
    halves[2, 5] = np.inf
    hashes = [_vectors.text_hash(t) for t in TEXTS]
    data = v1_header("file", 128, os.urandom(16)) + v1_block(ids, hashes, halves)
    (folder / "vectors").mkdir()
    (folder / "vectors" / "file-128.f16v").write_bytes(data)
    embedder = WordEmbedder("file")
    km = KnowledgeMemory(folder, embedder=embedder, index_cache=False)
    ranked = _ranked(km)
    embedded = sorted(t for b in embedder.batches for t in b if t not in QUERIES)
    assert embedded == sorted(TEXTS[1:3])
    assert ranked == _ranked(_fresh(tmp_path / "ref"))


def test_an_embedder_of_too_many_dimensions_is_refused(tmp_path: Path) -> None:
    """A row's sum of squared codes is 32 bits: an embedder whose vectors have more than
    MAX_DIMENSION dimensions gets a clear error, and nothing is stored."""
    wide = _vectors.MAX_DIMENSION + 1

    class Wide:
        name = "wide"

        def __call__(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0] * wide for _ in texts]

    km = KnowledgeMemory(tmp_path / "m", embedder=Wide())
    with pytest.raises(EmbedderError, match="at most 65536"):
        km.remember("a note")
    assert KnowledgeMemory(tmp_path / "m").recall("note") == []
    assert not (tmp_path / "m" / "vectors").exists()
