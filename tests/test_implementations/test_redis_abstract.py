"""fsspec's own abstract test suites (pipe, open, copy, get, put) on RedisFileSystem."""

from __future__ import annotations

from typing import Any

import fsspec.tests.abstract as abstract
import pytest

pytestmark = pytest.mark.redis


class RedisFixtures(abstract.AbstractFixtures):  # type: ignore[misc]
    """Each test gets a filesystem with its own key prefix; files live under ``root``."""

    @pytest.fixture
    def fs(self, redis_fs: Any) -> Any:
        return redis_fs

    @pytest.fixture
    def fs_path(self) -> str:
        return "root"


class TestRedisPipe(abstract.AbstractPipeTests, RedisFixtures):  # type: ignore[misc]
    """fsspec pipe tests."""


class TestRedisOpen(abstract.AbstractOpenTests, RedisFixtures):  # type: ignore[misc]
    """fsspec open tests."""


class TestRedisCopy(abstract.AbstractCopyTests, RedisFixtures):  # type: ignore[misc]
    """fsspec copy tests (within Redis)."""


class TestRedisGet(abstract.AbstractGetTests, RedisFixtures):  # type: ignore[misc]
    """fsspec get tests (Redis -> local)."""


class TestRedisPut(abstract.AbstractPutTests, RedisFixtures):  # type: ignore[misc]
    """fsspec put tests (local -> Redis)."""


class RedisUrlFixtures(RedisFixtures):
    """The same suites with every path a full ``redis://host:port/DB/...`` URL, as users
    type them (paths holding ``?`` or ``#`` must keep them)."""

    @pytest.fixture
    def fs_path(self, redis_fs: Any) -> str:
        return f"redis://{redis_fs.host}:{redis_fs.port}/{redis_fs.db}/root"

    @pytest.fixture
    def fs_sanitize_path(self, redis_fs: Any) -> Any:
        return redis_fs._strip_protocol


class TestRedisPipeUrls(abstract.AbstractPipeTests, RedisUrlFixtures):  # type: ignore[misc]
    """fsspec pipe tests on URLs."""


class TestRedisOpenUrls(abstract.AbstractOpenTests, RedisUrlFixtures):  # type: ignore[misc]
    """fsspec open tests on URLs."""


class TestRedisCopyUrls(abstract.AbstractCopyTests, RedisUrlFixtures):  # type: ignore[misc]
    """fsspec copy tests on URLs."""


class TestRedisGetUrls(abstract.AbstractGetTests, RedisUrlFixtures):  # type: ignore[misc]
    """fsspec get tests on URLs."""


class TestRedisPutUrls(abstract.AbstractPutTests, RedisUrlFixtures):  # type: ignore[misc]
    """fsspec put tests on URLs."""
