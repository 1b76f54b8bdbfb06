"""Storage root over any fsspec filesystem, and the base of the remote roots.

:class:`FsspecRoot` implements every primitive with plain fsspec calls. Backends with
native conditional writes subclass it and override :meth:`FsspecRoot._put` /
:meth:`FsspecRoot._read_versioned`; on any other filesystem compare-and-swap and append
hold a **lease object** (``.fsmemory.lease-<name>``, created with a create-only write)
for the read-modify-write. The lease is only as safe as that create-only write, so a
filesystem not known to create a file exclusively and atomically opens read-only
(:func:`write_refusal`).

Every network call is retried under the root's :attr:`FsspecRoot.retry` policy when its
failure is transient (:mod:`fsmemory.fs.retry`): reads, listings and deletes by
:func:`~fsmemory.fs.retry.idempotent`, whole-file writes by
:meth:`~fsmemory.fs.retry.RetryPolicy.write`. Appends are compare-and-swap rewrites built
on those two, and ``unique=True`` makes a repeated one a no-op.
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, ClassVar, TypeVar

import orjson

from fsmemory.errors import (
    ConflictError,
    KeyNotFoundError,
    MissingDependencyError,
    ReadOnlyStorageError,
)
from fsmemory.fs._nowait import retry_until
from fsmemory.fs.base import (
    Capabilities,
    FileInfo,
    StorageRoot,
    Versioned,
    check_version,
    content_version,
)
from fsmemory.fs.errors import conditional_write, translated
from fsmemory.fs.paths import RESERVED_PREFIX, is_reserved_name, validate_path
from fsmemory.fs.retry import DEFAULT_RETRY, RetryPolicy, idempotent, policy_from_options

__all__ = ["FsspecRoot", "write_refusal"]

logger = logging.getLogger(__name__)

LEASE_SECONDS = 30.0

_F = TypeVar("_F", bound="FsspecRoot")

#: The filesystems whose create-only write (``pipe_file(mode="create")``) is one
#: exclusive, atomic request, by the class that implements it: (module, class) ->
#: (distribution, first version that honours the mode), or None (ours).
EXCLUSIVE_CREATE: dict[tuple[str, str], tuple[str, tuple[int, ...]] | None] = {
    ("fsspec.implementations.memory", "MemoryFileSystem"): ("fsspec", (2024, 12)),
    ("s3fs.core", "S3FileSystem"): ("s3fs", (2024, 12)),  # If-None-Match: *
    ("gcsfs.core", "GCSFileSystem"): ("gcsfs", (2024, 12)),  # ifGenerationMatch=0
    ("adlfs.spec", "AzureBlobFileSystem"): ("adlfs", (2024, 12)),  # If-None-Match: *
    ("fsmemory.implementations.redis", "RedisFileSystem"): None,  # a Lua script
}

_WRITABLE_HINT = (
    "reads work; to write, use a local folder, memory://, s3://, gs://, az:// (adlfs), "
    "redis:// or sqlite://"
)


def write_refusal(fs: Any) -> str | None:
    """Why fsmemory must not write through ``fs`` (an fsspec filesystem, or its class),
    or None when it may.

    A write is safe only where a create-only write is exclusive and atomic (the lease
    that guards compare-and-swap and appends is one) and where a reader sees the other
    writers' files. Known filesystems are listed in :data:`EXCLUSIVE_CREATE`; a
    ``dir::`` filesystem is judged by the one it wraps.
    """
    cls = fs if isinstance(fs, type) else type(fs)
    while not isinstance(fs, type) and _defined_in(
        cls, "fsspec.implementations.dirfs", "DirFileSystem"
    ):
        fs = fs.fs
        cls = type(fs)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    name = f"{protocol}:// ({cls.__module__}.{cls.__qualname__})"
    if any(
        _defined_in(c, "fsspec.implementations.cached", "CachingFileSystem") for c in cls.__mro__
    ):
        return (
            f"{name} is a caching filesystem: it answers from its local copy, so it never "
            "sees other writers, and its writes ignore create-only mode (a lease would be a "
            "plain overwrite)"
        )
    owner = next(
        (c for c in cls.__mro__ if "pipe_file" in vars(c) or "_pipe_file" in vars(c)), None
    )
    key = None if owner is None else (owner.__module__, owner.__qualname__)
    if key not in EXCLUSIVE_CREATE:
        return (
            f"{name} is not known to create a file exclusively and atomically (fsspec's "
            "default create-only write checks for the file, then writes it), so concurrent "
            "writers would overwrite each other"
        )
    needed = EXCLUSIVE_CREATE[key]
    if needed is not None:
        dist, first = needed
        version = _version(dist)
        if version < first:
            wanted = ".".join(map(str, first))
            return (
                f"{name}: {dist} {'.'.join(map(str, version)) or '?'} cannot create a file "
                f"exclusively (it needs {dist} >= {wanted})"
            )
    return None


#: filesystems that keep directory listings (fsspec's ``dircache``) unless told not to
_LISTING_CACHES = frozenset(
    {
        ("s3fs.core", "S3FileSystem"),
        ("gcsfs.core", "GCSFileSystem"),
        ("adlfs.spec", "AzureBlobFileSystem"),
    }
)


def _keeps_listings(fs: Any) -> bool:
    """True when ``fs`` answers listings from its cache (see :data:`_LISTING_CACHES`)."""
    known = any((c.__module__, c.__qualname__) in _LISTING_CACHES for c in type(fs).__mro__)
    return known and bool(getattr(getattr(fs, "dircache", None), "use_listings_cache", False))


def _defined_in(cls: type, module: str, name: str) -> bool:
    return cls.__module__ == module and cls.__qualname__ == name


def _version(dist: str) -> tuple[int, ...]:
    """The leading numbers of the installed version of ``dist`` (``()``: unknown)."""
    from importlib import metadata

    try:
        text = metadata.version(dist)
    except metadata.PackageNotFoundError:
        text = str(getattr(sys.modules.get(dist), "__version__", ""))
    found = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(n) for n in found.group(0).split(".")) if found else ()


class FsspecRoot(StorageRoot):
    """A directory on any fsspec filesystem.

    Args:
        fs: the filesystem instance.
        root: the directory path inside ``fs``.
        url: the URL it was opened from.
        retry: how transient failures are retried (default
            :data:`~fsmemory.fs.retry.DEFAULT_RETRY`); may also be changed later through
            the :attr:`retry` attribute.
        fs_factory: builds the filesystem for :attr:`fs` when it is None, and again in
            a forked child; None: ``fs`` is kept as given.
    """

    capabilities = Capabilities(conditional_write=False, native_append=False)
    #: the retry policy of this root's network calls
    retry: RetryPolicy = DEFAULT_RETRY
    #: the client may resend a request by itself (see :meth:`RetryPolicy.write`)
    _hidden_retries: ClassVar[bool] = False
    #: conditional writes carry a marker that :meth:`_read_marker` reads back
    _marks_writes: ClassVar[bool] = False
    # the filesystem behind :attr:`fs`, the process that built it, and how to build it
    _fs: Any = None
    _fs_pid: int | None = None
    _fs_factory: Callable[[], Any] | None = None

    def __init__(
        self,
        fs: Any,
        root: str,
        *,
        url: str | None = None,
        retry: RetryPolicy | None = None,
        fs_factory: Callable[[], Any] | None = None,
    ) -> None:
        self._fs_factory = fs_factory
        self.fs = fs
        self.root = root.rstrip("/")
        self.url = url if url is not None else fs.unstrip_protocol(self.root)
        if retry is not None:
            self.retry = retry
        if not self.capabilities.conditional_write:
            self.read_only_reason = write_refusal(fs)

    @property
    def fs(self) -> Any:
        """The fsspec filesystem. A root given an ``fs_factory`` builds it on first use,
        and builds a new one in a process forked since (fsspec's async filesystems refuse
        to work across ``fork()``)."""
        # No lock: in a forked child a lock may be held by a thread the child lacks. Two
        # threads racing on first use may both build one; fsspec's instance cache
        # usually hands both the same filesystem.
        if self._fs_factory is not None and (self._fs is None or self._fs_pid != os.getpid()):
            self.fs = self._fs_factory()
        return self._fs

    @fs.setter
    def fs(self, value: Any) -> None:
        self._fs = value
        self._fs_pid = os.getpid()

    def _check_writable(self) -> None:
        """Raise :class:`ReadOnlyStorageError` when this root refuses writes."""
        if self.read_only_reason is not None:
            raise ReadOnlyStorageError(
                f"{self.url}: writes refused: {self.read_only_reason}; {_WRITABLE_HINT}"
            )

    @classmethod
    def from_url(cls: type[_F], url: str, options: Mapping[str, Any] | None = None) -> _F:
        """Open ``url`` with fsspec ``storage_options``.

        Every option goes to the filesystem except ``retry``: a
        :class:`~fsmemory.fs.retry.RetryPolicy` (or a dict of its fields, or an attempt
        count) for this root's network calls -- read here, the one place for every
        fsspec-based root.

        Raises:
            InvalidInputError: a malformed ``retry`` option.
            MissingDependencyError: the protocol's fsspec implementation is missing.
        """
        opts = dict(options or {})
        policy = policy_from_options(opts)
        fs, path = cls._connect(url, opts)
        return cls(fs, path, url=url, retry=policy)

    @staticmethod
    def _fs_class() -> Any:
        """The filesystem class :meth:`_connect` builds, or None: the one fsspec finds
        for the URL (a subclass hook; raises MissingDependencyError when missing)."""
        return None

    @staticmethod
    def _configure(opts: dict[str, Any]) -> None:
        """Adjust the options of :meth:`_fs_class` before it is built (a subclass hook)."""

    @classmethod
    def _connect(cls, url: str, options: dict[str, Any]) -> tuple[Any, str]:
        """The filesystem and the root's path inside it.

        A filesystem that keeps listings (s3fs, gcsfs, adlfs) is built without that cache
        unless the caller set ``use_listings_cache``: a kept listing never shows the
        files and sizes other writers changed since.
        """
        fs_class = cls._fs_class()
        if fs_class is not None:
            opts: dict[str, Any] = dict(fs_class._get_kwargs_from_urls(url))
            opts.update(options)
            opts.setdefault("use_listings_cache", False)
            cls._configure(opts)
            fs = fs_class(**opts)
            return fs, str(fs._strip_protocol(url)).rstrip("/")
        import fsspec

        try:
            fs, path = fsspec.url_to_fs(url, **options)
            if "use_listings_cache" not in options and _keeps_listings(fs):
                fs, path = fsspec.url_to_fs(url, **options, use_listings_cache=False)
        except ImportError as exc:
            protocol = url.partition("://")[0]
            raise MissingDependencyError(
                str(exc.name or protocol), None, hint=str(exc) or None
            ) from exc
        return fs, str(path)

    # -- hooks for subclasses ----------------------------------------------------------
    def _read_versioned(self, full: str, path: str) -> Versioned:
        with translated(path):
            data = self.fs.cat_file(full)
        return Versioned(data, content_version(data))

    def _token(self, info: dict[str, Any]) -> str:
        """The change token the filesystem reports for a file (its generation, ETag,
        version or MD5), or ``""`` when it reports none: :meth:`stat` and :meth:`list`
        then take a digest of the content instead. A size and a modification time would
        not do: a file rewritten at the same size within the time's resolution (a
        second on ftp and sftp servers; always, where no time is reported) would keep
        its token, and what was derived from the old bytes would be served."""
        for key in ("generation", "ETag", "etag", "version", "md5Hash"):
            if info.get(key) is not None:
                return str(info[key]).strip('"')
        return ""

    def _content_tokens(self, infos: builtins.list[FileInfo]) -> builtins.list[FileInfo]:
        """``infos`` with each empty token replaced by a digest of the file's content
        (read in one :meth:`read_ranges` of them all); a file gone meanwhile is left
        out."""
        weak = [i for i in infos if not i.token]
        if not weak:
            return infos
        found = self.read_ranges([(i.path, 0, None) for i in weak])
        digests = {
            info.path: content_version(data)
            for info, data in zip(weak, found, strict=True)
            if data is not None
        }
        return [
            i if i.token else i._replace(token=digests[i.path])
            for i in infos
            if i.token or i.path in digests
        ]

    def _put(self, full: str, path: str, data: bytes, if_version: str | None, create: bool) -> str:
        """Write with an optional condition; the fallback holds a lease meanwhile."""
        if if_version is None and not create:
            with translated(path):
                self.fs.pipe_file(full, data)
            return content_version(data)
        with self.lock(f"file-{path}"):
            try:
                current: str | None = self._read_versioned(full, path).version
            except KeyNotFoundError:
                current = None
            if create and current is not None:
                raise ConflictError(f"{path!r} already exists")
            if if_version is not None and current != if_version:
                raise ConflictError(f"{path!r} changed since version {if_version}")
            with translated(path):
                self.fs.pipe_file(full, data)
        return content_version(data)

    def _put_native(
        self,
        full: str,
        path: str,
        data: bytes,
        if_version: str | None,
        create: bool,
        *,
        marker: str | None = None,
    ) -> str:
        """:meth:`_put` of the roots with native conditional writes: one :meth:`_upload`
        (its version checked first by :meth:`_check_version`), a failed condition
        re-raised as the :class:`ConflictError` that says which."""
        if if_version is not None:
            self._check_version(path, if_version)
        try:
            with conditional_write(path, if_version, create), self._translated(path):
                return self._upload(full, data, if_version, create, marker)
        finally:
            self._forget_cached(full)

    def _upload(
        self, full: str, data: bytes, if_version: str | None, create: bool, marker: str | None
    ) -> str:
        """One write of ``full`` (create-only when ``create``, over ``if_version`` when
        given, ``marker`` in its metadata when given) on a root with native conditional
        writes; its new version."""
        raise NotImplementedError

    def _check_version(self, path: str, version: str) -> None:
        """Refuse a version token of ``path`` that can never match before any request
        (here: one no header may carry, :func:`~fsmemory.fs.base.check_version`)."""
        check_version(version)

    def _translated(self, path: str) -> AbstractContextManager[None]:
        """The backend's errors inside the block as fsmemory's (:func:`translated`)."""
        return translated(path)

    def _forget_cached(self, path: str) -> None:
        """Drop what the filesystem may have cached about ``path`` after a change (here:
        nothing)."""

    def _create_exclusive(self, full: str, data: bytes) -> bool:
        """Create ``full`` only if absent; True on success (writable roots only: their
        filesystem's create-only write is exclusive and atomic, see
        :func:`write_refusal`)."""
        try:
            self.fs.pipe_file(full, data, mode="create")
            return True
        except FileExistsError:
            return False

    def _create_with_put(self, full: str, data: bytes) -> bool:
        """:meth:`_create_exclusive` of roots whose create-only :meth:`_put` is atomic
        on the service (a conditional PUT): True on success, False when ``full``
        exists."""
        try:
            self._put(full, full, data, None, True)
        except ConflictError:
            return False
        return True

    # -- StorageRoot -------------------------------------------------------------------
    @idempotent
    def read(self, path: str) -> Versioned:
        """Read a whole file with its version token."""
        return self._read_versioned(self.full_path(path), path)

    @idempotent
    def read_ranges(
        self, requests: Sequence[tuple[str, int, int | None]]
    ) -> builtins.list[bytes | None]:
        """All ranges through one ``cat_ranges``: one GET each, sent concurrently on
        async filesystems such as s3fs and gcsfs (a whole-object read on s3fs would stat
        the object first; a range from 0 does not). A missing file gives None; a read
        that failed, and an empty range (which needs an existence check), go through
        :meth:`read_range` on their own, with its retries."""
        for _, start, end in requests:
            self.check_range(start, end)
        batch = [i for i, (_, start, end) in enumerate(requests) if end is None or end > start]
        out: builtins.list[bytes | None] = [None] * len(requests)
        found: builtins.list[Any] = []
        if batch:
            with translated(requests[batch[0]][0]):
                found = self.fs.cat_ranges(
                    [self.full_path(requests[i][0]) for i in batch],
                    [requests[i][1] for i in batch],
                    [requests[i][2] for i in batch],
                    on_error="return",
                )
        results = dict(zip(batch, found, strict=True))
        for i, request in enumerate(requests):
            data = results.get(i)
            if isinstance(data, bytes):
                out[i] = data
            elif not isinstance(data, FileNotFoundError):
                out[i] = self._range_or_none(request)
        return out

    @idempotent
    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """Ranged read through ``cat_file(start, end)``."""
        self.check_range(start, end)
        full = self.full_path(path)
        if end is not None and end <= start:
            if not self.exists(path):
                raise KeyNotFoundError(path)
            return b""
        with translated(path):
            data: bytes = self.fs.cat_file(full, start=start, end=end)
        return data

    @idempotent
    def stat(self, path: str) -> FileInfo | None:
        """One ``info`` call; None when missing or a directory."""
        full = self.full_path(path)
        try:
            with translated(path):
                info = self.fs.info(full)
        except KeyNotFoundError:
            return None
        if info.get("type") != "file":
            return None
        found = FileInfo(path, int(info.get("size") or 0), _mtime(info), self._token(info))
        return next(iter(self._content_tokens([found])), None)

    @idempotent
    def list(self, prefix: str = "", *, recursive: bool = False) -> list[FileInfo]:
        """One listing call (``find`` when recursive, ``ls`` otherwise); the content of
        files the filesystem reports no version of is read for their tokens (see
        :meth:`_token`)."""
        validate_path(prefix, allow_empty=True)
        base = f"{self.root}/{prefix}" if prefix else self.root
        try:
            with translated(prefix):
                entries = self._find(base) if recursive else self.fs.ls(base, detail=True)
        except KeyNotFoundError:
            return []
        out = []
        for info in entries:
            if info.get("type") != "file":
                continue
            rel = self._relative(info["name"])
            if rel is None or any(is_reserved_name(s) for s in rel.split("/")):
                continue
            if prefix and not rel.startswith(prefix + "/"):
                continue
            out.append(FileInfo(rel, int(info.get("size") or 0), _mtime(info), self._token(info)))
        out.sort(key=lambda i: i.path)
        return self._content_tokens(out)

    def _find(self, base: str) -> builtins.list[dict[str, Any]]:
        """Every file under ``base``, one ``ls`` per directory.

        Not ``fs.find``: fsspec's ``walk`` silently omits a subdirectory whose listing
        failed (its ``on_error`` does not reach the recursion), so a network error would
        look like missing files. Here only a subdirectory removed meanwhile is skipped;
        any other error propagates (and is retried).
        """
        strip = self.fs._strip_protocol
        files: builtins.list[dict[str, Any]] = []
        seen = {strip(base).rstrip("/")}
        pending = [base]
        while pending:
            directory = pending.pop()
            try:
                entries = self.fs.ls(directory, detail=True)
            except FileNotFoundError:
                if directory == base:
                    raise
                continue
            for info in entries:
                name = strip(str(info["name"])).rstrip("/")
                if info.get("type") == "directory":
                    if name not in seen:
                        seen.add(name)
                        pending.append(name)
                elif info.get("type") == "file":
                    files.append(info)
        return files

    def list_dirs(self, prefix: str = "") -> builtins.list[str]:
        """Immediate subdirectory names (real or implied by deeper files)."""
        return sorted(self.list_names(prefix)[1])

    @idempotent
    def list_names(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """One ``ls(detail=True)`` instead of the two of :meth:`list` + :meth:`list_dirs`."""
        validate_path(prefix, allow_empty=True)
        base = f"{self.root}/{prefix}" if prefix and self.root else (prefix or self.root)
        try:
            with translated(prefix):
                entries = self.fs.ls(base, detail=True)
        except KeyNotFoundError:
            return [], []
        strip = self.fs._strip_protocol
        itself = strip(base).rstrip("/")
        files: builtins.list[str] = []
        dirs: set[str] = set()
        for info in entries:
            full = strip(str(info["name"])).rstrip("/")
            if full == itself:
                continue  # ls of a file lists the file itself: it has no children
            name = full.rsplit("/", 1)[-1]
            if not name or is_reserved_name(name):
                continue
            kind = info.get("type")
            if kind == "file":
                files.append(name)
            elif kind == "directory":
                dirs.add(name)
        return files, builtins.list(dirs)

    def _relative(self, name: str) -> str | None:
        name = self.fs._strip_protocol(name).rstrip("/")
        root = self.fs._strip_protocol(self.root).rstrip("/") if self.root else ""
        if not root:
            return name
        if name.startswith(root + "/"):
            return name[len(root) + 1 :]
        return None

    def write(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Whole-object write, conditional when asked (see :meth:`StorageRoot.write`).

        Transient failures are retried; a conditional write whose reply was lost is
        resolved by reading the object back (see :meth:`RetryPolicy.write`).
        """
        self.check_condition(if_version, create_only)
        full = self.full_path(path)
        self._check_writable()
        payload = bytes(data)
        put, probe = self._write_once(full, path, payload, if_version, create_only)
        return self.retry.write(
            put,
            probe,
            if_version=if_version,
            create_only=create_only,
            what=f"write {path}",
            hidden_retries=self._hidden_retries,
        )

    def _write_once(
        self, full: str, path: str, data: bytes, if_version: str | None, create: bool
    ) -> tuple[Callable[[], str], Callable[[], tuple[bool, str]]]:
        """``(put, probe)`` for one write: ``put`` sends it once; ``probe`` tells whether
        the object holds it and its version. On a root that marks its conditional writes
        (:meth:`_read_marker`), such a write carries a fresh marker in the object's
        metadata, which tells exactly; otherwise the probe compares the content."""
        if self._marks_writes and (if_version is not None or create):
            marker = uuid.uuid4().hex
            put: Any = self._put  # the roots that mark writes take ``marker``

            def probe_marker() -> tuple[bool, str]:
                found, version = self._read_marker(full, path)
                return found == marker, version

            return (lambda: put(full, path, data, if_version, create, marker=marker)), probe_marker

        def probe() -> tuple[bool, str]:
            current = self._read_versioned(full, path)
            return current.data == data, current.version

        return (lambda: self._put(full, path, data, if_version, create)), probe

    def _read_marker(self, full: str, path: str) -> tuple[str | None, str]:
        """The marker of the last conditional write of ``full`` and the object's version
        (on roots whose :attr:`_marks_writes` is set)."""
        raise NotImplementedError

    def append(
        self, path: str, data: bytes, *, line_safe: bool = False, unique: bool = False
    ) -> int:
        """Append as a compare-and-swap read-modify-write (object stores cannot append).

        O(file size) per call; the file is never blindly overwritten, so concurrent
        appenders each land exactly once. With ``unique=True`` an append whose bytes the
        file already holds at a line start (an earlier try that landed although its
        reply was lost) is not repeated; its offset is returned.
        """
        self.full_path(path)
        self._check_writable()
        payload = bytes(data)
        offset = [0]

        def change(current: bytes | None) -> bytes | None:
            old = current or b""
            if unique and payload:
                found = _find_at_line_start(old, payload)
                if found >= 0:
                    offset[0] = found
                    return None
            torn = line_safe and old and not old.endswith(b"\n")
            offset[0] = len(old) + (1 if torn else 0)
            return old + (b"\n" if torn else b"") + payload

        self.update(path, change, attempts=200)
        return offset[0]

    @idempotent
    def delete_tree(self, prefix: str) -> int:
        """Delete every file under ``prefix``; returns the count."""
        self._check_writable()
        return super().delete_tree(prefix)

    def remove(self, path: str) -> int:
        """See :meth:`StorageRoot.remove` (refused at once on a read-only root)."""
        self._check_writable()
        return super().remove(path)

    @idempotent
    def delete(self, path: str) -> bool:
        """Delete one object; False when it did not exist."""
        full = self.full_path(path)
        self._check_writable()
        try:
            with translated(path):
                self.fs.rm_file(full)
        except KeyNotFoundError:
            return False
        return True

    @idempotent
    def delete_many(self, paths: Sequence[str]) -> int:
        """Delete these files; on an async filesystem with one batched ``rm`` (missing
        ones are skipped by the filesystem), else one delete each."""
        self._check_writable()
        if not paths or not getattr(self.fs, "async_impl", False):
            return super().delete_many(paths)
        with translated(paths[0]):
            self.fs.rm([self.full_path(p) for p in paths])
        return len(paths)

    # -- lease lock --------------------------------------------------------------------
    @contextmanager
    def lock(self, name: str = "root", *, timeout: float = 30.0) -> Iterator[None]:
        """A lease object held while the block runs (the fallback for missing CAS).

        A lease older than its expiry (30 s) is broken, so a crashed holder cannot
        block the root for ever.

        Raises:
            ReadOnlyStorageError: the root refuses writes (its lease would not be one).
        """
        self._check_writable()
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120]
        lease = f"{self.root}/{RESERVED_PREFIX}.lease-{safe}"
        owner = uuid.uuid4().hex
        body = orjson.dumps({"owner": owner, "expires": time.time() + LEASE_SECONDS})

        def take() -> bool:
            with translated(lease):
                if self._create_exclusive(lease, body):
                    return True
                self._break_stale_lease(lease)
            return False

        retry_until(take, timeout, f"lease {name!r} on {self.url}", delay=0.005, max_delay=0.2)
        try:
            yield
        finally:
            with suppress(Exception):
                current = orjson.loads(self._cat_full(lease))
                if current.get("owner") == owner:
                    self._rm_full(lease)

    def _cat_full(self, full: str) -> bytes:
        """The bytes of ``full`` (a path inside ``fs``); FileNotFoundError when missing."""
        data: bytes = self.fs.cat_file(full)
        return data

    def _rm_full(self, full: str) -> None:
        """Remove ``full`` (a path inside ``fs``)."""
        self.fs.rm_file(full)

    def _break_stale_lease(self, lease: str) -> None:
        try:
            current = orjson.loads(self._cat_full(lease))
        except FileNotFoundError:
            return
        except orjson.JSONDecodeError:
            current = {"expires": 0}
        if float(current.get("expires", 0)) < time.time():
            logger.warning("breaking expired lease %s", lease)
            with suppress(FileNotFoundError):
                self._rm_full(lease)


def _find_at_line_start(haystack: bytes, needle: bytes) -> int:
    """Offset of the first occurrence of ``needle`` that starts the file or a line; -1."""
    start = haystack.find(needle)
    while start > 0 and haystack[start - 1 : start] != b"\n":
        start = haystack.find(needle, start + 1)
    return start


def _mtime(info: dict[str, Any]) -> float | None:
    for key in ("mtime", "LastModified", "updated", "last_modified", "modified"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, int | float):
            return float(value)
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        if isinstance(value, str):
            from datetime import datetime

            with suppress(ValueError):
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None
