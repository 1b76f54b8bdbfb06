"""S3 storage root (``s3://``): native compare-and-swap through obstore, or through s3fs.

**Which route** (chosen once per root by :mod:`fsmemory.fs._cloud`; the backends guide
says the same for users): **obstore** (:class:`S3ObstoreRoot`) when it resolves the
configuration exactly as botocore would (:func:`obstore_config`): keys from the options
(or ``anon=True``) or the ``AWS_*_KEY*``/``AWS_SESSION_TOKEN`` variables, else web
identity or container credentials when no shared AWS file exists; the region from
``client_kwargs``, ``AWS_DEFAULT_REGION`` or the profile (else us-east-1, the bucket's
redirect followed); the endpoint from ``endpoint_url``, ``client_kwargs`` or
``AWS_ENDPOINT_URL[_S3]`` (path-style there); ``config_kwargs`` timeouts. **s3fs**
(:class:`S3fsRoot`) for the rest: richer profiles, keys only in the shared files, SSO,
``credential_process``, role chains, instance metadata, FIPS and dual-stack endpoints,
other CA bundles, proxies, other ``AWS_*`` variables or options (``requester_pays``,
``version_aware``, ``session``, ...), China and isolated partitions.
``client="s3fs"|"obstore"|"auto"`` (``"builtin"``: an older name of ``"obstore"``) or
``FSMEMORY_S3_CLIENT`` forces a route; :attr:`S3Root.client` tells which one a root
takes; ``root.fs`` is an ``s3fs.S3FileSystem`` on both (built on first use on obstore).

Both routes send the requests of :mod:`fsmemory.fs._obstore`'s table, and the version is
the ETag without quotes on both (valid as ``if_version`` across routes). Neither retries
by itself (obstore: ``max_retries=0``; botocore's retries off, but aiohttp resends a
``PUT`` once on a dropped kept-alive connection): the root's
:class:`~fsmemory.fs.retry.RetryPolicy` does, and a conditional ``PutObject`` carries a
marker (``x-amz-meta-fsmemory-write``) that one ``HEAD`` reads back after an ambiguous
failure. Timeouts are s3fs's (connect 5 s, read 15 s; ``config_kwargs`` may change
them); obstore bounds the whole request by their sum.
"""

from __future__ import annotations

import builtins
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from fsmemory._log import get_logger
from fsmemory.errors import MissingDependencyError
from fsmemory.fs._bucket import RoutedRoot, client_subclass
from fsmemory.fs._cloud import (
    Cloud,
    Route,
    client_options,
    env_value,
    foreign_environment,
    shared_store,
)
from fsmemory.fs._obstore import (
    WRITE_MARKER,
    ObstoreRoot,
    WrongRegionError,
    quote_etag,
    unquote_etag,
)
from fsmemory.fs.base import FileInfo
from fsmemory.fs.generic import _mtime
from fsmemory.fs.open import split_protocol

__all__ = [
    "CLIENT_ENV",
    "S3ObstoreRoot",
    "S3Root",
    "S3fsRoot",
    "bucket_region",
    "obstore_config",
]

logger = get_logger(__name__)

#: ``DeleteObjects`` takes at most this many keys per request.
_DELETE_BATCH = 1000

_SINGLE_TRY_NAME = "S3FileSystemSingleTry"

#: s3fs's default timeouts (seconds), kept on the obstore route
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 15.0

#: storage options the obstore route understands (the rest need s3fs)
_OPTIONS = frozenset(
    {"key", "secret", "token", "anon", "endpoint_url", "client_kwargs", "config_kwargs"}
    | {"use_listings_cache", "skip_instance_cache"}
)
_CLIENT_KWARGS = frozenset({"endpoint_url", "region_name"})
_CONFIG_KWARGS = frozenset({"connect_timeout", "read_timeout", "retries"})
#: keys of a config-file profile that change nothing obstore would do
_PROFILE_KEYS = frozenset({"region", "output"})
#: ``AWS_*`` variables whose meaning the obstore route reproduces (others: s3fs)
_ENV_KNOWN = frozenset(
    """AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION
    AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE AWS_DEFAULT_PROFILE
    AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_EXECUTION_ENV AWS_MAX_ATTEMPTS
    AWS_RETRY_MODE AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN AWS_ROLE_SESSION_NAME
    AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI
    AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
    AWS_CA_BUNDLE""".split()  # noqa: SIM905 - AWS_CA_BUNDLE: compared with the system's
)
#: prefixes of ``AWS_*`` variables that configure no client (Lambda's, X-Ray's)
_ENV_IGNORED = ("AWS_LAMBDA_", "AWS_XRAY_")


