"""Vectors that travel with a snapshot: the parts of the vector files
(``vectors/<name>-<dimension>.i8v``, see :mod:`fsmemory.memory._vecfile`) that deltas
and bases carry, and how a restore folds and installs them.

A **part** is the bytes of a small vector file: a header naming the embedder and the
dimension (its generation is zeros), then blocks. A delta carries, under its
``"derived"`` key (``{path: {"encoding": "zlib-base64", "content": ...}}``, which
readers that do not know it ignore), one part per vector file that grew since the last
sync: only the rows the snapshot does not hold yet, in one block. A fold's base carries
one part per vector file with the rows of the base, of every delta folded and of the
folder, each ``(entry id, text hash)`` once, and only those of live entries (a forgotten
or expired entry's vector, or one made from a text since edited, is dropped), in one
block. The parts a fold encodes are :class:`~fsmemory.snapshot.archive.RawMember`: the
base stores them as they are, binary members of a version-3 archive (see
:mod:`fsmemory.snapshot.archive`; a version-2 base held them zlib-base64 under its
``"derived"`` key, which is still read). A restore installs a base's block as it is
(checked, not decoded or encoded again), the deltas' rows after it in one block.

Nothing is trusted blindly: a part whose header does not verify or names another file
than its path is skipped whole, and only blocks whose checksums hold are taken (see
:func:`~fsmemory.memory._vecfile.scan_blocks`); the file a restore installs is checked
again by every reader, and a vector serves an entry only while its id and text hash
match. A damaged part costs embeddings, never an answer.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fsmemory import _jsonutil
from fsmemory._log import get_logger
from fsmemory.errors import InvalidPathError
from fsmemory.fs.paths import validate_path
from fsmemory.memory._vecfile import (
    HEADER_SIZE,
    encode_block,
    encode_header,
    read_header,
    row_bytes,
    scan_blocks,
)
from fsmemory.memory._vectors import VECTOR_DIR, VECTOR_SUFFIX, text_hash
from fsmemory.memory.layout import log_date
from fsmemory.snapshot.archive import RawMember, unpack_derived

if TYPE_CHECKING:
    from fsmemory.fs.base import StorageRoot

__all__ = ["VectorFold", "VectorSync", "is_vector_file", "live_keys", "vector_parts"]

logger = get_logger(__name__)

_ZERO_GENERATION = bytes(16)
#: a block of this many rows or more, kept whole, is written again as it is (a smaller
#: one is merged with its neighbours: a restored file stays a few blocks)
WHOLE_ROWS = 256

Key = tuple[str, str]


def is_vector_file(path: str) -> bool:
    """True for a binary vector file's path (``vectors/<name>.i8v``, safe, not nested)."""
    if not (path.startswith(VECTOR_DIR + "/") and path.endswith(VECTOR_SUFFIX)):
        return False
    if path.count("/") != 1:
        return False
    try:
        validate_path(path)
    except InvalidPathError:
        return False
    return True


@dataclass
class _Run:
    """Rows held from one verified block, in its order: the whole block as it is
    (``block``, its vectors from ``vectors_at``) when every row of it was kept, else
    the kept rows' vectors (``vectors``: their stored bytes, row after row)."""

    ids: list[str]
    hashes: list[str]
    block: memoryview | None = None
    vectors_at: int = 0
    vectors: bytes | None = None

    def raw(self, dimension: int, rows: Sequence[int]) -> bytes:
        """The stored bytes (row after row) of the run's ``rows`` (ascending indexes
        into :attr:`ids`)."""
        width = row_bytes(dimension)
        if self.vectors is not None:
            data: bytes | memoryview = self.vectors
            at = 0
        else:
            assert self.block is not None
            data, at = self.block, self.vectors_at
        return _rows_of(data, at, width, rows, len(self.ids))


def _rows_of(
    data: bytes | memoryview, at: int, width: int, rows: Sequence[int], count: int
) -> bytes:
    """The bytes of ``rows`` (ascending) of the ``count`` rows of ``width`` bytes that
    start at ``at`` in ``data``."""
    if len(rows) == count:
        return bytes(data[at : at + count * width])
    return b"".join([data[at + n * width : at + (n + 1) * width] for n in rows])


@dataclass
class _File:
    """The rows gathered for one vector file."""

    name: str
    dimension: int
    keys: dict[Key, None] = field(default_factory=dict)
    runs: list[_Run] = field(default_factory=list)


