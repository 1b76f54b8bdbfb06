"""The snapshot archive format: a whole memory folder as one JSON document.

Version 2 (written by fsmemory)::

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

Version 1 (the seed's archive, ``{"version": 1, "files": {...}}``) is read unchanged, so
existing snapshots migrate. :func:`unpack_archive` validates the whole document before
anything is written: a path that escapes the root, an absolute path, NUL or control
characters, a reserved name, an unknown encoding or bad base64 raises
:class:`~fsmemory.errors.SnapshotError`.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fsmemory import _jsonutil
from fsmemory.errors import InvalidPathError, SnapshotError
from fsmemory.fs.paths import validate_path

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "decode_file",
    "encode_derived",
    "encode_file",
    "pack_archive",
    "unpack_archive",
    "unpack_derived",
]

ARCHIVE_FORMAT = "fsmemory-archive"
ARCHIVE_VERSION = 2
_SUPPORTED_VERSIONS = (1, 2)


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
    """Serialize a folder (path -> bytes) as a version-2 archive, with ``derived``
    files (name -> bytes: caches, see the module docstring) compressed beside it."""
    document: dict[str, Any] = {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "created_at": datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "files": {path: encode_file(files[path]) for path in sorted(files)},
    }
    if derived:
        document["derived"] = {name: encode_derived(data) for name, data in sorted(derived.items())}
    return _jsonutil.dumps(document)


_DERIVED_ENCODING = "zlib-base64"


def encode_derived(data: bytes) -> dict[str, str]:
    """One derived entry (``{"encoding": "zlib-base64", "content": ...}``), as a base's
    ``"derived"`` object and a delta's hold them; :func:`unpack_derived` reads it."""
    return {
        "encoding": _DERIVED_ENCODING,
        "content": base64.b64encode(zlib.compress(data, 1)).decode("ascii"),
    }


def unpack_archive(data: bytes) -> dict[str, bytes]:
    """Parse and validate an archive (version 1 or 2) into path -> bytes.

    Raises:
        SnapshotError: not an archive, an unsupported version, or any unsafe entry.
    """
    return unpack_archive_parts(data)[0]


def unpack_archive_parts(data: bytes) -> tuple[dict[str, bytes], dict[str, Any]]:
    """:func:`unpack_archive`, and the archive's derived entries as stored (name ->
    entry, unchecked: :func:`unpack_derived` decodes one), from one parse.

    Raises:
        SnapshotError: as :func:`unpack_archive` (never for a derived entry).
    """
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
    derived = document.get("derived")
    return out, dict(derived) if isinstance(derived, dict) else {}


def unpack_derived(entry: object) -> bytes | None:
    """The bytes of one derived entry of an archive; None when it cannot be read (an
    unknown encoding, bad base64, a damaged stream): a cache that cannot be read is no
    cache."""
    if not isinstance(entry, Mapping) or entry.get("encoding") != _DERIVED_ENCODING:
        return None
    content = entry.get("content")
    if not isinstance(content, str):
        return None
    try:
        return zlib.decompress(base64.b64decode(content.encode("ascii"), validate=True))
    except (binascii.Error, UnicodeEncodeError, zlib.error, ValueError):
        return None
