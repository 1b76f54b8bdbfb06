"""The one path-store implementation, over any storage root (any fsspec URL)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from fsmemory.errors import InvalidInputError, InvalidPathError
from fsmemory.fs._nowait import WouldBlock, call_without_waiting
from fsmemory.fs.base import Capabilities, StorageRoot
from fsmemory.fs.open import open_root
from fsmemory.store._core import StoreCore
from fsmemory.store._paths import split
from fsmemory.store._protocol import ChangeCallback, StoreStat
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

_T = TypeVar("_T")


def merge_storage_options(
    storage_options: Mapping[str, Any] | None, legacy: Mapping[str, Any], owner: str
) -> dict[str, Any]:
    """``storage_options`` plus options given the old way, as keyword arguments (which
    warns: they are deprecated)."""
    options = dict(storage_options or {})
    if legacy:
        warnings.warn(
            f"{owner}(..., {', '.join(sorted(legacy))}=...): pass storage options as "
            f"storage_options={{...}}; keyword arguments are deprecated",
            DeprecationWarning,
            stacklevel=3,
        )
        options.update(legacy)
    return options


class FsspecKnowledgeStore:
    """An async :class:`~fsmemory.store.KnowledgeStore` over any storage URL.

    ``FsspecKnowledgeStore("./state")``, ``("memory://run-1")``, ``("s3://bucket/agent",
    storage_options={"key": ..., "secret": ...})``, ``("redis://localhost:6379/0/agent")``,
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
        storage_options: the backend's options (credentials, endpoint, ``retry``, ...;
            see :func:`fsmemory.fs.open_root`). Passing them as keyword arguments still
            works but is deprecated.

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
        storage_options: Mapping[str, Any] | None = None,
        **legacy_options: Any,
    ) -> None:
        if max_file_bytes is not None and (
            isinstance(max_file_bytes, bool)
            or not isinstance(max_file_bytes, int)
            or max_file_bytes < 0
        ):
            raise InvalidInputError("max_file_bytes must be a non-negative int or None")
        if watch not in ("auto", "poll", "none"):
            raise InvalidInputError(f"watch must be 'auto', 'poll' or 'none', not {watch!r}")
        if poll_interval <= 0:
            raise InvalidInputError("poll_interval must be > 0")
        options = merge_storage_options(storage_options, legacy_options, type(self).__name__)
        self._owns_root = not isinstance(url, StorageRoot)
        self._root: StorageRoot = open_root(url, options)
        capabilities = self._root.capabilities
        self._inline = capabilities.local_io if inline is None else bool(inline)
        self._hub = hub_for(self._root)
        self._core = StoreCore(self._root, self._hub, max_file_bytes)
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
    def max_file_bytes(self) -> int | None:
        """The largest file a write may store or an append may grow (None: no limit)."""
        return self._core.max_file_bytes

    @property
    def capabilities(self) -> Capabilities:
        """What the backend does natively (conditional writes, append, watch, ...)."""
        return self._root.capabilities

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._root.url!r})"

    async def _call(self, method: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run a core method inline (local roots) or in a worker thread (network roots).

        Inline calls run without waiting (:mod:`fsmemory.fs._nowait`): one that would wait
        for a lock held elsewhere raises ``WouldBlock`` before changing anything and is
        repeated in a worker thread, so the event loop never waits on a lock.
        """
        if self._inline:
            try:
                return call_without_waiting(method, *args, **kwargs)
            except WouldBlock:
                pass  # a lock is held elsewhere: wait for it in a worker thread
        return await asyncio.to_thread(method, *args, **kwargs)

    # -- async API ---------------------------------------------------------------------
    async def read(self, path: str) -> str | None:
        """The file's text, or None when it is missing or a directory.

        Bytes that are not valid UTF-8 come back as U+FFFD (use :meth:`read_bytes` for
        the exact bytes).

        Raises:
            InvalidPathError: the path is malformed (``..``, NUL, control characters, ...).
        """
        return await self._call(self._core.read, path)

    async def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when it is missing or a directory."""
        return await self._call(self._core.read_bytes, path)

    async def write(
        self, path: str, content: str, *, if_version: str | None = None, create_only: bool = False
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
        return await self._call(
            self._core.write, path, content, if_version=if_version, create_only=create_only
        )

    async def write_bytes(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """:meth:`write` for raw bytes."""
        return await self._call(
            self._core.write_bytes, path, data, if_version=if_version, create_only=create_only
        )

    async def append(self, path: str, content: str) -> int:
        """Append ``content`` atomically; returns the byte offset where it starts.

        The file is created when missing (offset 0). Concurrent appenders -- tasks,
        threads or processes -- each get a distinct offset and no byte is lost. O(1) in
        the file size on local folders, ``memory://``, ``sqlite://`` and ``redis://``;
        object stores (S3, GCS) emulate it with a compare-and-swap rewrite.
        """
        return await self._call(self._core.append, path, content)

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
        return await self._call(self._core.read_range, path, start, end)

    async def list(self, path: str = "/") -> list[str]:
        """Sorted names of the immediate children of ``path``; directories end in ``/``.

        ``[]`` for a missing directory. Internal ``.fsmemory*`` files never show.
        """
        return await self._call(self._core.list, path)

    async def exists(self, path: str) -> bool:
        """True for a file or a directory implied by the files under it (and ``/``)."""
        return await self._call(self._core.exists, path)

    async def delete(self, path: str, *, allow_root: bool = False) -> None:
        """Delete the file at ``path`` and everything under ``path/``.

        A missing path is a no-op. ``delete("/")`` wipes the whole store and therefore
        raises :class:`~fsmemory.errors.InvalidPathError` unless ``allow_root=True``.
        """
        return await self._call(self._core.delete, path, allow_root=allow_root)

    async def stat(self, path: str) -> StoreStat | None:
        """Size, mtime and compare-and-swap version of a file; None when missing.

        For a read-modify-write, call ``stat`` *before* reading: if the file changes in
        between, the write with ``if_version`` fails instead of losing the change. On
        backends whose version is a content digest (local folders) this reads the file.
        """
        return await self._call(self._core.stat, path)

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
        watcher = make_watcher(self._watch, sub, self._root, rel, poll_interval=self._poll_interval)
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
        super().__init__(
            text,
            watch=watch,
            poll_interval=poll_interval,
            storage_options={"durable": True} if durable else None,
        )


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
            url,
            watch=watch,
            poll_interval=poll_interval,
            storage_options={"durable": durable, "timeout": timeout},
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
        storage_options: passed to the Redis filesystem (``password``,
            ``socket_timeout``, ``retry``, ...); as keyword arguments they still work
            but are deprecated.

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
        storage_options: Mapping[str, Any] | None = None,
        **legacy_options: Any,
    ) -> None:
        from fsmemory.fs.redis import redis_client

        redis_client.redis_module()  # MissingDependencyError before anything else
        options = merge_storage_options(storage_options, legacy_options, type(self).__name__)
        if prefix is not None:
            options["prefix"] = prefix
        if isinstance(url_or_client, str | os.PathLike):
            url = os.fspath(url_or_client)
            if not url.startswith(("redis://", "rediss://")):
                raise InvalidPathError(f"not a redis URL: {url!r}")
        else:
            options["client"] = redis_client.convert_client(url_or_client, asynchronous=False)
            url = "redis://"
        super().__init__(url, watch=watch, poll_interval=poll_interval, storage_options=options)
