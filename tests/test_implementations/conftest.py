"""Fixtures for the fsspec filesystems of fsmemory.implementations."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from fsmemory.implementations import register

pytest.importorskip("redis")

from fsmemory.implementations.redis import RedisFileSystem

RedisFactory = Callable[..., RedisFileSystem]


def _drop_prefix(fs: RedisFileSystem) -> None:
    # Test cleanup only: the filesystem itself never scans the keyspace.
    keys = list(fs.client.scan_iter(match="{" + fs.prefix + "}:*", count=1000))
    if keys:
        fs.client.delete(*keys)


@pytest.fixture
def make_redis_fs(redis_url: str) -> Iterator[RedisFactory]:
    """Factory of RedisFileSystem instances on the session server, each with a fresh prefix
    (or the one given); every key they wrote is deleted after the test."""
    register()
    made: list[RedisFileSystem] = []

    def make(**kwargs: object) -> RedisFileSystem:
        options = RedisFileSystem._get_kwargs_from_urls(redis_url)
        options.setdefault("prefix", f"test-{uuid.uuid4().hex[:12]}")
        options.update(kwargs)
        fs = RedisFileSystem(skip_instance_cache=True, **options)
        made.append(fs)
        return fs

    yield make
    for fs in made:
        _drop_prefix(fs)
        fs.client.close()


@pytest.fixture
def redis_fs(make_redis_fs: RedisFactory) -> RedisFileSystem:
    """A RedisFileSystem with a prefix of its own."""
    return make_redis_fs()
