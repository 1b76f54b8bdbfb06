"""The snapshot archive format: a whole memory folder as one object.

Version 2 (written by fsmemory when no derived entry is binary)::

    {"format": "fsmemory-archive", "version": 2, "created_at": "2026-...Z",
     "files": {"MEMORY.md": {"encoding": "utf-8", "content": "# Agent Memory\\n..."},
               "logs/2026-03-13.jsonl": {"encoding": "utf-8", "content": "..."},
               "notes.bin": {"encoding": "base64", "content": "AAEC..."}}}

A base may also carry **derived** files (``"derived": {"index": {"encoding":
"zlib-base64", "content": "..."}}``): caches that a restore may install beside the
folder's files (the search index's cache, see :mod:`fsmemory.memory._index_cache`, and the vector
files of hybrid recall by their paths, see :mod:`fsmemory.memory._vectravel`),
never files of the memory. They are read apart (:func:`unpack_derived`), a damaged one
is no cache (None), and readers that do not know the key ignore it.

Version 3 (written when a derived entry is :class:`RawMember`: bytes that verify
themselves and do not compress, the vector parts) is a small binary frame, so that
those bytes travel as they are (no base64, no zlib) and a restore takes them without
decoding::

    magic          8   b"\\x89FSMARC\\n"  (not JSON: a JSON reader stops at its first byte)
    version        u16 3
    reserved       u16 0
    document crc32 u32 of the document's bytes
    document size  u64
    document       the JSON document of version 2 with "version": 3, its derived
                   entries in "members" instead of "derived":
                   {name: {"encoding": "raw" | "zlib", "offset": n, "length": n}},
                   and "payload": the size of the payload
    payload        the members' bytes (offsets from the payload's start)

Integers are little-endian. The frame is checked whole before anything is used: a
size past the end, a payload of another size than the document says (a truncated
object), a document whose checksum fails or a member outside the payload raise
:class:`~fsmemory.errors.SnapshotError` (a size is compared with the object's length
before anything is allocated). A member's content is a cache like any derived entry:
its reader verifies it (vector parts by their blocks' checksums, zlib members by
zlib's), and one that cannot be read is no cache. An fsmemory older than version 3
fails on such an object (it is not JSON) instead of misreading it; bases without
binary members stay version 2.

Version 1 (the seed's archive, ``{"version": 1, "files": {...}}``) is read unchanged, so
existing snapshots migrate. :func:`unpack_archive` validates the whole document before
anything is written: a path that escapes the root, an absolute path, NUL or control
characters, a reserved name, an unknown encoding or bad base64 raises
:class:`~fsmemory.errors.SnapshotError`.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

from fsmemory import _jsonutil
from fsmemory.errors import InvalidPathError, SnapshotError
from fsmemory.fs.paths import validate_path

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "FRAME_MAGIC",
    "Member",
    "RawMember",
    "decode_file",
    "encode_derived",
    "encode_file",
    "is_framed",
    "pack_archive",
    "unpack_archive",
    "unpack_derived",
]

ARCHIVE_FORMAT = "fsmemory-archive"
ARCHIVE_VERSION = 2
#: the version of an archive with binary members (a frame, see the module docstring)
FRAMED_VERSION = 3
_SUPPORTED_VERSIONS = (1, 2)
FRAME_MAGIC = b"\x89FSMARC\n"
_FRAME = struct.Struct("<8sHHIQ")  # magic, version, reserved, document crc32, size


class RawMember(bytes):
    """Derived bytes that an archive stores as they are, as a binary member of a
    version-3 frame: for data that verifies itself and does not compress (the vector
    parts). Any other derived value is compressed."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Member:
    """A derived entry of a version-3 archive as stored: its encoding and its bytes
    (a view into the archive); :func:`unpack_derived` decodes it."""

    encoding: object
    data: memoryview


def is_framed(data: bytes) -> bool:
    """True when ``data`` starts as a version-3 archive (a binary frame)."""
    return data[: len(FRAME_MAGIC)] == FRAME_MAGIC


def encode_file(data: bytes) -> dict[str, str]:
    """``{"encoding": "utf-8", "content": text}``, or base64 for non-UTF-8 bytes."""
    try:
        return {"encoding": "utf-8", "content": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"encoding": "base64", "content": base64.b64encode(data).decode("ascii")}


