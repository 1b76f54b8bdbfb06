"""fsmemory.testing.services: free ports, start/stop, skip-or-fail policy."""

from __future__ import annotations

import socket
import sys

import pytest

from fsmemory.testing import services
from fsmemory.testing.services import (
    RedisService,
    Service,
    ServiceUnavailableError,
    free_port,
    start_or_skip,
    start_redis,
)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@pytest.mark.redis
def test_start_and_stop_redis() -> None:
    service = start_or_skip(start_redis)
    port = service.port
    try:
        assert service.running and service.is_ready()
        assert service.url == f"redis://127.0.0.1:{port}"
        workdir = service.workdir
        assert workdir is not None and workdir.is_dir()
    finally:
        service.stop()
    assert not service.running and not _answers(port) and not workdir.exists()
    service.stop()  # idempotent


@pytest.mark.redis
def test_context_manager() -> None:
    binary = services.find_redis_server()
    if binary is None:
        pytest.skip("no redis-server")
    with RedisService(binary) as service:
        assert service.is_ready()
    assert not service.running


def test_missing_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "find_redis_server", lambda: None)
    with pytest.raises(ServiceUnavailableError, match="redis-server not found"):
        start_redis()


def test_binary_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(services.REDIS_SERVER_ENV, "/custom/redis-server")
    assert services.find_redis_server() == "/custom/redis-server"


class _Crashing(Service):
    name = "crasher"

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('bad config'); sys.exit(3)"]


def test_crashing_service_reports_its_log() -> None:
    with pytest.raises(ServiceUnavailableError, match="bad config"):
        _Crashing(attempts=1).start()


def test_skip_or_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Service:
        raise ServiceUnavailableError("nope")

    monkeypatch.delenv(services.REQUIRE_SERVICES_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception):
        start_or_skip(broken)
    monkeypatch.setenv(services.REQUIRE_SERVICES_ENV, "1")
    with pytest.raises(ServiceUnavailableError):
        start_or_skip(broken)
