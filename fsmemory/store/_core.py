"""The path store's synchronous core, shared by its async face
(:class:`~fsmemory.store.FsspecKnowledgeStore`) and its blocking face
(:class:`~fsmemory.store.SyncKnowledgeStore`).

The core maps store paths (``/a/b``) to root-relative paths, applies the store's rules
(``None`` for a missing file or a directory, UTF-8 snapping of ranges, the size limit,
refusing ``/``) and publishes changes to the in-process hub. Every backend quirk stays in
the storage root (:mod:`fsmemory.fs`).
"""

from __future__ import annotations

from fsmemory.errors import (
    ContentTooLargeError,
    InvalidInputError,
    InvalidPathError,
    KeyNotFoundError,
    NotAFileError,
)
from fsmemory.fs.base import StorageRoot
from fsmemory.store._paths import split
from fsmemory.store._protocol import StoreStat
from fsmemory.store._watch import ChangeHub

__all__ = ["StoreCore"]

_CONTINUATION_MASK = 0xC0
_CONTINUATION = 0x80


def _snap_utf8(raw: bytes, start: int, want: int | None) -> bytes:
    """Trim ``raw`` (read from ``start``, ``want`` bytes asked plus up to 3 extra) to
    whole characters: a character belongs to the range holding its first byte."""
    cut = len(raw) if want is None else min(want, len(raw))
    extra = 0
    while cut < len(raw) and extra < 3 and raw[cut] & _CONTINUATION_MASK == _CONTINUATION:
        cut += 1
        extra += 1
    skip = 0
    if start > 0:
        while skip < min(3, cut) and raw[skip] & _CONTINUATION_MASK == _CONTINUATION:
            skip += 1
    return raw[skip:cut]


def _encode(content: str) -> bytes:
    if not isinstance(content, str):
        raise TypeError(f"content must be str, not {type(content).__name__} (use write_bytes)")
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"content is not valid Unicode: {exc}") from exc


def _check_offsets(start: int, end: int | None) -> None:
    if not isinstance(start, int) or (end is not None and not isinstance(end, int)):
        raise TypeError("read_range offsets must be int")
    if start < 0 or (end is not None and end < 0):
        raise ValueError(f"read_range offsets must be >= 0, got start={start} end={end}")


def _clash(norm: str) -> InvalidPathError:
    return InvalidPathError(f"{norm}: a file and a directory cannot share this name here")


class StoreCore:
    """The store API as blocking methods over one storage root (names, arguments and
    results as :class:`~fsmemory.store.FsspecKnowledgeStore`'s; docs there).

    Args:
        root: the storage root.
        hub: where changes are published for ``on_change``.
        max_file_bytes: the largest file a write may store or an append may grow.
    """

    __slots__ = ("hub", "max_file_bytes", "root")

    def __init__(self, root: StorageRoot, hub: ChangeHub, max_file_bytes: int | None) -> None:
        self.root = root
        self.hub = hub
        self.max_file_bytes = max_file_bytes

    def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes; None when missing or a directory."""
        _, rel = split(path)
        if not rel:
            return None
        try:
            return self.root.read_bytes(rel)
        except KeyNotFoundError:
            return None

    def read(self, path: str) -> str | None:
        """The file's text (invalid UTF-8 as U+FFFD); None when missing."""
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8", errors="replace")

    def write_bytes(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Replace the file atomically (conditionally when asked); the new version."""
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        norm, rel = split(path)
        if not rel:
            raise InvalidPathError("cannot write to '/': it is the store's root directory")
        limit = self.max_file_bytes
        if limit is not None and len(data) > limit:
            raise ContentTooLargeError(f"{norm}: {len(data)} bytes; the limit is {limit}")
        try:
            if not self.hub.active:  # the hot path: nobody is watching
                return self.root.write(
                    rel, bytes(data), if_version=if_version, create_only=create_only
                )
            with self.hub.changing(norm):
                return self.root.write(
                    rel, bytes(data), if_version=if_version, create_only=create_only
                )
        except NotAFileError as exc:
            raise _clash(norm) from exc

    def write(
        self, path: str, content: str, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """:meth:`write_bytes` for text (stored as UTF-8)."""
        return self.write_bytes(
            path, _encode(content), if_version=if_version, create_only=create_only
        )

    def append(self, path: str, content: str) -> int:
        """Append atomically; the offset where ``content`` starts."""
        data = _encode(content)
        norm, rel = split(path)
        if not rel:
            raise InvalidPathError("cannot append to '/': it is the store's root directory")
        limit = self.max_file_bytes
        if limit is not None:
            # Checked before appending; concurrent appenders may together pass the limit
            # by at most one append each.
            info = self.root.stat(rel)
            size = (info.size if info is not None else 0) + len(data)
            if size > limit:
                raise ContentTooLargeError(
                    f"{norm}: would grow to {size} bytes; the limit is {limit}"
                )
        try:
            if not self.hub.active:
                return self.root.append(rel, data)
            with self.hub.changing(norm):
                return self.root.append(rel, data)
        except NotAFileError as exc:
            raise _clash(norm) from exc

    def read_range(self, path: str, start: int, end: int | None = None) -> str:
        """Text of bytes ``[start, end)``, snapped to character boundaries."""
        _check_offsets(start, end)
        _, rel = split(path)
        if not rel or (end is not None and end <= start):
            return ""
        try:
            raw = self.root.read_range(rel, start, None if end is None else end + 3)
        except KeyNotFoundError:
            return ""
        want = None if end is None else end - start
        return _snap_utf8(raw, start, want).decode("utf-8", errors="replace")

    def list(self, path: str = "/") -> list[str]:
        """Sorted immediate children; directories end with ``/``."""
        _, rel = split(path)
        files, dirs = self.root.list_names(rel)
        names = [*files, *(name + "/" for name in dirs)]
        names.sort()
        return names

    def exists(self, path: str) -> bool:
        """True for a file or an implied directory (and ``/``)."""
        _, rel = split(path)
        if not rel:
            return True
        return self.root.stat(rel) is not None or self.root.has_entries(rel)

    def delete(self, path: str, *, allow_root: bool = False) -> None:
        """Delete the file and everything under ``path/`` (``/`` needs ``allow_root``)."""
        norm, rel = split(path)
        if not rel and not allow_root:
            raise InvalidPathError(
                "refusing to delete '/', the whole store: pass allow_root=True to mean it"
            )
        with self.hub.changing(norm) as change:
            change.changed = self.root.remove(rel) > 0

    def stat(self, path: str) -> StoreStat | None:
        """Size, mtime and compare-and-swap version; None when missing."""
        norm, rel = split(path)
        if not rel:
            return None
        # The version must be the compare-and-swap token, which on some backends is a
        # digest of the content, so read through the root's versioned read.
        try:
            current = self.root.read(rel)
        except KeyNotFoundError:
            return None
        info = self.root.stat(rel)
        mtime = info.mtime if info is not None else None
        return StoreStat(norm, len(current.data), mtime, current.version)
