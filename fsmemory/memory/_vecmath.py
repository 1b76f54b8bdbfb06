"""Arithmetic on the rows of hybrid recall's vector files: each row is a vector's
``dimension`` int8 codes, one int8 exponent ``e`` (the vector is the codes times
``2**e``, see :func:`quantize`) and the sum of the codes' squares (uint32 little-endian:
the squared norm is that times ``4**e``, read rather than taken again). Widening to
float32 a few hundred rows at a time, dot products one row at a time (each the same
float whatever the rows around it), exact column sums, and the checksum of a mapped
part; a pass over a large memory-mapped part gives its pages back as it goes
(:class:`PageRelease`), so that reading a vector file costs a window of it in resident
memory, not its size.

A power-of-two scale keeps every derived number exact where it was exact: a code widens
to float32 exactly, and scaling a product, a norm or a sum by ``2**e`` changes none of
its roundings, so a dot product taken on the codes and scaled is the same float as one
taken on the decoded vector; and with ``e`` at least :data:`EXP_MIN` every value is a
whole number of ``2**-24``, which float64 sums exactly.

NumPy is passed in (``np``) by the callers, which import it only when an embedder is
used.
"""

from __future__ import annotations

import contextlib
import mmap
import zlib
from typing import Any

__all__ = [
    "CHECK_BYTES",
    "EXP_MAX",
    "EXP_MIN",
    "RELEASE_BYTES",
    "TAIL_BYTES",
    "PageRelease",
    "body_check",
    "chunks",
    "code_chunks",
    "codes_width",
    "column_sum",
    "dot_rows",
    "from_float16",
    "pack_rows",
    "part_check",
    "quantize",
    "row_scales",
    "stored_norms",
    "widen",
    "widen_dot",
    "widen_rows",
]

# Rows widened to float32 at a time (a few hundred KB: stays in cache).
_WIDEN_ROWS = 512
# The range of a row's exponent: a unit vector's largest code is reached with an
# exponent between -6 (one coordinate) and about -16 (a million dimensions); the bounds
# keep every value a whole number of 2**-24 below 2**15 (see the module's text).
EXP_MIN = -24
EXP_MAX = 8
# The largest code (the codes are symmetric: -128 is never written).
_CODE_MAX = 127
# Bytes of a row after its codes: the exponent, then the codes' sum of squares.
TAIL_BYTES = 5
# Bytes of a block's body checked at a time (the pages of a mapped file are released
# after each: see PageRelease).
CHECK_BYTES = 4 << 20
# A mapped part smaller than this keeps its pages (see PageRelease): giving them back and
# mapping them again costs more than they weigh (10k vectors of 384 dimensions: 3.9 MB).
RELEASE_BYTES = 8 << 20
_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)


def body_check(data: Any) -> int:
    """The check of a block's body (bytes-like): the low 32 bits of its XXH3-64 (a
    few times faster than CRC32 here: 5 against 15 ms for the 43 MB of 100k vectors)."""
    import xxhash

    return int(xxhash.xxh3_64_intdigest(data)) & 0xFFFFFFFF


def part_check(data: Any, view: memoryview, start: int, end: int, crc: bool = False) -> int:
    """:func:`body_check` of ``data[start:end]``; a few MB at a time when ``data`` is a
    mapped file (and the part is large), whose pages are released as they are checked
    (see :class:`PageRelease`). With ``crc``, its CRC32 (the blocks of format 1, read
    whole once, when converted)."""
    if crc:
        return zlib.crc32(view[start:end])
    if not isinstance(data, mmap.mmap) or _DONTNEED is None or end - start < RELEASE_BYTES:
        return body_check(view[start:end])
    import xxhash

    state = xxhash.xxh3_64()
    release = PageRelease(data, start)
    for at in range(start, end, CHECK_BYTES):
        stop = min(at + CHECK_BYTES, end)
        state.update(view[at:stop])
        release.upto(stop - start, whole=stop == end)
    return int(state.intdigest()) & 0xFFFFFFFF


def quantize(np: Any, vectors: Any) -> Any:
    """The rows of the float ``vectors`` (n, d) as stored: an (n, d + 5) int8 array,
    the codes ``rint(v / 2**e)``, then ``e``, the smallest exponent (within
    :data:`EXP_MIN`..:data:`EXP_MAX`) that keeps the row's largest magnitude within
    127 codes, then the codes' sum of squares (4 bytes, uint32 little-endian). The
    step is at most 1/64 of that magnitude: a unit vector's cosines move by about
    1e-3, which changed no LoCoMo ranking (see the benchmarks)."""
    values = np.asarray(vectors, dtype=np.float64)
    n, d = values.shape
    peak = np.abs(values).max(axis=1) if d else np.zeros(n)
    mantissa, exponent = np.frexp(peak / _CODE_MAX)
    exponent -= mantissa == 0.5  # an exact power of two: one step lower still fits
    exponent[peak == 0] = EXP_MIN
    np.clip(exponent, EXP_MIN, EXP_MAX, out=exponent)
    codes = np.rint(np.ldexp(values, -exponent[:, None]))
    np.clip(codes, -_CODE_MAX, _CODE_MAX, out=codes)
    return pack_rows(np, codes, exponent)


