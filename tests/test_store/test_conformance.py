"""The path-store conformance suite on every backend.

memory://, local folders (watchdog and polling) and sqlite:// always run; Redis, S3 and
GCS run against the real services the test session starts (markers ``redis``, ``s3``,
``gcs``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsmemory.store import (
    DiskKnowledgeStore,
    FsspecKnowledgeStore,
    LockedKnowledgeStore,
    MemoryKnowledgeStore,
    RedisKnowledgeStore,
    SqliteKnowledgeStore,
)
from fsmemory.testing.store_conformance import KnowledgeStoreTests, unique_name

FAST_POLL = 0.05


class TestMemoryStore(KnowledgeStoreTests):
    """``MemoryKnowledgeStore()``: private memory:// root, polling for outside changes."""

    @pytest.fixture
    def store(self) -> MemoryKnowledgeStore:
        return MemoryKnowledgeStore(poll_interval=FAST_POLL)


class TestLocalStoreWatchdog(KnowledgeStoreTests):
    """``DiskKnowledgeStore`` with watchdog (native notifications)."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> DiskKnowledgeStore:
        pytest.importorskip("watchdog")
        return DiskKnowledgeStore(tmp_path / "state", poll_interval=FAST_POLL)

    def process_url(self, store: Any) -> str | None:
        return str(store.root.root)

    async def test_uses_watchdog(self, store: DiskKnowledgeStore) -> None:
        async def callback(path: str) -> None:
            return None

        async with await store.on_change("/", callback) as sub:
            assert sub.mode == "watchdog"


class TestLocalStorePolling(KnowledgeStoreTests):
    """``DiskKnowledgeStore(watch="poll")``: the path taken when watchdog is missing."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> DiskKnowledgeStore:
        return DiskKnowledgeStore(tmp_path / "state", watch="poll", poll_interval=FAST_POLL)

    def process_url(self, store: Any) -> str | None:
        return str(store.root.root)


class TestSqliteStore(KnowledgeStoreTests):
    """``SqliteKnowledgeStore(path)``: one database file, WAL mode."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteKnowledgeStore]:
        store = SqliteKnowledgeStore(tmp_path / "store.db", poll_interval=FAST_POLL)
        yield store
        store.root.close()

    def process_url(self, store: Any) -> str | None:
        return str(store.url)


class TestLockedStore(KnowledgeStoreTests):
    """``LockedKnowledgeStore`` over a memory store with the in-process lock."""

    @pytest.fixture
    def store(self) -> LockedKnowledgeStore:
        return LockedKnowledgeStore(MemoryKnowledgeStore(poll_interval=FAST_POLL), timeout=5)


class TestThreadedLocalStore(KnowledgeStoreTests):
    """A local store forced through ``asyncio.to_thread`` (the remote-backend code path)."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> FsspecKnowledgeStore:
        return FsspecKnowledgeStore(
            os.fspath(tmp_path / "state"), inline=False, watch="poll", poll_interval=FAST_POLL
        )


@pytest.mark.redis
class TestRedisStore(KnowledgeStoreTests):
    """``RedisKnowledgeStore`` against a real redis-server (unique key prefix per test)."""

    @pytest.fixture
    def store(self, redis_url: str) -> RedisKnowledgeStore:
        url = f"{redis_url.rstrip('/')}/0?prefix={unique_name()}"
        return RedisKnowledgeStore(url, poll_interval=FAST_POLL)

    def process_url(self, store: Any) -> str | None:
        return str(store.url)


@pytest.mark.s3
class TestS3Store(KnowledgeStoreTests):
    """S3 (moto): appends and CAS through conditional PUTs."""

    appenders = 4
    appends_each = 5

    @pytest.fixture
    def store(self, s3_root_url: str, s3_storage_options: dict[str, Any]) -> FsspecKnowledgeStore:
        return FsspecKnowledgeStore(
            s3_root_url, poll_interval=0.2, storage_options=s3_storage_options
        )


@pytest.mark.gcs
class TestGcsStore(KnowledgeStoreTests):
    """GCS through obstore (the XML relay in front of fake-gcs-server): appends and CAS
    through generation-conditional PUTs."""

    appenders = 4
    appends_each = 5

    @pytest.fixture
    def store(
        self, gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
    ) -> FsspecKnowledgeStore:
        return FsspecKnowledgeStore(
            gcs_root_url, poll_interval=0.2, storage_options=gcs_obstore_storage_options
        )


@pytest.mark.gcs
class TestGcsStoreThroughGcsfs(KnowledgeStoreTests):
    """GCS through gcsfs (fake-gcs-server): CAS through ``ifGenerationMatch``."""

    appenders = 4
    appends_each = 5

    @pytest.fixture
    def store(self, gcs_root_url: str, gcs_storage_options: dict[str, Any]) -> FsspecKnowledgeStore:
        return FsspecKnowledgeStore(
            gcs_root_url, poll_interval=0.2, storage_options=gcs_storage_options
        )


@pytest.mark.azure
class TestAzureStore(KnowledgeStoreTests):
    """Azure Blob (Azurite) through obstore: appends and CAS through conditional PUTs."""

    appenders = 4
    appends_each = 5

    @pytest.fixture
    def store(
        self, azure_root_url: str, azure_storage_options: dict[str, Any]
    ) -> FsspecKnowledgeStore:
        return FsspecKnowledgeStore(
            azure_root_url, poll_interval=0.2, storage_options=azure_storage_options
        )


@pytest.mark.azure
class TestAzureStoreThroughAdlfs(KnowledgeStoreTests):
    """Azure Blob (Azurite) through adlfs: CAS through conditional PUTs too."""

    appenders = 4
    appends_each = 5

    @pytest.fixture
    def store(
        self, azure_root_url: str, azure_adlfs_storage_options: dict[str, Any]
    ) -> FsspecKnowledgeStore:
        return FsspecKnowledgeStore(
            azure_root_url, poll_interval=0.2, storage_options=azure_adlfs_storage_options
        )
