"""The one path-store implementation, over any storage root (any fsspec URL)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
import weakref
from typing import Any, Literal

from fsmemory.errors import (
    ContentTooLargeError,
    InvalidInputError,
    InvalidPathError,
    KeyNotFoundError,
    require,
)
from fsmemory.fs.base import Capabilities, StorageRoot
from fsmemory.fs.errors import translated
from fsmemory.fs.open import open_root
from fsmemory.fs.paths import is_reserved_name, validate_path
from fsmemory.store._paths import split
from fsmemory.store._protocol import ChangeCallback, StoreStat
from fsmemory.store._redis import is_async_client, rebuild_client
from fsmemory.store._watch import Subscription, hub_for, make_watcher

__all__ = [
    "DiskKnowledgeStore",
    "FsspecKnowledgeStore",
    "MemoryKnowledgeStore",
    "RedisKnowledgeStore",
    "SqliteKnowledgeStore",
    "WatchMode",
]

#: ``"auto"``: watchdog on local folders when installed, polling elsewhere;
#: ``"poll"``: always poll; ``"none"``: only changes made through a store in this process.
WatchMode = Literal["auto", "poll", "none"]

_LOCAL_ROOTS = frozenset({"fsmemory.fs.local.LocalRoot"})
_INLINE_ROOTS = frozenset(
    {
        "fsmemory.fs.local.LocalRoot",
        "fsmemory.fs.memory.MemoryRoot",
        "fsmemory.fs.sqlite.SqliteRoot",
    }
)
_CONTINUATION_MASK = 0xC0
_CONTINUATION = 0x80


def _is_dir_error(exc: BaseException) -> bool:
    """A directory where a file was expected: OSError(EISDIR/ENOTDIR), also when a root
    wrapped it in a BackendError."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 5:
        if isinstance(cur, IsADirectoryError | NotADirectoryError):
            return True
        cur = cur.__cause__
        seen += 1
    return False


def _kinds(root: StorageRoot) -> set[str]:
    return {f"{cls.__module__}.{cls.__qualname__}" for cls in type(root).__mro__}


def _listing_kind(root: StorageRoot, kinds: set[str]) -> str:
    """Which names-only listing shortcut fits ``root`` (see ``_names``)."""
    name = f"{type(root).__module__}.{type(root).__qualname__}"
    if name == "fsmemory.fs.local.LocalRoot":
        return "local"
    if name == "fsmemory.fs.memory.MemoryRoot":
        return "memory"
    if "fsmemory.fs.generic.FsspecRoot" in kinds:
        from fsmemory.fs.generic import FsspecRoot

        cls = type(root)
        if cls.list is FsspecRoot.list and cls.list_dirs is FsspecRoot.list_dirs:
            return "fsspec"
    return "generic"


def _local_dir(root: Any, rel: str) -> str | None:
    """The folder of ``rel``, or None when it resolves outside the root (a symlinked
    directory must not list what lies outside)."""
    if not rel:
        return str(root.root)
    base = str(root.full_path(rel))
    real_root = os.path.realpath(root.root)
    real = os.path.realpath(base)
    if real != real_root and not real.startswith(real_root + os.sep):
        return None
    return base


def _local_names(root: Any, rel: str) -> tuple[list[str], list[str]]:
    """One ``scandir`` using d_type only (no stat): same entries as LocalRoot.list."""
    base = _local_dir(root, rel)
    files: list[str] = []
    dirs: list[str] = []
    if base is None:
        return files, dirs
    try:
        it = os.scandir(base)
    except (FileNotFoundError, NotADirectoryError):
        return files, dirs
    with it:
        for entry in it:
            name = entry.name
            if is_reserved_name(name):
                continue
            if entry.is_dir(follow_symlinks=False):
                dirs.append(name)
            elif entry.is_file(follow_symlinks=False):
                files.append(name)
    return files, dirs


def _local_has_entries(root: Any, rel: str) -> bool:
    """True when the folder ``rel`` holds anything ``list`` would show (stops early)."""
    base = _local_dir(root, rel)
    if base is None:
        return False
    try:
        it = os.scandir(base)
    except (FileNotFoundError, NotADirectoryError):
        return False
    with it:
        for entry in it:
            if is_reserved_name(entry.name):
                continue
            if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
                return True
    return False


