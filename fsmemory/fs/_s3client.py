"""fsmemory's own small S3 client: the requests :class:`~fsmemory.fs.s3.S3Root` sends,
on the standard library alone.

Why: importing s3fs + aiobotocore + aiohttp and building an aiobotocore session costs
about half a second of a cold start (a serverless invocation, a CLI call), several
times the requests themselves. This client imports the C ``_socket`` module and
``hashlib`` -- not ``socket.py`` (over plain HTTP; TLS needs it), nor
``http.client`` (whose import with ``email`` and ``ssl`` costs ~20 ms), nor
``xml.etree`` (S3's flat XML replies are read with string searches) -- and speaks
only what a root needs:
``GetObject`` (ranged or whole), ``HeadObject``, ``PutObject`` (with
``If-Match``/``If-None-Match`` and user metadata), ``ListObjectsV2``, ``DeleteObject``,
``DeleteObjects`` and ``HeadBucket``.

* **Configuration** (:func:`resolve_config`): credentials, region and endpoint from the
  storage options (``key``/``secret``/``token``, ``anon``, ``endpoint_url``,
  ``client_kwargs={"endpoint_url", "region_name", "verify"}``, ``config_kwargs``
  timeouts, ``profile``), then the standard AWS environment variables, then the shared
  credentials and config files (static keys only). Anything else -- a profile with SSO,
  ``role_arn``, ``credential_process`` or ``web_identity_token_file``, credentials only
  the instance metadata service or the container endpoint can give, an option this
  client does not understand, an HTTP proxy (``HTTPS_PROXY`` ...) -- makes
  :func:`resolve_config` return ``None`` with the reason, and the root uses s3fs instead.
* **Signing**: AWS Signature Version 4, header-based. The payload hash is the SHA-256 of
  the body over plain HTTP and ``UNSIGNED-PAYLOAD`` over HTTPS (TLS protects the body),
  as botocore does for S3. Keys are percent-encoded byte by byte (everything except
  ``A-Z a-z 0-9 - _ . ~`` and the ``/`` separators), once.
* **Connections**: HTTP/1.1 on plain sockets (TLS through ``ssl`` for ``https``), kept
  alive in a small pool per host, so the requests of one process reuse a handful of
  TCP/TLS connections (as many as requests were ever in flight at once, at least
  :data:`MAX_CONNECTIONS`, at most :data:`MAX_IDLE`); a request that fails on a
  *reused* connection before any reply (the server closed it while idle) is sent once
  more on a new one -- a hidden resend the root's retry policy knows about. Batches
  (:meth:`S3Client.map`) run on a thread pool of up to :data:`MAX_CONNECTIONS` threads.
* **Errors** are :class:`S3Error` carrying the HTTP status and S3's error code in the
  shape :mod:`fsmemory.fs.errors` reads (``.status`` and ``.response["Error"]``), so
  they map to the same fsmemory errors as s3fs's; connection failures are the standard
  connection errors (``ConnectionError`` and its subclasses :class:`RemoteDisconnected`
  and :class:`IncompleteRead`, ``TimeoutError``), which the retry policy treats as
  transient.
* **Hostile replies and requests**: a reply body over 64 MiB is read in pieces, so
  memory grows with the bytes that arrive, never with what a ``Content-Length`` or
  chunk size claims beyond that; a body claimed larger than :data:`MAX_OBJECT` (an
  object's ``GET``) or :data:`MAX_REPLY` (any other reply) is refused unread with a
  :class:`~fsmemory.errors.BackendError` (not retried); a malformed length is a
  broken reply (a ``ConnectionError``). A header value with a CR, LF, NUL, another
  control character or a non-ASCII one (a caller's ``If-Match`` version, say) is
  refused with :class:`~fsmemory.errors.InvalidInputError` before anything is sent
  (:func:`check_headers`).
* **Region**: when neither the options nor the environment name one, requests go to
  ``us-east-1`` and a reply naming the bucket's region (``x-amz-bucket-region``) moves
  that bucket to its region and resends the request once.
"""

from __future__ import annotations

import _socket  # socket.py's enum set-up alone costs a cold start ~2 ms (see _open)
import base64
import hashlib
import io
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import quote, unquote_plus, urlsplit

from fsmemory.errors import BackendError, InvalidInputError

if TYPE_CHECKING:
    import configparser

__all__ = [
    "MAX_CONNECTIONS",
    "MAX_IDLE",
    "MAX_OBJECT",
    "MAX_REPLY",
    "Pending",
    "S3Client",
    "S3Config",
    "S3Error",
    "check_headers",
    "client_for",
    "list_page",
    "resolve_config",
]

_T = TypeVar("_T")
_R = TypeVar("_R")

#: connections kept per host, and threads of a batch (botocore's default pool size)
MAX_CONNECTIONS = 10
#: idle connections kept per host at most, when more threads than
#: :data:`MAX_CONNECTIONS` send requests at once (an export's reads, say)
MAX_IDLE = 64

#: seconds to wait for a connection / for each read, unless ``config_kwargs`` say
#: otherwise (s3fs's defaults)
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 15.0

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_UNSIGNED = "UNSIGNED-PAYLOAD"
_ALGORITHM = "AWS4-HMAC-SHA256"
_DEFAULT_REGION = "us-east-1"

#: storage options that only tune s3fs's own caches or are handled by the root; they
#: change no request this client sends
_CACHE_OPTIONS = frozenset(
    {
        "use_listings_cache",
        "listings_expiry_time",
        "max_paths",
        "skip_instance_cache",
        "default_block_size",
        "default_fill_cache",
        "default_cache_type",
        "cache_regions",
        "asynchronous",
    }
)
_CLIENT_KWARGS = frozenset({"endpoint_url", "region_name", "verify"})
_CONFIG_KWARGS = frozenset({"connect_timeout", "read_timeout", "retries", "s3"})

#: profile settings in the config file that need botocore's credential providers
_PROVIDER_SETTINGS = (
    "role_arn",
    "source_profile",
    "credential_source",
    "credential_process",
    "web_identity_token_file",
    "sso_session",
    "sso_start_url",
    "sso_account_id",
    "login_session",
)


