"""Vectors that travel with a snapshot: the parts of the vector files
(``vectors/<name>-<dimension>.f16v``, see :mod:`fsmemory.memory._vecfile`) that deltas
and bases carry, and how a restore folds and installs them.

A **part** is the bytes of a small vector file: a header naming the embedder and the
dimension (its generation is zeros), then blocks. A delta carries, under its
``"derived"`` key (``{path: {"encoding": "zlib-base64", "content": ...}}``, which
readers that do not know it ignore), one part per vector file that grew since the last
sync: only the rows the snapshot does not hold yet, in one block. A fold's base carries,
under the archive's ``"derived"`` key, one part per vector file with the rows of the
base, of every delta folded and of the folder, each ``(entry id, text hash)`` once, and
only those of live entries (a forgotten or expired entry's vector, or one made from a
text since edited, is dropped).

Nothing is trusted blindly: a part whose header does not verify or names another file
than its path is skipped whole, and only blocks whose checksums hold are taken (see
:func:`~fsmemory.memory._vecfile.scan_blocks`); the file a restore installs is checked
again by every reader, and a vector serves an entry only while its id and text hash
match. A damaged part costs embeddings, never an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fsmemory import _jsonutil
from fsmemory._log import get_logger
from fsmemory.errors import InvalidPathError
from fsmemory.fs.paths import validate_path
from fsmemory.memory._vecfile import (
    HEADER_SIZE,
    encode_block,
    encode_header,
    read_header,
    scan_blocks,
)
from fsmemory.memory._vectors import VECTOR_DIR, text_hash
from fsmemory.memory.layout import log_date
from fsmemory.snapshot.archive import unpack_derived

__all__ = ["VectorFold", "VectorSync", "is_vector_file", "live_keys", "vector_parts"]

logger = get_logger(__name__)

_SUFFIX = ".f16v"
_ZERO_GENERATION = bytes(16)

Key = tuple[str, str]


def is_vector_file(path: str) -> bool:
    """True for a binary vector file's path (``vectors/<name>.f16v``, safe, not nested)."""
    if not (path.startswith(VECTOR_DIR + "/") and path.endswith(_SUFFIX)):
        return False
    if path.count("/") != 1:
        return False
    try:
        validate_path(path)
    except InvalidPathError:
        return False
    return True


@dataclass
class _File:
    """The rows gathered for one vector file."""

    name: str
    dimension: int
    keys: dict[Key, None] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    parts: list[Any] = field(default_factory=list)  # float16 arrays, row order


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
        names another file than ``path`` is skipped whole."""
        if data is None or not is_vector_file(path):
            return -1
        header = read_header(data)
        if header is None or path != f"{VECTOR_DIR}/{header.name}-{header.dimension}{_SUFFIX}":
            logger.info("a vector part for %s is foreign or damaged: skipped", path)
            return -1
        held = self.files.get(path)
        if held is None:
            held = self.files[path] = _File(header.name, header.dimension)
        import numpy as np

        scan = scan_blocks(data, start, len(data), held.dimension)
        if scan.skipped:
            logger.info("%d bytes of a vector part for %s do not verify", scan.skipped, path)
        for block in scan.blocks:
            keep = []
            hashes = block.hashes  # a property that decodes the whole block: read it once
            for n, key in enumerate(zip(block.ids, hashes, strict=True)):
                if key not in held.keys and (known is None or key not in known):
                    held.keys[key] = None
                    keep.append(n)
            if not keep:
                continue
            count = len(block.ids) * held.dimension
            vectors = np.frombuffer(
                data, dtype="<f2", count=count, offset=block.vectors_at
            ).reshape(-1, held.dimension)
            held.parts.append(np.array(vectors[keep]))
            held.ids += [block.ids[n] for n in keep]
            held.hashes += [hashes[n] for n in keep]
        return scan.end

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

    def encode(self, path: str, dead: Dead | None = None) -> bytes | None:
        """A part (header, one block) of the rows held for ``path`` (those ``dead``
        says no live entry needs left out); None when none is left."""
        import numpy as np

        held = self.files.get(path)
        if held is None or not held.ids:
            return None
        rows = [
            n
            for n, key in enumerate(zip(held.ids, held.hashes, strict=True))
            if dead is None or dead.lives(key)
        ]
        if not rows:
            return None
        vectors = np.concatenate(held.parts) if len(held.parts) > 1 else held.parts[0]
        if len(rows) < len(held.ids):
            vectors = vectors[rows]
        return encode_header(held.name, held.dimension, _ZERO_GENERATION) + encode_block(
            [held.ids[n] for n in rows], [held.hashes[n] for n in rows], vectors
        )

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
