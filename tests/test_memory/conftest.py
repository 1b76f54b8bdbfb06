"""Fixtures for the KnowledgeMemory tests: one factory per backend."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fsmemory import KnowledgeMemory

BACKENDS = [
    "local",
    "memory",
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("gcs", marks=pytest.mark.gcs),  # obstore (the XML relay)
    # the gcsfs route: every suite of fs/ and store/ by default, this one in the slow run
    pytest.param("gcs-gcsfs", marks=[pytest.mark.gcs, pytest.mark.slow]),
    pytest.param("azure", marks=pytest.mark.azure),
    # the adlfs route: every suite of fs/ and store/ by default, this one in the slow run
    pytest.param("azure-adlfs", marks=[pytest.mark.azure, pytest.mark.slow]),
    pytest.param("redis", marks=pytest.mark.redis),
]


class FakeClock:
    """A settable UTC clock for deterministic timestamps and TTLs."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 3, 13, 10, 15, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


def backend_location(
    request: pytest.FixtureRequest, backend: str, tmp_path: Any
) -> tuple[str, dict[str, Any]]:
    """(url, storage_options) of a fresh, empty memory root on ``backend``."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    if backend == "local":
        return str(tmp_path / name), {}
    if backend == "memory":
        return f"memory://{name}", {}
    if backend == "s3":
        return request.getfixturevalue("s3_root_url"), request.getfixturevalue("s3_storage_options")
    if backend in ("gcs", "gcs-gcsfs"):
        fixture = "gcs_obstore_storage_options" if backend == "gcs" else "gcs_storage_options"
        return request.getfixturevalue("gcs_root_url"), request.getfixturevalue(fixture)
    if backend == "azure":
        return request.getfixturevalue("azure_root_url"), request.getfixturevalue(
            "azure_storage_options"
        )
    if backend == "azure-adlfs":
        return request.getfixturevalue("azure_root_url"), request.getfixturevalue(
            "azure_adlfs_storage_options"
        )
    if backend == "redis":
        return f"{request.getfixturevalue('redis_url')}/0/{name}", {}
    raise AssertionError(backend)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(
    request: pytest.FixtureRequest, backend: str, tmp_path: Any
) -> tuple[str, dict[str, Any]]:
    return backend_location(request, backend, tmp_path)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_km(
    location: tuple[str, dict[str, Any]], clock: FakeClock
) -> Callable[..., KnowledgeMemory]:
    """Build KnowledgeMemory instances on the same fresh root (sharing the fake clock)."""
    url, options = location

    def make(**kwargs: Any) -> KnowledgeMemory:
        kwargs.setdefault("clock", clock)
        return KnowledgeMemory(url, storage_options=options, **kwargs)

    return make


@pytest.fixture
def km(make_km: Callable[..., KnowledgeMemory]) -> KnowledgeMemory:
    return make_km()
