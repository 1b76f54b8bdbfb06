"""The S3/GCS emulator launchers start, serve, stop, and fail loudly when asked to."""

from __future__ import annotations

import socket

import pytest

from fsmemory.testing.cloud_services import start_fake_gcs, start_moto
from fsmemory.testing.services import ServiceUnavailableError, start_or_skip


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.mark.s3
def test_moto_starts_serves_and_stops() -> None:
    """A fresh moto server answers S3 and is gone after ``stop()``."""
    from fsmemory.fs.s3 import S3Root

    service = start_or_skip(start_moto)
    try:
        root = S3Root.from_url("s3://launcher-bucket/x", service.s3_storage_options())
        root.fs.mkdir("launcher-bucket")
        root.write("k", b"v")
        assert root.read_bytes("k") == b"v"
    finally:
        service.stop()
    assert not service.running
    assert not _port_open(service.host, service.port)
    service.stop()  # idempotent


@pytest.mark.gcs
def test_fake_gcs_starts_serves_and_stops() -> None:
    """A fresh fake-gcs-server answers GCS and is gone after ``stop()``."""
    from fsmemory.fs.gcs import GCSRoot

    with start_or_skip(start_fake_gcs) as service:
        root = GCSRoot.from_url("gs://launcher-bucket/x", service.gcs_storage_options())
        root.fs.mkdir("launcher-bucket")
        root.write("k", b"v")
        assert root.read_bytes("k") == b"v"
    assert not service.running
    assert not _port_open(service.host, service.port)


def test_unavailable_service_skips_or_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing binary skips, unless FSMEMORY_REQUIRE_SERVICES=1 makes it an error."""
    monkeypatch.setenv("FSMEMORY_FAKE_GCS_SERVER", "/nonexistent/fake-gcs-server")
    monkeypatch.delenv("FSMEMORY_REQUIRE_SERVICES", raising=False)
    with pytest.raises(pytest.skip.Exception):
        start_or_skip(start_fake_gcs)
    monkeypatch.setenv("FSMEMORY_REQUIRE_SERVICES", "1")
    with pytest.raises(ServiceUnavailableError):
        start_or_skip(start_fake_gcs)