class VectorFold:
    """The verified rows of vector files gathered from parts and files, each
    ``(id, text hash)`` once per file (the first one met is kept)."""

    def __init__(self) -> None:
        self.files: dict[str, _File] = {}

    def add(
        self, path: str, data: Any, *, start: int = HEADER_SIZE, known: set[Key] | None = None
    ) -> int:
        """Take the verified rows of ``data`` (a part or a whole vector file; blocks are
        read from ``start``) for ``path``, but those of ``known`` keys; returns where
        the verified blocks end (-1: skipped). A part whose header does not verify or
        names another file than ``path`` is skipped whole.

        A block whose rows are all taken is kept as it is (written again without being
        encoded again); a block's start is known only while no damaged bytes precede
        it, so after damage the rows taken are copied out."""
        if data is None or not is_vector_file(path):
            return -1
        header = read_header(data)
        if (
            header is None
            or path != f"{VECTOR_DIR}/{header.name}-{header.dimension}{VECTOR_SUFFIX}"
        ):
            logger.info("a vector part for %s is foreign or damaged: skipped", path)
            return -1
        held = self.files.get(path)
        if held is None:
            held = self.files[path] = _File(header.name, header.dimension)
        scan = scan_blocks(data, start, len(data), held.dimension)
        if scan.skipped:
            logger.info("%d bytes of a vector part for %s do not verify", scan.skipped, path)
        view = memoryview(data)
        at = start  # where the next block starts, while no bytes were skipped
        for block in scan.blocks:
            begins, at = at, block.end
            hashes = block.hashes  # a property that decodes the whole block: read it once
            keep = self._fresh(held, list(zip(block.ids, hashes, strict=True)), known)
            if not keep:
                continue
            if len(keep) == len(block.ids) and not scan.skipped:
                whole = view[begins : block.end]
                held.runs.append(_Run(block.ids, hashes, whole, block.vectors_at - begins))
                continue
            width = row_bytes(held.dimension)
            vectors = _rows_of(view, block.vectors_at, width, keep, len(block.ids))
            ids = [block.ids[n] for n in keep]
            held.runs.append(_Run(ids, [hashes[n] for n in keep], vectors=vectors))
        return scan.end

    @staticmethod
    def _fresh(held: _File, keys: list[Key], known: set[Key] | None) -> list[int]:
        """The rows of ``keys`` neither held nor ``known`` (each key once), now held."""
        if not held.keys and not known:
            first = dict.fromkeys(keys)
            if len(first) == len(keys):  # (the first block of a part: all new)
                held.keys = first
                return list(range(len(keys)))
        keep = []
        for n, key in enumerate(keys):
            if key not in held.keys and (known is None or key not in known):
                held.keys[key] = None
                keep.append(n)
        return keep

    def add_entries(self, entries: Mapping[str, object]) -> None:
        """Take the vector parts among derived ``entries`` (name -> entry as stored)."""
        for path in sorted(entries):
            if is_vector_file(path):
                self.add(path, unpack_derived(entries[path]))

    def add_deltas(self, deltas: Iterable[tuple[str, bytes]]) -> None:
        """Take the vector parts the deltas carry (a delta that cannot be read is the
        fold's to report: skipped here)."""
        for _, data in deltas:
            if b'"derived"' not in data:
                continue
            try:
                delta = _jsonutil.loads(data)
            except ValueError:
                continue
            derived = delta.get("derived") if isinstance(delta, dict) else None
            if isinstance(derived, dict):
                self.add_entries(derived)

    def keys(self, path: str) -> set[Key]:
        """The ``(id, text hash)`` keys held for ``path``."""
        held = self.files.get(path)
        return set() if held is None else set(held.keys)

    def encode(self, path: str, dead: Dead | None = None) -> RawMember | None:
        """A part (header, blocks) of the rows held for ``path``, in the order they
        were taken; None when none is left.

        Without ``dead``, blocks of at least :data:`WHOLE_ROWS` rows kept whole are
        written as they are, the other rows between them as one block each (a restore:
        a base's block is not encoded again, the deltas' rows after it go into one).
        With ``dead``, the rows it says no live entry needs are left out and all the
        others go into one block (a fold: a base's part stays one block, however many
        deltas it took in)."""
        pieces = self.pieces(path, dead)
        return None if pieces is None else RawMember(b"".join(pieces))

    def pieces(
        self, path: str, dead: Dead | None = None, generation: bytes = _ZERO_GENERATION
    ) -> list[bytes | memoryview] | None:
        """What :meth:`encode` joins: the header (of ``generation``), then the blocks
        (a block kept whole is the view of the bytes it was read from); None when no
        row is left."""
        held = self.files.get(path)
        if held is None:
            return None
        out: list[bytes | memoryview] = [encode_header(held.name, held.dimension, generation)]
        loose: list[tuple[_Run, Sequence[int]]] = []
        for run in held.runs:
            rows: Sequence[int]
            if dead is None:
                rows = range(len(run.ids))
            else:
                keys = zip(run.ids, run.hashes, strict=True)
                rows = [n for n, key in enumerate(keys) if dead.lives(key)]
            if not rows:
                continue
            if dead is None and run.block is not None and len(run.ids) >= WHOLE_ROWS:
                out += self._block(held, loose)
                loose = []
                out.append(run.block)
            else:
                loose.append((run, rows))
        out += self._block(held, loose)
        return None if len(out) == 1 else out

    def install(self, root: StorageRoot, path: str) -> tuple[bytes, int] | None:
        """Write the vector file ``path`` of this fold into ``root`` (a restore's empty
        folder), under a new generation: ``(generation, size written)``, or None when
        no row is left. On a root whose appends are native (a local folder) the header
        is written (replacing any file there) and the blocks appended to it: the same
        bytes, without the version digest a whole write computes over megabytes of
        vectors (a file cut short by a crash keeps its whole blocks, as a vector file
        whose append was cut does)."""
        generation = os.urandom(16)
        pieces = self.pieces(path, generation=generation)
        if pieces is None:
            return None
        if root.capabilities.native_append:
            blocks = b"".join(pieces[1:])
            root.write(path, bytes(pieces[0]))
            at = root.append(path, blocks)
            # rows another writer appended first are read by the next save
            return generation, HEADER_SIZE + len(blocks) if at == HEADER_SIZE else HEADER_SIZE
        data = b"".join(pieces)
        root.write(path, data)
        return generation, len(data)

    @staticmethod
    def _block(held: _File, loose: list[tuple[_Run, Sequence[int]]]) -> list[bytes]:
        """One block of the ``loose`` rows (none: no block)."""
        if not loose:
            return []
        ids: list[str] = []
        hashes: list[str] = []
        pieces = []
        for run, rows in loose:
            pieces.append(run.raw(held.dimension, rows))
            whole = len(rows) == len(run.ids)
            ids += run.ids if whole else [run.ids[n] for n in rows]
            hashes += run.hashes if whole else [run.hashes[n] for n in rows]
        return [encode_block(ids, hashes, b"".join(pieces))]

    def encode_all(self, dead: Dead | None = None) -> dict[str, bytes]:
        """Every file's part (see :meth:`encode`), by path."""
        out: dict[str, bytes] = {}
        for path in sorted(self.files):
            part = self.encode(path, dead)
            if part is not None:
                out[path] = part
        return out


