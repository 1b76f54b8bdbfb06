"""A loopback server that answers Google Cloud Storage's XML API as GCS does, in front of
fake-gcs-server (which answers only the JSON API: every XML request gets a bare 404).

:class:`GCSXmlRelay` translates each XML-API request into fake-gcs-server's JSON API, on
the same objects, so a gcsfs root (JSON API) sees what obstore (XML API) wrote and the
other way round. Requests to the JSON API's own paths (``/storage/v1/...``,
``/upload/storage/v1/...``, ``/download/storage/v1/...``, ``/batch/...``) pass through
unchanged: like ``storage.googleapis.com``, one endpoint serves both APIs (an obstore
root's ``fs``, a gcsfs filesystem, works through it too).

Published GCS behaviour it follows (the XML API reference: "PUT Object", "GET Object",
"HEAD Object", "DELETE Object", "List objects" with ``list-type=2``, "HTTP headers and
common request parameters", "XML API error codes"):

* ``PUT /bucket/key``: the body is the object; ``x-goog-meta-NAME`` headers are its user
  metadata (names lower case); ``x-goog-if-generation-match: N`` writes only over
  generation ``N``, ``0`` only when no live object exists -- else ``412
  PreconditionFailed``. The reply: ``200``, ``ETag: "<hex md5>"``,
  ``x-goog-generation``, ``x-goog-metageneration``, ``x-goog-hash``,
  ``x-goog-stored-content-length``, ``x-goog-stored-content-encoding``.
* ``GET`` / ``HEAD /bucket/key``: the object with the headers above plus
  ``Last-Modified``, ``Content-Type``, ``x-goog-meta-*``; a ``Range: bytes=a-b`` (or
  ``a-``, ``-n``) answers ``206`` with ``Content-Range: bytes a-b/size``; a range that
  starts at or past the end answers ``416 InvalidRange``. The body and the headers are of
  one generation (the relay reads the metadata, then that generation's bytes).
* ``DELETE /bucket/key``: ``204``; a missing object ``404 NoSuchKey``.
* ``GET /bucket?list-type=2``: ``ListBucketResult`` with ``Name``, ``Prefix``,
  ``KeyCount``, ``MaxKeys``, ``Delimiter``, ``IsTruncated``, ``Contents`` (``Key``,
  ``Generation``, ``MetaGeneration``, ``LastModified``, ``ETag``, ``Size``),
  ``CommonPrefixes`` and ``NextContinuationToken``; ``continuation-token``,
  ``max-keys`` (at most 1000) and ``start-after`` honoured. Keys are sent as they are
  (XML-escaped, not URL-encoded: GCS encodes them only when asked with
  ``encoding-type=url``, which this relay refuses with ``400`` rather than guess).
* Errors are ``<Error><Code>..</Code><Message>..</Message><Details>..</Details></Error>``:
  ``NoSuchBucket`` (404) for a missing bucket, ``NoSuchKey`` (404) for a missing object,
  ``PreconditionFailed`` (412), ``InvalidRange`` (416), ``InvalidArgument`` (400).
* A key in the path is percent-decoded as a path (``%20`` a space, ``+`` a plus sign);
  query values are decoded as a form (``+`` a space, ``%2B`` a plus sign), as Google's
  front ends do.


:class:`RelayProcess` runs a relay in a process of its own: the suites use that one (a
relay inside the test process shares its interpreter lock and made each request several
times slower); tests that read what the relay received use an in-process one.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import uuid
from datetime import datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit
from xml.sax.saxutils import escape

__all__ = ["GCSXmlRelay", "RelayProcess"]

#: hop-by-hop headers a relay must not pass on (and the length, which it sets)
_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer"}
)
#: paths of the JSON API (passed through unchanged)
_JSON_PATHS = ("/storage/", "/upload/", "/download/", "/batch/")
_XML_HEAD = "<?xml version='1.0' encoding='UTF-8'?>"
_MESSAGES = {
    "NoSuchBucket": "The specified bucket does not exist.",
    "NoSuchKey": "The specified key does not exist.",
    "PreconditionFailed": "At least one of the pre-conditions you specified did not hold.",
    "InvalidRange": "The requested range cannot be satisfied.",
    "InvalidArgument": "Invalid argument.",
}


class _Reply:
    """An HTTP reply to send: status, headers, body."""

    def __init__(
        self, status: int, headers: list[tuple[str, str]], body: bytes, length: int | None = None
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        #: the Content-Length of a reply to HEAD (which has no body)
        self.length = len(body) if length is None else length


def _error(status: int, code: str, details: str) -> _Reply:
    body = (
        f"{_XML_HEAD}<Error><Code>{code}</Code><Message>{_MESSAGES[code]}</Message>"
        f"<Details>{escape(details)}</Details></Error>"
    ).encode()
    return _Reply(status, [("Content-Type", "application/xml; charset=UTF-8")], body)


def _hex_md5(meta: dict[str, Any]) -> str:
    return base64.b64decode(str(meta.get("md5Hash") or "")).hex()


def _http_date(rfc3339: str) -> str:
    return format_datetime(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")), usegmt=True)


def _iso_millis(rfc3339: str) -> str:
    """``2024-01-02T03:04:05.678Z`` as the XML listing writes ``LastModified``."""
    when = datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _object_headers(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """The headers GCS sends with an object (GET, HEAD, and PUT's reply)."""
    headers = [
        ("ETag", f'"{_hex_md5(meta)}"'),
        ("x-goog-generation", str(meta["generation"])),
        ("x-goog-metageneration", str(meta.get("metageneration") or "1")),
        ("x-goog-stored-content-length", str(meta.get("size") or "0")),
        ("x-goog-stored-content-encoding", "identity"),
        ("x-goog-hash", f"crc32c={meta.get('crc32c', '')},md5={meta.get('md5Hash', '')}"),
        ("x-goog-storage-class", str(meta.get("storageClass") or "STANDARD")),
    ]
    if meta.get("updated"):
        headers.append(("Last-Modified", _http_date(str(meta["updated"]))))
    for name, value in (meta.get("metadata") or {}).items():
        headers.append((f"x-goog-meta-{name}", str(value)))
    return headers


class GCSXmlRelay:
    """GCS's XML API on loopback, over fake-gcs-server's JSON API (module docs).

    Args:
        upstream: ``http://127.0.0.1:PORT`` of fake-gcs-server.

    Attributes:
        requests: ``(method, path)`` of every XML-API request received, in order.
        authorizations: the ``Authorization`` header of each of them (None: none sent).
    """

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (str(parts.hostname), int(parts.port or 80))
        self._local = threading.local()
        self.requests: list[tuple[str, str]] = []
        self.authorizations: list[str | None] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body are written apart: without this, Nagle's algorithm and
            # the client's delayed ACK hold every reply ~40 ms
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                relay._answer(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the endpoint to give a client."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- upstream ----------------------------------------------------------------------
    def _send(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request to fake-gcs-server on this thread's kept-alive connection."""
        for attempt in range(2):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection(*self._upstream, timeout=60)
            try:
                conn.request(method, path, body=body or None, headers=headers or {})
                reply = conn.getresponse()
                return reply.status, reply.getheaders(), reply.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _json(self, method: str, path: str, **query: Any) -> tuple[int, Any]:
        params = {k: v for k, v in query.items() if v is not None}
        target = f"{path}?{urlencode(params)}" if params else path
        status, _, body = self._send(method, target)
        return status, json.loads(body) if body.strip() and status < 300 else None

    def _bucket_exists(self, bucket: str) -> bool:
        return self._json("GET", f"/storage/v1/b/{quote(bucket, safe='')}")[0] == 200

    def _missing(self, bucket: str, key: str) -> _Reply:
        if not self._bucket_exists(bucket):
            return _error(404, "NoSuchBucket", f"No such bucket: {bucket}")
        return _error(404, "NoSuchKey", f"No such object: {bucket}/{key}")

    # -- serving -----------------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        split = urlsplit(handler.path)
        if split.path.startswith(_JSON_PATHS) or split.path in ("/storage", "/"):
            reply = self._pass(handler, body)
        else:
            self.requests.append((handler.command, handler.path))
            self.authorizations.append(handler.headers.get("Authorization"))
            reply = self._xml(handler, split.path, split.query, body)
        handler.send_response(reply.status)
        for name, value in reply.headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(reply.length))
        if handler.command == "HEAD":
            handler.end_headers()
            return
        handler.end_headers()
        handler.wfile.write(reply.body)

    def _pass(self, handler: BaseHTTPRequestHandler, body: bytes) -> _Reply:
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP}
        if body or handler.command in ("PUT", "POST", "PATCH"):
            headers["Content-Length"] = str(len(body))
        status, reply_headers, payload = self._send(handler.command, handler.path, body, headers)
        kept = [(k, v) for k, v in reply_headers if k.lower() not in _HOP]
        length = len(payload)
        if handler.command == "HEAD":
            length = int(dict((k.lower(), v) for k, v in reply_headers).get("content-length", 0))
        return _Reply(status, kept, payload, length)

    def _xml(self, handler: BaseHTTPRequestHandler, path: str, query: str, body: bytes) -> _Reply:
        bucket_part, _, key_part = path.lstrip("/").partition("/")
        try:
            bucket = unquote(bucket_part, errors="strict")
            key = unquote(key_part, errors="strict")
        except UnicodeDecodeError:
            return _error(400, "InvalidArgument", "the path is not UTF-8")
        params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        method = handler.command
        if not bucket:
            return _error(400, "InvalidArgument", "no bucket")
        if not key:
            if method == "GET":
                return self._list(bucket, params)
            return _error(400, "InvalidArgument", f"{method} of a bucket is not served here")
        if method == "PUT":
            return self._put(handler, bucket, key, body)
        if method in ("GET", "HEAD"):
            return self._get(handler, bucket, key, head=method == "HEAD")
        if method == "DELETE":
            status, _ = self._json("DELETE", self._object_path(bucket, key))
            if status == 404:
                return self._missing(bucket, key)
            return _Reply(204, [], b"")
        return _error(400, "InvalidArgument", f"method {method} is not served here")

    @staticmethod
    def _object_path(bucket: str, key: str) -> str:
        return f"/storage/v1/b/{quote(bucket, safe='')}/o/{quote(key, safe='')}"

    def _put(self, handler: BaseHTTPRequestHandler, bucket: str, key: str, data: bytes) -> _Reply:
        metadata = {
            name[len("x-goog-meta-") :].lower(): value
            for name, value in handler.headers.items()
            if name.lower().startswith("x-goog-meta-")
        }
        resource: dict[str, Any] = {"name": key}
        if metadata:
            resource["metadata"] = metadata
        content_type = handler.headers.get("Content-Type")
        if content_type:
            resource["contentType"] = content_type
        condition = handler.headers.get("x-goog-if-generation-match")
        if condition is not None and not condition.strip().isdigit():
            return _error(400, "InvalidArgument", f"x-goog-if-generation-match: {condition}")
        while True:
            boundary = uuid.uuid4().hex
            if boundary.encode() not in data:
                break
        payload = b"".join(
            [
                f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(),
                json.dumps(resource).encode(),
                f"\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n".encode(),
                data,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        query = {"uploadType": "multipart"}
        if condition is not None:
            query["ifGenerationMatch"] = condition.strip()
        status, _, reply = self._send(
            "POST",
            f"/upload/storage/v1/b/{quote(bucket, safe='')}/o?{urlencode(query)}",
            payload,
            {"Content-Type": f'multipart/related; boundary="{boundary}"'},
        )
        if status == 412:
            return _error(412, "PreconditionFailed", "Precondition Failed")
        if status == 404:
            return _error(404, "NoSuchBucket", f"No such bucket: {bucket}")
        if status >= 300:
            return _Reply(status, [("Content-Type", "text/plain")], reply)
        meta = json.loads(reply)
        return _Reply(200, _object_headers(meta), b"")

    def _get(self, handler: BaseHTTPRequestHandler, bucket: str, key: str, *, head: bool) -> _Reply:
        # GCS serves the object current when the request arrives, whole: here that is
        # the metadata, then the content of that generation. A write landing between
        # the two removes the generation read first (no versioning): read again, as an
        # atomic GET would have read the new one (only a missing object is missing).
        for _ in range(50):
            status, meta = self._json("GET", self._object_path(bucket, key))
            if status == 404:
                return self._missing(bucket, key)
            if status >= 300 or meta is None:
                return _Reply(status, [], b"")
            reply = self._serve_generation(handler, bucket, key, meta, head=head)
            if reply is not None:
                return reply
        return _error(503, "ServiceUnavailable", "the object keeps changing")

    def _serve_generation(
        self,
        handler: BaseHTTPRequestHandler,
        bucket: str,
        key: str,
        meta: dict[str, Any],
        *,
        head: bool,
    ) -> _Reply | None:
        """The reply for the generation ``meta`` describes; None when it is gone."""
        size = int(meta.get("size") or 0)
        headers = _object_headers(meta)
        headers.append(("Content-Type", str(meta.get("contentType") or "application/octet-stream")))
        headers.append(("Accept-Ranges", "bytes"))
        wanted = handler.headers.get("Range")
        span: tuple[int, int] | None = None
        if wanted:
            span = _parse_range(wanted, size)
            if span is None:
                return _error(416, "InvalidRange", f"Request range not satisfiable: {wanted}")
        if head:
            return _Reply(200, headers, b"", size)
        media = (
            f"/download/storage/v1/b/{quote(bucket, safe='')}/o/{quote(key, safe='')}"
            f"?alt=media&generation={meta['generation']}"
        )
        status, _, data = self._send("GET", media)
        if status == 404:  # replaced between the two requests
            return None
        if span is None:
            return _Reply(200, headers, data)
        start, end = span
        headers.append(("Content-Range", f"bytes {start}-{end}/{size}"))
        return _Reply(206, headers, data[start : end + 1])

    def _list(self, bucket: str, params: dict[str, str]) -> _Reply:
        if params.get("encoding-type"):
            return _error(400, "InvalidArgument", "encoding-type is not served here")
        if params.get("list-type") != "2":
            return _error(400, "InvalidArgument", "only list-type=2 is served here")
        prefix = params.get("prefix", "")
        delimiter = params.get("delimiter", "")
        try:
            max_keys = min(int(params.get("max-keys") or 1000), 1000)
        except ValueError:
            return _error(400, "InvalidArgument", "max-keys")
        start_after = params.get("start-after")
        status, page = self._json(
            "GET",
            f"/storage/v1/b/{quote(bucket, safe='')}/o",
            prefix=prefix or None,
            delimiter=delimiter or None,
            pageToken=params.get("continuation-token") or None,
            maxResults=max_keys,
            startOffset=start_after,
        )
        if status == 404:
            return _error(404, "NoSuchBucket", f"No such bucket: {bucket}")
        if status >= 300:
            return _Reply(status, [], b"")
        items = [i for i in page.get("items", []) if i["name"] != start_after]
        prefixes = page.get("prefixes", [])
        token = page.get("nextPageToken")
        parts = [
            _XML_HEAD,
            "<ListBucketResult xmlns='http://doc.s3.amazonaws.com/2006-03-01'>",
            f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>",
            f"<KeyCount>{len(items) + len(prefixes)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>",
        ]
        if delimiter:
            parts.append(f"<Delimiter>{escape(delimiter)}</Delimiter>")
        parts.append(f"<IsTruncated>{'true' if token else 'false'}</IsTruncated>")
        for item in items:
            parts.append(
                f"<Contents><Key>{escape(item['name'])}</Key>"
                f"<Generation>{item['generation']}</Generation>"
                f"<MetaGeneration>{item.get('metageneration') or 1}</MetaGeneration>"
                f"<LastModified>{_iso_millis(str(item['updated']))}</LastModified>"
                f"<ETag>&quot;{_hex_md5(item)}&quot;</ETag><Size>{item.get('size') or 0}</Size>"
                "</Contents>"
            )
        for common in prefixes:
            parts.append(f"<CommonPrefixes><Prefix>{escape(common)}</Prefix></CommonPrefixes>")
        if token:
            parts.append(f"<NextContinuationToken>{escape(token)}</NextContinuationToken>")
        parts.append("</ListBucketResult>")
        return _Reply(
            200, [("Content-Type", "application/xml; charset=UTF-8")], "".join(parts).encode()
        )


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``(first, last)`` byte of a ``Range: bytes=...`` header on an object of ``size``
    bytes, or None when it cannot be satisfied (GCS: 416)."""
    unit, _, spec = header.partition("=")
    first, _, last = spec.strip().partition("-")
    if unit.strip() != "bytes" or "," in spec:
        return None
    if not first:  # the last n bytes
        count = int(last)
        if count <= 0 or size == 0:
            return None
        return max(0, size - count), size - 1
    start = int(first)
    end = int(last) if last else size - 1
    if start >= size or end < start:
        return None
    return start, min(end, size - 1)


_SERVE = "from tests.test_fs.gcs_fake import _serve_forever; _serve_forever"


def _serve_forever(upstream: str) -> None:
    """Run a relay in this process until stdin closes (see :class:`RelayProcess`)."""
    import sys

    relay = GCSXmlRelay(upstream)
    print(relay.url, flush=True)
    sys.stdin.read()
    relay.stop()


class RelayProcess:
    """A :class:`GCSXmlRelay` in a process of its own (it then shares no interpreter
    lock with the tests that use it); ``stop()`` ends it.

    Args:
        upstream: ``http://127.0.0.1:PORT`` of fake-gcs-server.
    """

    def __init__(self, upstream: str) -> None:
        import os
        import subprocess
        import sys

        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *sys.path])}
        self._process = subprocess.Popen(
            [sys.executable, "-c", f"{_SERVE}({upstream!r})"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"the relay did not start: {line!r}")
        self.url = line

    def stop(self) -> None:
        """End the relay's process."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except Exception:
            self._process.kill()
            self._process.wait()
