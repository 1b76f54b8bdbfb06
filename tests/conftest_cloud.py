"""Fixtures for the cloud backends: moto (S3), fake-gcs-server (GCS) and Azurite (Azure
Blob) on loopback.

Each emulator starts once per session, on first use; every test gets a fresh bucket
(container).
A service that cannot start skips the tests needing it, unless
``FSMEMORY_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fsmemory.fs.gcs import GCSRoot
from fsmemory.fs.s3 import S3Root
from fsmemory.testing.cloud_services import (
    AzuriteService,
    FakeGCSService,
    MotoService,
    start_azurite,
    start_fake_gcs,
    start_moto,
)
from fsmemory.testing.services import start_or_skip
from tests.test_fs.gcs_fake import GCSXmlRelay, RelayProcess

# The conformance suite lives in the package; let pytest explain its failed asserts.
# (This module never imports it, so registering here is early enough.)
pytest.register_assert_rewrite("fsmemory.testing.conformance")

# Must be set before gcsfs is imported anywhere (see fsmemory.fs.gcs).
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")


def _bucket_name() -> str:
    return f"fsm-{uuid.uuid4().hex[:16]}"


@pytest.fixture(scope="session")
def moto_service() -> Iterator[MotoService]:
    """moto's S3 server, one per session."""
    service = start_or_skip(start_moto)
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="session")
def s3_storage_options(moto_service: MotoService) -> dict[str, Any]:
    """s3fs ``storage_options`` pointing at the session's moto server."""
    return moto_service.s3_storage_options()


@pytest.fixture
def s3_root_url(s3_storage_options: dict[str, Any]) -> str:
    """``s3://<fresh bucket>/root`` (the bucket is created, the prefix is empty)."""
    bucket = _bucket_name()
    S3Root.from_url(f"s3://{bucket}", s3_storage_options).fs.mkdir(bucket)
    return f"s3://{bucket}/root"


@pytest.fixture(scope="session")
def fake_gcs_service() -> Iterator[FakeGCSService]:
    """fake-gcs-server, one per session."""
    service = start_or_skip(start_fake_gcs)
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="session")
def gcs_storage_options(fake_gcs_service: FakeGCSService) -> dict[str, Any]:
    """gcsfs ``storage_options`` pointing at the session's fake-gcs-server."""
    return fake_gcs_service.gcs_storage_options()


@pytest.fixture
def gcs_root_url(gcs_storage_options: dict[str, Any]) -> str:
    """``gs://<fresh bucket>/root`` (the bucket is created, the prefix is empty)."""
    bucket = _bucket_name()
    GCSRoot.from_url(f"gs://{bucket}", gcs_storage_options).fs.mkdir(bucket)
    return f"gs://{bucket}/root"


@pytest.fixture(scope="session")
def gcs_xml_relay(fake_gcs_service: FakeGCSService) -> Iterator[GCSXmlRelay]:
    """GCS's XML API (the obstore route's) in front of the session's fake-gcs-server,
    which answers only the JSON API; JSON requests pass through."""
    relay = GCSXmlRelay(fake_gcs_service.url)
    try:
        yield relay
    finally:
        relay.stop()


@pytest.fixture(scope="session")
def gcs_obstore_storage_options(fake_gcs_service: FakeGCSService) -> Iterator[dict[str, Any]]:
    """Storage options reaching fake-gcs-server through an XML relay in a process of its
    own, anonymous: the obstore route (``root.fs``, gcsfs, goes through the relay's JSON
    pass-through). Tests that read what a relay received use ``gcs_xml_relay``."""
    relay = RelayProcess(fake_gcs_service.url)
    try:
        yield {"endpoint_url": relay.url, "token": "anon", "project": "fsmemory-test"}
    finally:
        relay.stop()


@pytest.fixture(scope="session")
def azurite_service() -> Iterator[AzuriteService]:
    """Azurite's blob service, one per session."""
    service = start_or_skip(start_azurite)
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="session")
def azure_storage_options(azurite_service: AzuriteService) -> dict[str, Any]:
    """Storage options reaching the session's Azurite (a connection string with the
    development account's key: the obstore route)."""
    return azurite_service.azure_storage_options()


@pytest.fixture(scope="session")
def azure_adlfs_storage_options(azure_storage_options: dict[str, Any]) -> dict[str, Any]:
    """The same, forced through adlfs (the fallback route)."""
    return {**azure_storage_options, "client": "adlfs"}


@pytest.fixture
def azure_root_url(azurite_service: AzuriteService) -> str:
    """``az://<fresh container>/root`` (the container is created, the prefix is empty)."""
    container = _bucket_name()
    azurite_service.create_container(container)
    return f"az://{container}/root"