def pack_rows(np: Any, codes: Any, exponents: Any) -> Any:
    """Stored rows (see :func:`quantize`) of integer ``codes`` (n, d), each within
    -128..127, and ``exponents`` (n,): the rows carry the sum of their codes' squares."""
    codes = np.asarray(codes)
    n, d = codes.shape
    out = np.empty((n, d + TAIL_BYTES), dtype=np.int8)
    out[:, :d] = codes
    out[:, d] = exponents
    wide = codes.astype(np.int64)
    squares = np.einsum("ij,ij->i", wide, wide).astype("<u4")
    out[:, d + 1 :] = squares.view(np.int8).reshape(n, 4)
    return out


def codes_width(rows: Any) -> int:
    """The dimension of the stored ``rows`` (their codes per row)."""
    return int(rows.shape[1]) - TAIL_BYTES


def from_float16(np: Any, halves: Any) -> Any:
    """Float16 rows (an (n, d) array, the vector files of earlier versions) as stored
    rows (see :func:`quantize`)."""
    return quantize(np, np.asarray(halves, dtype=np.float32))


def row_scales(np: Any, rows: Any) -> Any:
    """``2**e`` of each stored row (float32, exact)."""
    exponents = rows[:, codes_width(rows)].astype(np.int32)
    return np.ldexp(np.ones(rows.shape[0], dtype=np.float32), exponents)


def stored_norms(np: Any, rows: Any, scales: Any, out: Any) -> None:
    """``out[i]`` = the squared norm of stored row ``i`` (float32): the sum of its
    codes' squares the row carries times ``scales[i]**2`` (see :func:`row_scales`)."""
    squares = np.ascontiguousarray(rows[:, codes_width(rows) + 1 :]).view("<u4")
    np.multiply(squares[:, 0], scales * scales, out=out, casting="unsafe")


def widen_rows(np: Any, rows: Any, out: Any, scaled: bool = True) -> Any:
    """The stored ``rows`` (k, d + 5) as float32 in ``out`` (at least k rows of d);
    returns the filled view. Without ``scaled``, the codes alone (whole numbers, exact):
    row ``i`` is then the vector divided by :func:`row_scales` ``[i]``."""
    k = rows.shape[0]
    f = out[:k]
    np.copyto(f, rows[:, : codes_width(rows)], casting="safe")
    if scaled:
        f *= row_scales(np, rows)[:, None]
    return f


def code_chunks(np: Any, matrix: Any, rows: Any = None) -> Any:
    """Yield ``(start, stored, codes, scales)`` over the stored ``matrix`` (only
    ``rows``, an ascending index array, when given), a few hundred rows at a time:
    the stored rows, their codes as float32 (reused between steps) and each row's
    ``2**e``. A float32 copy of the whole matrix is four times its size. When the
    matrix lies in a mapped file, the pages read are released as the pass goes (see
    :class:`PageRelease`)."""
    count = matrix.shape[0] if rows is None else len(rows)
    wide = np.empty((min(count, _WIDEN_ROWS), codes_width(matrix)), dtype=np.float32)
    for at, stop in _spans(np, matrix, rows):
        part = matrix[at:stop] if rows is None else matrix[rows[at:stop]]
        yield at, part, widen_rows(np, part, wide, scaled=False), row_scales(np, part)


def chunks(np: Any, matrix: Any, rows: Any = None) -> Any:
    """Yield ``(start, float32 rows)``: the decoded vectors of :func:`code_chunks`
    (the yielded array is reused)."""
    for at, _, codes, scales in code_chunks(np, matrix, rows):
        codes *= scales[:, None]
        yield at, codes


def _spans(np: Any, matrix: Any, rows: Any = None) -> Any:
    """Yield ``(start, stop)``: the rows of ``matrix`` (the positions in ``rows``, an
    ascending index array, when given) a few hundred at a time. When the matrix lies in
    a mapped file, the pages of the rows a step read are released once the caller asks
    for the next (see :class:`PageRelease`), the last ones when the pass is over."""
    n = matrix.shape[0]
    count = n if rows is None else len(rows)
    if not count:
        return
    release = PageRelease.of(np, matrix)
    for at in range(0, count, _WIDEN_ROWS):
        stop = min(at + _WIDEN_ROWS, count)
        yield at, stop
        if release is not None and stop < count:
            last = stop if rows is None else int(rows[stop - 1]) + 1
            release.upto(last * matrix.strides[0])
    if release is not None:
        release.upto(n * matrix.strides[0], whole=True)


