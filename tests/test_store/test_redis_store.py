"""RedisKnowledgeStore constructors (the behaviour suite runs in test_conformance)."""

from __future__ import annotations

import pytest

from fsmemory.errors import InvalidPathError
from fsmemory.store import RedisKnowledgeStore, SyncKnowledgeStore
from fsmemory.testing.store_conformance import unique_name

pytestmark = pytest.mark.redis


async def _roundtrip(store: RedisKnowledgeStore) -> None:
    await store.write("/a/b.md", "x")
    assert await store.read("/a/b.md") == "x"
    assert await store.append("/log", "12") == 0
    assert await store.append("/log", "34") == 2
    assert await store.list("/") == ["a/", "log"]
    await store.delete("/", allow_root=True)


async def test_from_url_with_prefix(redis_url: str) -> None:
    prefix = unique_name()
    store = RedisKnowledgeStore(redis_url, prefix=prefix)
    other = RedisKnowledgeStore(redis_url, prefix=unique_name())

    await store.write("/mine", "1")
    assert await other.read("/mine") is None
    await store.delete("/mine")
    await _roundtrip(store)


async def test_from_a_sync_client(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    await _roundtrip(RedisKnowledgeStore(client, prefix=unique_name()))
    client.close()


async def test_from_an_asyncio_client(redis_url: str) -> None:
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    await _roundtrip(RedisKnowledgeStore(client, prefix=unique_name()))
    await client.aclose()


async def test_redis_lock_from_a_sync_client(redis_url: str) -> None:
    import redis

    from fsmemory.store import RedisLock

    lock = RedisLock(redis.Redis.from_url(redis_url), prefix=unique_name() + ":")
    assert await lock.acquire("x", timeout=1)
    await lock.release("x")


def test_network_calls_leave_the_event_loop(redis_url: str) -> None:
    store = RedisKnowledgeStore(redis_url, prefix=unique_name())
    assert store._inline is False


def test_sync_facade_over_redis(redis_url: str) -> None:
    with SyncKnowledgeStore(RedisKnowledgeStore(redis_url, prefix=unique_name())) as store:
        store.write("/x", "y")
        assert store.read("/x") == "y"
        store.delete("/", allow_root=True)


def test_rejects_other_urls() -> None:
    with pytest.raises(InvalidPathError):
        RedisKnowledgeStore("memory://nope")