def decode_file(path: str, spec: object) -> bytes:
    """Inverse of :func:`encode_file`.

    Raises:
        SnapshotError: an unknown encoding or malformed content.
    """
    if not isinstance(spec, Mapping):
        raise SnapshotError(f"archive entry for {path!r} is not an object")
    encoding = spec.get("encoding", "utf-8")
    content = spec.get("content")
    if not isinstance(content, str):
        raise SnapshotError(f"archive entry for {path!r} has no string content")
    if encoding == "utf-8":
        try:
            return content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SnapshotError(f"archive entry for {path!r} is not valid UTF-8") from exc
    if encoding == "base64":
        try:
            return base64.b64decode(content.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError) as exc:
            raise SnapshotError(f"archive entry for {path!r} has invalid base64") from exc
    raise SnapshotError(f"archive entry for {path!r} has unknown encoding {encoding!r}")


def check_archive_path(path: object) -> str:
    """Validate one archive path (relative, no traversal, no reserved names)."""
    if not isinstance(path, str):
        raise SnapshotError("archive path is not a string")
    try:
        return validate_path(path)
    except InvalidPathError as exc:
        raise SnapshotError(f"unsafe path in snapshot: {exc}") from exc


def pack_archive(files: Mapping[str, bytes], derived: Mapping[str, bytes] | None = None) -> bytes:
    """Serialize a folder (path -> bytes) as an archive, with ``derived`` files (name
    -> bytes: caches, see the module docstring) beside it: a version-2 JSON document
    (derived files compressed in it), or a version-3 frame when a derived value is a
    :class:`RawMember` (stored as it is; the others compressed, as binary members)."""
    document: dict[str, Any] = {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "created_at": datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "files": {path: encode_file(files[path]) for path in sorted(files)},
    }
    if derived and any(isinstance(data, RawMember) for data in derived.values()):
        return _pack_frame(document, derived)
    if derived:
        document["derived"] = {name: encode_derived(data) for name, data in sorted(derived.items())}
    return _jsonutil.dumps(document)


def _pack_frame(document: dict[str, Any], derived: Mapping[str, bytes]) -> bytes:
    """``document`` and ``derived`` as a version-3 frame (see the module docstring)."""
    members: dict[str, dict[str, Any]] = {}
    payload: list[bytes] = []
    offset = 0
    for name, data in sorted(derived.items()):
        raw = isinstance(data, RawMember)
        stored = data if raw else zlib.compress(data, 1)
        members[name] = {
            "encoding": "raw" if raw else "zlib",
            "offset": offset,
            "length": len(stored),
        }
        payload.append(stored)
        offset += len(stored)
    document = {**document, "version": FRAMED_VERSION, "members": members, "payload": offset}
    text = _jsonutil.dumps(document)
    head = _FRAME.pack(FRAME_MAGIC, FRAMED_VERSION, 0, zlib.crc32(text), len(text))
    return b"".join([head, text, *payload])


_DERIVED_ENCODING = "zlib-base64"


def encode_derived(data: bytes) -> dict[str, str]:
    """One derived entry (``{"encoding": "zlib-base64", "content": ...}``), as a base's
    ``"derived"`` object and a delta's hold them; :func:`unpack_derived` reads it."""
    return {
        "encoding": _DERIVED_ENCODING,
        "content": base64.b64encode(zlib.compress(data, 1)).decode("ascii"),
    }


def unpack_archive(data: bytes) -> dict[str, bytes]:
    """Parse and validate an archive (version 1, 2 or 3) into path -> bytes.

    Raises:
        SnapshotError: not an archive, an unsupported version, or any unsafe entry.
    """
    return unpack_archive_parts(data)[0]


def unpack_archive_parts(data: bytes) -> tuple[dict[str, bytes], dict[str, Any]]:
    """:func:`unpack_archive`, and the archive's derived entries as stored (name ->
    entry, unchecked: :func:`unpack_derived` decodes one), from one parse.

    Raises:
        SnapshotError: as :func:`unpack_archive` (never for a derived entry's content;
            for a version-3 frame whose members do not lie inside it).
    """
    members: dict[str, Any] | None = None
    if is_framed(data):
        document, members = _unpack_frame(data)
    else:
        try:
            document = _jsonutil.loads(data)
        except (ValueError, TypeError) as exc:
            raise SnapshotError(f"snapshot is not valid JSON: {exc}") from exc
        if not isinstance(document, dict):
            raise SnapshotError("snapshot is not a JSON object")
        version = document.get("version")
        if version not in _SUPPORTED_VERSIONS:
            raise SnapshotError(f"unsupported snapshot version {version!r}")
    files = document.get("files")
    if not isinstance(files, dict):
        raise SnapshotError("snapshot has no 'files' object")
    out: dict[str, bytes] = {}
    for path, spec in files.items():
        out[check_archive_path(path)] = decode_file(path, spec)
    if members is not None:
        return out, members
    derived = document.get("derived")
    return out, dict(derived) if isinstance(derived, dict) else {}


