"""Fixtures for the integration tests: a fresh store location on each backend."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_memory.conftest import BACKENDS, FakeClock, backend_location

__all__ = ["BACKENDS", "FakeClock"]


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Any) -> tuple[str, dict[str, Any]]:
    """(url, storage_options) of a fresh, empty root on each backend."""
    return backend_location(request, str(request.param), tmp_path)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
