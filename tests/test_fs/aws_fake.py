"""Loopback HTTP servers that answer as AWS S3 does where moto does not.

:class:`AwsListingRelay` sits in front of a moto server and passes every request and
reply through unchanged, except the ``ListObjectsV2`` / ``ListObjects`` replies to a
request with ``encoding-type=url``: moto encodes their keys with ``urllib.parse.quote``
(a space as ``%20``, a ``+`` left as it is), where S3 encodes them as a form would
(a space as ``+``, a ``+`` as ``%2B``, ``%`` as ``%25``, non-ASCII bytes and reserved
characters percent-encoded, ``/`` kept). The relay re-encodes the fields S3 encodes --
``Key``, ``Prefix`` (the request's and each ``CommonPrefixes``'), ``StartAfter`` and
``Delimiter`` -- as S3 does. ``NextContinuationToken`` and the rest are untouched.

Published behaviour this follows: the ListObjectsV2 API reference (the encoded
elements: Delimiter, Prefix, Key, StartAfter; CommonPrefixes' Prefix is a Prefix), and
the observed replies of S3 to ``a b.txt`` (``a+b.txt``), ``a+b.txt`` (``a%2Bb.txt``),
``100%.csv`` (``100%25.csv``) and a non-ASCII prefix (``%ED%95%9C.../``).

:class:`RegionRelay` answers as S3 does for a bucket that lives in another region than
the one a request is signed for: a ``301 PermanentRedirect`` without ``Location`` and
with ``x-amz-bucket-region`` (the reply S3's regional endpoints give), and an unsigned
``HEAD`` of the bucket answered ``403`` with ``x-amz-bucket-region`` (as S3 answers a
bucket that is not public).

:class:`HostileServer` answers every request with a reply given as raw bytes (a
``Content-Length`` no body will ever fill, say).
"""

from __future__ import annotations

import http.client
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote_plus, unquote, urlsplit
from xml.sax.saxutils import escape, unescape

__all__ = ["AwsListingRelay", "HostileServer", "PairingRelay", "RegionRelay", "aws_url_encode"]

#: hop-by-hop headers a relay must not pass on (and the length, which it sets)
_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer"}
)
#: the listing fields S3 url-encodes; moto encodes only the first two (Key, Prefix)
_FIELDS = re.compile(r"<(Key|Prefix|StartAfter|Delimiter)>(.*?)</\1>", re.DOTALL)


def aws_url_encode(text: str) -> str:
    """``text`` as S3 encodes a listing field with ``encoding-type=url``: UTF-8 bytes,
    a space as ``+``, every byte but ``A-Za-z0-9_.-~`` and ``/`` as ``%XX``."""
    return quote_plus(text, safe="/")


def _reencode(match: re.Match[str]) -> str:
    tag, raw = match.group(1), unescape(match.group(2))
    value = unquote(raw) if tag in ("Key", "Prefix") else raw  # moto's encoding undone
    return f"<{tag}>{escape(aws_url_encode(value))}</{tag}>"


def to_aws_listing(body: bytes) -> bytes:
    """A moto listing reply (``encoding-type=url``) re-encoded as S3 would send it."""
    return _FIELDS.sub(_reencode, body.decode("utf-8")).encode("utf-8")