class S3Error(Exception):
    """An error reply from S3 (or a server speaking its protocol).

    Attributes:
        status: the HTTP status.
        code: S3's error code (``"NoSuchKey"``, ``"PreconditionFailed"``, ...); the
            status as text when the reply has no body (a ``HEAD``).
        response: ``{"Error": {"Code", "Message", "BucketName"}, "ResponseMetadata":
            {"HTTPStatusCode"}}`` -- the shape :mod:`fsmemory.fs.errors` reads.
    """

    def __init__(self, status: int, code: str, message: str = "", bucket: str = "") -> None:
        super().__init__(f"{status} {code}: {message}" if message else f"{status} {code}")
        self.status = status
        self.code = code
        error: dict[str, str] = {"Code": code, "Message": message}
        if bucket:
            error["BucketName"] = bucket
        self.response: dict[str, Any] = {
            "Error": error,
            "ResponseMetadata": {"HTTPStatusCode": status},
        }
        self._args = (status, code, message, bucket)

    def __reduce__(self) -> tuple[type[S3Error], tuple[int, str, str, str]]:
        return (type(self), self._args)


class Credentials(NamedTuple):
    """Static AWS credentials (the secret and token are left out of ``repr``)."""

    key: str
    secret: str
    token: str | None = None

    def __repr__(self) -> str:
        return f"Credentials(key={self.key!r}, secret=..., token={'...' if self.token else None})"


class S3Config(NamedTuple):
    """Everything the built-in client needs to reach a bucket (hashable: the process
    shares one client per configuration).

    Attributes:
        endpoint: ``scheme://host[:port][/base]`` of a custom endpoint, or None for AWS.
        region: the signing region.
        region_known: the region came from the options or the environment (no
            redirect-following).
        credentials: None for unsigned (``anon=True``) requests.
        addressing: ``"path"`` (``endpoint/bucket/key``) or ``"virtual"``
            (``bucket.endpoint/key``); ``"auto"``: path style on a custom endpoint,
            virtual on AWS for buckets that are host names without dots.
        verify: TLS certificate checks: True, False, or a CA bundle path.
        connect_timeout, read_timeout: seconds.
    """

    endpoint: str | None
    region: str
    region_known: bool
    credentials: Credentials | None
    addressing: str = "auto"
    verify: bool | str = True
    connect_timeout: float = CONNECT_TIMEOUT
    read_timeout: float = READ_TIMEOUT