def _memory_names(root: Any, rel: str) -> tuple[list[str], list[str]]:
    """One pass over the memory filesystem's keys: same entries as MemoryRoot.list."""
    validate_path(rel, allow_empty=True)
    base = f"{root.root}/{rel}/" if rel else f"{root.root}/"
    cut = len(base)
    files: list[str] = []
    dirs: set[str] = set()
    for key in list(root.fs.store):
        if key.startswith(base):
            head, sep, _ = key[cut:].partition("/")
            if is_reserved_name(head):
                continue
            if sep:
                dirs.add(head)
            else:
                files.append(head)
    return files, list(dirs)


def _fsspec_names(root: Any, rel: str) -> tuple[list[str], list[str]]:
    """One ``ls(detail=True)`` instead of the two of ``list`` + ``list_dirs``."""
    validate_path(rel, allow_empty=True)
    base = f"{root.root}/{rel}" if rel and root.root else (rel or root.root)
    try:
        with translated(rel):
            entries = root.fs.ls(base, detail=True)
    except KeyNotFoundError:
        return [], []
    itself = root.fs._strip_protocol(base).rstrip("/")
    files: list[str] = []
    dirs: set[str] = set()
    for info in entries:
        full = root.fs._strip_protocol(str(info["name"])).rstrip("/")
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
    return files, list(dirs)


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


