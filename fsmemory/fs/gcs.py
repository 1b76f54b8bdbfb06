"""Google Cloud Storage root (``gs://``, ``gcs://``): native compare-and-swap through
obstore, gcsfs where obstore cannot serve the configuration.

**Which route** (chosen once per root, see :mod:`fsmemory.fs._cloud` and
:func:`resolve_route`), resolving credentials exactly as gcsfs and google-auth would:
**obstore** (:class:`GCSObstoreRoot`, GCS's XML API) when gcsfs would use a
service-account key (``token`` naming a key file or holding one as a dict, or no
``token`` and ``GOOGLE_APPLICATION_CREDENTIALS`` naming one whose ``project_id`` is the
``project`` option's, if given) or ``token="anon"``, at ``endpoint_url``, else
``STORAGE_EMULATOR_HOST``, else Google's endpoint; options that change nothing obstore
sends (``project``, ``access="full_control"``, gcsfs's caches) are fine. **gcsfs**
(:class:`GcsfsRoot`, GCS's JSON API) for everything else (other credential files and
tokens, the metadata server, ``requester_pays``, a narrower ``access``, unmodelled
options, proxies, other CA bundles, mutual TLS, other universes, ``GOOGLE_*`` variables
obstore would read itself, a configuration obstore refuses). ``client="gcsfs"|"obstore"|
"auto"`` or ``FSMEMORY_GCS_CLIENT`` forces a route; an emulator that answers only the
JSON API (fake-gcs-server) needs ``client="gcsfs"``.

The version token is the object's **generation** on both routes (GCS's ETag is the
content's MD5), compared natively (``x-goog-if-generation-match`` on obstore,
``ifGenerationMatch`` on gcsfs, ``0`` to create); the change token of listings and
``stat`` is the MD5 in hex on both. Requests are those of :mod:`fsmemory.fs._obstore`,
except that ``stat`` is one metadata ``GET`` on gcsfs and a delete one ``DELETE`` (GCS
answers 404 for a missing object), several at a time for ``delete_many``. Neither route
retries by itself (gcsfs's retry decorator is undone in a subclass). Timeouts: 10 s to
connect and 60 s per read (gcsfs), 70 s per request (obstore), unless
``requests_timeout`` is given. The gcsfs route uses the plain ``gcsfs.core.GCSFileSystem``
unless ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT`` is true (the experimental zonal-bucket class
waits on a gRPC probe per operation); fsmemory never sets that variable itself.
"""

from __future__ import annotations

import builtins
import json
import os
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from fsmemory._log import get_logger
from fsmemory.errors import BackendError, ConflictError, MissingDependencyError
from fsmemory.fs._bucket import RoutedRoot, client_subclass
from fsmemory.fs._cloud import Cloud, Route, client_options, env_value, foreign_environment
from fsmemory.fs._obstore import ObstoreRoot, unquote_etag

__all__ = ["CLIENT_ENV", "GCSObstoreRoot", "GCSRoot", "GcsfsRoot", "resolve_route"]

logger = get_logger(__name__)

#: gcsfs's switch for its experimental zonal-bucket support (we default it to "false")
ZB_HNS_ENV = "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"

#: concurrent requests used by ``delete_many`` / ``delete_tree``
_DELETE_CONCURRENCY = 16

_LIST_FIELDS = "items(name,size,generation,updated,md5Hash),prefixes,nextPageToken"

#: seconds to wait for a connection / for each read of a response (gcsfs), unless the
#: caller passes ``requests_timeout``; obstore bounds the whole request by their sum
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0

#: GCS's endpoint (both APIs)
DEFAULT_ENDPOINT = "https://storage.googleapis.com"

# Names of the subclasses built by _single_try_class, so pickle can find them again.
_SINGLE_TRY_NAME = {False: "GCSFileSystemSingleTry", True: "ExtendedGCSFileSystemSingleTry"}

