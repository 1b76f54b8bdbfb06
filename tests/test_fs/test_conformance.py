"""The storage-layer conformance suite against every backend.

memory:// and local folders always run; S3 runs against moto and GCS against
fake-gcs-server (both started by the test session, see ``tests/conftest_cloud.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs.gcs import GCSRoot
from fsmemory.fs.s3 import S3Root
from fsmemory.testing.conformance import StorageRootTests


class NameListingTests:
    """``list_names`` and ``has_entries`` (which the shared suite leaves out): the
    entries of ``list`` + ``list_dirs``, names only, reserved files hidden."""

    def test_list_names_and_has_entries_match_the_listings(self, root: StorageRoot) -> None:
        for path in ("a.txt", "d/b.txt", "d/e/c.txt", "d/e/f/g.txt", "ab/h.txt"):
            root.write(path, b"x")
        with root.lock("names"):
            for prefix in ("", "d", "d/e", "d/e/f", "ab"):
                files, dirs = root.list_names(prefix)
                assert sorted(files) == [i.path.rsplit("/", 1)[-1] for i in root.list(prefix)]
                assert sorted(dirs) == root.list_dirs(prefix)
                assert root.has_entries(prefix)
        for empty in ("a", "nowhere", "d/nowhere"):
            assert root.list_names(empty) == ([], [])
            assert not root.has_entries(empty)


class TestMemoryRoot(StorageRootTests, NameListingTests):
    """``memory://`` (fsspec's process-global memory store, unique root per test)."""

    @pytest.fixture
    def root(self) -> Iterator[StorageRoot]:
        root = open_root(f"memory://fsm-{uuid.uuid4().hex}")
        yield root
        root.delete_tree("")


class TestLocalRoot(StorageRootTests, NameListingTests):
    """A local folder."""

    @pytest.fixture
    def root(self, tmp_path: Path) -> StorageRoot:
        return open_root(str(tmp_path / "root"))


@pytest.mark.s3
class TestS3Root(StorageRootTests, NameListingTests):
    """S3 against moto's server on both routes: obstore (the default here) and s3fs
    (storage option ``client="s3fs"``, fewer concurrent operations to keep it short)."""

    concurrency_ops = 10

    @pytest.fixture(params=["obstore", "s3fs"])
    def root(
        self,
        request: pytest.FixtureRequest,
        s3_root_url: str,
        s3_storage_options: dict[str, Any],
    ) -> StorageRoot:
        route = request.param
        if route == "s3fs":
            self.concurrency_ops = 4
        root = open_root(s3_root_url, {**s3_storage_options, "client": route})
        assert isinstance(root, S3Root) and root.client == route
        return root


@pytest.mark.gcs
class TestGCSRoot(StorageRootTests, NameListingTests):
    """GCS on both routes: obstore (the default for anonymous access to an endpoint)
    through the XML relay in front of fake-gcs-server (``tests/test_fs/gcs_fake.py``),
    and gcsfs (``client="gcsfs"``) on fake-gcs-server itself."""

    concurrency_ops = 10

    @pytest.fixture(params=["obstore", "gcsfs"])
    def root(
        self,
        request: pytest.FixtureRequest,
        gcs_root_url: str,
        gcs_storage_options: dict[str, Any],
    ) -> StorageRoot:
        route = request.param
        if route == "obstore":
            options = request.getfixturevalue("gcs_obstore_storage_options")
        else:
            options = gcs_storage_options
        root = open_root(gcs_root_url, options)
        assert isinstance(root, GCSRoot) and root.client == route
        return root


@pytest.mark.azure
class TestAzureRoot(StorageRootTests, NameListingTests):
    """Azure Blob through obstore (the default for a connection string with a key)
    against Azurite: native If-Match / If-None-Match."""

    concurrency_ops = 10

    @pytest.fixture
    def root(self, azure_root_url: str, azure_storage_options: dict[str, Any]) -> StorageRoot:
        from fsmemory.fs.azure import AzureRoot

        root = open_root(azure_root_url, azure_storage_options)
        assert isinstance(root, AzureRoot) and root.client == "obstore"
        return root


@pytest.mark.azure
class TestAzureRootThroughAdlfs(StorageRootTests, NameListingTests):
    """Azure Blob through adlfs (``client="adlfs"``): If-Match / If-None-Match handed
    through adlfs to azure-storage-blob."""

    concurrency_ops = 4

    @pytest.fixture
    def root(self, azure_root_url: str, azure_adlfs_storage_options: dict[str, Any]) -> StorageRoot:
        from fsmemory.fs.azure import AzureRoot

        root = open_root(azure_root_url, azure_adlfs_storage_options)
        assert not isinstance(root, AzureRoot)
        return root


@pytest.mark.redis
class TestRedisRoot(StorageRootTests, NameListingTests):
    """Redis through the ``redis://`` filesystem against redis-server (own key prefix)."""

    @pytest.fixture
    def root(self, redis_url: str) -> Iterator[StorageRoot]:
        root = open_root(f"{redis_url}/0/root", {"prefix": f"fsm-{uuid.uuid4().hex[:12]}"})
        yield root
        root.delete_tree("")
        root.close()