@dataclass
class Dead:
    """Which ``(id, text hash)`` rows no live entry of a folder needs: rows of forgotten
    ids, of expired entries, or made from a text the entry's record no longer has.
    Rows of ids the logs do not record (MEMORY.md bullets, records without an id) are
    kept: a row that serves no entry is never used."""

    forgotten: set[str]
    records: dict[str, tuple[str, bool]]  # id -> (text hash, expired)

    def lives(self, key: Key) -> bool:
        """True when the row ``key`` may still serve a live entry."""
        entry_id, digest = key
        if entry_id in self.forgotten:
            return False
        record = self.records.get(entry_id)
        return record is None or (record[0] == digest and not record[1])


def live_keys(files: Mapping[str, bytes], now: datetime | None = None) -> Dead:
    """What the daily logs among ``files`` say of each entry (see :class:`Dead`)."""
    moment = (now or datetime.now(tz=UTC)).strftime("%Y-%m-%dT%H:%M:%S")
    forgotten: set[str] = set()
    records: dict[str, tuple[str, bool]] = {}
    for path in sorted(files):
        if log_date(path) is None:
            continue
        for line in _lines(files[path]):
            try:
                record = _jsonutil.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            entry_id = record.get("id")
            if not isinstance(entry_id, str):
                continue
            if record.get("op") == "forget":
                forgotten.add(entry_id)
                continue
            content = record.get("content")
            if not isinstance(content, str):
                continue
            expires = record.get("expires_at")
            # ISO-8601 UTC stamps compare as text, to the second (a vector dropped up
            # to a second early costs one embedding, never an answer)
            expired = isinstance(expires, str) and expires[:19] <= moment
            records[entry_id] = (text_hash(content), expired)
    return Dead(forgotten, records)


def _lines(data: bytes) -> Iterable[bytes]:
    return (line for line in data.split(b"\n") if line.strip())


@dataclass(slots=True)
class VectorSync:
    """What the snapshot holds of the vector files: per path, the (generation, end) of
    the local file up to which its rows were synced, the ``(id, text hash)`` keys the
    snapshot holds, and the vector parts of the current base (path -> bytes)."""

    synced: dict[str, tuple[bytes, int]]
    keys: dict[str, set[tuple[str, str]]]
    base: dict[str, bytes]

    def copy(self) -> VectorSync:
        """A copy (the sets and dicts are not shared)."""
        return VectorSync(
            dict(self.synced), {p: set(k) for p, k in self.keys.items()}, dict(self.base)
        )


def vector_parts(derived: dict[str, Any]) -> dict[str, bytes]:
    """The vector parts among a base's derived entries (path -> bytes; an entry that
    cannot be read is left out)."""
    parts: dict[str, bytes] = {}
    for path, entry in derived.items():
        if is_vector_file(path):
            data = unpack_derived(entry)
            if data is not None:
                parts[path] = data
    return parts
