"""The binary vector file of hybrid recall: layout, checks and reading.

One file per embedder identity, ``vectors/<name>-<dimension>.i8v``::

    file header (HEADER_SIZE bytes)
        magic       8   b"\\x89FSMVEC\\n"
        version     u16 FORMAT_VERSION
        dtype       u8  2: int8 codes and a power-of-two exponent per row
        reserved    u8  0
        dimension   u32
        name length u16
        generation  16  random bytes, new each time the file is written whole
        name        the embedder's name (ASCII), then zeros up to HEADER_SIZE - 4
        crc32       u32 of every byte before it
    block, block, ... (appended; one per store, many rows in a rewrite)
        magic       4   b"FSVB"
        rows        u32
        keys length u32 (the keys section, padded to a multiple of 8)
        reserved    u32 0
        body check  u32: the low 32 bits of the XXH3-64 of the keys section and
                    the vectors (format 1: their CRC32)
        head crc32  u32 of the 20 bytes before it
        keys        JSON ``[[id, ...], "<hex text hashes>"]``, ASCII, space padded;
                    a block of SUM_ROWS rows or more adds a third item, the sum of
                    its vectors (one float per dimension: exact, every value being a
                    whole number of 2**-24), so that a reader can take the mean
                    without reading every vector twice
        vectors     rows x (dimension + 5) bytes, row-major: a row's int8 codes, its
                    int8 exponent e (the vector is the codes times 2**e, see
                    :func:`~fsmemory.memory._vecmath.quantize`), and the sum of
                    the codes' squares (u32)

Integers are little-endian. A block is served only when both of its checksums hold:
a flipped byte anywhere is caught by one of them. Blocks are self-delimiting and start
with a magic, so a reader that meets bytes it cannot verify (a block torn by a killed
writer, with later writers' blocks after it) looks for the next verifiable block and
reports the bytes it skipped; a block cut short at the end of the file is left for the
next read (a writer may still be writing it). The row count of the file is the sum of
its verified blocks' rows. Appending one block per write is what lets a snapshot carry
the file incrementally: a block is a unit that can be shipped and verified on its own.

Version 1 of the format (``<name>-<dimension>.f16v``: dtype 1, rows of float16, twice
the bytes) is read once when the current file is created, and converted (see
:meth:`VectorFile.create`); it is left in place for earlier versions still running.

NumPy is imported only here and in ``_vectors``, and only when an embedder is used.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import struct
import zlib
from collections.abc import Sequence
from functools import partial
from typing import Any

from fsmemory._log import get_logger
from fsmemory._records import NamedTuple
from fsmemory.errors import ConflictError, KeyNotFoundError, NotAFileError
from fsmemory.fs.base import StorageRoot
from fsmemory.fs.local import LocalRoot
from fsmemory.memory._vecmath import (
    TAIL_BYTES,
    body_check,
    column_sum,
    from_float16,
    part_check,
    quantize,
)

__all__ = [
    "BLOCK_HEAD",
    "COMPACT_BLOCKS",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "Block",
    "Header",
    "Rows",
    "Scan",
    "VectorFile",
    "encode_block",
    "encode_header",
    "parse_float16",
    "parse_jsonl",
    "read_header",
    "row_bytes",
    "scan_blocks",
]

logger = get_logger("fsmemory.memory._vectors")

MAGIC = b"\x89FSMVEC\n"
FORMAT_VERSION = 2
DTYPE_INT8 = 2
# The format of earlier versions (float16 rows), read once and converted.
_F16_VERSION = 1
_DTYPE_FLOAT16 = 1
HEADER_SIZE = 160
BLOCK_MAGIC = b"FSVB"
BLOCK_HEAD = 24
_FIXED = struct.Struct("<8sHBBIH16s")  # magic, version, dtype, 0, dimension, name length
_BLOCK = struct.Struct("<4sIIIII")  # magic, rows, keys length, 0, body check, head crc
# A block of at least this many rows carries the sum of its vectors.
SUM_ROWS = 256


class Header(NamedTuple):
    """What the file header names."""

    version: int
    dimension: int
    name: str
    generation: bytes


def encode_header(name: str, dimension: int, generation: bytes | None = None) -> bytes:
    """The file header of a vector file of ``name`` and ``dimension`` (a fresh random
    generation unless one is given)."""
    raw_name = name.encode("ascii")
    gen = generation if generation is not None else os.urandom(16)
    fixed = _FIXED.pack(MAGIC, FORMAT_VERSION, DTYPE_INT8, 0, dimension, len(raw_name), gen)
    body = (fixed + raw_name).ljust(HEADER_SIZE - 4, b"\0")
    if len(body) != HEADER_SIZE - 4:
        raise ValueError(f"embedder name too long for the vector file: {name!r}")
    return body + struct.pack("<I", zlib.crc32(body))


def read_header(data: Any, *, float16: bool = False) -> Header | None:
    """The header at the start of ``data`` (bytes-like), or None when it is not one this
    version reads (too short, another magic or version or dtype, a bad checksum). With
    ``float16``, the header of the earlier format is read instead."""
    if len(data) < HEADER_SIZE:
        return None
    head = bytes(data[:HEADER_SIZE])
    (crc,) = struct.unpack_from("<I", head, HEADER_SIZE - 4)
    if zlib.crc32(head[: HEADER_SIZE - 4]) != crc:
        return None
    magic, version, dtype, _, dimension, name_len, gen = _FIXED.unpack_from(head)
    want = (_F16_VERSION, _DTYPE_FLOAT16) if float16 else (FORMAT_VERSION, DTYPE_INT8)
    if magic != MAGIC or (version, dtype) != want:
        return None
    start = _FIXED.size
    if start + name_len > HEADER_SIZE - 4:
        return None
    try:
        name = head[start : start + name_len].decode("ascii")
    except UnicodeDecodeError:
        return None
    return Header(version, dimension, name, gen)


def encode_block(ids: Sequence[str], hashes: Sequence[str] | bytes, vectors: Any) -> bytes:
    """One block: the rows' ids and text hashes (16 hex digits each, or the 8 bytes of
    each hash back to back) and their vectors (stored rows: an (n, dimension + 5) int8
    array, or its bytes: then NumPy is imported only for a block that carries the sum
    of its vectors, of :data:`SUM_ROWS` rows or more)."""
    joined = hashes.hex() if isinstance(hashes, bytes) else "".join(hashes)
    items: list[Any] = [list(ids), joined]
    raw = bytes(vectors) if isinstance(vectors, bytes | memoryview) else None
    if len(ids) >= SUM_ROWS:
        import numpy as np

        if raw is not None:
            vectors = np.frombuffer(raw, dtype=np.int8).reshape(len(ids), -1)
        items.append(column_sum(np, vectors).tolist())
    if raw is None:
        raw = vectors.astype("int8", copy=False).tobytes()
    keys = json.dumps(items, ensure_ascii=True).encode("ascii")
    keys += b" " * (-len(keys) % 8)
    body: bytes = keys + raw
    head = _BLOCK.pack(BLOCK_MAGIC, len(ids), len(keys), 0, body_check(body), 0)[:20]
    return head + struct.pack("<I", zlib.crc32(head)) + body


class Block(NamedTuple):
    """A verified block: its rows' ids and text hashes (8 bytes each, back to back),
    and where its vectors start."""

    ids: list[str]
    digests: bytes
    vectors_at: int
    end: int
    sums: list[float] | None = None

    @property
    def hashes(self) -> list[str]:
        """The rows' text hashes in hex (as :func:`~fsmemory.memory._vectors.text_hash`
        gives them)."""
        return split_digests(self.digests)


def split_digests(digests: bytes) -> list[str]:
    """8-byte text hashes back to back, as a list of hex strings."""
    joined = digests.hex()
    return [joined[k : k + 16] for k in range(0, len(joined), 16)]


class Scan(NamedTuple):
    """What :func:`scan_blocks` found: the verified blocks, where reading stopped (the
    end of the last verified block, or the start of a block cut short at the end), and
    how many bytes before that could not be verified (damage)."""

    blocks: list[Block]
    end: int
    skipped: int


def row_bytes(dimension: int, *, float16: bool = False) -> int:
    """The bytes of one stored row (of the earlier float16 format with ``float16``)."""
    return 2 * dimension if float16 else dimension + TAIL_BYTES


def scan_blocks(data: Any, start: int, end: int, dimension: int, *, float16: bool = False) -> Scan:
    """The blocks of ``data`` (bytes or an mmap) in ``[start, end)`` (blocks of the
    earlier float16 format with ``float16``)."""
    view = memoryview(data)
    blocks: list[Block] = []
    skipped = 0
    pos = start
    while pos + BLOCK_HEAD <= end:
        block, torn = _block_at(data, view, pos, end, dimension, float16)
        if block is not None:
            blocks.append(block)
            pos = block.end
            continue
        after = _next_block(data, view, pos + 1, end, dimension, float16)
        if after is None:
            if not torn:
                skipped += end - pos
                pos = end
            break
        skipped += after - pos
        pos = after
    return Scan(blocks, pos, skipped)


def _next_block(
    data: Any, view: memoryview, at: int, end: int, dimension: int, float16: bool
) -> int | None:
    """Where the next verifiable block in ``[at, end)`` starts, or None."""
    while True:
        at = data.find(BLOCK_MAGIC, at, end)
        if at < 0:
            return None
        if _block_at(data, view, at, end, dimension, float16)[0] is not None:
            return int(at)
        at += 1


def _block_at(
    data: Any, view: memoryview, pos: int, end: int, dimension: int, float16: bool
) -> tuple[Block | None, bool]:
    """The block at ``pos`` if it verifies, and whether it may be a whole block cut
    short by the end of the data (a head that verifies, a body past ``end``); with
    ``float16``, a block of format 1 (float16 rows, its body checked by CRC32)."""
    row_size = row_bytes(dimension, float16=float16)
    if bytes(view[pos : pos + 4]) != BLOCK_MAGIC or pos + BLOCK_HEAD > end:
        return None, False
    _, rows, keys_len, reserved, body_check_value, head_crc = _BLOCK.unpack_from(view, pos)
    if zlib.crc32(view[pos : pos + 20]) != head_crc or reserved or keys_len % 8:
        return None, False
    vectors_at = pos + BLOCK_HEAD + keys_len
    block_end = vectors_at + rows * row_size
    if block_end > end:
        return None, True
    if part_check(data, view, pos + BLOCK_HEAD, block_end, crc=float16) != body_check_value:
        return None, False
    try:
        ids, joined, *more = json.loads(bytes(view[pos + BLOCK_HEAD : vectors_at]))
    except (ValueError, TypeError):
        return None, False
    sums = more[0] if len(more) == 1 else None
    if (
        len(more) > 1
        or (
            sums is not None
            and (
                not isinstance(sums, list)
                or len(sums) != dimension
                or not all(type(x) is float or type(x) is int for x in sums)
            )
        )
        or not isinstance(ids, list)
        or not isinstance(joined, str)
        or len(ids) != rows
        or len(joined) != 16 * rows
        or not _all_str(ids)
    ):
        return None, False
    try:
        digests = bytes.fromhex(joined)
    except ValueError:
        return None, False
    if len(digests) != 8 * rows:  # (fromhex skips spaces)
        return None, False
    return Block(ids, digests, vectors_at, block_end, sums), False


def _all_str(items: list[Any]) -> bool:
    """True when every item is a str (joining them checks it, twice as fast as a set of
    their types on the ids of a large block)."""
    try:
        "".join(items)
    except TypeError:
        return False
    return True


class Rows:
    """Vectors read from a file: ids, text hashes, and the stored rows, an (n, dimension
    + 5) int8 array (a view of what was read: the caller copies what it keeps of a
    small one).

    Args:
        ids: the entry ids.
        hashes: their text hashes, as hex strings or as 8 bytes each back to back.
        vectors: the vectors.
        sums: the sum of the vectors (float64), when the block carries it.

    Raises:
        ValueError: a hash that is not 16 hex digits.
    """

    __slots__ = ("digests", "ids", "sums", "vectors")

    def __init__(
        self, ids: list[str], hashes: Sequence[str] | bytes, vectors: Any, sums: Any = None
    ) -> None:
        self.ids = ids
        self.digests = hashes if isinstance(hashes, bytes) else bytes.fromhex("".join(hashes))
        if len(self.digests) != 8 * len(ids):
            raise ValueError("one 8-byte text hash per row expected")
        self.vectors = vectors
        self.sums = sums

    @property
    def hashes(self) -> list[str]:
        """The text hashes in hex."""
        return split_digests(self.digests)


# A file of more blocks than this is written again as one block (each block costs a
# cold open a few microseconds of parsing; one block per remember() adds up); so is a
# file of more than COMPACT_FEW blocks whose largest block holds less than 7/8 of the
# rows (one block is read where it lies, without a copy). Size-tiered, so that a
# memory that grows by appends is written whole about once per 1/8 of growth.
COMPACT_BLOCKS = 1024
COMPACT_FEW = 32


class VectorFile:
    """The vector file of one embedder identity on a root: reads what was appended
    since the last read, appends blocks, and writes the file again whole (compare and
    swap) when it is damaged, foreign, or made of too many blocks.

    Args:
        root: the memory root.
        path: the file (root-relative).
        legacy_path: the JSONL file older versions wrote (read once and converted when
            this file is created; kept).
        float16_path: the float16 file (format version 1) older versions wrote (read
            once and converted when this file is created, when there is no JSONL file;
            kept).
        name: the embedder's name (the header must name it).
        dimension: the vectors' dimension (the header must name it).
    """

    def __init__(
        self,
        root: StorageRoot,
        path: str,
        legacy_path: str,
        name: str,
        dimension: int,
        float16_path: str | None = None,
    ) -> None:
        self.root = root
        self.path = path
        self.legacy_path = legacy_path
        self.float16_path = float16_path
        self.name = name
        self.dimension = dimension
        self.end = -1  # where the next read starts (-1: read the file whole)
        self.generation: bytes | None = None  # of the file read, or written, last
        self.blocks = 0  # blocks in the file as read
        self.rows = 0  # rows in them
        self.largest = 0  # rows in the largest
        self.needs_rewrite: str | None = None  # why the file must be written again
        self.exists = False  # the file was found, or created, by this instance
        # The last read took the copy the root read ahead with its listing (see
        # StorageRoot.fetch_with_listing): as old as that listing.
        self.read_ahead = False

    # -- reading ---------------------------------------------------------------------
    def read_new(self) -> list[Rows]:
        """The rows of the blocks appended since the last read (the whole file at the
        first read, or after another writer wrote it whole). Sets
        :attr:`needs_rewrite` when the file cannot be served as it is."""
        self.read_ahead = False
        if self.end < 0:
            return self._read_whole()
        first, rest = self.root.read_ranges(
            [(self.path, 0, HEADER_SIZE), (self.path, self.end, None)]
        )
        if first is None:  # deleted: the next append creates it again
            self.end, self.generation, self.exists = -1, None, False
            return []
        header = read_header(first)
        if header is None or header.generation != self.generation:
            self.end = -1  # written whole since (a rewrite), or damaged
            return self._read_whole()
        if not rest:
            return []
        scan = scan_blocks(rest, 0, len(rest), self.dimension)
        self.end += scan.end
        self._count(scan.blocks)
        self._check(scan)
        return self._rows(rest, scan.blocks)

    def _read_whole(self) -> list[Rows]:
        data = self._open()
        if data is None:
            converted = self.create()
            if converted is not None or self.end >= 0:
                return [converted] if converted is not None else []
            data = self._open()  # another writer created it meanwhile
            if data is None:
                return []
        self.exists = True
        header = read_header(data)
        if header is None or header.name != self.name or header.dimension != self.dimension:
            self.needs_rewrite = "its header is damaged or names another embedder"
            return []
        scan = scan_blocks(data, HEADER_SIZE, len(data), self.dimension)
        self.generation = header.generation
        self.end = scan.end
        self.blocks = self.rows = self.largest = 0
        self._count(scan.blocks)
        self._check(scan)
        return self._rows(data, scan.blocks)

    def _count(self, blocks: list[Block]) -> None:
        for block in blocks:
            self.blocks += 1
            self.rows += len(block.ids)
            self.largest = max(self.largest, len(block.ids))

    def _check(self, scan: Scan) -> None:
        if scan.skipped:
            self.needs_rewrite = f"{scan.skipped} bytes in it do not verify"
        elif self.blocks > COMPACT_BLOCKS or (
            self.blocks > COMPACT_FEW and 8 * (self.rows - self.largest) > self.rows
        ):
            self.needs_rewrite = f"it holds {self.rows} vectors in {self.blocks} blocks"

    def _rows(self, data: Any, blocks: list[Block]) -> list[Rows]:
        import numpy as np

        out = []
        for block in blocks:
            width = row_bytes(self.dimension)
            count = len(block.ids) * width
            vectors = np.frombuffer(data, dtype=np.int8, count=count, offset=block.vectors_at)
            sums = None if block.sums is None else np.asarray(block.sums, dtype=np.float64)
            out.append(Rows(block.ids, block.digests, vectors.reshape(-1, width), sums))
        return out

    def _open(self) -> Any:
        """The file's bytes: the copy the root read ahead with its listing when there
        is one (checked as any read is), else memory-mapped (read only) on a local
        folder (:meth:`~fsmemory.fs.local.LocalRoot.read_mapped`: the checks of any
        read; the file is appended to or replaced whole, never cut short), else read in
        one request; None when there is no file."""
        root = self.root
        ahead = root.take_fetched(self.path)
        if ahead is not None:
            self.read_ahead = True
            return ahead[0]
        if isinstance(root, LocalRoot):
            try:
                return root.read_mapped(self.path)
            except KeyNotFoundError:
                return None
        try:
            return root.read(self.path).data
        except KeyNotFoundError:
            return None

    # -- writing ---------------------------------------------------------------------
    def create(self) -> Rows | None:
        """Create the file when it does not exist yet, with the vectors of the legacy
        JSONL file when there is one, else of the float16 file of format version 1
        (either read once, by the writer that creates this file; both are kept, for
        earlier versions that may still use them: a recall may create this file, and
        a read never deletes). Returns the rows converted. A file that exists already
        is left as it is, with no attempt to write it (one request on an object
        store), and so is one another writer created first: that writer converted the
        same rows."""
        self.exists = True
        if self.root.exists(self.path):
            # Its creator converted the old files: an append that did not read this
            # file first must not read and convert them again (80 MB and a
            # quantization at 100k float16 vectors, for rows it would drop).
            return None
        converted = self._legacy()
        generation = os.urandom(16)
        header = encode_header(self.name, self.dimension, generation)
        block = b""
        if converted is not None:
            block = encode_block(converted.ids, converted.hashes, converted.vectors)
        try:
            self.root.write(self.path, header + block, create_only=True)
        except ConflictError:
            return None
        self.generation = generation
        self.end = len(header) + len(block)
        self.blocks = self.rows = self.largest = 0
        if converted is not None:
            self.blocks, self.rows = 1, len(converted.ids)
            self.largest = self.rows
        return converted

    def _legacy(self) -> Rows | None:
        """The rows the legacy JSONL file (else the float16 file) converts to (read by
        :meth:`create` only, for a file that does not exist yet)."""
        for path, parse in (
            (self.legacy_path, partial(parse_jsonl, dimension=self.dimension)),
            (self.float16_path, partial(parse_float16, name=self.name, dimension=self.dimension)),
        ):
            if path is None:
                continue
            try:
                data = self.root.read_bytes(path)
            except (KeyNotFoundError, NotAFileError):
                continue
            converted: Rows | None = parse(data)
            logger.info(
                "converted %d vectors of %s into %s (%s is kept for earlier versions)",
                0 if converted is None else len(converted.ids),
                path,
                self.path,
                path,
            )
            return converted
        return None

    def append(self, ids: Sequence[str], hashes: Sequence[str], vectors: Any) -> Rows | None:
        """Append one block of these rows (creating the file first when this instance
        has not seen it; returns the rows that creation converted from the legacy
        file). Concurrent appends each land whole: every root appends atomically."""
        self.root.take_fetched(self.path)  # older than this append: read afresh
        converted = None
        if not self.exists:
            converted = self.create()
        block = encode_block(ids, hashes, vectors)
        offset = self.root.append(self.path, block, unique=True)
        if offset == self.end:  # nobody appended since our last read: no need to read it
            self.end = offset + len(block)
            self.blocks += 1
            self.rows += len(ids)
            self.largest = max(self.largest, len(ids))
        return converted

    def rewrite(self, held: Rows) -> list[Rows]:
        """Write the file again whole (a fresh generation, one block): the rows held in
        memory and those of the file that verify, each (id, hash) once. Only when the
        file is still as read (compare and swap): a concurrent append is never lost.
        Returns the file's rows that ``held`` lacked."""
        import numpy as np

        reason, self.needs_rewrite = self.needs_rewrite, None
        try:
            current = self.root.read(self.path)
        except KeyNotFoundError:
            current = None
        extra: list[Rows] = []
        if current is not None:
            header = read_header(current.data)
            if header is not None and (header.name, header.dimension) == (
                self.name,
                self.dimension,
            ):
                scan = scan_blocks(current.data, HEADER_SIZE, len(current.data), self.dimension)
                extra = self._rows(current.data, scan.blocks)
        known = set(zip(held.ids, held.hashes, strict=True))
        ids, hashes, parts = list(held.ids), list(held.hashes), [held.vectors]
        fresh_rows: list[Rows] = []
        for rows in extra:
            keep = []
            row_hashes = rows.hashes  # a property that decodes every row: read it once
            for n, key in enumerate(zip(rows.ids, row_hashes, strict=True)):
                if key not in known:
                    known.add(key)
                    keep.append(n)
            if keep:
                kept = Rows(
                    [rows.ids[n] for n in keep],
                    [row_hashes[n] for n in keep],
                    np.array(rows.vectors[keep]),
                )
                fresh_rows.append(kept)
                ids += kept.ids
                hashes += kept.hashes
                parts.append(kept.vectors)
        generation = os.urandom(16)
        data = encode_header(self.name, self.dimension, generation) + encode_block(
            ids, hashes, np.concatenate(parts) if len(parts) > 1 else parts[0]
        )
        try:
            if current is None:
                self.root.write(self.path, data, create_only=True)
            else:
                self.root.write(self.path, data, if_version=current.version)
        except ConflictError:
            logger.info("%s changed while it was written again; left for later", self.path)
            self.end = -1
            return fresh_rows
        logger.info("wrote %s again with %d vectors: %s", self.path, len(ids), reason)
        self.generation, self.end = generation, len(data)
        self.blocks, self.rows, self.largest = 1, len(ids), len(ids)
        return fresh_rows