#: storage options the obstore route understands (any other one takes gcsfs); those
#: besides ``token``/``endpoint_url``/``requests_timeout`` change no request obstore
#: sends (bucket creation, gcsfs's own caches: they reach ``root.fs``)
_OBSTORE_OPTIONS = frozenset(
    """token endpoint_url requests_timeout project access use_listings_cache
    skip_instance_cache listings_expiry_time cache_timeout default_location
    block_size""".split()  # noqa: SIM905 - a list of words
)
#: ``GOOGLE_*`` variables whose meaning the obstore route reproduces or that change
#: nothing it sends; any other one (obstore reads ``GOOGLE_SERVICE_ACCOUNT``,
#: ``GOOGLE_BEARER_TOKEN``, ``GOOGLE_BASE_URL``, ... by itself) takes gcsfs
_GOOGLE_ENV_KNOWN = frozenset(
    """GOOGLE_APPLICATION_CREDENTIALS GOOGLE_CLOUD_PROJECT GOOGLE_CLOUD_UNIVERSE_DOMAIN
    GOOGLE_API_USE_CLIENT_CERTIFICATE GOOGLE_API_USE_MTLS_ENDPOINT""".split()  # noqa: SIM905
)
#: CA bundles of google-auth's requests (fine when they are the system's SSL_CERT_FILE,
#: which aiohttp and obstore trust)
_ENV_CA = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
#: where google-auth may find a client-certificate configuration (mutual TLS)
_CERT_CONFIG_ENV = (
    "GOOGLE_API_CERTIFICATE_CONFIG",
    "CLOUDSDK_CONTEXT_AWARE_CERTIFICATE_CONFIG_FILE_PATH",
)
#: token endpoints of Google's default universe (a key naming another one: gcsfs)
_TOKEN_URIS = frozenset(
    {"https://oauth2.googleapis.com/token", "https://accounts.google.com/o/oauth2/token"}
)
#: the fields obstore needs in a service-account key
_KEY_FIELDS = ("client_email", "private_key", "private_key_id")
#: fields only obstore reads in a key file (they would change what it does)
_OBSTORE_ONLY_FIELDS = ("disable_oauth", "gcs_base_url")
#: obstore's anonymous credential: a key with OAuth switched off (``skip_signature``
#: alone still fetches a token for writes, from the metadata server)
_ANONYMOUS_KEY = json.dumps(
    {"disable_oauth": True, "client_email": "", "private_key": "", "private_key_id": ""}
)


def _key_problem(info: object) -> str | None:
    """Why ``info`` (a parsed key file or dict) is not a service-account key obstore
    uses as google-auth would, or None when it is."""
    if not isinstance(info, dict):
        return "not a JSON object"
    kind = info.get("type")
    if kind != "service_account":
        return f"credentials of type {kind!r}"
    missing = [f for f in _KEY_FIELDS if not isinstance(info.get(f), str) or not info.get(f)]
    if missing:
        return f"a service-account key without {', '.join(missing)}"
    if info.get("universe_domain", "googleapis.com") != "googleapis.com":
        return f"a service-account key of universe {info.get('universe_domain')!r}"
    if info.get("token_uri", next(iter(_TOKEN_URIS))) not in _TOKEN_URIS:
        return f"a service-account key with token_uri {info.get('token_uri')!r}"
    odd = [f for f in _OBSTORE_ONLY_FIELDS if f in info]
    if odd:
        return f"a key file with {', '.join(odd)} (read by obstore only)"
    return None


def _key_file(path: str) -> tuple[dict[str, Any] | None, str]:
    """``(key, "")`` for a service-account key file, or ``(None, why not)``."""
    try:
        with open(path, encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError) as exc:
        return None, f"a credentials file that cannot be read as JSON ({exc})"
    problem = _key_problem(info)
    return (None, problem) if problem else (info, "")


def _home(environ: Mapping[str, str]) -> str:
    return env_value(environ, "HOME") or os.path.expanduser("~")


def _gcloud_adc_path(environ: Mapping[str, str]) -> str:
    """gcloud's application-default credentials file, as google-auth finds it."""
    config = env_value(environ, "CLOUDSDK_CONFIG") or os.path.join(
        _home(environ), ".config", "gcloud"
    )
    return os.path.join(config, "application_default_credentials.json")


