"""The storage-root abstraction every backend implements.

A :class:`StorageRoot` is a directory on some fsspec filesystem, addressed by
root-relative paths. It offers the few primitives the rest of fsmemory is built on:
versioned reads, atomic writes, compare-and-swap, append, listing and delete. Backend
quirks live in the subclasses; callers never see them.
"""

from __future__ import annotations

import builtins
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from fsmemory._records import NamedTuple
from fsmemory.errors import (
    ConflictError,
    FsMemoryError,
    InvalidInputError,
    KeyNotFoundError,
    NotAFileError,
)
from fsmemory.fs.paths import CACHE_PREFIX, cache_paths, validate_path

__all__ = [
    "CacheData",
    "Capabilities",
    "FileInfo",
    "StorageRoot",
    "Versioned",
    "check_condition",
    "check_options",
    "check_range",
    "check_version",
    "content_version",
]

_T = TypeVar("_T")

if TYPE_CHECKING:
    import mmap

#: What a cache file is read as: its bytes, or on a local folder the file mapped
#: read-only (see :meth:`StorageRoot.read_cache`).
CacheData: TypeAlias = "bytes | mmap.mmap"


class FileInfo(NamedTuple):
    """What a listing or ``stat`` tells about one file (an immutable record).

    Attributes:
        path: root-relative path.
        size: size in bytes.
        mtime: modification time (seconds since the epoch) when the backend knows it.
        token: a cheap change token (etag, generation, inode+size+mtime+ctime, ...): it
            changes whenever the content changes. Not necessarily usable as a CAS version.
    """

    path: str
    size: int
    mtime: float | None
    token: str


class Versioned(NamedTuple):
    """File content together with the version token to pass to a compare-and-swap (an
    immutable record)."""

    data: bytes
    version: str


class Capabilities(NamedTuple):
    """What a storage root can do natively (an immutable record).

    Attributes:
        conditional_write: compare-and-swap and create-only writes are enforced by the
            service itself (S3 ``If-Match``, GCS ``ifGenerationMatch``, a Redis script,
            an OS lock). When False the root emulates them with a lease lock.
        native_append: appends are O(1) in the file size and atomic.
        atomic_write: a reader never observes a partially written file.
        ranged_read: byte ranges can be read without fetching the whole file.
        watch: change notifications are available without polling.
        cheap_lock: :meth:`StorageRoot.lock` is an in-process or OS lock costing
            microseconds (local folders, memory), not a network lease.
        local_io: every call is a short local operation (syscalls, memory, SQLite) that
            costs less than a thread hop; the path store runs it inline on the event
            loop. Such a root raises :class:`fsmemory.fs._nowait.WouldBlock` instead of
            waiting for a lock while :func:`fsmemory.fs._nowait.no_wait` is active.
    """

    conditional_write: bool
    native_append: bool
    atomic_write: bool = True
    ranged_read: bool = True
    watch: bool = False
    cheap_lock: bool = False
    local_io: bool = False


#: the storage-option key under which a :class:`~fsmemory.fs.RetryPolicy` (or a dict of
#: its fields) can be passed to :func:`fsmemory.fs.open_root` for S3, GCS and Redis roots;
#: every root accepts it
OPTION_KEY = "retry"

_CACHE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def check_condition(if_version: str | None, create_only: bool) -> None:
    """The one rule for write conditions: at most one of them."""
    if create_only and if_version is not None:
        raise ValueError("pass if_version or create_only, not both")


def check_version(version: str) -> None:
    """The one rule for version tokens a request carries: none that no HTTP header may
    carry (a control character such as CR or LF, or non-ASCII), refused before any
    request: it can never match, and it must never reach a request as a header of its
    own.

    Raises:
        InvalidInputError: such a token.
    """
    if not all(" " <= ch <= "~" for ch in version):
        raise InvalidInputError(
            f"if-match version token {version!r} holds characters no header may carry"
        )


def check_range(start: int, end: int | None) -> None:
    """The one rule for ranged reads: no offset below 0 (a ValueError)."""
    if start < 0 or (end is not None and end < 0):
        raise ValueError("offsets must be >= 0")