def _unpack_frame(data: bytes) -> tuple[dict[str, Any], dict[str, Member]]:
    """(the document, its members) of a version-3 frame, checked whole.

    Raises:
        SnapshotError: a frame cut short or of another size than it says, a document
            that fails its checksum or is not an archive's, a member outside the payload.
    """
    if len(data) < _FRAME.size:
        raise SnapshotError("snapshot archive frame is cut short")
    _, version, reserved, crc, size = _FRAME.unpack_from(data)
    if version != FRAMED_VERSION or reserved:
        raise SnapshotError(f"unsupported snapshot frame version {version!r}")
    start = _FRAME.size
    if size > len(data) - start:
        raise SnapshotError("snapshot archive frame is cut short (document)")
    view = memoryview(data)
    text = view[start : start + size]
    if zlib.crc32(text) != crc:
        raise SnapshotError("snapshot archive document fails its checksum")
    try:
        document = _jsonutil.loads(bytes(text))
    except (ValueError, TypeError) as exc:
        raise SnapshotError(f"snapshot archive document is not valid JSON: {exc}") from exc
    if (
        not isinstance(document, dict)
        or document.get("format") != ARCHIVE_FORMAT
        or document.get("version") != FRAMED_VERSION
    ):
        raise SnapshotError("snapshot archive frame holds no fsmemory archive document")
    payload = view[start + size :]
    if document.get("payload") != len(payload) or not _is_count(document.get("payload")):
        raise SnapshotError("snapshot archive frame is cut short or has bytes past its end")
    specs = document.get("members")
    if not isinstance(specs, dict):
        raise SnapshotError("snapshot archive frame has no 'members' object")
    members: dict[str, Member] = {}
    for name, spec in specs.items():
        if not isinstance(spec, dict):
            raise SnapshotError(f"snapshot archive member {name!r} is not an object")
        offset, length = spec.get("offset"), spec.get("length")
        if not (_is_count(offset) and _is_count(length) and offset + length <= len(payload)):
            raise SnapshotError(f"snapshot archive member {name!r} lies outside the frame")
        members[name] = Member(spec.get("encoding"), payload[offset : offset + length])
    return document, members


def _is_count(value: object) -> TypeGuard[int]:
    """True for a non-negative int (not a bool)."""
    return type(value) is int and value >= 0


def unpack_derived(entry: object) -> bytes | None:
    """The bytes of one derived entry of an archive (as stored in a version-2
    document or a delta, or a version-3 :class:`Member`); None when it cannot be read
    (an unknown encoding, bad base64, a damaged stream): a cache that cannot be read is
    no cache."""
    if isinstance(entry, Member):
        if entry.encoding == "raw":
            return bytes(entry.data)
        if entry.encoding != "zlib":
            return None
        return _inflate(entry.data)
    if not isinstance(entry, Mapping) or entry.get("encoding") != _DERIVED_ENCODING:
        return None
    content = entry.get("content")
    if not isinstance(content, str):
        return None
    try:
        data = base64.b64decode(content.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    return _inflate(data)


#: A derived entry inflates to at most this many times its compressed size (plus
#: :data:`INFLATE_SLACK`): caches fsmemory writes stay far below it (vector parts barely
#: compress, an index cache by a few times), and a hostile stream that would inflate
#: past it (zlib reaches about 1000:1) is no cache instead of gigabytes in memory.
INFLATE_RATIO = 64
INFLATE_SLACK = 1 << 20


def _inflate(data: bytes | memoryview) -> bytes | None:
    """``zlib.decompress(data)`` within :data:`INFLATE_RATIO`; None for a damaged
    stream, one that does not end, or one that would inflate past the bound."""
    limit = INFLATE_RATIO * len(data) + INFLATE_SLACK
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit)
    except (zlib.error, ValueError):
        return None
    if inflater.unconsumed_tail or not inflater.eof:
        return None
    return out
