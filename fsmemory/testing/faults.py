"""Break storage on purpose: fault-injecting proxies and a fault-injecting root.

Three injectors, all on loopback, all deterministic in their choices for a given seed:

* :class:`HTTPFaultProxy` -- a threaded HTTP/1.1 proxy placed in front of moto (S3) or
  fake-gcs-server (GCS). Point the client's endpoint at ``proxy.url``; the client
  libraries' real retry and error paths then run against real failures on the wire.
* :class:`TCPFaultProxy` -- a byte-level TCP proxy placed in front of redis-server.
* :class:`FaultyRoot` -- wraps any :class:`~fsmemory.fs.StorageRoot` (local folders,
  ``memory://``) and makes its primitives fail before or after they take effect.

What a :class:`FaultPlan` can inject (``kinds``, each with a relative weight):

==============  ============================================================================
``delay``       the request is forwarded after ``delay`` seconds (a slow response)
``error``       an HTTP 500 or 503 answer, the request never reaches the server
``reset``       the connection is reset (RST) before the request reaches the server
``timeout``     the request is held ``hold`` seconds (past the client's timeout), never
                forwarded, then the connection is reset
``ambiguous``   the request IS forwarded and applied, then the reply is replaced by a
                reset or a 500/503 -- the client cannot know its write landed
``truncate``    the request is forwarded and applied, and the reply is cut off halfway
                (mid-response reset; a torn body must never be accepted)
==============  ============================================================================

:class:`TCPFaultProxy` knows ``delay``, ``reset``, ``timeout`` and ``ambiguous`` (a
command reaches Redis, its reply is dropped and the connection reset).
:class:`FaultyRoot` raises :class:`~fsmemory.errors.BackendError` before the call
(``reset``) or after it completed (``ambiguous``).

Every injector counts what it did in :attr:`stats` (``requests`` and one counter per
kind), can be switched off for set-up and verification with :meth:`paused`, and takes a
new plan at any time (``injector.plan = FaultPlan(...)``).

Example::

    with start_moto() as moto, HTTPFaultProxy(moto.url, FaultPlan(rate=0.2)) as proxy:
        options = {**moto.s3_storage_options(), "client_kwargs": {"endpoint_url": proxy.url}}
        root = open_root("s3://bucket/prefix", options)
"""

from __future__ import annotations

import builtins
import http.client
import random
import selectors
import socket
import socketserver
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Self, TypeVar
from urllib.parse import urlsplit

from fsmemory.errors import BackendError, InvalidInputError
from fsmemory.fs.base import Capabilities, FileInfo, StorageRoot, Versioned
from fsmemory.testing._running import Running

__all__ = [
    "FAULT_KINDS",
    "FaultPlan",
    "FaultStats",
    "FaultyRoot",
    "HTTPFaultProxy",
    "TCPFaultProxy",
]

FAULT_KINDS = ("delay", "error", "reset", "timeout", "ambiguous", "truncate")
"""Every kind of fault a plan can name."""

_T = TypeVar("_T")

_DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"delay": 1, "error": 1, "reset": 1, "timeout": 1, "ambiguous": 1, "truncate": 1}
)
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "content-length",
    }
)
_MAX_HEADER_LINE = 65536
_MAX_HEADERS = 200


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """Which faults to inject, how often, and how hard.

    Attributes:
        rate: probability (0-1) that one request (or command, or root call) gets a fault.
        kinds: relative weights of the fault kinds (see the module docstring); kinds an
            injector does not know are ignored by it.
        delay: seconds a ``delay`` fault waits before forwarding.
        hold: seconds a ``timeout`` fault holds the request (choose it longer than the
            client's read timeout).
        methods: only requests with these HTTP methods get faults (None: all). Ignored
            by the TCP proxy; for :class:`FaultyRoot` these are operation names
            (``"read"``, ``"write"``, ``"append"``, ...).
        seed: seed of the random choices (None: a random seed).

    Raises:
        InvalidInputError: a rate outside 0-1, an unknown kind, negative times.
    """

    rate: float = 0.2
    kinds: Mapping[str, float] = field(default_factory=lambda: dict(_DEFAULT_WEIGHTS))
    delay: float = 0.2
    hold: float = 2.0
    methods: frozenset[str] | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise InvalidInputError(f"rate must be between 0 and 1, got {self.rate}")
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown:
            raise InvalidInputError(f"unknown fault kinds: {sorted(unknown)}")
        if any(w < 0 for w in self.kinds.values()) or not any(self.kinds.values()):
            raise InvalidInputError("fault weights must be >= 0 and not all 0")
        if self.delay < 0 or self.hold < 0:
            raise InvalidInputError("delay and hold must be >= 0")

    @classmethod
    def only(cls, *kinds: str, **options: Any) -> FaultPlan:
        """A plan with the given kinds, equally weighted (``FaultPlan.only("reset")``)."""
        return cls(kinds=dict.fromkeys(kinds, 1.0), **options)