class PageRelease:
    """Gives the pages of a mapped file back as a pass over part of it reads on: their
    bytes stay in the page cache (a later pass maps them again at the cost of a minor
    fault per few pages), but they stop counting in this process's resident memory, so
    that reading a large vector file costs a window of it, not its size. Pages of the
    mapping up to the end of what was read are released, never what the pass reads
    next (releasing never changes what is read, only what it costs)."""

    __slots__ = ("at", "done", "mapped")

    def __init__(self, mapped: mmap.mmap, at: int) -> None:
        self.mapped = mapped
        self.at = at  # where the part starts in the mapping
        self.done = at - at % mmap.PAGESIZE  # released up to here

    @classmethod
    def of(cls, np: Any, array: Any) -> PageRelease | None:
        """One for the bytes of ``array`` when it is a view of a mapped file of at
        least :data:`RELEASE_BYTES` (on a system whose mappings can give pages back),
        else None."""
        owner = array
        while isinstance(owner, np.ndarray):
            owner = owner.base
        if isinstance(owner, memoryview):
            owner = owner.obj
        if not isinstance(owner, mmap.mmap) or _DONTNEED is None:
            return None
        if array.nbytes < RELEASE_BYTES:
            return None
        start = np.frombuffer(owner, dtype=np.uint8, count=1).ctypes.data
        return cls(owner, int(array.ctypes.data) - int(start))

    def upto(self, end: int, whole: bool = False) -> None:
        """Release the pages that the first ``end`` bytes of the part fill whole (and
        the last one they touch too with ``whole``: the pass is over)."""
        stop = self.at + end
        if whole:
            stop = min(stop + -stop % mmap.PAGESIZE, len(self.mapped))
        elif stop - self.done < CHECK_BYTES // 2:
            return  # a call per few MB: each costs more than the pages it gives back
        else:
            stop -= stop % mmap.PAGESIZE
        if stop > self.done and _DONTNEED is not None:
            with contextlib.suppress(OSError, ValueError):  # advice only: the pages stay
                self.mapped.madvise(_DONTNEED, self.done, stop - self.done)
            self.done = stop


def widen_dot(np: Any, matrix: Any, weights: Any, out: Any, norms: Any = None) -> None:
    """``out[:] = matrix @ weights`` for stored rows ``matrix`` (n, d + 5) and float32
    ``weights`` (d, k), in float32: the products are taken on the codes and scaled by
    each row's ``2**e`` (exactly the floats :func:`dot_rows` gives on the decoded rows,
    see the module's text, while no product leaves float32's normal range: weights of
    a unit query never come near it). With ``norms``, the rows' squared norms are
    read into it in the same pass (see :func:`stored_norms`)."""
    rows = np.ascontiguousarray(weights.T)
    for at, stored, codes, scales in code_chunks(np, matrix):
        part = out[at : at + codes.shape[0]]
        dot_rows(np, codes, rows, part)
        part *= scales[:, None]
        if norms is not None:
            stored_norms(np, stored, scales, norms[at : at + codes.shape[0]])


def dot_rows(np: Any, rows: Any, weights: Any, out: Any) -> None:
    """``out[i, k] = rows[i] . weights[k]`` for float32 ``rows`` (n, d) and ``weights``
    (k, d), each a dot product of its own (whatever the rows around it), in this
    thread: ``np.vecdot`` (a BLAS dot per pair, of a length that never starts a thread
    pool; a BLAS matrix product may start one, which costs more than it saves at this
    size and stalls on a busy machine), or on NumPy 1.x the same sums with einsum."""
    vecdot = getattr(np, "vecdot", None)
    if vecdot is None:  # NumPy < 2 (its "ij,jk" form with a narrow k is many times slower)
        np.einsum("ij,kj->ik", rows, weights, out=out)
    elif weights.shape[0] == 1:
        vecdot(rows, weights[0], out=out[:, 0])
    else:
        vecdot(rows[:, None, :], weights[None, :, :], out=out)


def column_sum(np: Any, matrix: Any) -> Any:
    """The sum of the decoded rows of the stored ``matrix`` (float64, exact)."""
    total = np.zeros(codes_width(matrix), dtype=np.float64)
    for _, part in chunks(np, matrix):
        total += part.sum(axis=0, dtype=np.float64)
    return total


def widen(np: Any, matrix: Any, out: Any = None) -> Any:
    """The stored ``matrix`` decoded to float32 (exact): in ``out`` when given (a
    float32 array of n rows of d, filled in place a few hundred rows at a time), else in
    a new array. Returns the float32 array. The pages of a mapped ``matrix`` are
    released as the pass reads on (see :class:`PageRelease`)."""
    if out is None:
        out = np.empty((matrix.shape[0], codes_width(matrix)), dtype=np.float32)
    for at, stop in _spans(np, matrix):
        widen_rows(np, matrix[at:stop], out[at:stop])
    return out
