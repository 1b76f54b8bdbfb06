"""Arithmetic on the float16 rows of hybrid recall's vector files: widening to float32 a
few hundred rows at a time, dot products and norms one row at a time (each the same
float whatever the rows around it), exact column sums, and the checksum of a mapped
part; a pass over a large memory-mapped part gives its pages back as it goes
(:class:`PageRelease`), so that reading a vector file costs a window of it in resident
memory, not its size.

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
    "RELEASE_BYTES",
    "PageRelease",
    "chunks",
    "column_sum",
    "dot_rows",
    "part_crc",
    "square_norms",
    "widen",
    "widen_dot",
    "widen_rows",
]

# Rows of float16 widened to float32 at a time (a few hundred KB: stays in cache).
_WIDEN_ROWS = 512
# The sign bit and the 28 bits a float16's exponent and mantissa fill once shifted.
_SIGN_AND_MAGNITUDE = -0x70000001  # 0x8FFFFFFF as an int32
# Bytes of a block's body checked at a time (the pages of a mapped file are released
# after each: see PageRelease).
CHECK_BYTES = 4 << 20
# A mapped part smaller than this keeps its pages (see PageRelease): giving them back and
# mapping them again costs more than they weigh (10k vectors of 384 dimensions: 7.7 MB).
RELEASE_BYTES = 8 << 20
_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)


def part_crc(data: Any, view: memoryview, start: int, end: int) -> int:
    """CRC32 of ``data[start:end]``; a few MB at a time when ``data`` is a mapped file
    (and the part is large), whose pages are released as they are checked (see
    :class:`PageRelease`)."""
    if not isinstance(data, mmap.mmap) or _DONTNEED is None or end - start < RELEASE_BYTES:
        return zlib.crc32(view[start:end])
    release = PageRelease(data, start)
    crc = 0
    for at in range(start, end, CHECK_BYTES):
        stop = min(at + CHECK_BYTES, end)
        crc = zlib.crc32(view[at:stop], crc)
        release.upto(stop - start, whole=stop == end)
    return crc


def widen_rows(np: Any, bits: Any, wide: Any, scaled: bool = True) -> Any:
    """The float16 rows ``bits`` (viewed as int16) as float32, in ``wide`` (an int32
    work array at least as large); returns the float32 view.

    Done on the bits, exact for every finite float16 (subnormals included): NumPy's own
    float16 cast converts one value at a time, several times slower. Four passes: the
    sign-extending copy to 32 bits puts the sign in bit 31 (and in the three bits below
    it, which the mask clears), the shift moves exponent and mantissa to their float32
    places, and the product by 2**112 moves the exponent bias from 15 to 127 (a
    subnormal float16 becomes a normal float32; a power of two scales exactly, whatever
    the sign). Without ``scaled``, that last pass is left out: each value is then
    exactly ``2**-112`` times the float16 (see :func:`widen_dot`, which scales the
    other side of its products instead)."""
    k = bits.shape[0]
    w = wide[:k]
    np.copyto(w, bits, casting="safe")
    np.left_shift(w, 13, out=w)
    np.bitwise_and(w, _SIGN_AND_MAGNITUDE, out=w)
    f = w.view(np.float32)
    if scaled:
        f *= np.float32(2.0**112)
    return f


def chunks(np: Any, matrix: Any, rows: Any = None, scaled: bool = True) -> Any:
    """Yield ``(start, float32 rows)`` over the float16 ``matrix`` (only ``rows``, an
    ascending index array, when given), a few hundred rows widened at a time: a float32
    copy of the whole matrix is twice its size. The yielded array is reused. When the
    matrix lies in a mapped file, the pages read are released as the pass goes (see
    :class:`PageRelease`). Without ``scaled``, the rows are ``2**-112`` times the vectors
    (see :func:`widen_rows`)."""
    count = matrix.shape[0] if rows is None else len(rows)
    wide = np.empty((min(count, _WIDEN_ROWS), matrix.shape[1]), dtype=np.int32)
    bits = matrix.view(np.int16)
    for at, stop in _spans(np, matrix, rows):
        part = bits[at:stop] if rows is None else bits[rows[at:stop]]
        yield at, widen_rows(np, part, wide, scaled)


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


def widen_dot(np: Any, matrix: Any, weights: Any, out: Any) -> None:
    """``out[:] = matrix @ weights`` for a float16 ``matrix`` (n, d) and float32
    ``weights`` (d, k), in float32 (see :func:`chunks`): the same floats as
    :func:`dot_rows` of the widened matrix. The rows are widened without their last
    pass and the weights multiplied by ``2**112`` instead: each product of a value and a
    weight is then the same real number, rounded alike (weights of magnitude up to
    ``2**15``; larger ones take the widening pass)."""
    rows = np.ascontiguousarray(weights.T)
    scaled = not rows.size or float(np.abs(rows).max()) < 2.0**15
    if scaled:
        rows = rows * np.float32(2.0**112)
    for at, part in chunks(np, matrix, scaled=not scaled):
        dot_rows(np, part, rows, out[at : at + part.shape[0]])


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


def square_norms(np: Any, rows: Any, out: Any) -> None:
    """``out[i] = rows[i] . rows[i]`` for float32 ``rows``, as :func:`dot_rows` takes
    its dot products."""
    vecdot = getattr(np, "vecdot", None)
    if vecdot is None:
        np.einsum("ij,ij->i", rows, rows, out=out)
    else:
        vecdot(rows, rows, out=out)


def column_sum(np: Any, matrix: Any) -> Any:
    """The sum of the rows of the float16 ``matrix`` (float64, exact)."""
    total = np.zeros(matrix.shape[1], dtype=np.float64)
    for _, part in chunks(np, matrix):
        total += part.sum(axis=0, dtype=np.float64)
    return total


def widen(np: Any, matrix: Any, out: Any = None) -> Any:
    """The float16 ``matrix`` as float32 (exact): in ``out`` when given (a float32
    array of its shape, filled in place a few hundred rows at a time, without a work
    array), else in a new array. Returns the float32 array. The pages of a mapped
    ``matrix`` are released as the pass reads on (see :class:`PageRelease`)."""
    if out is None:
        out = np.empty(matrix.shape, dtype=np.float32)
    bits = matrix.view(np.int16)
    for at, stop in _spans(np, matrix):
        widen_rows(np, bits[at:stop], out[at:stop].view(np.int32))
    return out
