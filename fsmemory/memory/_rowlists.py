"""Row lists of the index cache (:mod:`fsmemory.memory._index_state`): how a list of
index rows is stored (plain, as runs of consecutive rows, or as bit sets, one per
stretch of ascending rows, whichever is much smaller) and read back, checked by counts
and bounds on load (a bit set is made into rows only when first needed), and the
column helpers the codec reads rows with.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import chain, compress, pairwise, repeat
from typing import Any

__all__ = [
    "BitRows",
    "RowList",
    "as_array",
    "bit_rows",
    "bits_of",
    "gather",
    "listed",
    "rows_blob",
    "rows_of",
    "runs_of",
]


class BitRows:
    """A row list of the index cache stored as bit sets, one per stretch of ascending
    rows (see :func:`bits_of`): checked when loaded (a count and a bound per stretch,
    no row read), made into rows when first needed."""

    __slots__ = ("_count", "_parts")

    def __init__(self, parts: list[tuple[int, bytes | memoryview]], count: int) -> None:
        self._parts, self._count = parts, count

    def __len__(self) -> int:
        return self._count

    def rows(self) -> array[int]:
        """The rows, in their stored order."""
        out = array("I")
        table = _bit_flags()
        for first, data in self._parts:
            flags = b"".join(map(table.__getitem__, data))
            out.extend(compress(range(first, first + len(flags)), flags))
        return out


#: A row list as stored: plain, as runs (a ``range`` for one run) or as bit sets.
RowList = Sequence[int] | BitRows


@cache
def _bit_flags() -> tuple[bytes, ...]:
    """Each byte value's eight bits, lowest first, as eight bytes of 0 or 1 (built on
    first use: a process that reads no bit set never pays for it)."""
    return tuple(bytes((b >> i) & 1 for i in range(8)) for b in range(256))


#: Flag bytes 0 and 1 as the binary digits "0" and "1".
_DIGITS = bytes.maketrans(b"\x00\x01", b"01")


def listed(rows: RowList) -> Sequence[int]:
    """A stored row list as a sequence of rows."""
    return rows.rows() if isinstance(rows, BitRows) else rows


def rows_blob(name: str, rows: Iterable[int], encoded: dict[str, Any]) -> bytes:
    """A row list as stored: as runs when that is much smaller (``name`` is then added
    to ``encoded["runs"]``), else as bit sets when that is much smaller (their layout
    is then ``encoded["bits"][name]``), plain otherwise."""
    plain = array("I", rows)
    as_runs = runs_of(plain)
    if as_runs is not None:
        encoded["runs"].append(name)
        return as_runs.tobytes()
    as_bits = bits_of(plain)
    if as_bits is not None:
        encoded["bits"][name], data = as_bits
        return data
    return plain.tobytes()


def as_array(code: str, data: bytes | memoryview) -> array[int]:
    out = array(code)
    out.frombytes(data)
    return out


def runs_of(rows: array[int]) -> array[int] | None:
    """``rows`` as ``(first, count)`` pairs of consecutive rows, when that takes less
    than half the room (None otherwise)."""
    if not rows:
        return None
    pairs = array("I")
    first = prev = rows[0]
    for row in rows[1:]:
        if row != prev + 1:
            pairs.extend((first, prev - first + 1))
            first = row
        prev = row
    pairs.extend((first, prev - first + 1))
    return pairs if 2 * len(pairs) < len(rows) else None


def bits_of(rows: array[int]) -> tuple[list[list[int]], bytes] | None:
    """``rows`` as bit sets, one per stretch of ascending rows (bit ``i`` of a stretch
    starting at row ``first``: row ``first + i``), with their layout (``[first,
    count, bytes]`` each), when that takes less than half the room (None otherwise).
    """
    # A stretch ends before each row not above the one before it.
    ends = [*compress(range(1, len(rows)), map(operator.le, rows[1:], rows)), len(rows)]
    bounds = list(pairwise([0, *ends])) if rows else []
    sizes = [(rows[b - 1] - rows[a]) // 8 + 1 for a, b in bounds]
    # (each stretch's layout: some JSON; the room: half of the plain list's bytes)
    if not bounds or sum(sizes) + 24 * len(sizes) >= 2 * len(rows):
        return None
    layout: list[list[int]] = []
    parts: list[bytes] = []
    for (a, b), size in zip(bounds, sizes, strict=True):
        first = rows[a]
        flags = bytearray(rows[b - 1] - first + 1)
        # flags[row - first] = 1 for each row (any() only drives the setting: None).
        any(map(flags.__setitem__, map(operator.sub, rows[a:b], repeat(first)), repeat(1)))
        # The flags as binary digits, the lowest row last: the bits as one number.
        value = int(flags.translate(_DIGITS)[::-1], 2)
        layout.append([first, b - a, size])
        parts.append(value.to_bytes(size, "little"))
    return layout, b"".join(parts)


def rows_of(data: bytes | memoryview, runs: bool, bits: Any, n: int) -> RowList:
    """A row list of the index cache, plain, as runs (see :func:`runs_of`) or as bit
    sets laid out as ``bits`` says (see :func:`bits_of`); every row is checked to be
    below ``n`` (``ValueError``)."""
    if bits is not None:
        if runs:
            raise ValueError("bad row list encoding")
        return bit_rows(data, bits, n)
    values = as_array("I", data)
    if not runs:
        if values and max(values) >= n:
            raise ValueError("rows out of range")
        return values
    if len(values) % 2:
        raise ValueError("bad row runs")
    firsts, counts = values[0::2], values[1::2]
    if any(first + count > n or not count for first, count in zip(firsts, counts, strict=True)):
        raise ValueError("rows out of range")
    if len(firsts) == 1:
        return range(firsts[0], firsts[0] + counts[0])
    return array("I", chain.from_iterable(map(range, firsts, map(operator.add, firsts, counts))))


def bit_rows(data: bytes | memoryview, layout: Any, n: int) -> BitRows:
    """A row list stored as bit sets (see :func:`bits_of`), checked: each set holds
    its count of rows, all below ``n``, and the sets fill ``data`` exactly."""
    if type(layout) is not list:
        raise ValueError("bad row bits")
    view = memoryview(data)
    parts: list[tuple[int, bytes | memoryview]] = []
    at = total = 0
    for first, count, size in layout:
        if type(first) is not int or type(count) is not int or type(size) is not int:
            raise ValueError("bad row bits")
        part = view[at : at + size]
        value = int.from_bytes(part, "little")
        if first < 0 or size <= 0 or value.bit_count() != count or first + value.bit_length() > n:
            raise ValueError("rows out of range")
        parts.append((first, part))
        at += size
        total += count
    if at != len(view):
        raise ValueError("bad row bits")
    return BitRows(parts, total)


def gather(column: array[int], rows: Sequence[int]) -> array[int]:
    """``column[row] for row in rows`` (a copy of one slice when the rows are a range)."""
    if isinstance(rows, range) and rows.step == 1:
        return column[rows.start : rows.stop]
    return array(column.typecode, map(column.__getitem__, rows))
