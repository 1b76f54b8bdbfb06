"""Fixtures for the reliability tests (helpers live in ``_support``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_reliability._support import BACKENDS, FaultyBackend, make_faulty_backend


@pytest.fixture(params=BACKENDS)
def faulty_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FaultyBackend]:
    """A fresh memory location on each backend, with faults switched off to start."""
    backend = make_faulty_backend(request, str(request.param), tmp_path)
    try:
        yield backend
    finally:
        for proxy in backend.stops:
            proxy.stop()