def _single_try_class() -> Any:
    """A subclass of ``s3fs.S3FileSystem`` whose requests are tried once (``retries`` is
    a class attribute in s3fs, not a constructor argument); our retry policy retries.

    Raises:
        MissingDependencyError: s3fs is not installed (``pip install 'fsmemory[s3fs]'``).
    """
    try:
        import s3fs
    except ImportError as exc:
        raise MissingDependencyError("s3fs", "s3fs") from exc
    return client_subclass(__name__, _SINGLE_TRY_NAME, s3fs.S3FileSystem, {"retries": 1})


def __getattr__(name: str) -> Any:
    """Build the single-try s3fs subclass on demand (unpickling a filesystem)."""
    if name == _SINGLE_TRY_NAME:
        return _single_try_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _config_profile(
    environ: Mapping[str, str], profile: str | None
) -> tuple[dict[str, str] | None, bool, str | None]:
    """``(active profile's settings, whether a config or credentials file exists, why
    the files cannot be used)`` as botocore would read them."""
    home = os.path.expanduser("~")
    config_file = env_value(environ, "AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config")
    cred_file = env_value(environ, "AWS_SHARED_CREDENTIALS_FILE") or os.path.join(
        home, ".aws", "credentials"
    )
    files = [f for f in (config_file, cred_file) if os.path.isfile(f) and os.path.getsize(f)]
    name = profile or env_value(environ, "AWS_DEFAULT_PROFILE") or env_value(environ, "AWS_PROFILE")
    if not os.path.isfile(config_file) or not os.path.getsize(config_file):
        return {}, bool(files), None
    import configparser  # only when a config file exists

    parser = configparser.RawConfigParser()
    try:
        parser.read(config_file, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError) as exc:
        return None, True, f"the AWS config file cannot be read ({exc})"
    wanted = name or "default"
    section = "default" if wanted == "default" else f"profile {wanted}"
    if not parser.has_section(section):
        return {}, True, None
    return dict(parser.items(section)), True, None