def parse_float16(data: bytes, name: str, dimension: int) -> Rows | None:
    """The vectors of a float16 vector file (format version 1) of ``name`` and
    ``dimension``, as stored rows: the rows of its verified blocks, each (id, text hash)
    once (the first). None when the header does not verify or no row is left."""
    import numpy as np

    header = read_header(data, float16=True)
    if header is None or (header.name, header.dimension) != (name, dimension):
        return None
    scan = scan_blocks(data, HEADER_SIZE, len(data), dimension, float16=True)
    seen: set[tuple[str, bytes]] = set()
    ids: list[str] = []
    digests: list[bytes] = []
    parts = []
    for block in scan.blocks:
        halves = np.frombuffer(
            data, dtype="<f2", count=len(block.ids) * dimension, offset=block.vectors_at
        ).reshape(-1, dimension)
        finite = np.isfinite(halves).all(axis=1).tolist()  # (others are embedded again)
        keep = []
        for n, entry_id in enumerate(block.ids):
            key = (entry_id, block.digests[8 * n : 8 * n + 8])
            if finite[n] and key not in seen:
                seen.add(key)
                keep.append(n)
                ids.append(entry_id)
                digests.append(key[1])
        parts.append(halves[keep])
    if not ids:
        return None
    return Rows(ids, b"".join(digests), from_float16(np, np.concatenate(parts)))


