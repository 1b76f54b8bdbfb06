"""Shared pytest fixtures for the whole suite."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from tests import docs_site

pytest_plugins = ["tests.conftest_cloud"]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the documentation site's build in the background when a collected test
    needs it (``tests/test_docs.py``): it runs beside the tests before it."""
    if session.config.option.collectonly or importlib.util.find_spec("mkdocs") is None:
        return
    if docs_site.needs_site(session.items):
        docs_site.start_in_background(session.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop a build nobody waited for and remove the built site."""
    docs_site.finish(session.config)


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