def _unmodelled(options: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """Why obstore cannot reproduce botocore here (an option, variable or CA bundle it
    does not model), or None."""
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        return f"storage option(s) {', '.join(unknown)}"
    client_kwargs = set(options.get("client_kwargs") or {})
    config_kwargs = set(options.get("config_kwargs") or {})
    if client_kwargs - _CLIENT_KWARGS:
        return f"client_kwargs {sorted(client_kwargs - _CLIENT_KWARGS)}"
    if config_kwargs - _CONFIG_KWARGS:
        return f"config_kwargs {sorted(config_kwargs - _CONFIG_KWARGS)}"
    return foreign_environment(
        env, "AWS_", _ENV_KNOWN, ignored=_ENV_IGNORED, ca_bundles=("AWS_CA_BUNDLE",)
    )


def _credentials(
    options: Mapping[str, Any], env: Mapping[str, str], files_exist: bool
) -> tuple[dict[str, Any] | None, str]:
    """obstore's credential settings, found where botocore would look first:
    ``(config, "")``, or ``(None, reason)`` when only botocore can find them."""
    config: dict[str, Any] = {}
    key, secret, token = options.get("key"), options.get("secret"), options.get("token")
    if options.get("anon"):
        config["skip_signature"] = True
    elif key and secret:
        config.update(access_key_id=str(key), secret_access_key=str(secret))
        if token:
            config["session_token"] = str(token)
    elif key or secret:
        return None, "only one of key and secret"
    elif env_value(env, "AWS_ACCESS_KEY_ID") and env_value(env, "AWS_SECRET_ACCESS_KEY"):
        config["access_key_id"] = env_value(env, "AWS_ACCESS_KEY_ID")
        config["secret_access_key"] = env_value(env, "AWS_SECRET_ACCESS_KEY")
        if env_value(env, "AWS_SESSION_TOKEN"):
            config["session_token"] = env_value(env, "AWS_SESSION_TOKEN")
    elif files_exist:
        return None, "credentials from the shared AWS files (profiles, SSO, processes)"
    elif not (
        (env_value(env, "AWS_WEB_IDENTITY_TOKEN_FILE") and env_value(env, "AWS_ROLE_ARN"))
        or env_value(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        or env_value(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI")
    ):
        return None, "no credentials in the options or the environment (instance metadata)"
    # else: obstore reads web identity or container credentials from the environment
    return config, ""


def obstore_config(
    options: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The obstore ``S3Store`` settings equivalent to what botocore would use for these
    storage options in this environment: ``(settings, "")``, or ``(None, reason)`` when
    obstore cannot reproduce it (the s3fs route then serves it).

    The settings are ``{"config": ..., "client_options": ..., "bucket_style": ...}``
    (``bucket_style``: ``"virtual"`` on AWS for names without dots, ``"path"``
    otherwise).
    """
    env = os.environ if environ is None else environ
    reason = _unmodelled(options, env)
    if reason is not None:
        return None, reason
    profile_settings, files_exist, problem = _config_profile(env, options.get("profile"))
    if profile_settings is None:
        return None, problem or "the AWS config file"
    extra = sorted(set(profile_settings) - _PROFILE_KEYS)
    if extra:
        return None, f"the AWS config profile sets {', '.join(extra)}"
    config, reason = _credentials(options, env, files_exist)
    if config is None:
        return None, reason

    client_kwargs = dict(options.get("client_kwargs") or {})
    endpoint = (
        options.get("endpoint_url")
        or client_kwargs.get("endpoint_url")
        or env_value(env, "AWS_ENDPOINT_URL_S3")
        or env_value(env, "AWS_ENDPOINT_URL")
    )
    region = (
        client_kwargs.get("region_name")
        or env_value(env, "AWS_DEFAULT_REGION")
        or profile_settings.get("region")
    )
    # No region: us-east-1, as botocore does; a bucket elsewhere is found by the
    # redirect S3 answers (S3ObstoreRoot follows it, as botocore does).
    region = str(region or "us-east-1")
    if region.startswith(("cn-", "us-iso", "eu-isoe")):
        return None, f"region {region} (another AWS partition)"
    config["region"] = region
    # An integrity checksum on every PUT (buckets with Object Lock refuse writes without).
    config["checksum_algorithm"] = "sha256"
    endpoint = str(endpoint).rstrip("/") if endpoint else None
    if endpoint:
        config["endpoint"] = endpoint
    style = "path" if endpoint else "virtual"
    timeouts = dict(options.get("config_kwargs") or {})
    connect = float(timeouts.get("connect_timeout", CONNECT_TIMEOUT))
    total = connect + float(timeouts.get("read_timeout", READ_TIMEOUT))
    http = client_options(connect, total, endpoint)  # the whole request: their sum
    return {"config": config, "client_options": http, "bucket_style": style}, ""


#: the region each bucket was found in, by endpoint and bucket (botocore keeps the same
#: cache): later roots of the bucket in this process sign for it from the start
_REGIONS: dict[tuple[str, str], str] = {}
#: a region name as S3 spells one
_REGION_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


def _route(url: str, options: dict[str, Any], environ: Mapping[str, str]) -> Route:
    """The route of an S3 root: obstore with :func:`obstore_config`'s settings (signing
    for the region the bucket was found in, when known), or s3fs and why."""
    settings, reason = obstore_config(options, environ)
    if settings is None:
        return Route("s3fs", reason)
    bucket = split_protocol(url)[1].strip("/").split("/", 1)[0]
    config = dict(settings["config"])
    config["virtual_hosted_style_request"] = (
        settings["bucket_style"] == "virtual" and "." not in bucket
    )
    known = _REGIONS.get((str(config.get("endpoint") or "aws"), bucket))
    if known:
        config["region"] = known
    reason = "botocore would resolve the same credentials, region and endpoint"
    return Route("obstore", reason, config, settings["client_options"])


def bucket_region(
    bucket: str, config: Mapping[str, Any], client_options: Mapping[str, Any]
) -> str | None:
    """The region S3 says ``bucket`` lives in: the ``x-amz-bucket-region`` header of an
    unsigned ``HEAD`` of the bucket (S3 sends it on a 200, a 301 and a 403 alike), at
    the configured endpoint, or at AWS's global endpoint. None when the reply has no
    such header, names no valid region, or no reply comes within the root's timeout.
    """
    import urllib.error
    import urllib.request
    from urllib.parse import quote

    endpoint = config.get("endpoint")
    if endpoint:
        url = f"{endpoint}/{quote(bucket, safe='')}"
    elif "." in bucket:
        url = f"https://s3.amazonaws.com/{quote(bucket, safe='')}"
    else:
        url = f"https://{bucket}.s3.amazonaws.com/"
    timeout = client_options["timeout"].total_seconds()
    # No proxy: this route serves no configuration that has one (obstore_config).
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, method="HEAD")
    try:
        with opener.open(request, timeout=timeout) as reply:
            found = reply.headers.get("x-amz-bucket-region")
    except urllib.error.HTTPError as exc:
        found = exc.headers.get("x-amz-bucket-region")
    except (OSError, ValueError) as exc:
        logger.info("region of bucket %r not looked up: %s", bucket, exc)
        return None
    region = str(found or "").strip()
    return region if _REGION_NAME.fullmatch(region) else None


class S3Root(RoutedRoot):
    """A prefix in an S3 bucket (``s3://bucket/prefix``) with native compare-and-swap.

    :meth:`from_url` returns one of the two routes (see the module docs):
    :class:`S3ObstoreRoot` or :class:`S3fsRoot`.
    """

    service = "S3"


class S3ObstoreRoot(ObstoreRoot, S3Root):
    """The obstore route of :class:`S3Root` (see :mod:`fsmemory.fs._obstore`).

    Region redirects are followed as botocore follows them: when S3 answers that the
    bucket lives in another region (a 301, or a 400 naming the region), the root asks
    S3 for the bucket's region (:func:`bucket_region`), moves to a store signing for
    it, remembers it for later roots of the bucket in this process, and sends the
    request once more. Without an answer, the error says to set the region.
    """

    route: Route
    store_class: ClassVar[str] = "S3Store"

    def __init__(self, store: Any, root: str, **kwargs: Any) -> None:
        self._region_lock = threading.Lock()
        super().__init__(store, root, **kwargs)

    @property
    def region(self) -> str:
        """The region this root's requests are signed for."""
        return str(self.route.config["region"])

    def _move_region(self, error: WrongRegionError, tried: Any) -> bool:
        with self._region_lock:
            if self.store is not tried:  # another request of this root moved it
                return True
            config = self.route.config
            key = (str(config.get("endpoint") or "aws"), self.bucket)
            region = error.region or _REGIONS.get(key)
            if not region or region == self.region:
                region = bucket_region(self.bucket, config, self.route.client_options)
            if not region or region == self.region:
                return False
            logger.info(
                "S3 bucket %r is in %s, not %s: following the redirect",
                self.bucket,
                region,
                self.region,
            )
            _REGIONS[key] = region
            self.route = replace(self.route, config={**config, "region": region})
            self.store = shared_store(self.store_class, self.bucket, self.route)[0]
            return True


class S3fsRoot(S3Root):
    """The s3fs route of :class:`S3Root`: ``fs`` is an ``s3fs.S3FileSystem``."""

    client: ClassVar[str] = "s3fs"
    # aiohttp resends a PUT once on a dropped kept-alive connection (module docs).
    _hidden_retries: ClassVar[bool] = True
    _marks_writes = True
    _fs_class = staticmethod(_single_try_class)

    @staticmethod
    def _configure(opts: dict[str, Any]) -> None:
        # One retry layer (ours): the client's would resend conditional writes blindly.
        config = dict(opts.get("config_kwargs") or {})
        config.setdefault("retries", {"total_max_attempts": 1, "mode": "standard"})
        opts["config_kwargs"] = config

    def _split(self, full: str) -> tuple[str, str]:
        bucket, key, _ = self.fs.split_path(full)
        return bucket, key

    async def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """One s3fs request on this root's bucket."""
        result: dict[str, Any] = await self.fs._call_s3(operation, Bucket=self.bucket, **kwargs)
        return result

    async def _get(self, key: str, byte_range: str | None) -> tuple[bytes, str, bool]:
        """``(data, etag, whole)`` of one ``GetObject``; ``whole``: no range was served."""
        resp = await self._call(
            "get_object", Key=key, **({"Range": byte_range} if byte_range else {})
        )
        body = resp["Body"]
        try:
            data: bytes = await body.read()
        finally:
            body.close()
        return data, unquote_etag(resp.get("ETag", "")), "ContentRange" not in resp

    async def _get_versioned(self, key: str) -> tuple[bytes, str]:
        """One ``GetObject``: content and ETag from the same response."""
        data, etag, _ = await self._get(key, None)
        return data, etag

    # -- FsspecRoot hooks --------------------------------------------------------------

    def _upload(
        self, full: str, data: bytes, if_version: str | None, create: bool, marker: str | None
    ) -> str:
        """One ``PutObject``, conditional on ``If-Match``/``If-None-Match`` when asked,
        tagged with ``marker`` in its user metadata when given."""
        kwargs: dict[str, Any] = {} if marker is None else {"Metadata": {WRITE_MARKER: marker}}
        if create:
            kwargs["IfNoneMatch"] = "*"
        if if_version is not None:
            kwargs["IfMatch"] = quote_etag(if_version)
        key = self._split(full)[1]
        resp = self.fs.call_s3("put_object", Bucket=self.bucket, Key=key, Body=data, **kwargs)
        return unquote_etag(resp["ETag"])

    def _read_marker(self, full: str, path: str) -> tuple[str | None, str]:
        """The marker and ETag of the object (one ``HeadObject``)."""
        with self._translated(path):
            head = self._run(self._head, self._split(full)[1])
        return (head.get("Metadata") or {}).get(WRITE_MARKER), unquote_etag(head.get("ETag"))

    # -- BucketRoot hooks --------------------------------------------------------------
    async def _list_page(
        self, key_prefix: str, delimiter: bool, token: str | None
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[str], str | None]:
        kwargs: dict[str, Any] = {"Prefix": key_prefix}
        if delimiter:
            kwargs["Delimiter"] = "/"
        if token:
            kwargs["ContinuationToken"] = token
        page = await self._call("list_objects_v2", **kwargs)
        prefixes = [p["Prefix"] for p in page.get("CommonPrefixes", [])]
        following = page.get("NextContinuationToken") if page.get("IsTruncated") else None
        return page.get("Contents", []), prefixes, following

    def _key_of(self, obj: dict[str, Any]) -> str:
        return str(obj["Key"])

    def _info_of(self, rel: str, obj: dict[str, Any]) -> FileInfo:
        size = obj.get("Size", obj.get("ContentLength"))
        return FileInfo(rel, int(size or 0), _mtime(obj), unquote_etag(obj.get("ETag")))

    async def _head(self, key: str) -> dict[str, Any]:
        return await self._call("head_object", Key=key)

    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        byte_range = f"bytes={start}-" if end is None else f"bytes={start}-{end - 1}"
        data, _, whole = await self._get(key, byte_range)
        # A server that ignores Range sends the whole object (200, no Content-Range).
        return data[start:end] if whole else data

    async def _head_bucket(self) -> None:
        await self._call("head_bucket")

    async def _delete_object(self, key: str) -> None:
        """``HeadObject`` (S3 deletes missing keys silently) then ``DeleteObject``."""
        await self._head(key)
        await self._call("delete_object", Key=key)

    async def _delete_keys(self, keys: builtins.list[str]) -> int:
        """``DeleteObjects`` batches of 1000 keys, sent concurrently."""
        import asyncio

        batches = [keys[i : i + _DELETE_BATCH] for i in range(0, len(keys), _DELETE_BATCH)]
        replies = await asyncio.gather(
            *(
                self._call(
                    "delete_objects", Delete={"Objects": [{"Key": k} for k in b], "Quiet": True}
                )
                for b in batches
            )
        )
        errors = [e for r in replies for e in r.get("Errors", [])]
        if errors:
            raise OSError(f"DeleteObjects failed for {len(errors)} keys: {errors[:3]}")
        return len(keys)


S3Root.cloud = Cloud(
    extra="s3",
    route=_route,
    obstore_root=S3ObstoreRoot,
    fallback_root=S3fsRoot,
    aliases=("builtin",),
)
#: the environment variable giving the default of the ``client`` storage option
CLIENT_ENV = S3Root.cloud.env
