"""Shared pytest fixtures for the whole suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.conftest_cloud"]


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """``redis://127.0.0.1:PORT`` of one throwaway redis-server shared by the session.

    Tests keep apart through unique key prefixes. Skips when no redis-server can be
    started, unless ``FSMEMORY_REQUIRE_SERVICES=1``.
    """
    from fsmemory.testing.services import start_or_skip, start_redis

    service = start_or_skip(start_redis)
    try:
        yield service.url
    finally:
        service.stop()
