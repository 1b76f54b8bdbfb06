"""LockedKnowledgeStore: per-path serialization, timeouts, release on error."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from fsmemory.errors import LockTimeoutError
from fsmemory.store import (
    InProcessLock,
    LockedKnowledgeStore,
    MemoryKnowledgeStore,
    RedisLock,
    StoreLock,
)
from fsmemory.testing.store_conformance import unique_name, wait_for


class SlowStore(MemoryKnowledgeStore):
    """Yields to the loop inside reads and writes, so racing tasks really interleave."""

    async def read(self, path: str) -> str | None:
        await asyncio.sleep(0.001)
        return await super().read(path)

    async def write(
        self,
        path: str,
        content: str,
        *,
        if_version: str | None = None,
        create_only: bool = False,
    ) -> str:
        await asyncio.sleep(0.001)
        return await super().write(path, content, if_version=if_version, create_only=create_only)


class SeedStyleLock:
    """A lock with the seed's interface only: try once, no waiting."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.attempts = 0

    async def acquire(self, name: str, ttl: float = 30.0) -> bool:
        self.attempts += 1
        if name in self.held:
            return False
        self.held.add(name)
        return True

    async def release(self, name: str) -> None:
        self.held.discard(name)


async def _increment(store: LockedKnowledgeStore, path: str) -> None:
    async with store.hold(path):
        value = int(await store.read(path) or "0")
        await store.write(path, str(value + 1))  # re-entrant: no second acquire


async def test_read_modify_write_is_serialized() -> None:
    locked = LockedKnowledgeStore(SlowStore(watch="none"), InProcessLock())
    await asyncio.gather(*(_increment(locked, "/counter") for _ in range(20)))
    assert await locked.read("/counter") == "20"


async def test_without_lock_updates_are_lost() -> None:
    """The control experiment: the same race without the lock loses increments."""

    async def racy(store: SlowStore) -> None:
        value = int(await store.read("/counter") or "0")
        await store.write("/counter", str(value + 1))

    store = SlowStore(watch="none")
    await asyncio.gather(*(racy(store) for _ in range(20)))
    assert await store.read("/counter") != "20"


async def _hold_until(locked: LockedKnowledgeStore, path: str, release: asyncio.Event) -> Any:
    """A task holding the lock of ``path`` until ``release`` is set (returned once held)."""
    entered = asyncio.Event()

    async def holder() -> None:
        async with locked.hold(path):
            entered.set()
            await release.wait()

    task = asyncio.create_task(holder())
    await entered.wait()
    return task


async def test_waits_for_the_lock_then_proceeds() -> None:
    locked = LockedKnowledgeStore(MemoryKnowledgeStore(watch="none"), timeout=30)
    release = asyncio.Event()
    holder = await _hold_until(locked, "/p", release)
    waiter = asyncio.create_task(locked.write("//p/", "after"))  # the same normalized path
    for _ in range(5):  # the writer waits while the lock is held ...
        await asyncio.sleep(0)
    assert not waiter.done()
    assert await locked.read("/p") is None
    release.set()  # ... and proceeds once it is released
    await waiter
    await holder
    assert await locked.read("/p") == "after"


@pytest.mark.parametrize("lock_factory", [InProcessLock, SeedStyleLock])
async def test_times_out_instead_of_failing_at_once(lock_factory: type[StoreLock]) -> None:
    locked = LockedKnowledgeStore(MemoryKnowledgeStore(watch="none"), lock_factory(), timeout=0.2)
    release = asyncio.Event()
    holder = await _hold_until(locked, "/busy", release)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(LockTimeoutError):
        await locked.append("/busy", "x")
    assert loop.time() - started >= 0.15  # waited for the lock (a lower bound only)
    await locked.write("/other", "free")  # other paths are not blocked
    release.set()
    await holder
    await locked.append("/busy", "x")


async def test_seed_style_lock_is_retried() -> None:
    lock = SeedStyleLock()
    locked = LockedKnowledgeStore(MemoryKnowledgeStore(watch="none"), lock, timeout=30)
    release = asyncio.Event()
    holder = await _hold_until(locked, "/x", release)
    waiter = asyncio.create_task(locked.write("/x", "done"))
    assert await wait_for(lambda: lock.attempts > 3)  # tried again and again meanwhile
    assert not waiter.done()
    release.set()
    await waiter
    await holder
    assert lock.held == set()
    assert await locked.read("/x") == "done"