def _uses_client_cert(environ: Mapping[str, str]) -> bool:
    """Whether google-auth may present a client certificate (mutual TLS)."""
    flag = (env_value(environ, "GOOGLE_API_USE_CLIENT_CERTIFICATE") or "").lower()
    if flag:
        return flag == "true"
    if any(env_value(environ, name) for name in _CERT_CONFIG_ENV):
        return True
    default = os.path.join(_home(environ), ".config", "gcloud", "certificate_config.json")
    return os.path.exists(default)


def _timeouts(value: object) -> tuple[float, float] | None:
    """obstore's connect and whole-request timeouts for gcsfs's ``requests_timeout``
    (seconds), or None when it is not a number."""
    if value is None:
        return CONNECT_TIMEOUT, CONNECT_TIMEOUT + READ_TIMEOUT
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return min(CONNECT_TIMEOUT, float(value)), float(value)
    return None


def _credentials(
    options: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[dict[str, Any] | None, str]:
    """obstore's credential settings for the credential gcsfs would use: ``(config,
    what)``, or ``(None, why not)``."""
    token = options.get("token")
    if token == "anon":
        return {"service_account_key": _ANONYMOUS_KEY, "skip_signature": True}, "token='anon'"
    if isinstance(token, dict):
        problem = _key_problem(token)
        if problem:
            return None, f"token is {problem}"
        return {"service_account_key": json.dumps(token)}, "a service-account key (token dict)"
    if isinstance(token, str) and token in ("google_default", "cloud", "cache", "browser"):
        return None, f"token={token!r} (google-auth's chain, the metadata server or a cache)"
    if isinstance(token, str | os.PathLike):
        path = os.fspath(token)
        if not os.path.exists(path):
            return None, "token is not a file: a raw access token (checked by gcsfs)"
        key, problem = _key_file(path)
        if key is None:
            return None, f"token file holds {problem}"
        return {"service_account": path}, "a service-account key file (token)"
    if token is not None:
        return None, f"token of type {type(token).__name__} (a Credentials object)"
    explicit = env_value(environ, "GOOGLE_APPLICATION_CREDENTIALS")
    if explicit is None:
        return None, (
            "no token and no GOOGLE_APPLICATION_CREDENTIALS: google-auth's default chain "
            "(gcloud credentials, the metadata server, else anonymous)"
        )
    if os.path.abspath(explicit) == os.path.abspath(_gcloud_adc_path(environ)):
        return None, "GOOGLE_APPLICATION_CREDENTIALS is gcloud's own credentials file"
    key, problem = _key_file(explicit)
    if key is None:
        return None, f"GOOGLE_APPLICATION_CREDENTIALS holds {problem}"
    project = options.get("project") or env_value(environ, "GCSFS_DEFAULT_PROJECT")
    if project and project != key.get("project_id"):
        return None, (
            f"project {project!r} differs from the key's project: gcsfs then does not use "
            "GOOGLE_APPLICATION_CREDENTIALS"
        )
    return {
        "service_account": explicit
    }, "a service-account key file (GOOGLE_APPLICATION_CREDENTIALS)"


def _route(url: str, options: Mapping[str, Any], environ: Mapping[str, str]) -> Route:
    """The route of a GCS root (see the module docs)."""
    unknown = sorted(set(options) - _OBSTORE_OPTIONS)
    if unknown:
        return Route("gcsfs", f"storage option(s) obstore does not model: {', '.join(unknown)}")
    if options.get("access", "full_control") != "full_control":
        return Route("gcsfs", f"access={options.get('access')!r} (a narrower OAuth scope)")
    timeouts = _timeouts(options.get("requests_timeout"))
    if timeouts is None:
        return Route("gcsfs", "requests_timeout is not a number of seconds")
    universe = env_value(environ, "GOOGLE_CLOUD_UNIVERSE_DOMAIN") or "googleapis.com"
    if universe != "googleapis.com":
        return Route("gcsfs", f"universe domain {universe}")
    if _uses_client_cert(environ):
        return Route("gcsfs", "a client certificate (mutual TLS)")
    foreign = foreign_environment(environ, "GOOGLE_", _GOOGLE_ENV_KNOWN, ca_bundles=_ENV_CA)
    if foreign:
        return Route("gcsfs", foreign)
    config, what = _credentials(options, environ)
    if config is None:
        return Route("gcsfs", what)
    emulator = env_value(environ, "STORAGE_EMULATOR_HOST")
    if emulator in ("default",):
        emulator = None
    if emulator and not emulator.startswith(("http://", "https://")):
        emulator = f"http://{emulator}"
    endpoint = str(options.get("endpoint_url") or emulator or DEFAULT_ENDPOINT).rstrip("/")
    config["base_url"] = endpoint
    http = client_options(*timeouts, endpoint)
    return Route("obstore", f"{what}, endpoint {endpoint}", config, http)


def _gcsfs_class(*, experimental: bool | None = None) -> Any:
    """The gcsfs filesystem class: the plain one unless the environment asks for the
    experimental zonal-bucket class (``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=true``).

    Raises:
        MissingDependencyError: gcsfs is not installed (``fsmemory[gcsfs]``).
    """
    try:
        import gcsfs
        import gcsfs.core
    except ImportError as exc:
        raise MissingDependencyError("gcsfs", "gcsfs") from exc
    if experimental is None:
        experimental = os.environ.get(ZB_HNS_ENV, "").strip().lower() in ("true", "1")
    if experimental:
        return gcsfs.GCSFileSystem
    # gcsfs may have been imported earlier with the experimental class as its default.
    return gcsfs.core.GCSFileSystem


def _single_try_class(experimental: bool | None = None) -> Any:
    """A subclass of the gcsfs class whose HTTP requests are tried once (our retry policy
    retries them); the gcsfs class itself when its retry wrapper cannot be undone.

    Raises:
        MissingDependencyError: gcsfs is not installed (``pip install 'fsmemory[gcsfs]'``).
    """
    base = _gcsfs_class(experimental=experimental)
    inner = getattr(base._request, "__wrapped__", None)
    if inner is None:  # pragma: no cover - a gcsfs without the retry decorator
        return base
    name = _SINGLE_TRY_NAME[base is not _gcsfs_class(experimental=False)]
    return client_subclass(__name__, name, base, {"_request": inner})


def __getattr__(name: str) -> Any:
    """Build the single-try gcsfs subclasses on demand (unpickling a filesystem)."""
    for experimental, cls_name in _SINGLE_TRY_NAME.items():
        if name == cls_name:
            return _single_try_class(experimental)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _quote(part: str) -> str:
    from urllib.parse import quote

    return quote(part, safe="")


def _md5_hex(value: object) -> str | None:
    """The hex digest of a JSON-API ``md5Hash`` (base64), or None when there is none."""
    if not value:
        return None
    import base64  # the gcsfs route's listings only: a cold obstore open never loads it
    import binascii

    try:
        return base64.b64decode(str(value), validate=True).hex()
    except (binascii.Error, ValueError):
        return None


def _check_generation(path: str, if_version: str | None) -> None:
    """Generations are integers: any other version token can never match.

    Raises:
        ConflictError: such a token.
    """
    if if_version is not None and not (if_version.isascii() and if_version.isdigit()):
        raise ConflictError(f"{path!r} has no version {if_version!r}")


def _multipart_body(name: str, data: bytes) -> tuple[bytes, str]:
    """A ``multipart/related`` upload body and its boundary (never found in ``data``)."""
    while True:
        boundary = f"fsmemory-{uuid.uuid4().hex}"
        if boundary.encode() not in data:
            break
    b = boundary.encode()
    meta = orjson.dumps({"name": name})
    body = b"".join(
        [
            b"--" + b + b"\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n",
            meta,
            b"\r\n--" + b + b"\r\nContent-Type: application/octet-stream\r\n\r\n",
            data,
            b"\r\n--" + b + b"--\r\n",
        ]
    )
    return body, boundary


class GCSRoot(RoutedRoot):
    """A prefix in a GCS bucket (``gs://bucket/prefix``) with native compare-and-swap.

    :meth:`from_url` returns one of the two routes (see the module docs):
    :class:`GCSObstoreRoot` or :class:`GcsfsRoot`.
    """

    service = "GCS"

    def _check_version(self, path: str, version: str) -> None:
        """Generations are integers (:func:`_check_generation`)."""
        _check_generation(path, version)


class GcsfsRoot(GCSRoot):
    """The gcsfs route of :class:`GCSRoot` (GCS's JSON API): ``fs`` is a
    ``gcsfs.GCSFileSystem`` whose requests are tried once; every primitive is one
    request issued through gcsfs's ``_call`` (so credentials and the endpoint work
    exactly as in gcsfs). The constructor arguments are :class:`BucketRoot`'s."""

    client: ClassVar[str] = "gcsfs"
    _fs_class = staticmethod(_single_try_class)

    @staticmethod
    def _configure(opts: dict[str, Any]) -> None:
        if opts.get("requests_timeout") is None:
            import aiohttp

            opts["requests_timeout"] = aiohttp.ClientTimeout(
                total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT
            )

    def _media_url(self, key: str, generation: str | None = None) -> str:
        pin = f"&generation={generation}" if generation else ""
        where = f"{_quote(self.bucket)}/o/{_quote(key)}"
        return f"{self.fs._location}/download/storage/v1/b/{where}?alt=media{pin}"

    async def _download(
        self, key: str, byte_range: str | None, generation: str | None = None
    ) -> tuple[bytes, str | None, bool]:
        """``(data, generation, whole)``; ``whole`` is False when a range was served."""
        headers = {"Range": byte_range} if byte_range else None
        got, data = await self.fs._call("GET", self._media_url(key, generation), headers=headers)
        return bytes(data), got.get("X-Goog-Generation"), "Content-Range" not in got

    async def _head(self, key: str) -> dict[str, Any]:
        meta: dict[str, Any] = await self.fs._call(
            "GET", "b/{}/o/{}", self.bucket, key, json_out=True
        )
        return meta

    async def _get_versioned(self, key: str) -> tuple[bytes, str]:
        """One media ``GET``: content and generation from the same response."""
        data, gen, _ = await self._download(key, None)
        if gen is not None:
            return data, gen
        # No x-goog-generation header (a proxy dropped it): pin the generation first,
        # then download exactly that generation, so content and version still match.
        gen = str((await self._head(key))["generation"])
        return (await self._download(key, None, gen))[0], gen

    # -- FsspecRoot hooks --------------------------------------------------------------
    def _upload(
        self, full: str, data: bytes, if_version: str | None, create: bool, marker: str | None
    ) -> str:
        """One multipart upload, with ``ifGenerationMatch`` when conditional (gcsfs
        resends nothing: no marker)."""
        body, boundary = _multipart_body(self._split(full)[1], data)

        async def upload() -> dict[str, Any]:
            result: dict[str, Any] = await self.fs._call(
                "POST",
                f"{self.fs._location}/upload/storage/v1/b/{_quote(self.bucket)}/o",
                uploadType="multipart",
                ifGenerationMatch="0" if create else if_version,
                headers={"Content-Type": f'multipart/related; boundary="{boundary}"'},
                data=body,
                json_out=True,
            )
            return result

        generation = self._run(upload).get("generation")
        if generation is None:
            raise BackendError(f"{full}: upload response carries no generation")
        return str(generation)

    def _token(self, info: dict[str, Any]) -> str:
        """The object's MD5 in hex, as on the obstore route (its generation when GCS
        keeps no MD5: composite objects)."""
        return _md5_hex(info.get("md5Hash")) or str(info.get("generation", ""))

    # -- BucketRoot hooks --------------------------------------------------------------
    async def _list_page(
        self, key_prefix: str, delimiter: bool, token: str | None
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[str], str | None]:
        page = await self.fs._call(
            "GET",
            "b/{}/o",
            self.bucket,
            json_out=True,
            prefix=key_prefix or None,
            delimiter="/" if delimiter else None,
            pageToken=token,
            maxResults=1000,
            fields=_LIST_FIELDS,
        )
        return page.get("items", []), page.get("prefixes", []), page.get("nextPageToken")

    def _key_of(self, obj: dict[str, Any]) -> str:
        return str(obj["name"])

    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        if start == 0 and end is None:
            return (await self._download(key, None))[0]
        # Ask for one byte before ``start``: reading exactly at the end of the object (a
        # reader tailing a log) then gets that byte back instead of an HTTP 416, which
        # gcsfs logs as an error with a traceback.
        lo = start - 1 if start > 0 else 0
        byte_range = f"bytes={lo}-" if end is None else f"bytes={lo}-{end - 1}"
        data, _, whole = await self._download(key, byte_range)
        if whole:  # the server ignored Range and sent everything
            return data[start:end]
        return data[start - lo :]

    async def _head_bucket(self) -> None:
        await self.fs._call("GET", "b/{}", self.bucket, json_out=True)

    # -- StorageRoot -------------------------------------------------------------------
    async def _delete_object(self, key: str) -> None:
        """One ``DELETE`` (404 when the object does not exist)."""
        await self.fs._call("DELETE", "b/{}/o/{}", self.bucket, key)

    async def _delete_keys(self, keys: builtins.list[str]) -> int:
        """Concurrent ``DELETE`` requests; objects already gone do not count."""
        import asyncio  # not at the top: a cold open on the obstore route never needs it

        gate = asyncio.Semaphore(_DELETE_CONCURRENCY)

        async def one(key: str) -> bool:
            async with gate:
                try:
                    await self._delete_object(key)
                except FileNotFoundError:
                    return False
                return True

        return sum(await asyncio.gather(*(one(k) for k in keys)))


class GCSObstoreRoot(ObstoreRoot, GCSRoot):
    """The obstore route of :class:`GCSRoot` (GCS's XML API; see
    :mod:`fsmemory.fs._obstore`). The constructor arguments are
    :class:`~fsmemory.fs._obstore.ObstoreRoot`'s, ``store`` being an
    ``obstore.store.GCSStore`` for the bucket.

    The version token is the generation (``x-goog-generation``); compare-and-swap is
    ``x-goog-if-generation-match``; the change token of listings and ``stat`` is the
    ETag (the MD5 of the content) without quotes.
    """

    store_class: ClassVar[str] = "GCSStore"
    put_options: ClassVar[Mapping[str, Any]] = {"use_multipart": False}
    # GCS's XML API has no batch delete
    delete_threads: ClassVar[int | None] = _DELETE_CONCURRENCY

    def _version(self, meta: Mapping[str, Any]) -> str:
        """The generation of an object's metadata or of a write's result.

        Raises:
            BackendError: the reply carried none (a proxy dropped ``x-goog-generation``):
                without it no compare-and-swap can follow.
        """
        version = meta.get("version")
        if not version:
            raise BackendError(f"{self.url}: GCS's reply carries no x-goog-generation")
        return str(version)

    def _update_mode(self, version: str) -> dict[str, str]:
        """``x-goog-if-generation-match: <version>``."""
        return {"version": version}

    def _token(self, info: dict[str, Any]) -> str:
        """The ETag (GCS's XML listing gives no generation obstore reads)."""
        return unquote_etag(info.get("e_tag"))

    async def _delete_object(self, key: str) -> None:
        """One ``DELETE`` (GCS answers 404 for a missing object)."""
        import obstore

        self._call(obstore.delete, key)


GCSRoot.cloud = Cloud(
    extra="gcs",
    route=_route,
    obstore_root=GCSObstoreRoot,
    fallback_root=GcsfsRoot,
    refusal_falls_back=True,
)
#: the environment variable giving the default of the ``client`` storage option
CLIENT_ENV = GCSRoot.cloud.env
#: which client serves a URL with these options (see the module docs)
resolve_route = GCSRoot.cloud.resolve
