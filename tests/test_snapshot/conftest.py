"""Snapshot backends on every storage service, as factories (one snapshot per test)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsmemory.snapshot import FsspecBackend, RedisKnowledgeBackend

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
    pytest.param("redis-fs", marks=pytest.mark.redis),
    pytest.param("redis-native", marks=pytest.mark.redis),
]

Spec = tuple[str, str, dict[str, Any]]  # (kind, url or key, options)


def folder_files(path: Path) -> dict[str, bytes]:
    """Every file of a local folder (fsmemory's own ``.fsmemory*`` files left out)."""
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.name.startswith(".fsmemory")
    }


def make_spec(request: pytest.FixtureRequest, kind: str, tmp_path: Any) -> Spec:
    """A picklable description of a fresh snapshot location on ``kind``."""
    name = f"u-{uuid.uuid4().hex[:10]}"
    if kind == "local":
        return kind, str(tmp_path / "snapshots" / f"{name}.snapshot"), {}
    if kind == "memory":
        return kind, f"memory://snapshots/{name}.snapshot", {}
    if kind == "s3":
        url = request.getfixturevalue("s3_root_url")
        return kind, f"{url}/{name}.snapshot", request.getfixturevalue("s3_storage_options")
    if kind in ("gcs", "gcs-gcsfs"):
        url = request.getfixturevalue("gcs_root_url")
        fixture = "gcs_obstore_storage_options" if kind == "gcs" else "gcs_storage_options"
        return kind, f"{url}/{name}.snapshot", request.getfixturevalue(fixture)
    if kind in ("azure", "azure-adlfs"):
        url = request.getfixturevalue("azure_root_url")
        fixture = "azure_storage_options" if kind == "azure" else "azure_adlfs_storage_options"
        return kind, f"{url}/{name}.snapshot", request.getfixturevalue(fixture)
    redis_url = request.getfixturevalue("redis_url")
    if kind == "redis-fs":
        return kind, f"{redis_url}/0/snapshots/{name}.snapshot", {}
    return kind, name, {"url": f"{redis_url}/0"}


def open_backend(spec: Spec) -> Any:
    kind, location, options = spec
    if kind == "redis-native":
        return RedisKnowledgeBackend(location, url=options["url"], prefix="test:")
    return FsspecBackend(location, storage_options=options)


@pytest.fixture(params=BACKENDS)
def spec(request: pytest.FixtureRequest, tmp_path: Any) -> Spec:
    return make_spec(request, str(request.param), tmp_path)


@pytest.fixture
def new_backend(spec: Spec) -> Callable[[], Any]:
    return lambda: open_backend(spec)


class DictBackend:
    """The seed's two-method protocol, as a user would write it."""

    def __init__(self, store: dict[str, bytes]) -> None:
        self.store = store

    def load_bytes(self) -> bytes | None:
        return self.store.get("blob")

    def save_bytes(self, data: bytes) -> None:
        self.store["blob"] = data
