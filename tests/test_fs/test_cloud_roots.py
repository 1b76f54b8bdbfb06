"""S3- and GCS-specific behaviour beyond the conformance suite."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from fsmemory.errors import (
    BackendError,
    BucketNotFoundError,
    ConflictError,
    InvalidPathError,
    MissingDependencyError,
)
from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs.gcs import GCSRoot
from fsmemory.fs.s3 import S3Root


def _independent_fs(root: StorageRoot) -> Any:
    """A second client for the same service, sharing no cache with ``root.fs``."""
    return type(root.fs)(**root.fs.storage_options, skip_instance_cache=True)


def _cross_client_checks(root: StorageRoot) -> None:
    other = _independent_fs(root)
    assert root.list("d") == []
    assert root.list_dirs() == []
    # Another process (here: another client) creates files behind our back.
    other.pipe_file(f"{root.root}/d/new.txt", b"from elsewhere")
    assert [i.path for i in root.list("d")] == ["d/new.txt"]
    assert root.list_dirs() == ["d"]
    # Code using root.fs directly is not served a stale listing either.
    assert [p.rsplit("/", 1)[-1] for p in root.fs.ls(f"{root.root}/d")] == ["new.txt"]
    version = root.read("d/new.txt").version
    other.pipe_file(f"{root.root}/d/new.txt", b"changed elsewhere")
    with pytest.raises(ConflictError):
        root.write("d/new.txt", b"lost update", if_version=version)
    assert root.read_bytes("d/new.txt") == b"changed elsewhere"
    other.rm_file(f"{root.root}/d/new.txt")
    assert root.list("d") == []
    with pytest.raises(FileNotFoundError):  # not the stale cached listing
        root.fs.ls(f"{root.root}/d")


@pytest.mark.s3
def test_s3_sees_other_clients(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    """Listings and versions reflect writes made by another client immediately."""
    root = open_root(s3_root_url, s3_storage_options)
    assert isinstance(root, S3Root)
    assert root.capabilities.conditional_write and not root.capabilities.native_append
    _cross_client_checks(root)


@pytest.mark.gcs
def test_gcs_sees_other_clients(gcs_root_url: str, gcs_storage_options: dict[str, Any]) -> None:
    """Listings and versions reflect writes made by another client immediately."""
    root = open_root(gcs_root_url, gcs_storage_options)
    assert isinstance(root, GCSRoot)
    assert root.capabilities.conditional_write and not root.capabilities.native_append
    _cross_client_checks(root)


@pytest.mark.s3
def test_s3_url_forms(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    """``s3a://``, a bare bucket and a trailing slash address the same objects."""
    bucket = s3_root_url.removeprefix("s3://").split("/")[0]
    whole = open_root(f"s3://{bucket}", s3_storage_options)
    whole.write("root/x.txt", b"x")
    for url in (s3_root_url, s3_root_url + "/", s3_root_url.replace("s3://", "s3a://")):
        root = open_root(url, s3_storage_options)
        assert root.read_bytes("x.txt") == b"x", url
        assert [i.path for i in root.list()] == ["x.txt"]
    assert [i.path for i in whole.list(recursive=True)] == ["root/x.txt"]
    with pytest.raises(InvalidPathError):
        open_root("s3://", s3_storage_options)


@pytest.mark.gcs
def test_gcs_url_forms(gcs_root_url: str, gcs_storage_options: dict[str, Any]) -> None:
    """``gcs://``, a bare bucket and a trailing slash address the same objects."""
    bucket = gcs_root_url.removeprefix("gs://").split("/")[0]
    whole = open_root(f"gs://{bucket}", gcs_storage_options)
    whole.write("root/x.txt", b"x")
    for url in (gcs_root_url, gcs_root_url + "/", gcs_root_url.replace("gs://", "gcs://")):
        root = open_root(url, gcs_storage_options)
        assert root.read_bytes("x.txt") == b"x", url
    with pytest.raises(InvalidPathError):
        open_root("gs://", gcs_storage_options)


@pytest.mark.s3
def test_s3_missing_bucket_is_not_a_conflict(s3_storage_options: dict[str, Any]) -> None:
    """Writing into a bucket that does not exist fails at once instead of retrying CAS."""
    root = open_root("s3://fsm-no-such-bucket-anywhere/x", s3_storage_options)
    for call in (
        lambda: root.write("a", b"x", if_version="abc"),
        lambda: root.update("a", lambda cur: b"x"),
        lambda: root.append("a", b"x"),
    ):
        with pytest.raises(BucketNotFoundError, match="fsm-no-such-bucket-anywhere"):
            call()


@pytest.mark.s3
def test_s3_unreachable_endpoint_is_backend_error() -> None:
    """A dead endpoint surfaces as BackendError (an OSError), not as a conflict."""
    from fsmemory.testing.services import free_port

    options = {
        "anon": False,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{free_port()}"},
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }
    root = open_root("s3://bucket/x", options)
    root.fs.retries = 1  # s3fs's own retry loop (with backoff) on top of botocore's
    with pytest.raises(BackendError) as info:
        root.read("a")
    assert info.value.__cause__ is not None
    with pytest.raises(BackendError):
        root.write("a", b"x", if_version="v")


@pytest.mark.parametrize(
    ("url", "modules", "extra"),
    [("s3://bucket/x", ["s3fs"], "s3fs"), ("gs://bucket/x", ["gcsfs", "gcsfs.core"], "gcsfs")],
)
def test_missing_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch, url: str, modules: list[str], extra: str
) -> None:
    """Without s3fs/gcsfs, opening a root says which extra to install (on S3: when the
    built-in client finds no credentials, here none at all)."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "FSMEMORY_S3_CLIENT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    with pytest.raises(MissingDependencyError) as info:
        open_root(url, {})
    assert f"fsmemory[{extra}]" in str(info.value)
    assert isinstance(info.value, ImportError)