class FaultStats:
    """Thread-safe counters: ``requests`` seen, ``faults`` injected, one per kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, name: str, count: int = 1) -> None:
        """Add ``count`` to counter ``name``."""
        with self._lock:
            self._counts[name] += count

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    @property
    def faults(self) -> int:
        """Faults injected so far (all kinds)."""
        with self._lock:
            return sum(n for k, n in self._counts.items() if k in FAULT_KINDS)

    def snapshot(self) -> dict[str, int]:
        """A copy of every counter."""
        with self._lock:
            return dict(self._counts)

    def __repr__(self) -> str:
        return f"FaultStats({self.snapshot()})"


class _Chooser:
    """The plan, the random source and the on/off switch shared by an injector."""

    def __init__(self, plan: FaultPlan, known: tuple[str, ...]) -> None:
        self.known = known
        self.stats = FaultStats()
        self._lock = threading.Lock()
        self._paused = 0
        self._plan = plan
        self._rng = random.Random(plan.seed)

    @property
    def plan(self) -> FaultPlan:
        return self._plan

    @plan.setter
    def plan(self, plan: FaultPlan) -> None:
        with self._lock:
            self._plan = plan
            self._rng = random.Random(plan.seed)

    @contextmanager
    def paused(self) -> Iterator[None]:
        with self._lock:
            self._paused += 1
        try:
            yield
        finally:
            with self._lock:
                self._paused -= 1

    def choose(self, method: str | None = None) -> str | None:
        """The fault for the next request (None: pass it through) and count it."""
        self.stats.add("requests")
        with self._lock:
            plan = self._plan
            if self._paused or (
                method is not None and plan.methods is not None and method not in plan.methods
            ):
                return None
            weights = [(k, w) for k, w in plan.kinds.items() if k in self.known and w > 0]
            if not weights or self._rng.random() >= plan.rate:
                return None
            pick = self._rng.random() * sum(w for _, w in weights)
            kind = weights[-1][0]
            for name, weight in weights:
                pick -= weight
                if pick < 0:
                    kind = name
                    break
        self.stats.add(kind)
        return kind

    def coin(self) -> bool:
        with self._lock:
            return self._rng.random() < 0.5


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a TCP reset (SO_LINGER 0) instead of an orderly FIN."""
    with suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with suppress(OSError):
        sock.close()


def _loopback(url: str) -> tuple[str, int]:
    parts = urlsplit(url if "://" in url else f"tcp://{url}")
    host, port = parts.hostname, parts.port
    if host is None or port is None:
        raise InvalidInputError(f"upstream needs a host and a port: {url!r}")
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise InvalidInputError(f"fault proxies only forward to loopback, not {host!r}")
    return host, port


class _Controls:
    """The plan/stats/paused controls of an injector that owns a ``_chooser``."""

    _chooser: _Chooser

    @property
    def plan(self) -> FaultPlan:
        """The plan in force; assign a new one at any time."""
        return self._chooser.plan

    @plan.setter
    def plan(self, plan: FaultPlan) -> None:
        self._chooser.plan = plan

    @property
    def stats(self) -> FaultStats:
        """What was seen and injected."""
        return self._chooser.stats

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Inject nothing while the block runs (set-up, verification)."""
        with self._chooser.paused():
            yield


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class _Proxy(_Controls, Running):
    """Common start/stop/context-manager plumbing of the two proxies."""

    _chooser: _Chooser
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._clients: set[socket.socket] = set()
        self._clients_lock = threading.Lock()

    @property
    def port(self) -> int:
        """The loopback port the proxy listens on."""
        if self._server is None:
            raise RuntimeError("the proxy is not running")
        return int(self._server.server_address[1])

    def _handle(self, client: socket.socket) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        """Listen on a free loopback port and serve in a background thread."""
        if self._server is not None:
            return self
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                with proxy._clients_lock:
                    proxy._clients.add(sock)
                try:
                    proxy._handle(sock)
                except OSError:
                    pass
                finally:
                    with proxy._clients_lock:
                        proxy._clients.discard(sock)

        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"{type(self).__name__}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening, release held requests and reset open connections."""
        self._stopping.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._clients_lock:
            clients = list(self._clients)
        for sock in clients:
            _reset(sock)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