def check_options(kind: str, options: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse storage options a root does not understand (instead of dropping them).

    ``retry`` is understood everywhere: a root without a network has nothing to retry,
    so the same options can serve a local folder and a bucket (a malformed policy is
    still refused).

    Raises:
        InvalidInputError: ``options`` holds a key outside ``known`` and ``retry``.
    """
    if OPTION_KEY in options:
        from fsmemory.fs.retry import RetryPolicy

        RetryPolicy.from_value(options[OPTION_KEY])
    allowed = {*known, OPTION_KEY}
    unknown = sorted(set(options) - allowed)
    if unknown:
        accepted = ", ".join(sorted(allowed)) or "none"
        raise InvalidInputError(
            f"unknown storage option(s) for {kind}: {', '.join(unknown)} (accepted: {accepted})"
        )


def content_version(data: bytes) -> str:
    """The version token of content-addressed backends: a short BLAKE2b digest."""
    import hashlib  # here: hashlib loads OpenSSL, which a process that never reads
    # versioned content does not need at import

    return hashlib.blake2b(data, digest_size=16).hexdigest()


class StorageRoot(ABC):
    """A directory on a filesystem, with atomic and conditional primitives.

    All ``path`` arguments are root-relative and validated by
    :func:`fsmemory.fs.paths.validate_path`; an invalid one raises
    :class:`~fsmemory.errors.InvalidPathError` before any I/O.
    """

    #: the one rule for write conditions (:func:`check_condition`)
    check_condition = staticmethod(check_condition)
    #: the one rule for ranged reads (:func:`check_range`)
    check_range = staticmethod(check_range)
    #: the URL this root was opened from
    url: str
    #: the underlying fsspec filesystem
    fs: Any
    #: the root directory inside ``fs`` (no trailing slash)
    root: str
    capabilities: Capabilities
    #: why this root refuses every write (None: it accepts them); reads work either way
    read_only_reason: str | None = None

    @classmethod
    def from_url(cls, url: str, options: Mapping[str, Any] | None = None) -> StorageRoot:
        """Open the root at ``url`` with ``storage_options`` (what :func:`open_root` calls).

        Args:
            url: the URL (or local path) to open.
            options: the storage options; the ``retry`` option has already been taken
                out by :func:`~fsmemory.fs.open_root` and is set on the root afterwards.

        Raises:
            InvalidInputError: an option this root does not understand.
        """
        raise NotImplementedError(f"{cls.__name__} cannot be opened from a URL")

    def storage_key(self) -> tuple[str, ...]:
        """What identifies the files this root addresses: two roots of this process with
        equal keys see the same files (the path store shares change notifications by it)."""
        return (type(self).__qualname__, self.root, str(id(self.fs)))

    # -- paths -------------------------------------------------------------------------
    def full_path(self, path: str) -> str:
        """The path inside ``fs`` of a root-relative path (validated)."""
        validate_path(path)
        return f"{self.root}/{path}" if self.root else path

    # -- reads -------------------------------------------------------------------------
    @abstractmethod
    def read(self, path: str) -> Versioned:
        """Read a whole file with its version token.

        Raises:
            KeyNotFoundError: the file does not exist.
        """

    def read_bytes(self, path: str) -> bytes:
        """Read a whole file. Raises :class:`KeyNotFoundError` when missing."""
        return self.read(path).data

    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """Read bytes ``[start, end)`` of a file (``end=None``: to the end).

        Raises:
            KeyNotFoundError: the file does not exist.
            ValueError: a negative offset.
        """
        self.check_range(start, end)
        data = self.read_bytes(path)
        return data[start:end]

    def read_ranges(
        self, requests: Sequence[tuple[str, int, int | None]]
    ) -> builtins.list[bytes | None]:
        """Read many byte ranges ``(path, start, end)``, in order; None for a file that
        does not exist. The default reads one after another with :meth:`read_range`;
        backends override it to do less per-file work (local folders) or to send the
        reads together (object stores, Redis).

        Raises:
            ValueError: a negative offset.
        """
        return [self._range_or_none(request) for request in requests]

    def _range_or_none(self, request: tuple[str, int, int | None]) -> bytes | None:
        """:meth:`read_range` of ``(path, start, end)``; None when the file is missing."""
        try:
            return self.read_range(*request)
        except KeyNotFoundError:
            return None

    @abstractmethod
    def stat(self, path: str) -> FileInfo | None:
        """Size, mtime and change token of a file, or None when it does not exist."""

    def rewritten(self, old: FileInfo, new: FileInfo) -> bool:
        """True when ``new`` is known to be a different file object than ``old``
        (replaced rather than appended to). False when the backend cannot tell."""
        return False

    def exists(self, path: str) -> bool:
        """True when ``path`` is a file."""
        return self.stat(path) is not None

    @abstractmethod
    def list(self, prefix: str = "", *, recursive: bool = False) -> list[FileInfo]:
        """Files under the directory ``prefix`` (immediate ones unless ``recursive``).

        Internal files (names starting with ``.fsmemory``) are never listed. A missing
        directory lists as ``[]``. Paths in the result are root-relative.
        """

    @abstractmethod
    def list_dirs(self, prefix: str = "") -> builtins.list[str]:
        """Names of the immediate subdirectories of ``prefix`` (implied or real)."""

    def list_names(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """Names of the immediate files and subdirectories of ``prefix``, unsorted.

        The same entries as :meth:`list` + :meth:`list_dirs`, names only: roots answer it
        without per-file metadata (one scan, no stat per file) where they can.
        """
        files = [info.path.rsplit("/", 1)[-1] for info in self.list(prefix)]
        return files, self.list_dirs(prefix)

    def has_entries(self, prefix: str) -> bool:
        """True when the directory ``prefix`` holds anything :meth:`list_names` shows."""
        files, dirs = self.list_names(prefix)
        return bool(files or dirs)

    # -- writes ------------------------------------------------------------------------
    @abstractmethod
    def write(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Write a whole file atomically and return its new version token.

        Args:
            path: root-relative path; parent directories are created.
            data: the new content.
            if_version: only write when the current version equals this token
                (compare-and-swap).
            create_only: only write when the file does not exist yet.

        Raises:
            ConflictError: the condition did not hold (someone else won the race).
            ValueError: both ``if_version`` and ``create_only`` were given.
        """

    @abstractmethod
    def append(
        self, path: str, data: bytes, *, line_safe: bool = False, unique: bool = False
    ) -> int:
        """Append ``data`` atomically and return the byte offset where it starts.

        Args:
            path: root-relative path; created when missing.
            data: bytes to append.
            line_safe: when the file does not end with a newline (a torn line left by a
                crashed writer), insert one first so ``data`` starts a fresh line. The
                returned offset is that of ``data`` itself.
            unique: ``data`` is unique to this call (e.g. a log line carrying a fresh
                entry id), which allows network roots to retry the append after a
                failure whose outcome is unknown: a try that landed although its reply
                was lost is recognised because the file already holds ``data`` at the
                start of a line (or of the file), and that offset is returned, so a
                retried append never duplicates ``data``. Object stores (compare-and-swap
                rewrites) and Redis retry unique appends; other appends are tried once.
                Roots without a network (local folders, memory, SQLite) ignore it.
        """

    @abstractmethod
    def delete(self, path: str) -> bool:
        """Delete one file; returns False when it did not exist."""

    def delete_many(self, paths: Sequence[str]) -> int:
        """Delete these files (one request each here; roots that can batch deletes
        override it); files already gone are skipped. Returns how many were deleted."""
        return sum(1 for path in paths if self.delete(path))

    def delete_tree(self, prefix: str) -> int:
        """Delete every file under the directory ``prefix``; returns the count."""
        count = 0
        for info in self.list(prefix, recursive=True):
            if self.delete(info.path):
                count += 1
        return count

    def remove(self, path: str) -> int:
        """Delete the file ``path`` and every file under the directory ``path``
        (``""``: everything); returns the count of files deleted."""
        if not path:
            removed = sum(bool(self.delete(info.path)) for info in self.list(""))
            return removed + sum(self.delete_tree(name) for name in self.list_dirs(""))
        try:
            removed = int(self.delete(path))
        except NotAFileError:  # a directory: only its contents go
            removed = 0
        if removed and self._file_or_dir:
            return removed
        return removed + self.delete_tree(path)

    #: a file and a directory can never share a name (so deleting a file ends a remove)
    _file_or_dir = False

    # -- compare-and-swap helpers ------------------------------------------------------
    def update(
        self,
        path: str,
        change: Callable[[bytes | None], bytes | None],
        *,
        attempts: int = 50,
    ) -> bytes | None:
        """Read-modify-write ``path`` with compare-and-swap, retrying on conflict.

        ``change`` receives the current content (None when missing) and returns the new
        content, or None to leave the file as it is. It may be called several times, so
        it must be a pure function of its argument.

        Returns:
            The content that was written (or None when ``change`` declined).

        Raises:
            ConflictError: still losing after ``attempts`` tries.
            NotAFileError: something other than a file stands at ``path``.
        """
        delay = 0.002
        for _ in range(attempts):
            try:
                current: Versioned | None = self.read(path)
            except NotAFileError:
                raise  # a directory or a named pipe: creating the file can never succeed
            except KeyNotFoundError:
                current = None
            new = change(None if current is None else current.data)
            if new is None:
                return None
            try:
                if current is None:
                    self.write(path, new, create_only=True)
                else:
                    self.write(path, new, if_version=current.version)
                return new
            except ConflictError:
                import random  # only on a conflict

                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.25)
        raise ConflictError(f"gave up updating {path!r} after {attempts} conflicting attempts")

    @contextmanager
    def lock(self, name: str, *, timeout: float = 30.0) -> Iterator[None]:
        """Hold a cross-process lock named ``name`` for this root.

        The default implementation is a no-op context for roots whose writes need no
        extra lock; subclasses provide real locks where they are needed.
        """
        yield

    # -- fsmemory's own cache files ------------------------------------------------------
    @staticmethod
    def _cache_path(name: str) -> str:
        if not _CACHE_NAME.fullmatch(name):
            raise ValueError(f"bad cache name: {name!r}")
        return f"{CACHE_PREFIX}.{name}"

    def read_cache(self, name: str) -> CacheData | None:
        """The cache file ``name`` (``.fsmemory-cache.<name>`` at the top of the root),
        or None when there is none: its bytes (a local folder maps the file instead,
        see :meth:`~fsmemory.fs.local.LocalRoot.read_mapped`). Cache files hold
        derived data: they are never listed or exported, never snapshotted as files of
        the memory (a snapshot base may carry the index cache apart, verified when
        restored), and deleting one changes no answer.
        """
        with cache_paths():
            try:
                return self._read_cache_file(self._cache_path(name))
            except FileNotFoundError:
                return None

    def _read_cache_file(self, path: str) -> CacheData:
        """A whole cache file (for :meth:`read_cache`): its bytes."""
        return self.read_bytes(path)

    def list_with_cache(
        self,
        name: str,
        load: Callable[[CacheData], _T],
        want: Callable[[builtins.list[FileInfo]], bool] | None = None,
    ) -> tuple[builtins.list[FileInfo], _T | None]:
        """A listing of the whole root (``list("", recursive=True)``) and the cache
        file ``name`` handed to ``load``: ``(listing, what load returned)``, or
        ``(listing, None)`` when there is no cache file or it could not be read (a
        cache that cannot be read is no cache; logged).

        Here the cache is read after the listing, and only when ``want(listing)`` is
        true (or ``want`` is None). Roots on a network may send both requests at once
        (obstore roots do): they then load a cache file that exists whatever ``want``
        would say.

        Raises:
            Whatever :meth:`list` raises; ``load``'s own exceptions.
        """
        listing, cached = self._list_and_read_cache(name, want)
        if not isinstance(cached, BaseException):
            return listing, None if cached is None else load(cached)
        if not isinstance(cached, FileNotFoundError):
            _logger().info("cache file %r of %s not read: %s", name, self, cached)
        return listing, None

    def _list_and_read_cache(
        self, name: str, want: Callable[[builtins.list[FileInfo]], bool] | None
    ) -> tuple[builtins.list[FileInfo], CacheData | BaseException | None]:
        """The whole root's listing and what reading the cache file ``name`` gave: its
        bytes, None (no such file, or not read because ``want`` said so), or the error
        that kept it from being read (no cache: :meth:`list_with_cache` logs it)."""
        listing = self.list("", recursive=True)
        if want is not None and not want(listing):
            return listing, None
        try:
            return listing, self.read_cache(name)
        except (OSError, FsMemoryError) as exc:
            return listing, exc

    def fetch_with_listing(self, path: str) -> None:  # noqa: B027 - optional hook
        """Ask that the next :meth:`list_with_cache` read the file ``path`` too, on a
        root that sends requests at once (the obstore roots: it travels with the
        listing); :meth:`take_fetched` then hands its bytes out once. Here, a no-op:
        nothing is read ahead (a local folder maps its files where they lie).

        For derived files only (such as a vector file): the bytes are as old as the
        listing, and whoever takes them checks them as it checks any read.
        """

    def take_fetched(self, path: str) -> tuple[bytes | None] | None:
        """What :meth:`list_with_cache` read of ``path`` on request of
        :meth:`fetch_with_listing`, handed out once and then forgotten: ``(bytes,)``,
        ``(None,)`` when the file was missing, or None when it was not read ahead
        (always None here)."""
        return None

    def write_cache(self, name: str, data: bytes) -> None:
        """Replace the cache file ``name`` with ``data`` (one whole-object write)."""
        with cache_paths():
            self.write(self._cache_path(name), data)

    def delete_cache(self, name: str) -> bool:
        """Delete the cache file ``name``; False when there was none."""
        with cache_paths():
            return self.delete(self._cache_path(name))

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources held by this root (connections, file descriptors)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


def _logger() -> Any:
    import logging  # only on a failure: the local import path stays without it

    return logging.getLogger(__name__)