class AwsListingRelay:
    """moto behind a relay that encodes listings as S3 does (see the module docs).

    Args:
        upstream: ``http://127.0.0.1:PORT`` of moto.

    Attributes:
        listings: every re-encoded listing body sent, in order (for a test to check
            the relay did answer as S3 does).
        heads: the headers of every request received, in order.
    """

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (str(parts.hostname), int(parts.port or 80))
        self.listings: list[bytes] = []
        self.heads: list[list[tuple[str, str]]] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _relay(self) -> None:
                relay._answer(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the endpoint to give a client."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        self.heads.append(list(handler.headers.items()))
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        upstream = http.client.HTTPConnection(*self._upstream, timeout=60)
        try:
            upstream.putrequest(
                handler.command, handler.path, skip_host=True, skip_accept_encoding=True
            )
            for name, value in handler.headers.items():
                if name.lower() not in _HOP:
                    upstream.putheader(name, value)
            if body or handler.command in ("PUT", "POST"):
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body or None)
            reply = upstream.getresponse()
            payload = reply.read()
            headers = reply.getheaders()
            status = reply.status
        finally:
            upstream.close()
        query = parse_qs(urlsplit(handler.path).query)
        if (
            handler.command == "GET"
            and status == 200
            and query.get("encoding-type") == ["url"]
            and b"<ListBucketResult" in payload
        ):
            payload = to_aws_listing(payload)
            self.listings.append(payload)
        handler.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP:
                handler.send_header(name, value)
        if handler.command == "HEAD":
            length_header = dict((k.lower(), v) for k, v in headers).get("content-length")
            handler.send_header("Content-Length", length_header or "0")
            handler.end_headers()
            return
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class HostileServer:
    """A loopback HTTP server that reads each request's head and answers ``reply``
    (raw bytes), then closes the connection.

    Attributes:
        requests: the head of every request received, raw.
    """

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.requests: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            self.requests.append(data.partition(b"\r\n\r\n")[0])
            try:
                conn.sendall(self.reply)
            except OSError:
                return

    def close(self) -> None:
        """Stop listening."""
        self.sock.close()


class PairingRelay(AwsListingRelay):
    """An :class:`AwsListingRelay` that holds each request until a second one is in
    flight (or ``wait`` seconds passed) before relaying it: requests a client sends
    together pass as a pair; requests sent one after another each wait alone.

    Attributes:
        paired: how many requests met a partner in time.
        alone: how many requests waited alone for ``wait`` seconds.
    """

    def __init__(self, upstream: str, wait: float = 1.0) -> None:
        self.paired = 0
        self.alone = 0
        self._wait = wait
        self._barrier = threading.Barrier(2)
        self._count_lock = threading.Lock()
        super().__init__(upstream)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        try:
            self._barrier.wait(timeout=self._wait)
        except threading.BrokenBarrierError:
            with self._count_lock:
                self.alone += 1
                self._barrier.reset()
        else:
            with self._count_lock:
                self.paired += 1
        super()._answer(handler)


#: the region of a SigV4 ``Authorization`` header's credential scope
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/s3/aws4_request")


class RegionRelay(AwsListingRelay):
    """An :class:`AwsListingRelay` whose buckets live in ``region``: a request signed for
    another region is answered as S3 answers it (see the module docs), not relayed.

    Attributes:
        redirected: the regions of the requests answered with a 301, in order.
        lookups: how many unsigned ``HEAD`` requests asked for a bucket's region.
        signed: the region of every request relayed, in order.
    """

    def __init__(self, upstream: str, region: str) -> None:
        self.region = region
        self.redirected: list[str] = []
        self.lookups = 0
        self.signed: list[str] = []
        super().__init__(upstream)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        found = _SCOPE.search(handler.headers.get("Authorization") or "")
        if found is None and handler.command == "HEAD":
            self.lookups += 1
            self._reply(handler, 403, b"")
            return
        if found is not None and found.group(1) != self.region:
            self.redirected.append(found.group(1))
            length = int(handler.headers.get("Content-Length") or 0)
            if length:
                handler.rfile.read(length)
            body = b""
            if handler.command != "HEAD":
                body = (
                    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PermanentRedirect'
                    b"</Code><Message>The bucket you are attempting to access must be "
                    b"addressed using the specified endpoint. Please send all future requests "
                    b"to this endpoint.</Message><Endpoint>bucket.s3.%s.amazonaws.com"
                    b"</Endpoint></Error>" % self.region.encode()
                )
            self._reply(handler, 301, body)
            return
        if found is not None:
            self.signed.append(found.group(1))
        super()._answer(handler)

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("x-amz-bucket-region", self.region)
        handler.send_header("Content-Type", "application/xml")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)