async def test_lock_released_when_the_write_fails() -> None:
    lock = InProcessLock()
    locked = LockedKnowledgeStore(MemoryKnowledgeStore(watch="none"), lock, timeout=0.1)
    with pytest.raises(TypeError):
        await locked.write("/f", b"not text")  # type: ignore[arg-type]
    assert not lock.locked("store:/f")
    await locked.write("/f", "ok")
    with pytest.raises(RuntimeError):
        async with locked.hold("/f"):
            raise RuntimeError("boom")
    assert not lock.locked("store:/f")
    await locked.delete("/f")
    assert await locked.read("/f") is None


async def test_lock_released_when_cancelled() -> None:
    lock = InProcessLock()
    locked = LockedKnowledgeStore(MemoryKnowledgeStore(watch="none"), lock)

    task = await _hold_until(locked, "/c", asyncio.Event())  # never released
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_for(lambda: not lock.locked("store:/c"))
    assert lock._slots == {}


def test_in_process_lock_basics() -> None:
    async def body() -> None:
        lock = InProcessLock()
        assert await lock.acquire("n")
        assert not await lock.acquire("n")
        assert not await lock.acquire("n", timeout=0.05)
        await lock.release("n")
        assert await lock.acquire("n", timeout=0.05)
        await lock.release("n")
        with pytest.raises(RuntimeError):
            await lock.release("n")
        assert lock._slots == {}

    asyncio.run(body())
    asyncio.run(body())  # a fresh event loop may reuse the same lock object


async def test_reads_are_not_locked() -> None:
    locked = LockedKnowledgeStore(MemoryKnowledgeStore(watch="none"), timeout=0.05)
    await locked.write("/r", "x")
    async with locked.hold("/r"):
        reader = asyncio.create_task(locked.read("/r"))
        assert await asyncio.wait_for(reader, 1) == "x"
        assert await locked.list("/") == ["r"]
        assert await locked.exists("/r")
        assert await locked.read_range("/r", 0) == "x"
        info = await locked.stat("/r")
        assert info is not None


@pytest.mark.redis
async def test_redis_lock_serializes_and_times_out(redis_url: str) -> None:
    prefix = unique_name("lock") + ":"
    lock_a = RedisLock(redis_url, prefix=prefix)
    lock_b = RedisLock(redis_url, prefix=prefix)
    assert await lock_a.acquire("n", ttl=5)
    assert not await lock_b.acquire("n", ttl=5)
    started = time.monotonic()
    assert not await lock_b.acquire("n", ttl=5, timeout=0.2)
    assert time.monotonic() - started >= 0.15
    await lock_a.release("n")
    assert await lock_b.acquire("n", ttl=5, timeout=0.2)
    await lock_b.release("n")
    await lock_a.close()
    await lock_b.close()


@pytest.mark.redis
async def test_redis_lock_lease_expires_and_renews(redis_url: str) -> None:
    prefix = unique_name("lock") + ":"
    crashed = RedisLock(redis_url, prefix=prefix, renew=False)
    assert await crashed.acquire("n", ttl=0.2)
    other = RedisLock(redis_url, prefix=prefix)
    assert await other.acquire("n", ttl=0.3, timeout=2)  # the stale lease expired
    import redis

    raw = redis.Redis.from_url(redis_url)
    key = f"{prefix}n"
    renewals = 0
    last = raw.pttl(key)

    def renewed_past_its_ttl() -> bool:
        nonlocal renewals, last
        now = raw.pttl(key)
        renewals += now > last
        last = now
        return renewals >= 4  # renewed every ttl/3: well over one ttl has passed

    assert await wait_for(renewed_past_its_ttl)
    raw.close()
    assert not await crashed.acquire("n", ttl=0.3)  # still ours
    await other.release("n")
    # the stale holder's release must not free someone else's lease
    assert await other.acquire("n", ttl=5)
    crashed._tokens["n"] = "stale-token"
    await crashed.release("n")
    assert not await crashed.acquire("n", ttl=5)
    await other.release("n")
    await crashed.close()
    await other.close()


@pytest.mark.redis
async def test_locked_store_with_redis_lock(redis_url: str) -> None:
    lock = RedisLock(redis_url, prefix=unique_name("lock") + ":")
    locked = LockedKnowledgeStore(SlowStore(watch="none"), lock, timeout=10)
    await asyncio.gather(*(_increment(locked, "/counter") for _ in range(10)))
    assert await locked.read("/counter") == "10"
    await lock.close()