# -- HTTP ------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        lower = name.lower()
        for key, value in self.headers:
            if key.lower() == lower:
                return value
        return None


def _read_line(rfile: Any) -> bytes:
    line: bytes = rfile.readline(_MAX_HEADER_LINE + 1)
    if len(line) > _MAX_HEADER_LINE:
        raise ValueError("header line too long")
    return line


def _read_request(rfile: Any, wfile: Any) -> _Request | None:
    """One request from the client connection; None when the client closed it."""
    line = _read_line(rfile)
    while line in (b"\r\n", b"\n"):  # tolerate stray blank lines between requests
        line = _read_line(rfile)
    if not line:
        return None
    parts = line.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3:
        raise ValueError(f"malformed request line: {line[:80]!r}")
    method, target, version = parts
    headers: list[tuple[str, str]] = []
    while True:
        raw = _read_line(rfile)
        if raw in (b"\r\n", b"\n", b""):
            break
        if len(headers) >= _MAX_HEADERS:
            raise ValueError("too many headers")
        name, _, value = raw.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    request = _Request(method, target, version, headers, b"")
    if (request.header("Expect") or "").lower() == "100-continue":
        wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        wfile.flush()
    if "chunked" in (request.header("Transfer-Encoding") or "").lower():
        chunks = []
        while True:
            size = int(_read_line(rfile).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while _read_line(rfile) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            chunks.append(rfile.read(size))
            _read_line(rfile)
        request.body = b"".join(chunks)
    else:
        length = int(request.header("Content-Length") or 0)
        request.body = rfile.read(length) if length else b""
        if len(request.body) != length:
            return None
    return request


def _serialize(
    status: int, reason: str, headers: list[tuple[str, str]], body: bytes, *, head: bool
) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}"]
    length = None
    for name, value in headers:
        if name.lower() == "content-length":
            length = value
        if name.lower() in _HOP_BY_HOP:
            continue
        lines.append(f"{name}: {value}")
    if head:
        if length is not None:
            lines.append(f"Content-Length: {length}")
    else:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: keep-alive")
    out = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return out if head else out + body


def _error_response(flavor: str, status: int, *, head: bool) -> bytes:
    reason = "Internal Server Error" if status == 500 else "Service Unavailable"
    if flavor == "gcs":
        text = (
            f'{{"error": {{"code": {status}, "message": "injected fault", '
            f'"errors": [{{"message": "injected fault", "reason": "backendError"}}]}}}}'
        )
        ctype = "application/json; charset=UTF-8"
    elif flavor == "s3":
        code = "InternalError" if status == 500 else "ServiceUnavailable"
        text = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>injected fault</Message>"
            "<RequestId>fsmemory-fault</RequestId></Error>"
        )
        ctype = "application/xml"
    else:
        text = "injected fault"
        ctype = "text/plain"
    return _serialize(status, reason, [("Content-Type", ctype)], text.encode(), head=head)