def parse_jsonl(data: bytes, dimension: int) -> Rows | None:
    """The vectors of a JSONL vector file older versions wrote (one line per vector,
    ``{"id", "h", "v": base64 float32}``), as stored rows; lines that are damaged, of
    another dimension or without a text hash are skipped. None when none is left."""
    import numpy as np

    ids: list[str] = []
    hashes: list[str] = []
    raws: list[bytes] = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            raw = base64.b64decode(record["v"], validate=True)
            entry_id, digest = record["id"], record.get("h")
        except (ValueError, TypeError, KeyError, binascii.Error):
            continue
        if (
            len(raw) != 4 * dimension
            or not isinstance(entry_id, str)
            or not isinstance(digest, str)
            or len(digest) != 16
            or not _is_hash(digest)
        ):
            continue
        ids.append(entry_id)
        hashes.append(digest)
        raws.append(raw)
    if not ids:
        return None
    arr = np.frombuffer(b"".join(raws), dtype="<f4").reshape(len(ids), dimension)
    if not np.isfinite(arr).all():
        keep = np.isfinite(arr).all(axis=1)
        arr = arr[keep]
        ids = [i for i, k in zip(ids, keep.tolist(), strict=True) if k]
        hashes = [h for h, k in zip(hashes, keep.tolist(), strict=True) if k]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    arr = arr / np.where(norms > 0, norms, 1.0)
    return Rows(ids, hashes, quantize(np, arr)) if ids else None


def _is_hash(digest: str) -> bool:
    """True for 16 hex digits (8 bytes)."""
    try:
        return len(bytes.fromhex(digest)) == 8
    except ValueError:
        return False