class FsspecKnowledgeStore:
    """An async :class:`~fsmemory.store.KnowledgeStore` over any storage URL.

    ``FsspecKnowledgeStore("./state")``, ``("memory://run-1")``, ``("s3://bucket/agent",
    key=..., secret=...)``, ``("redis://localhost:6379/0/agent")``,
    ``("sqlite:///var/lib/agent.db")`` -- one implementation; the storage root
    (:func:`fsmemory.fs.open_root`) carries every backend quirk.

    Args:
        url: a URL or local path, or an already opened :class:`~fsmemory.fs.StorageRoot`.
        watch: how :meth:`on_change` notices changes made elsewhere (:data:`WatchMode`).
        poll_interval: seconds between two looks when polling.
        inline: run storage calls directly inside the coroutine (True) or in a worker
            thread (False). Default: inline for local folders, ``memory://`` and
            ``sqlite://``, whose calls are short syscalls -- a thread hop would cost
            more than the call; threads for network backends, so the event loop never
            waits on the network.
        max_file_bytes: the largest file a ``write`` may store or an ``append`` may
            grow (:class:`~fsmemory.errors.ContentTooLargeError`, a ``ValueError``,
            beyond it); None: no limit.
        **storage_options: passed to the fsspec filesystem (credentials, endpoint, ...).

    Writes are atomic (a reader sees the old or the new file), appends are atomic and
    O(1) where the backend can append (local, memory, sqlite, redis), and
    ``write(..., if_version=...)`` is a true compare-and-swap on every backend.
    """

    def __init__(
        self,
        url: str | os.PathLike[str] | StorageRoot,
        *,
        watch: WatchMode = "auto",
        poll_interval: float = 1.0,
        inline: bool | None = None,
        max_file_bytes: int | None = None,
        **storage_options: Any,
    ) -> None:
        if max_file_bytes is not None and (
            isinstance(max_file_bytes, bool)
            or not isinstance(max_file_bytes, int)
            or max_file_bytes < 0
        ):
            raise InvalidInputError("max_file_bytes must be a non-negative int or None")
        self.max_file_bytes = max_file_bytes
        if watch not in ("auto", "poll", "none"):
            raise InvalidInputError(f"watch must be 'auto', 'poll' or 'none', not {watch!r}")
        if poll_interval <= 0:
            raise InvalidInputError("poll_interval must be > 0")
        self._owns_root = not isinstance(url, StorageRoot)
        self._root: StorageRoot = open_root(url, storage_options)
        kinds = _kinds(self._root)
        self._local = bool(kinds & _LOCAL_ROOTS)
        self._kind = _listing_kind(self._root, kinds)
        self._inline = bool(kinds & _INLINE_ROOTS) if inline is None else inline
        self._hub = hub_for(self._root)
        self._watch: WatchMode = watch
        self._poll_interval = float(poll_interval)
        self._subs: weakref.WeakSet[Subscription] = weakref.WeakSet()

    # -- introspection -----------------------------------------------------------------
    @property
    def root(self) -> StorageRoot:
        """The storage root underneath (for tools that need the raw files)."""
        return self._root

    @property
    def url(self) -> str:
        """The URL the store was opened from."""
        return self._root.url

    @property
    def capabilities(self) -> Capabilities:
        """What the backend does natively (conditional writes, append, watch, ...)."""
        return self._root.capabilities

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._root.url!r})"

    # -- synchronous core (shared with SyncKnowledgeStore) ---------------------------------
    def _sync_read_bytes(self, path: str) -> bytes | None:
        _, rel = split(path)
        if not rel:
            return None
        try:
            return self._root.read_bytes(rel)
        except KeyNotFoundError:
            return None
        except OSError as exc:
            if _is_dir_error(exc):
                return None
            raise

    def _sync_read(self, path: str) -> str | None:
        data = self._sync_read_bytes(path)
        return None if data is None else data.decode("utf-8", errors="replace")

    def _sync_write_bytes(
        self, path: str, data: bytes, if_version: str | None, create_only: bool
    ) -> str:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        norm, rel = split(path)
        if not rel:
            raise InvalidPathError("cannot write to '/': it is the store's root directory")
        limit = self.max_file_bytes
        if limit is not None and len(data) > limit:
            raise ContentTooLargeError(f"{norm}: {len(data)} bytes; the limit is {limit}")
        try:
            if not self._hub.active:  # the hot path: nobody is watching
                return self._root.write(
                    rel, bytes(data), if_version=if_version, create_only=create_only
                )
            with self._hub.changing(norm):
                return self._root.write(
                    rel, bytes(data), if_version=if_version, create_only=create_only
                )
        except OSError as exc:
            if not _is_dir_error(exc):
                raise
            raise InvalidPathError(
                f"{norm}: a file and a directory cannot share this name on this backend"
            ) from exc

    def _sync_write(
        self, path: str, content: str, if_version: str | None, create_only: bool
    ) -> str:
        return self._sync_write_bytes(path, _encode(content), if_version, create_only)

    def _sync_append(self, path: str, content: str) -> int:
        data = _encode(content)
        norm, rel = split(path)
        if not rel:
            raise InvalidPathError("cannot append to '/': it is the store's root directory")
        limit = self.max_file_bytes
        if limit is not None:
            # Checked before appending; concurrent appenders may together pass the limit
            # by at most one append each.
            info = self._root.stat(rel)
            size = (info.size if info is not None else 0) + len(data)
            if size > limit:
                raise ContentTooLargeError(
                    f"{norm}: would grow to {size} bytes; the limit is {limit}"
                )
        try:
            if not self._hub.active:
                return self._root.append(rel, data)
            with self._hub.changing(norm):
                return self._root.append(rel, data)
        except OSError as exc:
            if not _is_dir_error(exc):
                raise
            raise InvalidPathError(
                f"{norm}: a file and a directory cannot share this name on this backend"
            ) from exc

    def _sync_read_range(self, path: str, start: int, end: int | None) -> str:
        _check_offsets(start, end)
        _, rel = split(path)
        if not rel or (end is not None and end <= start):
            return ""
        try:
            raw = self._root.read_range(rel, start, None if end is None else end + 3)
        except KeyNotFoundError:
            return ""
        except OSError as exc:
            if _is_dir_error(exc):
                return ""
            raise
        want = None if end is None else end - start
        return _snap_utf8(raw, start, want).decode("utf-8", errors="replace")

    def _sync_list(self, path: str) -> list[str]:
        _, rel = split(path)
        files, dirs = self._names(rel)
        names = files + [name + "/" for name in dirs]
        names.sort()
        return names

    def _names(self, rel: str) -> tuple[list[str], list[str]]:
        """Immediate file and directory names under ``rel`` -- names only, no metadata.

        A listing is the hot part of ``list``; roots answer it with per-file metadata
        (a stat per file on local folders), so known roots take a names-only path.
        """
        root: Any = self._root
        fast = getattr(root, "list_names", None)
        if callable(fast):
            files, dirs = fast(rel)
            return list(files), list(dirs)
        if self._kind == "local":
            return _local_names(root, rel)
        if self._kind == "memory":
            return _memory_names(root, rel)
        if self._kind == "fsspec":
            return _fsspec_names(root, rel)
        files = [info.path.rsplit("/", 1)[-1] for info in root.list(rel)]
        return files, root.list_dirs(rel)

    def _sync_exists(self, path: str) -> bool:
        _, rel = split(path)
        if not rel:
            return True
        if self._root.stat(rel) is not None:
            return True
        if self._kind == "local":
            return _local_has_entries(self._root, rel)
        files, dirs = self._names(rel)
        return bool(files or dirs)

    def _sync_delete(self, path: str, allow_root: bool) -> None:
        norm, rel = split(path)
        if not rel and not allow_root:
            raise InvalidPathError(
                "refusing to delete '/', the whole store: pass allow_root=True to mean it"
            )
        with self._hub.changing(norm) as change:
            change.changed = self._remove(rel) > 0

    def _remove(self, rel: str) -> int:
        """Delete the file ``rel`` and everything under ``rel/``; returns the file count."""
        root = self._root
        if not rel:
            removed = sum(bool(root.delete(info.path)) for info in root.list(""))
            return removed + sum(root.delete_tree(name) for name in root.list_dirs(""))
        try:
            removed = int(root.delete(rel))
        except OSError as exc:  # a directory: only its contents go
            if not _is_dir_error(exc):
                raise
            removed = 0
        # A local folder cannot hold a file and a directory under one name.
        if not (removed and self._local):
            removed += root.delete_tree(rel)
        return removed

    def _sync_stat(self, path: str) -> StoreStat | None:
        norm, rel = split(path)
        if not rel:
            return None
        # The version must be the compare-and-swap token, which on some backends is a
        # digest of the content, so read through the root's versioned read.
        try:
            current = self._root.read(rel)
        except KeyNotFoundError:
            return None
        except OSError as exc:
            if _is_dir_error(exc):
                return None
            raise
        info = self._root.stat(rel)
        mtime = info.mtime if info is not None else None
        return StoreStat(norm, len(current.data), mtime, current.version)

    # -- async API ---------------------------------------------------------------------
    async def read(self, path: str) -> str | None:
        """The file's text, or None when it is missing or a directory.

        Bytes that are not valid UTF-8 come back as U+FFFD (use :meth:`read_bytes` for
        the exact bytes).

        Raises:
            InvalidPathError: the path is malformed (``..``, NUL, control characters, ...).
        """
        if self._inline:
            return self._sync_read(path)
        return await asyncio.to_thread(self._sync_read, path)

    async def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when it is missing or a directory."""
        if self._inline:
            return self._sync_read_bytes(path)
        return await asyncio.to_thread(self._sync_read_bytes, path)

    async def write(
        self,
        path: str,
        content: str,
        *,
        if_version: str | None = None,
        create_only: bool = False,
    ) -> str:
        """Replace the file atomically (parents are implied); returns the new version.

        Args:
            path: the file's path.
            content: the text, stored as UTF-8.
            if_version: compare-and-swap -- only write when the current version is this
                one (from :meth:`stat` or an earlier write).
            create_only: only write when the file does not exist yet.

        Raises:
            ConflictError: the condition did not hold; nothing was written.
            InvalidPathError: a malformed path, ``/`` itself, or (local folders) a path
                where a directory of that name exists.
        """
        if self._inline:
            return self._sync_write(path, content, if_version, create_only)
        return await asyncio.to_thread(self._sync_write, path, content, if_version, create_only)

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        if_version: str | None = None,
        create_only: bool = False,
    ) -> str:
        """:meth:`write` for raw bytes."""
        if self._inline:
            return self._sync_write_bytes(path, data, if_version, create_only)
        return await asyncio.to_thread(self._sync_write_bytes, path, data, if_version, create_only)

    async def append(self, path: str, content: str) -> int:
        """Append ``content`` atomically; returns the byte offset where it starts.

        The file is created when missing (offset 0). Concurrent appenders -- tasks,
        threads or processes -- each get a distinct offset and no byte is lost. O(1) in
        the file size on local folders, ``memory://``, ``sqlite://`` and ``redis://``;
        object stores (S3, GCS) emulate it with a compare-and-swap rewrite.
        """
        if self._inline:
            return self._sync_append(path, content)
        return await asyncio.to_thread(self._sync_append, path, content)

    async def read_range(self, path: str, start: int, end: int | None = None) -> str:
        """The text of bytes ``[start, end)`` (``end=None``: to the end of the file).

        Offsets are UTF-8 byte offsets, as returned by :meth:`append`. An offset that
        falls inside a multi-byte character snaps forward to the next character
        boundary: a character belongs to the range that holds its first byte, so
        consecutive ranges ``[a, b)`` + ``[b, c)`` give back every character exactly
        once. Returns ``""`` when the file is missing or the range is empty.

        Raises:
            ValueError: a negative offset.
        """
        if self._inline:
            return self._sync_read_range(path, start, end)
        return await asyncio.to_thread(self._sync_read_range, path, start, end)

    async def list(self, path: str = "/") -> list[str]:
        """Sorted names of the immediate children of ``path``; directories end in ``/``.

        ``[]`` for a missing directory. Internal ``.fsmemory*`` files never show.
        """
        if self._inline:
            return self._sync_list(path)
        return await asyncio.to_thread(self._sync_list, path)

    async def exists(self, path: str) -> bool:
        """True for a file or a directory implied by the files under it (and ``/``)."""
        if self._inline:
            return self._sync_exists(path)
        return await asyncio.to_thread(self._sync_exists, path)

    async def delete(self, path: str, *, allow_root: bool = False) -> None:
        """Delete the file at ``path`` and everything under ``path/``.

        A missing path is a no-op. ``delete("/")`` wipes the whole store and therefore
        raises :class:`~fsmemory.errors.InvalidPathError` unless ``allow_root=True``.
        """
        if self._inline:
            return self._sync_delete(path, allow_root)
        return await asyncio.to_thread(self._sync_delete, path, allow_root)

    async def stat(self, path: str) -> StoreStat | None:
        """Size, mtime and compare-and-swap version of a file; None when missing.

        For a read-modify-write, call ``stat`` *before* reading: if the file changes in
        between, the write with ``if_version`` fails instead of losing the change. On
        backends whose version is a content digest (local folders) this reads the file.
        """
        if self._inline:
            return self._sync_stat(path)
        return await asyncio.to_thread(self._sync_stat, path)

    async def on_change(self, path: str, callback: ChangeCallback) -> Subscription:
        """Call ``callback(changed_path)`` after each change at or under ``path``.

        Changes made through any store of this process on the same storage are reported
        right after they commit; changes made elsewhere are picked up by watchdog on
        local folders (when installed) or by polling every ``poll_interval`` seconds.
        Callbacks run one at a time in a task of the running event loop; a callback that
        raises is logged, and neither the writer nor later notifications are affected.
        Must be called from a running event loop.

        Returns:
            A :class:`Subscription`; ``await sub.close()`` stops it.
        """
        norm, rel = split(path)
        loop = asyncio.get_running_loop()
        sub = Subscription(norm, callback, loop, self._hub)
        watcher = make_watcher(
            self._watch, sub, self._root, rel, poll_interval=self._poll_interval, local=self._local
        )
        await sub._start(watcher)
        self._subs.add(sub)
        return sub

    async def close(self) -> None:
        """Close the subscriptions made through this store and the storage it opened."""
        for sub in list(self._subs):
            await sub.close()
        if self._owns_root:
            self._root.close()

    async def __aenter__(self) -> FsspecKnowledgeStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _purge_memory_root(root: StorageRoot) -> None:
    with contextlib.suppress(Exception):  # interpreter shutdown
        root.delete_tree("")


class MemoryKnowledgeStore(FsspecKnowledgeStore):
    """An in-process store (fsspec ``memory://``), for tests and ephemeral sessions.

    Args:
        name: share the data with other stores opened on ``memory://<name>``. Without a
            name each instance is private and its data is dropped with it.
        watch: see :class:`FsspecKnowledgeStore`; writes through stores of this process
            are always reported immediately.
        poll_interval: seconds between two looks when polling.
    """

    def __init__(
        self, name: str | None = None, *, watch: WatchMode = "auto", poll_interval: float = 0.5
    ) -> None:
        private = name is None
        if name is not None and name.startswith("memory://"):
            name = name[len("memory://") :]
        label = f"fsmemory-store/{uuid.uuid4().hex}" if name is None else name.strip("/")
        if not label:
            raise InvalidPathError("memory store name is empty")
        super().__init__(f"memory://{label}", watch=watch, poll_interval=poll_interval)
        if private:
            weakref.finalize(self, _purge_memory_root, self._root)


class DiskKnowledgeStore(FsspecKnowledgeStore):
    """A store of plain files under the local folder ``root`` (created on first write).

    Writes go through a temp file + rename (atomic), appends use ``O_APPEND`` under a
    cross-process lock. ``on_change`` uses watchdog when it is installed
    (``pip install 'fsmemory[watch]'``) and polls otherwise.

    Args:
        root: the folder.
        watch: see :class:`FsspecKnowledgeStore`.
        poll_interval: seconds between two looks when polling.
        durable: ``fsync`` files and directories after writes.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        watch: WatchMode = "auto",
        poll_interval: float = 1.0,
        durable: bool = False,
    ) -> None:
        text = os.fspath(root)
        if "://" in text:
            raise InvalidPathError(f"DiskKnowledgeStore takes a local folder, not a URL: {text}")
        if durable:
            from fsmemory.fs.local import LocalRoot

            super().__init__(
                LocalRoot(text, durable=True), watch=watch, poll_interval=poll_interval
            )
            self._owns_root = True
        else:
            super().__init__(text, watch=watch, poll_interval=poll_interval)


