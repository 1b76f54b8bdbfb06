"""Serializing writers: :class:`LockedKnowledgeStore` and the locks it can use."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from fsmemory.errors import InvalidInputError, LockTimeoutError
from fsmemory.store._paths import normalize
from fsmemory.store._protocol import (
    ChangeCallback,
    ChangeSubscription,
    KnowledgeStore,
    StoreStat,
    VersionedKnowledgeStore,
)

__all__ = ["InProcessLock", "LockedKnowledgeStore", "RedisLock", "StoreLock"]

logger = logging.getLogger("fsmemory.store")

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


@runtime_checkable
class StoreLock(Protocol):
    """A named lock, as the seed's ``LockedKnowledgeStore`` uses it.

    ``acquire`` tries once and returns False when the name is taken; ``ttl`` bounds how
    long a lease survives a crashed holder. The locks of this module also accept a
    keyword ``timeout`` (seconds to wait for the name); for any other lock
    :class:`LockedKnowledgeStore` retries with backoff until its own timeout.
    """

    async def acquire(self, name: str, ttl: float = 30.0) -> bool:
        """Take ``name``; False when another holder has it."""
        ...

    async def release(self, name: str) -> None:
        """Give ``name`` back."""
        ...


@dataclass
class _Slot:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class InProcessLock:
    """Named ``asyncio`` locks: serializes the tasks of one event loop, FIFO, no polling.

    ``ttl`` is accepted for protocol compatibility and ignored: a task that dies releases
    its lock through ``finally``. Idle names use no memory.
    """

    def __init__(self) -> None:
        self._slots: dict[tuple[int, str], _Slot] = {}

    def _drop(self, key: tuple[int, str], slot: _Slot) -> None:
        slot.users -= 1
        if slot.users <= 0 and self._slots.get(key) is slot:
            del self._slots[key]

    async def acquire(self, name: str, ttl: float = 30.0, *, timeout: float = 0.0) -> bool:
        """Take ``name``, waiting up to ``timeout`` seconds; False when it stayed taken."""
        key = (id(asyncio.get_running_loop()), name)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot()
        slot.users += 1
        try:
            if timeout <= 0:
                if slot.lock.locked():
                    self._drop(key, slot)
                    return False
                await slot.lock.acquire()
            else:
                async with asyncio.timeout(timeout):
                    await slot.lock.acquire()
        except TimeoutError:
            self._drop(key, slot)
            return False
        except BaseException:
            self._drop(key, slot)
            raise
        return True

    async def release(self, name: str) -> None:
        """Give ``name`` back (from the event loop that took it)."""
        key = (id(asyncio.get_running_loop()), name)
        slot = self._slots.get(key)
        if slot is None or not slot.lock.locked():
            raise RuntimeError(f"lock {name!r} is not held")
        slot.lock.release()
        self._drop(key, slot)

    def locked(self, name: str) -> bool:
        """True while some task of the running loop holds ``name``."""
        slot = self._slots.get((id(asyncio.get_running_loop()), name))
        return slot is not None and slot.lock.locked()


class RedisLock:
    """A lease lock in Redis: safe across processes and hosts.

    ``SET key token NX PX ttl`` takes the lease; a Lua script releases it only when the
    token still matches, so a holder whose lease expired cannot free someone else's.
    While held, the lease is renewed every ``ttl / 3`` seconds (``renew=True``), so a
    slow holder keeps it and a crashed one loses it after ``ttl``.

    Args:
        url_or_client: a ``redis://`` URL or a redis-py client (``redis.asyncio`` or
            synchronous; a synchronous one is converted).
        prefix: key prefix of the leases.
        renew: extend held leases in the background.

    Raises:
        MissingDependencyError: ``redis`` is not installed (``fsmemory[redis]``).
    """

    def __init__(
        self,
        url_or_client: Any = "redis://localhost:6379/0",
        *,
        prefix: str = "fsmemory:lock:",
        renew: bool = True,
    ) -> None:
        from fsmemory.fs.redis import redis_client

        redis_client.redis_module(asynchronous=True)  # MissingDependencyError up front
        self._helpers = redis_client
        self._prefix = prefix
        self._renew = renew
        self._url: str | None = None
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if isinstance(url_or_client, str):
            self._url = url_or_client
        else:
            self._client = redis_client.convert_client(url_or_client, asynchronous=True)
        self._tokens: dict[str, str] = {}
        self._renewers: dict[str, asyncio.Task[None]] = {}

    def _redis(self) -> Any:
        if self._url is None:
            return self._client
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # redis.asyncio connections belong to one event loop.
            self._client = self._helpers.client_from_url(self._url, asynchronous=True)
            self._loop = loop
        return self._client

    async def acquire(self, name: str, ttl: float = 30.0, *, timeout: float = 0.0) -> bool:
        """Take the lease ``name`` for ``ttl`` seconds, waiting up to ``timeout``."""
        client = self._redis()
        key = self._prefix + name
        token = uuid.uuid4().hex
        ttl_ms = max(1, int(ttl * 1000))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.001
        while True:
            with self._helpers.redis_errors(f"redis lock {key}"):
                taken = await client.set(key, token, nx=True, px=ttl_ms)
            if taken:
                self._tokens[name] = token
                if self._renew:
                    self._renewers[name] = loop.create_task(self._keep(key, token, ttl))
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)

    async def _keep(self, key: str, token: str, ttl: float) -> None:
        client = self._redis()
        while True:
            await asyncio.sleep(ttl / 3)
            try:
                kept = await client.eval(_RENEW, 1, key, token, max(1, int(ttl * 1000)))
            except Exception:
                logger.warning("could not renew the lease %s", key, exc_info=True)
                continue
            if not kept:
                logger.warning("lost the lease %s (it expired)", key)
                return

    async def release(self, name: str) -> None:
        """Give the lease back (no-op when it already expired)."""
        token = self._tokens.pop(name, None)
        renewer = self._renewers.pop(name, None)
        if renewer is not None:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
        if token is None:
            raise RuntimeError(f"lease {name!r} is not held")
        with self._helpers.redis_errors(f"redis lock {self._prefix + name}"):
            await self._redis().eval(_RELEASE, 1, self._prefix + name, token)

    async def close(self) -> None:
        """Close the connection this lock built from a URL."""
        if self._url is not None and self._client is not None:
            await self._client.aclose()
            self._client = None


_HELD: ContextVar[frozenset[tuple[int, str]]] = ContextVar(
    "fsmemory_store_held", default=frozenset()
)


class LockedKnowledgeStore:
    """Serializes the writers of a store per path with a pluggable lock.

    ``write``, ``write_bytes``, ``append`` and ``delete`` hold the lock named after the
    normalized path (so ``a//b/`` and ``/a/b`` are one lock); reads pass through. A
    taken lock is waited for up to ``timeout`` seconds (then
    :class:`~fsmemory.errors.LockTimeoutError`), and it is released whatever the call
    raises. Use :meth:`hold` for a read-modify-write; calls inside it on the same path
    do not lock again.

    Deleting a directory locks the directory's path only, not each file below it.

    Args:
        store: any :class:`KnowledgeStore`.
        lock: a :class:`StoreLock` -- :class:`InProcessLock` (default; one event loop),
            :class:`RedisLock` (processes and hosts), or any object with the seed's
            ``acquire(name, ttl) -> bool`` / ``release(name)``.
        timeout: seconds to wait for a taken lock.
        ttl: lease time passed to the lock.
    """

    def __init__(
        self,
        store: KnowledgeStore,
        lock: StoreLock | None = None,
        *,
        timeout: float = 30.0,
        ttl: float = 30.0,
    ) -> None:
        if timeout < 0 or ttl <= 0:
            raise InvalidInputError("timeout must be >= 0 and ttl > 0")
        self._store = store
        self._lock: StoreLock = lock if lock is not None else InProcessLock()
        self._timeout = float(timeout)
        self._ttl = float(ttl)
        try:
            params = inspect.signature(self._lock.acquire).parameters
            self._waits = "timeout" in params
        except (TypeError, ValueError):  # pragma: no cover - exotic callables
            self._waits = False

    @property
    def store(self) -> KnowledgeStore:
        """The wrapped store."""
        return self._store

    @property
    def lock(self) -> StoreLock:
        """The lock serializing the writers."""
        return self._lock

    def __repr__(self) -> str:
        return f"LockedKnowledgeStore({self._store!r}, {self._lock!r})"

    async def _acquire(self, name: str, path: str) -> None:
        lock: Any = self._lock
        if self._waits:
            ok = bool(await lock.acquire(name, ttl=self._ttl, timeout=self._timeout))
        else:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._timeout
            delay = 0.001
            while True:
                ok = bool(await lock.acquire(name, ttl=self._ttl))
                remaining = deadline - loop.time()
                if ok or remaining <= 0:
                    break
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.05)
        if not ok:
            raise LockTimeoutError(f"could not lock {path!r} within {self._timeout} s")

    @asynccontextmanager
    async def hold(self, path: str) -> AsyncIterator[None]:
        """Hold the write lock of ``path`` for a block (re-entrant within the task).

        Example::

            async with locked.hold("/memory/working.md"):
                text = await locked.read("/memory/working.md") or ""
                await locked.write("/memory/working.md", text + "- new fact\\n")
        """
        name = f"store:{normalize(path)}"
        key = (id(self._lock), name)
        held = _HELD.get()
        if key in held:
            yield
            return
        await self._acquire(name, path)
        _HELD.set(held | {key})
        try:
            yield
        finally:
            _HELD.set(held)
            await asyncio.shield(self._lock.release(name))

    # -- writers -----------------------------------------------------------------------
    async def write(
        self, path: str, content: str, *, if_version: str | None = None, create_only: bool = False
    ) -> str | None:
        """Write under the path's lock (see :meth:`FsspecKnowledgeStore.write`)."""
        async with self.hold(path):
            if if_version is None and not create_only:
                return await self._store.write(path, content)
            ext = cast(VersionedKnowledgeStore, self._store)
            return await ext.write(path, content, if_version=if_version, create_only=create_only)

    async def write_bytes(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """:meth:`write` for bytes (the wrapped store must support ``write_bytes``)."""
        ext = cast(VersionedKnowledgeStore, self._store)
        async with self.hold(path):
            return await ext.write_bytes(path, data, if_version=if_version, create_only=create_only)

    async def append(self, path: str, content: str) -> int:
        """Append under the path's lock; returns the start offset."""
        async with self.hold(path):
            return await self._store.append(path, content)

    async def delete(self, path: str, *, allow_root: bool = False) -> None:
        """Delete under the path's lock (``/`` needs ``allow_root=True``)."""
        async with self.hold(path):
            if allow_root:
                ext = cast(VersionedKnowledgeStore, self._store)
                await ext.delete(path, allow_root=True)
            else:
                await self._store.delete(path)

    # -- readers -----------------------------------------------------------------------
    async def read(self, path: str) -> str | None:
        """Unlocked read."""
        return await self._store.read(path)

    async def read_bytes(self, path: str) -> bytes | None:
        """Unlocked bytes read (the wrapped store must support it)."""
        return await cast(VersionedKnowledgeStore, self._store).read_bytes(path)

    async def stat(self, path: str) -> StoreStat | None:
        """Unlocked stat (the wrapped store must support it)."""
        return await cast(VersionedKnowledgeStore, self._store).stat(path)

    async def list(self, path: str = "/") -> list[str]:
        """Unlocked listing."""
        return await self._store.list(path)

    async def exists(self, path: str) -> bool:
        """Unlocked existence check."""
        return await self._store.exists(path)

    async def read_range(self, path: str, start: int, end: int | None = None) -> str:
        """Unlocked ranged read."""
        return await self._store.read_range(path, start, end)

    async def on_change(self, path: str, callback: ChangeCallback) -> ChangeSubscription:
        """Subscribe through the wrapped store."""
        return await self._store.on_change(path, callback)

    async def close(self) -> None:
        """Close the wrapped store (when it can be closed)."""
        closer = getattr(self._store, "close", None)
        if closer is not None:
            result = closer()
            if inspect.isawaitable(result):
                await result
