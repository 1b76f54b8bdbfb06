"""A bucket that does not exist is reported as such on every entry point, never as a
missing key (``logs/...``, ``snapshot.d/...``) and never as an empty listing."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from fsmemory import BucketNotFoundError, KnowledgeMemory
from fsmemory.errors import BackendError, KeyNotFoundError
from fsmemory.fs import StorageRoot, open_root
from fsmemory.store import FsspecKnowledgeStore, SyncKnowledgeStore

SERVICES = [
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("gs", marks=pytest.mark.gcs),  # gcsfs on fake-gcs-server
    pytest.param("gs-obstore", marks=pytest.mark.gcs),  # obstore through the XML relay
]
#: the storage-options fixture of each service
OPTIONS = {
    "s3": "s3_storage_options",
    "gs": "gcs_storage_options",
    "gs-obstore": "gcs_obstore_storage_options",
}


@pytest.fixture
def missing(request: pytest.FixtureRequest, service: str) -> tuple[str, str, dict[str, Any]]:
    """``(bucket, url, options)`` of a bucket nobody created."""
    options: dict[str, Any] = request.getfixturevalue(OPTIONS[service])
    bucket = f"fsm-missing-{uuid.uuid4().hex[:12]}"
    return bucket, f"{service.split('-')[0]}://{bucket}/agent", options


ROOT_CALLS: dict[str, Callable[[StorageRoot], object]] = {
    "read": lambda r: r.read("logs/2026-12-01.jsonl"),
    "read_range": lambda r: r.read_range("logs/2026-12-01.jsonl", 3),
    "stat": lambda r: r.stat("MEMORY.md"),
    "exists": lambda r: r.exists("MEMORY.md"),
    "list": lambda r: r.list("logs"),
    "list_recursive": lambda r: r.list(recursive=True),
    "list_dirs": lambda r: r.list_dirs(),
    "list_names": lambda r: r.list_names(""),
    "list_with_cache": lambda r: r.list_with_cache("index", bytes),
    "write": lambda r: r.write("a.md", b"x"),
    "create_only": lambda r: r.write("a.md", b"x", create_only=True),
    "append": lambda r: r.append("logs/a.jsonl", b"{}\\n", unique=True),
    "delete": lambda r: r.delete("a.md"),
}


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize("call", sorted(ROOT_CALLS))
def test_every_root_call_names_the_bucket(
    missing: tuple[str, str, dict[str, Any]], call: str
) -> None:
    bucket, url, options = missing
    root = open_root(url, options)
    with pytest.raises(BucketNotFoundError) as info:
        ROOT_CALLS[call](root)
    error = info.value
    assert error.bucket == bucket
    assert bucket in str(error)
    assert isinstance(error, BackendError)
    assert not isinstance(error, KeyNotFoundError)  # nobody may take it for a missing file


@pytest.mark.parametrize("service", SERVICES)
def test_knowledge_memory_names_the_bucket(missing: tuple[str, str, dict[str, Any]]) -> None:
    bucket, url, options = missing
    with pytest.raises(BucketNotFoundError, match=bucket):
        km = KnowledgeMemory(url, storage_options=options)
        km.remember("a note")
    with pytest.raises(BucketNotFoundError, match=bucket):
        KnowledgeMemory(url, storage_options=options).recall("a note")  # a cold open


@pytest.mark.parametrize("service", SERVICES)
def test_path_store_names_the_bucket(missing: tuple[str, str, dict[str, Any]]) -> None:
    bucket, url, options = missing
    with SyncKnowledgeStore(FsspecKnowledgeStore(url, storage_options=options)) as store:
        for call in (
            lambda: store.read("/notes.md"),
            lambda: store.list("/"),
            lambda: store.write("/notes.md", "x"),
        ):
            with pytest.raises(BucketNotFoundError, match=bucket):
                call()


@pytest.mark.parametrize("service", SERVICES)
def test_an_existing_bucket_costs_no_extra_request_once_seen(
    request: pytest.FixtureRequest, service: str
) -> None:
    """Missing keys in a bucket that exists stay missing keys (the bucket check runs at
    most once per root, and not at all once a call succeeded)."""
    from fsmemory.testing.requests import count_requests

    url = request.getfixturevalue("s3_root_url" if service == "s3" else "gcs_root_url")
    root = open_root(url, request.getfixturevalue(OPTIONS[service]))
    with pytest.raises(KeyNotFoundError):
        root.read("nope")  # first miss: one bucket check
    with count_requests(root) as calls:
        assert root.stat("nope") is None
        with pytest.raises(KeyNotFoundError):
            root.read("nope")
    assert len(calls) == 2
