"""The one path validator.

Every path that reaches a storage root passes through :func:`validate_path`. A valid
path is relative, uses ``/`` as separator, and every segment is a plain name: no
``.``/``..`` (also not percent-encoded), no empty segments, no NUL or other control
characters, no backslashes, no drive letters, no lone surrogates, and no name in the
namespace fsmemory reserves for its own lock and temp files (``.fsmemory*``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from fsmemory.errors import InvalidPathError

__all__ = [
    "CACHE_PREFIX",
    "RESERVED_PREFIX",
    "cache_paths",
    "children",
    "is_reserved_name",
    "join_path",
    "validate_path",
]

#: Names starting with this are fsmemory's own (locks, temp files); never user data.
RESERVED_PREFIX = ".fsmemory"

#: Top-level names of fsmemory's persisted caches (derived data such as the search
#: index). Reserved like every ``.fsmemory*`` name: only :func:`cache_paths` lets them
#: through, for :meth:`~fsmemory.fs.base.StorageRoot.read_cache` and its siblings.
CACHE_PREFIX = ".fsmemory-cache"

_CACHE_ALLOWED: ContextVar[bool] = ContextVar("fsmemory_cache_paths", default=False)

MAX_SEGMENT_BYTES = 255
MAX_PATH_BYTES = 1024

# C0 and C1 controls, DEL, and the Unicode line/paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_DRIVE = re.compile(r"^[A-Za-z]:")


def is_reserved_name(name: str) -> bool:
    """True when ``name`` (one path segment) belongs to fsmemory's internal namespace."""
    return name.startswith(RESERVED_PREFIX)


@contextmanager
def cache_paths() -> Iterator[None]:
    """Within the block, :func:`validate_path` accepts top-level ``.fsmemory-cache*``
    names (fsmemory's own cache files); every other reserved name stays refused."""
    token = _CACHE_ALLOWED.set(True)
    try:
        yield
    finally:
        _CACHE_ALLOWED.reset(token)


def validate_path(path: str, *, allow_empty: bool = False) -> str:
    """Check a root-relative path and return it unchanged.

    Args:
        path: a relative POSIX path such as ``"logs/2026-01-01.jsonl"``.
        allow_empty: accept ``""`` (the root itself), e.g. for listings.

    Returns:
        The same path.

    Raises:
        InvalidPathError: the path is malformed or could escape its root.
    """
    if not isinstance(path, str):
        raise InvalidPathError(f"path must be a str, not {type(path).__name__}")
    if path == "":
        if allow_empty:
            return path
        raise InvalidPathError("path is empty")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidPathError("path is not valid Unicode (lone surrogate)") from exc
    if len(encoded) > MAX_PATH_BYTES:
        raise InvalidPathError(f"path is longer than {MAX_PATH_BYTES} bytes")
    if _CONTROL.search(path):
        raise InvalidPathError(f"path contains a control character: {path!r}")
    if "\\" in path:
        raise InvalidPathError(f"path contains a backslash: {path!r}")
    if path.startswith("/"):
        raise InvalidPathError(f"path must be relative: {path!r}")
    if _DRIVE.match(path):
        raise InvalidPathError(f"path looks like a drive letter: {path!r}")
    if _CACHE_ALLOWED.get() and path.startswith(CACHE_PREFIX) and "/" not in path:
        if len(encoded) > MAX_SEGMENT_BYTES:
            raise InvalidPathError(f"path segment longer than {MAX_SEGMENT_BYTES} bytes")
        return path
    for segment in path.split("/"):
        _check_segment(segment, path)
    return path


def _check_segment(segment: str, path: str) -> None:
    if segment == "":
        raise InvalidPathError(f"path has an empty segment: {path!r}")
    if segment in (".", ".."):
        raise InvalidPathError(f"path has a {segment!r} segment: {path!r}")
    if "%" in segment:
        from urllib.parse import unquote  # a rare segment: spare every import its cost

        decoded = unquote(segment)
        if decoded in (".", "..") or "/" in decoded or "\\" in decoded or "\x00" in decoded:
            raise InvalidPathError(f"path has an encoded traversal segment: {path!r}")
    if is_reserved_name(segment):
        raise InvalidPathError(f"names starting with {RESERVED_PREFIX!r} are reserved: {path!r}")
    if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise InvalidPathError(f"path segment longer than {MAX_SEGMENT_BYTES} bytes")


def join_path(*parts: str) -> str:
    """Join relative path parts with ``/``, skipping empty parts (no validation)."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def children(rests: Iterable[str]) -> tuple[list[str], list[str]]:
    """Immediate file and directory names from paths relative to one directory.

    ``["a", "b/c", "b/d", ".fsmemory.lock"]`` -> ``(["a"], ["b"])`` (directories once,
    reserved names never; both lists unsorted).
    """
    files: list[str] = []
    dirs: set[str] = set()
    for rest in rests:
        head, sep, _ = rest.partition("/")
        if not head or is_reserved_name(head):
            continue
        if sep:
            dirs.add(head)
        else:
            files.append(head)
    return files, list(dirs)