# -- configuration -----------------------------------------------------------------------
def _env(environ: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = environ.get(name)
        if value:
            return value
    return None


def _read_ini(path: str) -> configparser.RawConfigParser | None:
    import configparser

    parser = configparser.RawConfigParser()
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            parser.read_file(handle)
    except FileNotFoundError:
        return None
    except (OSError, configparser.Error, UnicodeDecodeError):
        raise _Unsupported(f"cannot read {path}") from None
    return parser


class _Unsupported(Exception):
    """The built-in client cannot serve these options (the message says why)."""


def _profile_section(
    parser: configparser.RawConfigParser | None, profile: str, *, config_file: bool
) -> dict[str, str]:
    if parser is None:
        return {}
    names = [profile] if not config_file else [f"profile {profile}"]
    if config_file and profile == "default":
        names.append("default")
    for name in names:
        if parser.has_section(name):
            return {k.lower(): v.strip() for k, v in parser.items(name)}
    return {}


def _files_credentials(
    environ: Mapping[str, str], profile: str | None
) -> tuple[Credentials | None, str | None]:
    """``(credentials, region)`` from the shared files, as botocore would find them."""
    name = profile or _env(environ, "AWS_PROFILE", "AWS_DEFAULT_PROFILE") or "default"
    cred_file = _env(environ, "AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials"
    conf_file = _env(environ, "AWS_CONFIG_FILE") or "~/.aws/config"
    config = _profile_section(_read_ini(conf_file), name, config_file=True)
    region = config.get("region") or None
    for setting in _PROVIDER_SETTINGS:
        if config.get(setting):
            raise _Unsupported(f"profile {name!r} uses {setting}")
    for setting in ("endpoint_url", "services", "s3", "ca_bundle"):
        if config.get(setting):
            raise _Unsupported(f"profile {name!r} sets {setting}")
    shared = _profile_section(_read_ini(cred_file), name, config_file=False)
    for source in (shared, config):
        key, secret = source.get("aws_access_key_id"), source.get("aws_secret_access_key")
        if key and secret:
            token = source.get("aws_session_token") or source.get("aws_security_token")
            return Credentials(key, secret, token or None), region
        if source.get("credential_process"):
            raise _Unsupported(f"profile {name!r} uses credential_process")
    if profile is not None:
        raise _Unsupported(f"profile {profile!r} has no static keys")
    return None, region


def _loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def _timeout(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _Unsupported(f"config_kwargs[{name!r}] is not a positive number")
    return float(value)


def resolve_config(
    options: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> tuple[S3Config | None, str]:
    """The built-in client's configuration for these storage options, or ``(None,
    reason)`` when only s3fs can serve them (see the module docs).

    Args:
        options: the root's storage options (``retry`` and ``client`` already taken out).
        environ: the environment to read (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    try:
        return _resolve(dict(options), env), ""
    except _Unsupported as why:
        return None, str(why)


def _resolve(opts: dict[str, Any], env: Mapping[str, str]) -> S3Config:
    client_kwargs = dict(opts.pop("client_kwargs", None) or {})
    config_kwargs = dict(opts.pop("config_kwargs", None) or {})
    anon = opts.pop("anon", False)
    key = opts.pop("key", None) or opts.pop("aws_access_key_id", None)
    secret = opts.pop("secret", None) or opts.pop("aws_secret_access_key", None)
    token = opts.pop("token", None) or opts.pop("aws_session_token", None)
    profile = opts.pop("profile", None)
    endpoint = opts.pop("endpoint_url", None)
    for name in _CACHE_OPTIONS:
        opts.pop(name, None)
    if opts.get("version_aware") is False:
        opts.pop("version_aware")
    if opts:
        raise _Unsupported(f"storage options {sorted(opts)} need s3fs")
    unknown = set(client_kwargs) - _CLIENT_KWARGS
    if unknown:
        raise _Unsupported(f"client_kwargs {sorted(unknown)} need s3fs")
    unknown = set(config_kwargs) - _CONFIG_KWARGS
    if unknown:
        raise _Unsupported(f"config_kwargs {sorted(unknown)} need s3fs")
    if not isinstance(anon, bool):
        raise _Unsupported("anon is not a bool")

    ignore_env = env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() == "true"
    endpoint = client_kwargs.get("endpoint_url") or endpoint
    if endpoint is None and not ignore_env:
        endpoint = _env(env, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    proxied = _env(env, "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
    if proxied and not (endpoint and _loopback(str(endpoint))):
        raise _Unsupported("HTTP proxies (the *_PROXY variables) need s3fs")
    if endpoint is not None:
        parts = urlsplit(str(endpoint))
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise _Unsupported(f"endpoint {endpoint!r} is not an http(s) URL")
        endpoint = str(endpoint).rstrip("/")

    region = client_kwargs.get("region_name") or _env(env, "AWS_REGION", "AWS_DEFAULT_REGION")
    credentials: Credentials | None = None
    if anon:
        file_region = None
    elif key or secret:
        if not (key and secret):
            raise _Unsupported("key given without secret (or the reverse)")
        credentials = Credentials(str(key), str(secret), str(token) if token else None)
        file_region = None
    elif profile is None and _env(env, "AWS_ACCESS_KEY_ID") and _env(env, "AWS_SECRET_ACCESS_KEY"):
        credentials = Credentials(
            str(env["AWS_ACCESS_KEY_ID"]),
            str(env["AWS_SECRET_ACCESS_KEY"]),
            _env(env, "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"),
        )
        file_region = None
    else:
        if _env(env, "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
            raise _Unsupported("web identity credentials need botocore")
        credentials, file_region = _files_credentials(env, profile)
        if credentials is None:
            raise _Unsupported("no static credentials (instance or container role?)")
    region = region or file_region

    verify = client_kwargs.get("verify", True)
    if not isinstance(verify, bool | str):
        raise _Unsupported("client_kwargs['verify'] must be a bool or a path")
    if verify is True and env.get("AWS_CA_BUNDLE"):
        verify = env["AWS_CA_BUNDLE"]

    addressing = "auto"
    s3_config = config_kwargs.get("s3") or {}
    if not isinstance(s3_config, Mapping) or set(s3_config) - {"addressing_style"}:
        raise _Unsupported("config_kwargs['s3'] holds settings that need s3fs")
    if "addressing_style" in s3_config:
        addressing = str(s3_config["addressing_style"])
        if addressing not in ("auto", "path", "virtual"):
            raise _Unsupported(f"addressing_style {addressing!r}")
    return S3Config(
        endpoint=endpoint,
        region=str(region or _DEFAULT_REGION),
        region_known=region is not None or endpoint is not None,
        credentials=credentials,
        addressing=addressing,
        verify=verify,
        connect_timeout=_timeout(config_kwargs.get("connect_timeout", CONNECT_TIMEOUT), "connect"),
        read_timeout=_timeout(config_kwargs.get("read_timeout", READ_TIMEOUT), "read"),
    )


# -- signing -----------------------------------------------------------------------------
def uri_encode(text: str, *, slash: bool = False) -> str:
    """Percent-encode ``text`` as SigV4 wants: UTF-8, every byte but ``A-Za-z0-9-_.~``
    (and ``/`` when ``slash``)."""
    return quote(text, safe="/~" if slash else "~")


def canonical_query(query: Mapping[str, str]) -> str:
    """The canonical (and sent) query string: encoded pairs sorted by name."""
    pairs = sorted((uri_encode(k), uri_encode(v)) for k, v in query.items())
    return "&".join(f"{k}={v}" for k, v in pairs)


try:  # what hmac.digest() calls, without importing hmac (a cold start pays ~1 ms)
    from _hashlib import hmac_digest as _hmac_digest
except ImportError:  # pragma: no cover - a Python built without OpenSSL's hashlib
    import hmac

    _hmac_digest = hmac.digest  # type: ignore[assignment]


def _hmac(key: bytes, text: str) -> bytes:
    return _hmac_digest(key, text.encode(), "sha256")


class Signer:
    """SigV4 signatures for one set of credentials (signing keys cached per day/region)."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self._keys: dict[tuple[str, str], bytes] = {}

    def _key(self, day: str, region: str) -> bytes:
        key = self._keys.get((day, region))
        if key is None:
            k = _hmac(f"AWS4{self.credentials.secret}".encode(), day)
            k = _hmac(_hmac(_hmac(k, region), "s3"), "aws4_request")
            self._keys = {(day, region): k}  # one day, one region at a time is enough
            key = k
        return key

    def sign(
        self,
        method: str,
        path: str,
        query: str,
        headers: dict[str, str],
        payload_hash: str,
        region: str,
        when: float | None = None,
    ) -> None:
        """Add ``x-amz-date``, ``x-amz-content-sha256``, the session token and
        ``Authorization`` to ``headers`` (lower-case names; ``host`` must be there).

        Args:
            method: the HTTP method.
            path: the request path, already percent-encoded (it is sent as is).
            query: the canonical query string (sent as is).
            headers: every header to sign; all of them are signed.
            payload_hash: hex SHA-256 of the body, or ``UNSIGNED-PAYLOAD``.
            region: the signing region.
            when: the request time (default now).
        """
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if when is None else when))
        day = stamp[:8]
        headers["x-amz-date"] = stamp
        headers["x-amz-content-sha256"] = payload_hash
        if self.credentials.token:
            headers["x-amz-security-token"] = self.credentials.token
        names = sorted(headers)
        canonical_headers = "".join(f"{n}:{' '.join(headers[n].split())}\n" for n in names)
        signed = ";".join(names)
        canonical = f"{method}\n{path}\n{query}\n{canonical_headers}\n{signed}\n{payload_hash}"
        scope = f"{day}/{region}/s3/aws4_request"
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        to_sign = f"{_ALGORITHM}\n{stamp}\n{scope}\n{digest}"
        signature = _hmac(self._key(day, region), to_sign).hex()
        headers["authorization"] = (
            f"{_ALGORITHM} Credential={self.credentials.key}/{scope}, "
            f"SignedHeaders={signed}, Signature={signature}"
        )


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse a request whose header names or values could break out of their line.

    Every value must be printable ASCII (a space allowed): a CR or LF in a caller's
    value (an ``If-Match`` version token, say) would otherwise reach the wire as a
    header line of its own, and NUL or other control characters have no place in a
    header. Names must be printable ASCII without a space or ``:``.

    Raises:
        InvalidInputError: a name or value is not acceptable (the message names the
            header, never its value: it may hold a credential).
    """
    for name, value in headers.items():
        if not (name and name.isascii() and name.isprintable()) or " " in name or ":" in name:
            raise InvalidInputError(f"not a valid HTTP header name: {name!r}")
        if not (value.isascii() and value.isprintable()):
            raise InvalidInputError(
                f"the {name} header would hold a control or non-ASCII character "
                "(CR, LF, NUL, ...): the request is not sent"
            )


# -- XML ---------------------------------------------------------------------------------
#: the five named entities of XML; numeric references are decoded too
_NAMED_ENTITIES = {"quot": '"', "amp": "&", "lt": "<", "gt": ">", "apos": "'"}
_HEX = frozenset("0123456789abcdefABCDEF")


def _unescape(text: str) -> str:
    """``text`` with XML character and entity references decoded (``&name;``,
    ``&#NNN;``, ``&#xHHH;``; an unknown or malformed one is left as it is). String
    operations, not a regular expression: every listing's ETags hold ``&quot;``, and a
    cold start would pay for compiling one."""
    if "&" not in text:
        return text
    first, *rest = text.split("&")
    out = [first]
    for part in rest:
        name, semicolon, after = part.partition(";")
        char: str | None = None
        if semicolon and name.isascii():
            if name[:2] == "#x" and len(name) > 2 and _HEX.issuperset(name[2:]):
                char = chr(int(name[2:], 16))
            elif name[:1] == "#" and name[1:].isdigit():
                char = chr(int(name[1:]))
            elif name.isalpha():
                char = _NAMED_ENTITIES.get(name)
        out.append(f"&{part}" if char is None else char + after)
    return "".join(out)


def _escape(text: str) -> str:
    """``text`` made safe as XML element content."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _spans(xml: str, tag: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the raw content of each ``<tag>...</tag>`` element, in
    order (``<tag attr="...">`` too; ``<tag/>`` has no content and is skipped). S3's
    XML replies are flat and regular: no CDATA, no namespace prefixes, no element
    nested in its own kind. String searches rather than ``xml.etree``, whose import a
    cold start would pay, or regular expressions, whose compilation it would."""
    opening, closing = f"<{tag}", f"</{tag}>"
    at, size = 0, len(xml)
    while (found := xml.find(opening, at)) >= 0:
        after = found + len(opening)
        if after < size and xml[after] == ">":
            start = after + 1
        elif after < size and xml[after] in " \t\r\n":
            start = xml.find(">", after) + 1
            if not start:
                return
        else:  # another tag that starts with this one's name
            at = after
            continue
        end = xml.find(closing, start)
        if end < 0:
            return
        yield start, end
        at = end + len(closing)


def _elements(xml: str, tag: str) -> list[str]:
    """The raw content of every ``<tag>...</tag>`` element (see :func:`_spans`)."""
    return [xml[start:end] for start, end in _spans(xml, tag)]


def _field(xml: str, tag: str, default: str = "") -> str:
    """The decoded text of the first ``<tag>`` element (``default`` when there is none:
    ``<tag/>`` holds no text element)."""
    for start, end in _spans(xml, tag):
        return _unescape(xml[start:end])
    return default


def _iso_mtime(text: str) -> float | None:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


_MONTHS = {
    name: i + 1
    for i, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    )
}


def _http_mtime(text: str | None) -> float | None:
    """Seconds since the epoch of an HTTP date (``Wed, 02 Dec 2026 00:52:41 GMT``)."""
    from datetime import UTC, datetime

    try:
        _, day, month, year, clock, _zone = (text or "").split()
        hour, minute, second = clock.split(":")
        when = datetime(
            int(year), _MONTHS[month], int(day), int(hour), int(minute), int(second), tzinfo=UTC
        )
    except (KeyError, ValueError):
        return None
    return when.timestamp()


# -- HTTP/1.1 on a socket ------------------------------------------------------------------
#: longest status or header line accepted, and most header lines
_MAX_LINE = 65536
_MAX_HEADERS = 200

#: the largest body accepted in the reply to an object ``GET``: 5 GiB, the largest
#: object one ``PutObject`` can store (every file a root writes is one)
MAX_OBJECT = 5 << 30
#: the largest body accepted in any other reply (a listing page of 1000 keys, an
#: error, a ``DeleteObjects`` result: a few MB at most)
MAX_REPLY = 64 << 20
#: a body of at most this many bytes is read in one piece (room made for all of it
#: at once, as fast as a read gets); a larger one in pieces of :data:`_READ_CHUNK`,
#: so memory grows with the bytes that arrive, never with what a ``Content-Length``
#: or chunk size claims beyond this
_ONE_PIECE = 64 << 20
_READ_CHUNK = 8 << 20


class RemoteDisconnected(ConnectionResetError):
    """The server closed the connection without answering (e.g. an idle kept-alive one)."""


class IncompleteRead(ConnectionError):
    """The connection ended before the whole reply body arrived."""


def _addresses(host: str, port: int) -> list[tuple[int, Any]]:
    """``(family, address)`` to try for ``host``: an IP literal as it is (no resolver:
    its first call costs a process ~1 ms), a name as ``getaddrinfo`` resolves it."""
    for family, address in (
        (_socket.AF_INET, (host, port)),
        (_socket.AF_INET6, (host, port, 0, 0)),
    ):
        try:
            _socket.inet_pton(family, host)
        except OSError:
            continue
        return [(family, address)]
    infos = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM)
    return [(family, address) for family, _kind, _proto, _name, address in infos]


def _open(host: str, port: int, timeout: float) -> Any:
    """A connected TCP socket of the C ``_socket`` module (what ``socket.py``'s
    ``create_connection`` does, without importing ``socket.py``: TLS needs it and
    imports it, plain HTTP does not): each address in turn until one answers.

    Raises:
        OSError: no address could be reached (the last failure).
    """
    failure: OSError | None = None
    for family, address in _addresses(host, port):
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        return sock
    raise failure or OSError(f"no address found for {host!r}")


class _SocketReader(io.RawIOBase):
    """The raw reads of a ``_socket`` socket, for an :class:`io.BufferedReader` (the
    part of ``socket.makefile`` a reply needs)."""

    def __init__(self, sock: Any) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count: int = self._sock.recv_into(buffer)
        return count


class _Connection:
    """One HTTP/1.1 connection: a request out, the whole reply in (no pipelining).

    Plain sockets rather than ``http.client``, whose import (with ``email`` and ``ssl``)
    costs a cold start ~20 ms; S3 replies are simple enough: a status line, headers,
    and a ``Content-Length`` or chunked body. Over plain HTTP not even ``socket.py`` is
    imported (the C module serves); TLS goes through ``ssl`` and its sockets.
    """

    def __init__(
        self, scheme: str, host: str, port: int, config: S3Config, ssl_context: Any
    ) -> None:
        sock = _open(host, port, config.connect_timeout)
        try:
            sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            if scheme == "https":
                import socket  # ssl imports it anyway

                sock = socket.socket(fileno=sock.detach())
                sock.settimeout(config.connect_timeout)  # the TLS handshake
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
                reader: Any = sock.makefile("rb")
            else:
                reader = io.BufferedReader(_SocketReader(sock), 65536)
            sock.settimeout(config.read_timeout)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self._reader = reader

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._reader.close()
        self.sock.close()

    def _line(self) -> bytes:
        line: bytes = self._reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise ConnectionError("reply line too long")
        return line

    def exchange(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes,
        limit: int = MAX_REPLY,
    ) -> tuple[Reply, bool]:
        """Send one request and read its reply; ``(reply, keep_alive)``.

        Raises:
            RemoteDisconnected: the server closed the connection before any reply.
            IncompleteRead: the reply body broke off.
            OSError: any other connection failure or a timeout (``TimeoutError``).
        """
        self.send(method, target, headers, body)
        return self.receive(method, limit)

    def send(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> None:
        """Send one request (its reply is read by :meth:`receive`).

        Raises:
            OSError: the connection failed.
        """
        head = f"{method} {target} HTTP/1.1\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        data = (head + "\r\n").encode("latin-1")
        if len(body) <= 65536:
            self.sock.sendall(data + body)
        else:
            self.sock.sendall(data)
            self.sock.sendall(body)

    def receive(self, method: str, limit: int = MAX_REPLY) -> tuple[Reply, bool]:
        """Read the reply to the request :meth:`send` sent; ``(reply, keep_alive)``.

        Args:
            method: the request's method (a ``HEAD`` reply has no body).
            limit: the largest body accepted in a 2xx reply (other replies:
                :data:`MAX_REPLY` at most).

        Raises:
            BackendError: the body is larger than ``limit`` (by its
                ``Content-Length``, its chunk sizes, or what arrived): the reply is
                not read, and the connection must be closed.
            RemoteDisconnected, IncompleteRead, OSError: as :meth:`exchange`; a
                malformed ``Content-Length`` or chunk size is a ``ConnectionError``.
        """
        while True:
            line = self._line()
            if not line:
                raise RemoteDisconnected("the server closed the connection without replying")
            parts = line.decode("latin-1").split(None, 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
                raise ConnectionError(f"not an HTTP reply: {line[:80]!r}")
            version, status = parts[0], int(parts[1])
            reply_headers = self._headers()
            if not 100 <= status < 200:
                break
        if not 200 <= status < 300:
            limit = min(limit, MAX_REPLY)
        if method == "HEAD" or status in (204, 304):
            payload = b""
            length: int | None = 0
        elif "chunked" in reply_headers.get("transfer-encoding", "").lower():
            payload, length = self._chunked(limit), 0
        elif "content-length" in reply_headers:
            length = _size(reply_headers["content-length"], 10, "Content-Length")
            _within(length, limit)
            payload = self._read(length)
        else:  # delimited by the close
            payload, length = self._read(None, limit), None
        connection = reply_headers.get("connection", "").lower()
        keep = (
            length is not None
            and "close" not in connection
            and (version == "HTTP/1.1" or "keep-alive" in connection)
        )
        return Reply(status, reply_headers, payload), keep

    def _headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for _ in range(_MAX_HEADERS):
            line = self._line()
            if line in (b"\r\n", b"\n"):
                return out
            if not line:
                raise IncompleteRead("the connection ended inside the reply headers")
            name, _, value = line.decode("latin-1").partition(":")
            key = name.strip().lower()
            value = value.strip()
            out[key] = f"{out[key]}, {value}" if key in out else value
        raise ConnectionError("too many reply headers")

    def _read(self, size: int | None, limit: int = MAX_REPLY) -> bytes:
        """``size`` bytes of the body (None: up to the close, at most ``limit``); over
        :data:`_ONE_PIECE` bytes, read in pieces of :data:`_READ_CHUNK`: what a reply
        claims beyond that is never allocated before it arrives.

        Raises:
            IncompleteRead: the connection ended before ``size`` bytes.
            BackendError: more than ``limit`` bytes came before the close.
        """
        if size is not None and size <= _ONE_PIECE:
            data: bytes = self._reader.read(size) if size else b""
            if len(data) < size:
                raise IncompleteRead(f"got {len(data)} of {size} bytes")
            return data
        out = io.BytesIO()  # getvalue() hands over its buffer without a copy
        got = 0
        while size is None or got < size:
            want = _READ_CHUNK if size is None else min(_READ_CHUNK, size - got)
            piece = self._reader.read(want)
            if not piece:
                break
            got += len(piece)
            if size is None:
                _within(got, limit)
            out.write(piece)
        if size is not None and got < size:
            raise IncompleteRead(f"got {got} of {size} bytes")
        return out.getvalue()

    def _chunked(self, limit: int) -> bytes:
        out = io.BytesIO()
        total = 0
        while True:
            line = self._line()
            if not line:
                raise IncompleteRead("the connection ended inside a chunked body")
            size = _size(line.split(b";", 1)[0].decode("latin-1"), 16, "chunk size")
            if size == 0:
                while self._line() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return out.getvalue()
            total += size
            _within(total, limit)
            out.write(self._read(size))
            self._line()  # the CRLF after the chunk


def _size(text: str, base: int, what: str) -> int:
    """A ``Content-Length`` (``base`` 10) or chunk size (16) of a reply.

    Raises:
        ConnectionError: it is not a plain non-negative number (a sign, a list of
            lengths, anything else): the reply cannot be read.
    """
    text = text.strip()
    digits = "0123456789abcdefABCDEF" if base == 16 else "0123456789"
    if not text or len(text) > 40 or text.strip(digits):
        raise ConnectionError(f"malformed {what} in the reply: {text[:40]!r}")
    return int(text, base)


def _within(size: int, limit: int) -> None:
    """Refuse a reply body larger than ``limit`` before it is read (or any more of it).

    Raises:
        BackendError: ``size`` exceeds ``limit`` (not transient: another try would
            get the same reply).
    """
    if size > limit:
        raise BackendError(
            f"the S3 reply's body would hold {size} bytes, more than the {limit} accepted: not read"
        )


# -- the client --------------------------------------------------------------------------
class Reply(NamedTuple):
    """One HTTP reply: status, headers (lower-case names) and the whole body."""

    status: int
    headers: dict[str, str]
    body: bytes


class Pending:
    """A request :meth:`S3Client.start` sent, whose reply :meth:`S3Client.finish`
    reads."""

    __slots__ = (
        "body",
        "bucket",
        "conn",
        "headers",
        "key",
        "method",
        "query",
        "reused",
        "signed",
        "target",
        "where",
    )

    def __init__(
        self,
        method: str,
        bucket: str,
        key: str,
        query: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        where: tuple[str, str, int],
        target: str,
        signed: dict[str, str],
        conn: _Connection,
        reused: bool,
        body: bytes = b"",
    ) -> None:
        self.method, self.bucket, self.key = method, bucket, key
        self.query, self.headers, self.body = query, headers, body
        self.where, self.target, self.signed = where, target, signed
        self.conn, self.reused = conn, reused


def _limit(method: str, key: str) -> int:
    """The largest reply body a request accepts: :data:`MAX_OBJECT` for an object's
    ``GET``, :data:`MAX_REPLY` for the rest."""
    return MAX_OBJECT if method == "GET" and key else MAX_REPLY


def _dns_bucket(bucket: str) -> bool:
    """A bucket usable as a TLS-safe host label (no dots, lower-case, 3-63 chars)."""
    return (
        3 <= len(bucket) <= 63
        and bucket.replace("-", "").isalnum()
        and bucket.islower()
        and bucket[0].isalnum()
        and bucket[-1].isalnum()
        and bucket.isascii()
    )


class S3Client:
    """Signed S3 requests over kept-alive HTTP/1.1 connections.

    Thread-safe: every request takes a connection of its own from the pool.

    Args:
        config: what :func:`resolve_config` returned.
    """

    def __init__(self, config: S3Config) -> None:
        self.config = config
        self._signer = Signer(config.credentials) if config.credentials else None
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        #: connections in use now, and the most ever in use at once
        self._busy = 0
        self._peak = 0
        self._regions: dict[str, str] = {}
        self._pool: Any = None
        self._ssl: Any = None
        #: callables told ``(method, url)`` before each request is sent (request counts)
        self.observers: list[Callable[[str, str], None]] = []

    # -- addressing ----------------------------------------------------------------------
    def _region(self, bucket: str) -> str:
        return self._regions.get(bucket, self.config.region)

    def _target(self, bucket: str, key: str) -> tuple[str, str, int, str]:
        """``(scheme, host, port, encoded path)`` of an object (or the bucket: key "")."""
        cfg = self.config
        if cfg.endpoint is not None:
            parts = urlsplit(cfg.endpoint)
            scheme, host = parts.scheme, str(parts.hostname)
            port = parts.port or (443 if scheme == "https" else 80)
            base = parts.path.rstrip("/")
            virtual = cfg.addressing == "virtual"
        else:
            region = self._region(bucket)
            scheme, port, base = "https", 443, ""
            host = f"s3.{region}.amazonaws.com"
            virtual = cfg.addressing == "virtual" or (
                cfg.addressing == "auto" and _dns_bucket(bucket)
            )
        if virtual:
            host = f"{bucket}.{host}"
            path = f"{base}/{uri_encode(key, slash=True)}"
        else:
            path = f"{base}/{uri_encode(bucket)}"
            if key:
                path += f"/{uri_encode(key, slash=True)}"
        return scheme, host, port, path

    # -- connections ---------------------------------------------------------------------
    def _connection(self, scheme: str, host: str, port: int) -> _Connection:
        if scheme == "https" and self._ssl is None:
            import ssl

            verify = self.config.verify
            ctx = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
            if verify is False:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            self._ssl = ctx
        return _Connection(scheme, host, port, self.config, self._ssl)

    def _take(self, where: tuple[str, str, int]) -> tuple[_Connection, bool]:
        with self._lock:
            idle = self._idle.get(where)
            if idle:
                return idle.pop(), True
        return self._connection(*where), False

    def _give_back(self, where: tuple[str, str, int], conn: _Connection) -> None:
        # As many kept as requests were ever in flight at once: 16 threads reading with
        # 10 kept would open a new connection (a TLS handshake on AWS) for 6 requests
        # in 16.
        with self._lock:
            idle = self._idle.setdefault(where, [])
            if len(idle) < min(max(MAX_CONNECTIONS, self._peak), MAX_IDLE):
                idle.append(conn)
                return
        conn.close()

    def _forget_inherited(self) -> None:
        """Drop the connections and threads a forked child inherited, unclosed (closing
        the child's copies would be harmless, but a TLS close would write to the
        parent's stream)."""
        self._lock = threading.Lock()
        self._idle = {}
        self._busy = 0
        self._pool = None

    def close(self) -> None:
        """Close the idle connections and the batch threads."""
        with self._lock:
            idle, self._idle = self._idle, {}
            pool, self._pool = self._pool, None
        for conns in idle.values():
            for conn in conns:
                conn.close()
        if pool is not None:
            pool.shutdown(wait=False)

    # -- one request ---------------------------------------------------------------------
    def request(
        self,
        method: str,
        bucket: str,
        key: str = "",
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        ok: Iterable[int] = (200,),
    ) -> Reply:
        """Send one signed request and read the whole reply.

        Raises:
            S3Error: the reply's status is not in ``ok``.
            OSError: the connection failed (``ConnectionError``, ``TimeoutError``, ...).
        """

        def send() -> Reply:
            return self._send(method, bucket, key, query, headers, body)

        return self._settle(send(), bucket, ok, send)

    def _settle(
        self, reply: Reply, bucket: str, ok: Iterable[int], resend: Callable[[], Reply]
    ) -> Reply:
        """``reply``, or -- when it names another region for the bucket -- what
        ``resend`` gets from there; :class:`S3Error` when its status is not in ``ok``."""
        region = reply.headers.get("x-amz-bucket-region")
        if (
            reply.status in (301, 400)
            and region
            and not self.config.region_known
            and region != self._region(bucket)
        ):
            self._regions[bucket] = region
            reply = resend()
        if reply.status not in ok:
            raise _error(reply, bucket)
        return reply

    def _prepare(
        self,
        method: str,
        bucket: str,
        key: str,
        query: Mapping[str, str] | None,
        extra: Mapping[str, str] | None,
        body: bytes,
    ) -> tuple[tuple[str, str, int], str, dict[str, str]]:
        """``(where, target, signed headers)`` of a request; the observers are told."""
        scheme, host, port, path = self._target(bucket, key)
        qs = canonical_query(query) if query else ""
        default_port = 443 if scheme == "https" else 80
        headers = {k.lower(): v for k, v in (extra or {}).items()}
        headers["host"] = host if port == default_port else f"{host}:{port}"
        if self._signer is not None:
            if scheme == "https":
                payload = _UNSIGNED
            else:
                payload = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256
            self._signer.sign(method, path, qs, headers, payload, self._region(bucket))
        target = f"{path}?{qs}" if qs else path
        if method in ("PUT", "POST") or body:
            headers["content-length"] = str(len(body))
        check_headers(headers)
        if not (target.isascii() and target.isprintable()) or " " in target:
            raise InvalidInputError(f"not a valid request target: {target[:200]!r}")
        for observer in self.observers:
            observer(method, f"{scheme}://{headers['host']}{target}")
        return (scheme, host, port), target, headers

    def _send(
        self,
        method: str,
        bucket: str,
        key: str,
        query: Mapping[str, str] | None,
        extra: Mapping[str, str] | None,
        body: bytes,
    ) -> Reply:
        pending = self._start(method, bucket, key, query, extra, body)
        try:
            return self._receive(pending)
        finally:
            self._in_flight(-1)

    def _in_flight(self, change: int) -> None:
        """Count a request sent (+1) or answered (-1), and the most ever in flight."""
        with self._lock:
            self._busy += change
            self._peak = max(self._peak, self._busy)

    # -- requests in flight together -------------------------------------------------------
    def start(
        self,
        method: str,
        bucket: str,
        key: str = "",
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Pending:
        """Send a request (without a body) and return at once; :meth:`finish` reads
        its reply. Requests started one after another travel together, each on a
        connection of its own, with no thread: a caller may work on the first reply
        while the server is still answering the next.

        Raises:
            OSError: the request could not be sent (nothing is left open).
        """
        return self._start(method, bucket, key, query, headers, b"")

    def _start(
        self,
        method: str,
        bucket: str,
        key: str,
        query: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        body: bytes,
    ) -> Pending:
        """Send a request on a pooled connection (an idle kept-alive one the server had
        closed is replaced, and the request sent again); counted in flight until its
        reply is read or it is abandoned."""
        where, target, signed = self._prepare(method, bucket, key, query, headers, body)
        self._in_flight(1)
        try:
            conn, reused = self._take(where)
        except BaseException:
            self._in_flight(-1)
            raise
        try:
            try:
                conn.send(method, target, signed, body)
            except ConnectionError:
                if not reused:
                    raise
                conn.close()
                conn, reused = self._connection(*where), False
                conn.send(method, target, signed, body)
        except BaseException:
            conn.close()
            self._in_flight(-1)
            raise
        return Pending(
            method, bucket, key, query, headers, where, target, signed, conn, reused, body
        )

    def finish(self, pending: Pending, ok: Iterable[int] = (200,)) -> Reply:
        """The reply to a request :meth:`start` sent (read once; the connection goes
        back to the pool). A reused connection the server had closed is replaced and
        the request sent again, as :meth:`request` does.

        Raises:
            S3Error: the reply's status is not in ``ok``.
            OSError: the connection failed.
        """
        try:
            reply = self._receive(pending)
        finally:
            self._in_flight(-1)
        p = pending
        return self._settle(
            reply,
            p.bucket,
            ok,
            lambda: self._send(p.method, p.bucket, p.key, p.query, p.headers, p.body),
        )

    def _receive(self, pending: Pending) -> Reply:
        conn, where = pending.conn, pending.where
        method, target, signed = pending.method, pending.target, pending.signed
        limit = _limit(method, pending.key)
        try:
            reply, keep = conn.receive(method, limit)
        except ConnectionError:
            conn.close()
            if not pending.reused:
                raise
            conn = self._connection(*where)
            try:
                reply = self._exchange(conn, where, method, target, signed, pending.body, limit)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        else:
            if keep:
                self._give_back(where, conn)
            else:
                conn.close()
        return reply

    def abandon(self, pending: Pending) -> None:
        """Drop a started request whose reply will not be read (its connection is
        closed, never reused)."""
        pending.conn.close()
        self._in_flight(-1)

    def _exchange(
        self,
        conn: _Connection,
        where: tuple[str, str, int],
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        limit: int,
    ) -> Reply:
        try:
            reply, keep = conn.exchange(method, target, headers, body, limit)
        except BaseException:
            conn.close()
            raise
        if keep:
            self._give_back(where, conn)
        else:
            conn.close()
        return reply

    # -- batches -------------------------------------------------------------------------
    def map(self, func: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``[func(item) ...]`` run concurrently (up to :data:`MAX_CONNECTIONS` at once);
        the first exception is raised after all have finished."""
        if len(items) <= 1:
            return [func(item) for item in items]
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(MAX_CONNECTIONS, thread_name_prefix="fsm-s3")
            pool = self._pool
        futures = [pool.submit(func, item) for item in items]
        errors = [f.exception() for f in futures]
        for error in errors:
            if error is not None:
                raise error
        return [f.result() for f in futures]

    # -- S3 operations -------------------------------------------------------------------
    def get_object(self, bucket: str, key: str, byte_range: str | None = None) -> Reply:
        """``GetObject`` (``byte_range`` like ``bytes=0-9``); 200 or 206."""
        headers = {"range": byte_range} if byte_range else None
        return self.request("GET", bucket, key, headers=headers, ok=(200, 206))

    def head_object(self, bucket: str, key: str) -> dict[str, Any]:
        """``HeadObject``: ``{"ETag", "ContentLength", "LastModified", "Metadata"}``."""
        reply = self.request("HEAD", bucket, key)
        h = reply.headers
        prefix = "x-amz-meta-"
        return {
            "ETag": h.get("etag", ""),
            "ContentLength": _size(h.get("content-length") or "0", 10, "Content-Length"),
            "LastModified": _http_mtime(h.get("last-modified")),
            "Metadata": {k[len(prefix) :]: v for k, v in h.items() if k.startswith(prefix)},
        }

    def put_object(
        self,
        bucket: str,
        key: str,
        body: bytes,
        *,
        metadata: Mapping[str, str] | None = None,
        if_match: str | None = None,
        if_none_match: str | None = None,
    ) -> str:
        """``PutObject``, conditional when asked; returns the new ETag (quoted)."""
        headers = {f"x-amz-meta-{k}": v for k, v in (metadata or {}).items()}
        if if_match is not None:
            headers["if-match"] = if_match
        if if_none_match is not None:
            headers["if-none-match"] = if_none_match
        reply = self.request("PUT", bucket, key, headers=headers, body=body)
        return reply.headers.get("etag", "")

    @staticmethod
    def list_query(prefix: str, delimiter: bool, token: str | None) -> dict[str, str]:
        """The query of one ``ListObjectsV2`` page (keys URL-encoded in the reply)."""
        query = {"list-type": "2", "prefix": prefix, "encoding-type": "url"}
        if delimiter:
            query["delimiter"] = "/"
        if token:
            query["continuation-token"] = token
        return query

    def list_objects(
        self, bucket: str, prefix: str, delimiter: bool, token: str | None
    ) -> tuple[list[dict[str, Any]], list[str], str | None]:
        """One ``ListObjectsV2`` page: ``(objects, common prefixes, next token)``; each
        object is ``{"Key", "Size", "ETag", "LastModified"}`` (keys URL-decoded)."""
        query = self.list_query(prefix, delimiter, token)
        return list_page(self.request("GET", bucket, query=query).body)

    def delete_object(self, bucket: str, key: str) -> None:
        """``DeleteObject`` (S3 answers 204 whether or not the key existed)."""
        self.request("DELETE", bucket, key, ok=(200, 204))

    def delete_objects(self, bucket: str, keys: Sequence[str]) -> list[dict[str, str]]:
        """One quiet ``DeleteObjects`` (at most 1000 keys); returns the per-key errors."""
        items = "".join(f"<Object><Key>{_escape(k)}</Key></Object>" for k in keys)
        body = f'<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet>{items}</Delete>'
        data = body.encode()
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        headers = {"content-md5": md5, "content-type": "application/xml"}
        reply = self.request("POST", bucket, query={"delete": ""}, headers=headers, body=data)
        xml = reply.body.decode("utf-8", "replace")
        return [
            {name: _field(item, name) for name in ("Key", "Code", "Message")}
            for item in _elements(xml, "Error")
        ]

    def head_bucket(self, bucket: str) -> bool:
        """Whether the bucket exists (``HeadBucket``; 403 means it exists, not ours)."""
        try:
            self.request("HEAD", bucket)
        except S3Error as exc:
            if exc.status == 404:
                return False
            if exc.status == 403:
                return True
            raise
        return True


def list_page(body: bytes) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """A ``ListObjectsV2`` reply: ``(objects, common prefixes, next token)`` (see
    :meth:`S3Client.list_objects`).

    With ``encoding-type=url`` S3 encodes the fields that hold key names (``Key``,
    ``Prefix``, each ``CommonPrefixes``' ``Prefix``, ``StartAfter``, ``Delimiter``)
    as a form does: a space as ``+``, a ``+`` as ``%2B``. They are decoded so
    (``unquote_plus``, as botocore does); ``NextContinuationToken`` is not encoded.
    Decoding with plain ``unquote`` would list ``a b`` as ``a+b``, another object.
    """
    xml = body.decode("utf-8")
    url_encoded = _field(xml, "EncodingType") == "url"

    def decode(text: str) -> str:
        return unquote_plus(text) if url_encoded else text

    objects = [
        {
            "Key": decode(_field(item, "Key")),
            "Size": int(_field(item, "Size", "0") or 0),
            "ETag": _field(item, "ETag"),
            "LastModified": _iso_mtime(_field(item, "LastModified")),
        }
        for item in _elements(xml, "Contents")
    ]
    prefixes = [decode(_field(item, "Prefix")) for item in _elements(xml, "CommonPrefixes")]
    truncated = _field(xml, "IsTruncated").lower() == "true"
    following = _field(xml, "NextContinuationToken") if truncated else ""
    return objects, prefixes, following or None


def _error(reply: Reply, bucket: str) -> S3Error:
    """The :class:`S3Error` of an error reply (XML body, or none for a HEAD)."""
    code, message, named = str(reply.status), "", ""
    if reply.body.lstrip().startswith(b"<"):
        xml = reply.body.decode("utf-8", "replace")
        code = _field(xml, "Code") or code
        message = _field(xml, "Message")
        named = _field(xml, "BucketName")
    if code == "NoSuchBucket" and not named:
        named = bucket
    return S3Error(reply.status, code, message, named)


_CLIENTS: dict[S3Config, S3Client] = {}
_CLIENTS_LOCK = threading.Lock()


def client_for(config: S3Config) -> S3Client:
    """The process's one client for ``config`` (roots with the same configuration share
    its kept-alive connections, as s3fs's cached filesystems do)."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(config)
        if client is None:
            if not _CLIENTS:
                import atexit

                atexit.register(_close_all)
                os.register_at_fork(after_in_child=_after_fork)
            client = _CLIENTS[config] = S3Client(config)
        return client


def _after_fork() -> None:
    """In a forked child: forget the parent's connections and threads (a socket shared
    by two processes would mix their replies); the parent keeps using them."""
    global _CLIENTS_LOCK
    _CLIENTS_LOCK = threading.Lock()
    for client in _CLIENTS.values():
        client._forget_inherited()


def _close_all() -> None:
    """Close every client's idle connections (at interpreter exit)."""
    with _CLIENTS_LOCK:
        clients = list(_CLIENTS.values())
    for client in clients:
        client.close()