class HTTPFaultProxy(_Proxy):
    """A threaded HTTP/1.1 proxy that injects faults between a client and a loopback
    server (moto, fake-gcs-server).

    Requests are read whole and forwarded on a keep-alive upstream connection per client
    connection; responses are read whole and re-sent with a ``Content-Length``.

    Args:
        upstream: ``http://127.0.0.1:PORT`` of the real server (loopback only).
        plan: what to inject (default: nothing, ``rate=0``).
        flavor: ``"s3"`` (XML error bodies), ``"gcs"`` (JSON) or ``"plain"``.

    Raises:
        InvalidInputError: the upstream is not on loopback.
    """

    def __init__(
        self,
        upstream: str,
        plan: FaultPlan | None = None,
        *,
        flavor: Literal["s3", "gcs", "plain"] = "plain",
    ) -> None:
        super().__init__()
        self.upstream = _loopback(upstream)
        self.flavor = flavor
        self._chooser = _Chooser(plan or FaultPlan(rate=0.0), FAULT_KINDS)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` -- use it as the client's endpoint."""
        return f"http://127.0.0.1:{self.port}"

    def _handle(self, client: socket.socket) -> None:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rfile = client.makefile("rb")
        wfile = client.makefile("wb")
        host, port = self.upstream
        upstream = http.client.HTTPConnection(host, port, timeout=120)
        try:
            while not self._stopping.is_set():
                try:
                    request = _read_request(rfile, wfile)
                except ValueError:
                    return
                if request is None:
                    return
                if not self._serve(client, wfile, upstream, request):
                    return
        finally:
            upstream.close()
            for f in (rfile, wfile):
                with suppress(OSError):
                    f.close()

    def _serve(
        self,
        client: socket.socket,
        wfile: Any,
        upstream: http.client.HTTPConnection,
        request: _Request,
    ) -> bool:
        """Answer one request; False when the client connection is finished."""
        kind = self._chooser.choose(request.method)
        head = request.method == "HEAD"
        if kind == "reset":
            _reset(client)
            return False
        if kind == "timeout":
            self._stopping.wait(self.plan.hold)
            _reset(client)
            return False
        if kind == "error":
            status = 500 if self._chooser.coin() else 503
            wfile.write(_error_response(self.flavor, status, head=head))
            wfile.flush()
            return True
        if kind == "delay":
            self._stopping.wait(self.plan.delay)
        try:
            reply = self._forward(upstream, request)
        except (OSError, http.client.HTTPException):
            upstream.close()
            _reset(client)
            return False
        if kind == "ambiguous":
            if self._chooser.coin():
                _reset(client)
                return False
            status = 500 if self._chooser.coin() else 503
            wfile.write(_error_response(self.flavor, status, head=head))
            wfile.flush()
            return True
        if kind == "truncate":
            wfile.write(reply[: max(1, len(reply) // 2)])
            wfile.flush()
            _reset(client)
            return False
        wfile.write(reply)
        wfile.flush()
        return True

    def _forward(self, upstream: http.client.HTTPConnection, request: _Request) -> bytes:
        """Send ``request`` upstream; the serialized response."""
        upstream.putrequest(
            request.method, request.target, skip_host=True, skip_accept_encoding=True
        )
        for name, value in request.headers:
            if name.lower() not in _HOP_BY_HOP:
                upstream.putheader(name, value)
        if request.body or request.method in ("POST", "PUT", "PATCH"):
            upstream.putheader("Content-Length", str(len(request.body)))
        upstream.endheaders(request.body or None)
        response = upstream.getresponse()
        body = response.read()
        head = request.method == "HEAD"
        reply = _serialize(response.status, response.reason, response.getheaders(), body, head=head)
        if response.will_close:
            upstream.close()
        return reply


# -- TCP (Redis) -------------------------------------------------------------------------


class TCPFaultProxy(_Proxy):
    """A byte-level TCP proxy that injects faults between a client and a loopback server
    (redis-server). Each chunk the client sends is one decision: forward it, delay it,
    reset the connection before it reaches the server (``reset``, ``timeout`` after
    holding it), or forward it and reset instead of delivering the reply
    (``ambiguous``).

    Args:
        upstream: ``host:port`` or ``redis://127.0.0.1:PORT`` of the server (loopback).
        plan: what to inject (default: nothing).

    Raises:
        InvalidInputError: the upstream is not on loopback.
    """

    def __init__(self, upstream: str, plan: FaultPlan | None = None) -> None:
        super().__init__()
        self.upstream = _loopback(upstream)
        self._chooser = _Chooser(
            plan or FaultPlan(rate=0.0), ("delay", "reset", "timeout", "ambiguous")
        )

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT`` -- connect the client here."""
        return f"redis://127.0.0.1:{self.port}"

    def _handle(self, client: socket.socket) -> None:
        server = socket.create_connection(self.upstream, timeout=30)
        with self._clients_lock:
            self._clients.add(server)
        selector = selectors.DefaultSelector()
        kill_on_reply = False
        try:
            selector.register(client, selectors.EVENT_READ, "client")
            selector.register(server, selectors.EVENT_READ, "server")
            while not self._stopping.is_set():
                for key, _ in selector.select(timeout=0.5):
                    sock: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = sock.recv(65536)
                    if not data:
                        return
                    if key.data == "server":
                        if kill_on_reply:
                            return  # the reply of an applied command is lost
                        client.sendall(data)
                        continue
                    kind = self._chooser.choose()
                    if kind in ("reset", "timeout"):
                        if kind == "timeout":
                            self._stopping.wait(self.plan.hold)
                        return
                    if kind == "delay":
                        self._stopping.wait(self.plan.delay)
                    if kind == "ambiguous":
                        kill_on_reply = True
                    server.sendall(data)
        finally:
            selector.close()
            with self._clients_lock:
                self._clients.discard(server)
            _reset(server)
            _reset(client)


# -- storage-root wrapper -----------------------------------------------------------------


class FaultyRoot(_Controls, StorageRoot):
    """A storage root whose primitives fail at random, for backends without a network.

    Each call of ``read``, ``read_range``, ``stat``, ``list``, ``list_dirs``, ``write``,
    ``append``, ``delete`` and ``delete_tree`` draws from the plan: ``reset`` (and
    ``timeout``, ``error``) raise :class:`~fsmemory.errors.BackendError` before the inner
    root is called; ``ambiguous`` (and ``truncate``) call it -- the change takes effect
    -- and then raise; ``delay`` sleeps first. Locks, ``update`` (built on ``read`` and
    ``write``) and capabilities are the inner root's.

    Args:
        inner: the real root.
        plan: what to inject.
    """

    def __init__(self, inner: StorageRoot, plan: FaultPlan | None = None) -> None:
        self.inner = inner
        self.url = inner.url
        self.fs = inner.fs
        self.root = inner.root
        self.capabilities: Capabilities = inner.capabilities
        self._chooser = _Chooser(plan or FaultPlan(rate=0.0), FAULT_KINDS)

    def _call(self, op: str, func: Callable[[], _T]) -> _T:
        kind = self._chooser.choose(op)
        if kind is None:
            return func()
        if kind == "delay":
            time.sleep(self.plan.delay)
            return func()
        if kind in ("ambiguous", "truncate"):
            func()
            raise BackendError(f"injected fault after {op} took effect ({kind})")
        raise BackendError(f"injected fault before {op} ({kind})")

    def full_path(self, path: str) -> str:
        """The inner root's path of ``path``."""
        return self.inner.full_path(path)

    def read(self, path: str) -> Versioned:
        """The inner read, maybe failing."""
        return self._call("read", lambda: self.inner.read(path))

    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """The inner ranged read, maybe failing."""
        return self._call("read_range", lambda: self.inner.read_range(path, start, end))

    def stat(self, path: str) -> FileInfo | None:
        """The inner stat, maybe failing."""
        return self._call("stat", lambda: self.inner.stat(path))

    def rewritten(self, old: FileInfo, new: FileInfo) -> bool:
        """The inner root's answer (no I/O)."""
        return self.inner.rewritten(old, new)

    def list(self, prefix: str = "", *, recursive: bool = False) -> builtins.list[FileInfo]:
        """The inner listing, maybe failing."""
        return self._call("list", lambda: self.inner.list(prefix, recursive=recursive))

    def list_dirs(self, prefix: str = "") -> builtins.list[str]:
        """The inner directory listing, maybe failing."""
        return self._call("list_dirs", lambda: self.inner.list_dirs(prefix))

    def write(
        self,
        path: str,
        data: bytes,
        *,
        if_version: str | None = None,
        create_only: bool = False,
    ) -> str:
        """The inner write, maybe failing before or after it took effect."""
        return self._call(
            "write",
            lambda: self.inner.write(path, data, if_version=if_version, create_only=create_only),
        )

    def append(
        self, path: str, data: bytes, *, line_safe: bool = False, unique: bool = False
    ) -> int:
        """The inner append, maybe failing before or after it took effect."""
        return self._call(
            "append",
            lambda: self.inner.append(path, data, line_safe=line_safe, unique=unique),
        )

    def delete(self, path: str) -> bool:
        """The inner delete, maybe failing before or after it took effect."""
        return self._call("delete", lambda: self.inner.delete(path))

    def delete_tree(self, prefix: str) -> int:
        """The inner tree delete, maybe failing before or after it took effect."""
        return self._call("delete_tree", lambda: self.inner.delete_tree(prefix))

    @contextmanager
    def lock(self, name: str, *, timeout: float = 30.0) -> Iterator[None]:
        """The inner root's lock."""
        with self.inner.lock(name, timeout=timeout):
            yield

    def close(self) -> None:
        """Close the inner root."""
        self.inner.close()