class SqliteKnowledgeStore(FsspecKnowledgeStore):
    """A durable single-file local store (SQLite in WAL mode; safe across processes).

    Appends are O(1) chunk rows rather than a growing blob rewritten on every call.

    Args:
        path: the database file (created when missing).
        watch: see :class:`FsspecKnowledgeStore` (polling for other processes' changes).
        poll_interval: seconds between two looks when polling.
        durable: ``synchronous=FULL`` (survives power loss) instead of ``NORMAL``.
        timeout: seconds to wait for another writer before failing.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        watch: WatchMode = "auto",
        poll_interval: float = 1.0,
        durable: bool = False,
        timeout: float = 30.0,
    ) -> None:
        text = os.fspath(path)
        url = text if text.startswith("sqlite://") else f"sqlite://{os.path.abspath(text)}"
        super().__init__(
            url, watch=watch, poll_interval=poll_interval, durable=durable, timeout=timeout
        )


class RedisKnowledgeStore(FsspecKnowledgeStore):
    """A store kept in Redis (multi-process, cross-host), through ``redis://`` roots.

    Args:
        url_or_client: a ``redis://host:port/DB[/path]`` URL, or an existing
            ``redis.Redis`` client (a ``redis.asyncio`` client is accepted too: a
            synchronous client with the same connection settings is built from it).
        prefix: key prefix that keeps tenants apart (see the ``redis://`` filesystem).
        watch: see :class:`FsspecKnowledgeStore` (polling for other processes' changes).
        poll_interval: seconds between two looks when polling.
        **storage_options: passed to the Redis filesystem.

    Raises:
        MissingDependencyError: the ``redis`` package is missing
            (``pip install 'fsmemory[redis]'``).
    """

    def __init__(
        self,
        url_or_client: Any,
        *,
        prefix: str | None = None,
        watch: WatchMode = "auto",
        poll_interval: float = 1.0,
        **storage_options: Any,
    ) -> None:
        require("redis", "redis")
        options = dict(storage_options)
        if prefix is not None:
            options["prefix"] = prefix
        if isinstance(url_or_client, str | os.PathLike):
            url = os.fspath(url_or_client)
            if not url.startswith(("redis://", "rediss://")):
                raise InvalidPathError(f"not a redis URL: {url!r}")
        else:
            client = url_or_client
            if is_async_client(client):
                client = rebuild_client(client, asynchronous=False)
            options["client"] = client
            url = "redis://"
        super().__init__(url, watch=watch, poll_interval=poll_interval, **options)
