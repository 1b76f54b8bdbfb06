"""S3 storage root: native compare-and-swap, through fsmemory's built-in S3 client or
through s3fs.

**Which client.** :meth:`S3Root.from_url` decides once, when the root is built:

* the **built-in client** (:mod:`fsmemory.fs._s3client`: the standard library only --
  SigV4 signing, kept-alive HTTP/1.1 connections, a thread pool for batches) whenever it
  can serve the storage options itself: credentials from the options (``key``,
  ``secret``, ``token``, or ``anon=True``), from ``AWS_ACCESS_KEY_ID`` /
  ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` (what AWS Lambda sets), or static keys
  in the shared credentials/config files (``profile``, ``AWS_PROFILE``); region from
  ``client_kwargs={"region_name": ...}``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` or the
  config file (else ``us-east-1``, following S3's redirect to the bucket's region); the
  endpoint from ``endpoint_url`` / ``client_kwargs={"endpoint_url": ...}`` /
  ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` (path-style addressing there);
  ``config_kwargs`` ``connect_timeout`` / ``read_timeout``. A cold process then imports
  neither s3fs nor aiobotocore nor aiohttp, and builds no aiobotocore session.
* **s3fs** otherwise, exactly as before: credentials only botocore's providers give (SSO,
  ``role_arn``, ``credential_process``, web identity, the instance metadata service,
  container credentials), an HTTP proxy, or any storage option the built-in client does
  not understand (``requester_pays``, ``version_aware=True``, ``s3_additional_kwargs``,
  ``session``, other ``client_kwargs``/``config_kwargs`` ...).
* The storage option ``client`` forces the choice: ``"s3fs"`` (always s3fs), ``"builtin"``
  (the built-in client, or :class:`~fsmemory.errors.InvalidInputError` saying why it
  cannot), ``"auto"`` (the default). The environment variable ``FSMEMORY_S3_CLIENT`` sets
  the default for a whole process. :attr:`S3Root.client` tells which one a root uses.

``root.fs`` is an ``s3fs.S3FileSystem`` either way (for code that wants a filesystem,
such as export): with the built-in client it is built from the same storage options on
first access, so a root that never touches it never imports s3fs.

Every primitive is one S3 request:

==============================  =====================================================
operation                       requests
==============================  =====================================================
``read``                        1 ``GetObject`` (body and ETag from the same response)
``read_range``                  1 ranged ``GetObject``
``read_ranges``                 1 ``GetObject`` per range, sent concurrently
``stat``                        1 ``HeadObject``
``write``                       1 ``PutObject`` (new ETag from the response)
``write(if_version=etag)``      1 ``PutObject`` with ``If-Match: <etag>``
``write(create_only=True)``     1 ``PutObject`` with ``If-None-Match: *``
``append``                      1 ``GetObject`` + 1 conditional ``PutObject`` per attempt
``list`` / ``list_dirs``        1 ``ListObjectsV2`` per 1000 keys, never cached
``delete``                      1 ``HeadObject`` + 1 ``DeleteObject``
``delete_tree``                 listing + 1 ``DeleteObjects`` per 1000 keys
``delete_many``                 1 ``DeleteObjects`` per 1000 keys
==============================  =====================================================

The version token is the object's ETag (without quotes). S3 answers a failed
``If-Match``/``If-None-Match`` with HTTP 412, which becomes
:class:`~fsmemory.errors.ConflictError`. An ``If-Match`` on a missing key answers 404,
which is also a conflict (the version the caller saw is gone). Both clients' errors map
to the same fsmemory errors (:mod:`fsmemory.fs.errors`).

Listings are never cached: with s3fs they bypass its directory cache, which never
expires by default and would hide objects written by other processes; the filesystem is
also created with ``use_listings_cache=False`` (unless the caller sets it) so code that
uses ``root.fs`` directly does not see stale listings either.

Retries: neither client retries by itself, except that each resends a request once when a
kept-alive connection turns out to be closed (aiohttp for a ``PUT``; the built-in client
for any request on a reused connection that failed before a complete reply). s3fs's
and botocore's own retries are switched off (the filesystem is a subclass of s3fs's
that tries each request once, and botocore gets ``retries={"total_max_attempts": 1}``
unless ``config_kwargs`` says otherwise). Every request is retried by the root's
:class:`~fsmemory.fs.retry.RetryPolicy` instead (storage option ``retry``), with backoff
and a total deadline. A blind retry of a conditional ``PutObject`` whose reply was lost
would get 412 and report a conflict for a write that landed -- and so would the hidden
resends above. So every conditional ``PutObject`` carries a random marker in its user
metadata (``x-amz-meta-fsmemory-write``) and, after an ambiguous failure or a 412, one
``HeadObject`` tells exactly whether the object is this write (see
:mod:`fsmemory.fs.retry`). Each request is bounded by a connect timeout (5 s) and a read
timeout (15 s), s3fs's defaults, which ``config_kwargs`` may change for both clients.
"""

from __future__ import annotations

import builtins
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from fsmemory.errors import (
    ConflictError,
    InvalidInputError,
    InvalidPathError,
    KeyNotFoundError,
    MissingDependencyError,
)
from fsmemory.fs._bucket import BucketRoot, single_try_subclass
from fsmemory.fs._s3client import (
    Pending,
    Reply,
    S3Client,
    S3Error,
    check_headers,
    client_for,
    list_page,
    resolve_config,
)
from fsmemory.fs.base import FileInfo, Versioned
from fsmemory.fs.generic import _mtime
from fsmemory.fs.open import split_protocol
from fsmemory.fs.paths import cache_paths
from fsmemory.fs.retry import RetryPolicy, policy_from_options

__all__ = ["CLIENT_ENV", "CLIENT_OPTION", "S3Root"]

_T = TypeVar("_T")

logger = logging.getLogger(__name__)

#: the storage option that picks the client, and its values
CLIENT_OPTION = "client"
CLIENT_CHOICES = frozenset({"auto", "builtin", "s3fs"})
#: the environment variable giving the default of :data:`CLIENT_OPTION`
CLIENT_ENV = "FSMEMORY_S3_CLIENT"


#: ``DeleteObjects`` takes at most this many keys per request.
_DELETE_BATCH = 1000

#: user-metadata key of the marker a conditional PutObject carries
WRITE_MARKER = "fsmemory-write"

_SINGLE_TRY_NAME = "S3FileSystemSingleTry"


def _single_try_class() -> Any:
    """A subclass of ``s3fs.S3FileSystem`` whose requests are tried once (``retries`` is
    a class attribute in s3fs, not a constructor argument); our retry policy retries."""
    try:
        import s3fs
    except ImportError as exc:
        raise MissingDependencyError("s3fs", "s3") from exc
    return single_try_subclass(__name__, _SINGLE_TRY_NAME, s3fs.S3FileSystem, {"retries": 1})


def __getattr__(name: str) -> Any:
    """Build the single-try s3fs subclass on demand (unpickling a filesystem)."""
    if name == _SINGLE_TRY_NAME:
        return _single_try_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _strip_etag(etag: object) -> str:
    return str(etag).strip('"')


def _quote_etag(version: str) -> str:
    return version if version.startswith('"') else f'"{version}"'


class S3Root(BucketRoot):
    """A prefix in an S3 bucket (``s3://bucket/prefix``) with native compare-and-swap.

    Built by :meth:`from_url`, which picks the client once (see the module docs).

    Args:
        fs: an ``s3fs.S3FileSystem`` (the s3fs client), or None with ``client``.
        root: ``bucket`` or ``bucket/prefix`` (no protocol).
        url: the URL it was opened from.
        retry: the retry policy of this root.
        client: fsmemory's built-in client; ``root.fs`` is then built on first use by
            ``fs_factory``.
        fs_factory: builds the s3fs filesystem for ``root.fs`` (with ``client``).
    """

    service = "S3"

    # aiohttp resends a PUT once on a dropped kept-alive connection, and so does the
    # built-in client on a kept-alive connection the server had closed (module docs).
    _hidden_retries: ClassVar[bool] = True

    def __init__(
        self,
        fs: Any,
        root: str,
        *,
        url: str | None = None,
        retry: RetryPolicy | None = None,
        client: S3Client | None = None,
        fs_factory: Callable[[], Any] | None = None,
    ) -> None:
        self._client = client
        self._fs: Any = None
        self._fs_factory = fs_factory
        self._fs_lock = threading.Lock()
        super().__init__(fs, root, url=url or f"s3://{root}", retry=retry)

    @classmethod
    def from_url(cls, url: str, options: Mapping[str, Any] | None = None) -> S3Root:
        """Open ``url`` with storage options: s3fs's (``key``, ``secret``, ``token``,
        ``anon``, ``endpoint_url``, ``client_kwargs={"endpoint_url": ...,
        "region_name": ...}``, ``config_kwargs``, ``profile``, ...) plus ``retry``
        (:meth:`FsspecRoot.from_url`) and ``client``: ``"auto"`` (default: the built-in
        client when it can serve the options, else s3fs), ``"s3fs"`` or ``"builtin"``.
        The environment variable ``FSMEMORY_S3_CLIENT`` sets the default.

        Raises:
            InvalidInputError: a malformed ``retry`` or ``client`` option, or
                ``client="builtin"`` with options only s3fs can serve.
            InvalidPathError: the URL names no bucket.
            MissingDependencyError: s3fs is needed but not installed
                (``pip install 'fsmemory[s3]'``).
        """
        opts = dict(options or {})
        policy = policy_from_options(opts)
        choice = opts.pop(CLIENT_OPTION, None) or os.environ.get(CLIENT_ENV) or "auto"
        if choice not in CLIENT_CHOICES:
            raise InvalidInputError(
                f"{CLIENT_OPTION} must be one of {sorted(CLIENT_CHOICES)}, got {choice!r}"
            )
        _, rest = split_protocol(url)
        path = rest.strip("/")
        if not path.split("/", 1)[0]:
            raise InvalidPathError(f"S3 URLs need a bucket: {url!r}")
        if choice != "s3fs":
            config, reason = resolve_config(opts)
            if config is not None:

                def factory() -> Any:
                    return cls._connect(url, dict(opts))[0]

                return cls(
                    None,
                    path,
                    url=url,
                    retry=policy,
                    client=client_for(config),
                    fs_factory=factory,
                )
            if choice == "builtin":
                raise InvalidInputError(f"the built-in S3 client cannot be used: {reason}")
        fs, full = cls._connect(url, opts)
        return cls(fs, full, url=url, retry=policy)

    @property
    def fs(self) -> Any:
        """The s3fs filesystem of this root (built on first use when the built-in client
        sends the root's own requests; code such as export may use it directly).

        Raises:
            MissingDependencyError: s3fs is not installed.
        """
        if self._fs is None and self._fs_factory is not None:
            with self._fs_lock:
                if self._fs is None:
                    self._fs = self._fs_factory()
        return self._fs

    @fs.setter
    def fs(self, value: Any) -> None:
        self._fs = value

    @property
    def client(self) -> str:
        """Which client sends this root's requests: ``"builtin"`` or ``"s3fs"``."""
        return "builtin" if self._client is not None else "s3fs"

    def storage_key(self) -> tuple[str, ...]:
        """What identifies the files this root addresses (without building ``fs``)."""
        if self._client is not None:
            return (type(self).__qualname__, self.root, str(id(self._client)))
        return super().storage_key()

    @staticmethod
    def _fs_class() -> Any:
        """s3fs's filesystem, tried once per request (see the module docs).

        Raises:
            MissingDependencyError: s3fs is not installed (``pip install 'fsmemory[s3]'``).
        """
        return _single_try_class()

    @staticmethod
    def _configure(opts: dict[str, Any]) -> None:
        # One retry layer (ours): the client's would resend conditional writes blindly.
        config = dict(opts.get("config_kwargs") or {})
        config.setdefault("retries", {"total_max_attempts": 1, "mode": "standard"})
        opts["config_kwargs"] = config

    # -- plumbing ----------------------------------------------------------------------
    def _split(self, full: str) -> tuple[str, str]:
        if self._client is not None:
            return super()._split(full)
        bucket, key, _ = self.fs.split_path(full)
        return bucket, key

    def _run(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run one of the root's request coroutines: on s3fs's event loop, or -- with
        the built-in client, whose requests never wait on an event loop -- right here."""
        if self._client is None:
            return super()._run(func, *args)
        coro = func(*args)
        assert isinstance(coro, Coroutine)
        try:
            coro.send(None)
        except StopIteration as done:
            result: _T = done.value
            return result
        coro.close()
        raise RuntimeError("a built-in S3 request waited on an event loop")  # pragma: no cover

    def _forget_cached(self, path: str) -> None:
        if self._fs is not None:
            self._fs.invalidate_cache(path)

    def _cat_full(self, full: str) -> bytes:
        if self._client is None:
            return super()._cat_full(full)
        bucket, key = self._split(full)
        try:
            return self._client.get_object(bucket, key).body
        except S3Error as exc:
            if exc.status == 404:
                raise FileNotFoundError(full) from exc
            raise

    def _rm_full(self, full: str) -> None:
        if self._client is None:
            super()._rm_full(full)
            return
        self._client.delete_object(*self._split(full))

    async def _get(self, bucket: str, key: str, byte_range: str | None) -> tuple[bytes, str, bool]:
        """``(data, etag, whole)``; ``whole`` is False when a range was served."""
        if self._client is not None:
            reply = self._client.get_object(bucket, key, byte_range)
            etag = _strip_etag(reply.headers.get("etag", ""))
            return reply.body, etag, "content-range" not in reply.headers
        extra = {"Range": byte_range} if byte_range else {}

        async def once() -> tuple[bytes, str, bool]:
            resp = await self.fs._call_s3("get_object", Bucket=bucket, Key=key, **extra)
            body = resp["Body"]
            try:
                data: bytes = await body.read()
            finally:
                body.close()
            return data, _strip_etag(resp.get("ETag", "")), "ContentRange" not in resp

        try:
            from s3fs.core import _error_wrapper
        except ImportError:  # pragma: no cover - older/newer s3fs
            return await once()
        # s3fs's own wrapper also retries a body that breaks off mid-stream.
        result: tuple[bytes, str, bool] = await _error_wrapper(once, retries=self.fs.retries)
        return result

    async def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """One s3fs request (the s3fs client only)."""
        result: dict[str, Any] = await self.fs._call_s3(operation, **kwargs)
        return result

    # -- FsspecRoot hooks --------------------------------------------------------------
    def _read_versioned(self, full: str, path: str) -> Versioned:
        """One ``GetObject``: content and ETag from the same response."""
        bucket, key = self._split(full)
        with self._translated(path):
            data, etag, _ = self._run(self._get, bucket, key, None)
        return Versioned(data, etag)

    def read_ranges(
        self, requests: Sequence[tuple[str, int, int | None]]
    ) -> builtins.list[bytes | None]:
        """One GET per range, sent concurrently (s3fs: one ``cat_ranges``; the built-in
        client: its thread pool, each range retried on its own); a missing file gives
        None."""
        if self._client is None:
            return super().read_ranges(requests)
        for _, start, end in requests:
            if start < 0 or (end is not None and end < 0):
                raise ValueError("offsets must be >= 0")

        def one(request: tuple[str, int, int | None]) -> bytes | None:
            path, start, end = request
            try:
                return self.read_range(path, start, end)
            except KeyNotFoundError:
                return None

        return self._client.map(one, builtins.list(requests))

    def _put(
        self,
        full: str,
        path: str,
        data: bytes,
        if_version: str | None,
        create: bool,
        *,
        marker: str | None = None,
    ) -> str:
        """One ``PutObject``, conditional on ``If-Match``/``If-None-Match`` when asked,
        tagged with ``marker`` in its user metadata when given.

        Raises:
            InvalidInputError: ``if_version`` holds a character no header may carry
                (CR, LF, NUL, another control character, non-ASCII); nothing is sent.
        """
        bucket, key = self._split(full)
        metadata = {WRITE_MARKER: marker} if marker is not None else None
        if_none_match = "*" if create else None
        if_match = _quote_etag(if_version) if if_version is not None else None
        if if_match is not None:  # before any request, whichever client sends it
            check_headers({"if-match": if_match})
        try:
            with self._translated(path):
                if self._client is not None:
                    etag = self._client.put_object(
                        bucket,
                        key,
                        data,
                        metadata=metadata,
                        if_match=if_match,
                        if_none_match=if_none_match,
                    )
                else:
                    kwargs: dict[str, Any] = {}
                    if metadata is not None:
                        kwargs["Metadata"] = metadata
                    if if_none_match is not None:
                        kwargs["IfNoneMatch"] = if_none_match
                    if if_match is not None:
                        kwargs["IfMatch"] = if_match
                    resp = self.fs.call_s3(
                        "put_object", Bucket=bucket, Key=key, Body=data, **kwargs
                    )
                    etag = resp["ETag"]
        except KeyNotFoundError as exc:
            if if_version is not None:
                raise ConflictError(f"{path!r} no longer exists (version {if_version})") from exc
            raise
        finally:
            self._forget_cached(full)
        return _strip_etag(etag)

    def _write_once(
        self, full: str, path: str, data: bytes, if_version: str | None, create: bool
    ) -> tuple[Callable[[], str], Callable[[], tuple[bool, str]]]:
        """A conditional write is tagged with a fresh marker and probed by ``HeadObject``:
        the object holds this write exactly when it carries the marker."""
        if if_version is None and not create:
            return super()._write_once(full, path, data, if_version, create)
        marker = uuid.uuid4().hex
        bucket, key = self._split(full)

        def probe() -> tuple[bool, str]:
            with self._translated(path):
                head = self._run(self._head_in, bucket, key)
            metadata = head.get("Metadata") or {}
            return metadata.get(WRITE_MARKER) == marker, _strip_etag(head.get("ETag", ""))

        return (lambda: self._put(full, path, data, if_version, create, marker=marker)), probe

    def _token(self, info: dict[str, Any]) -> str:
        return _strip_etag(info.get("ETag") or info.get("etag") or "")

    def list_with_cache(
        self,
        name: str,
        load: Callable[[bytes], _T],
        want: Callable[[builtins.list[FileInfo]], bool] | None = None,
    ) -> tuple[builtins.list[FileInfo], _T | None]:
        """The listing and the cache file ``name`` in one round trip (the built-in
        client; s3fs: one after the other, see :meth:`StorageRoot.list_with_cache`).

        The cache's ``GetObject`` is sent first and the listing's ``ListObjectsV2``
        right behind it, each on a connection of its own; ``load`` runs on the cache
        as soon as it arrives, while the service is still answering the listing. A
        cache file that exists is loaded whatever ``want`` says (it is already here);
        a missing one costs that one ``GetObject`` (404), sent with the listing. Any
        failure of the two requests falls back to the ordinary, retried requests.
        """
        client = self._client
        if client is None:
            return super().list_with_cache(name, load, want)
        with cache_paths():
            cache_key = self._key(self._cache_path(name))
        query = client.list_query(self._dir_key(""), False, None)
        try:
            get = client.start("GET", self.bucket, cache_key)
        except OSError:
            return super().list_with_cache(name, load, want)
        try:
            listing_sent: Pending | None = client.start("GET", self.bucket, query=query)
        except OSError:
            listing_sent = None
        try:
            try:
                reply: Reply | None = client.finish(get, ok=(200, 404))
            except (OSError, S3Error) as exc:
                logger.info("cache file %r of %s not read: %s", name, self, exc)
                reply = None
            loaded = load(reply.body) if reply is not None and reply.status == 200 else None
        except BaseException:
            if listing_sent is not None:
                client.abandon(listing_sent)
            raise
        listing = None if listing_sent is None else self._first_page(listing_sent)
        if listing is None:  # not sent, failed, or more than one page: the usual way
            listing = self.list("", recursive=True)
        return listing, loaded

    def _first_page(self, sent: Pending) -> builtins.list[FileInfo] | None:
        """The listing of a root whose ``ListObjectsV2`` :meth:`list_with_cache` sent,
        or None when it failed or has more pages."""
        assert self._client is not None
        try:
            objects, _, following = list_page(self._client.finish(sent).body)
        except (OSError, S3Error, ValueError) as exc:
            logger.info("listing of %s sent with its cache failed: %s", self, exc)
            return None
        if following:
            return None
        self._bucket_seen = True
        return self._infos(objects)

    # -- BucketRoot hooks --------------------------------------------------------------
    async def _list_page(
        self, key_prefix: str, delimiter: bool, token: str | None
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[str], str | None]:
        if self._client is not None:
            return self._client.list_objects(self.bucket, key_prefix, delimiter, token)
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": key_prefix}
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
        return FileInfo(rel, int(size or 0), _mtime(obj), _strip_etag(obj.get("ETag", "")))

    async def _head_in(self, bucket: str, key: str) -> dict[str, Any]:
        if self._client is not None:
            return self._client.head_object(bucket, key)
        return await self._call("head_object", Bucket=bucket, Key=key)

    async def _head(self, key: str) -> dict[str, Any]:
        return await self._head_in(self.bucket, key)

    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        byte_range = f"bytes={start}-" if end is None else f"bytes={start}-{end - 1}"
        data, _, whole = await self._get(self.bucket, key, byte_range)
        # A server that ignores Range sends the whole object (200, no Content-Range).
        return data[start:end] if whole else data

    async def _bucket_exists(self) -> bool:
        if self._client is not None:
            return self._client.head_bucket(self.bucket)
        try:
            await self._call("head_bucket", Bucket=self.bucket)
        except FileNotFoundError:
            return False
        return True

    # -- StorageRoot -------------------------------------------------------------------
    async def _delete_object(self, key: str) -> None:
        """``HeadObject`` (S3 deletes missing keys silently) then ``DeleteObject``."""
        await self._head(key)
        if self._client is not None:
            self._client.delete_object(self.bucket, key)
            return
        await self._call("delete_object", Bucket=self.bucket, Key=key)

    async def _delete_keys(self, keys: builtins.list[str]) -> int:
        """``DeleteObjects`` batches of 1000 keys, sent concurrently."""
        batches = [keys[i : i + _DELETE_BATCH] for i in range(0, len(keys), _DELETE_BATCH)]
        if self._client is not None:
            client = self._client
            results = client.map(lambda batch: client.delete_objects(self.bucket, batch), batches)
            errors = [e for r in results for e in r]
        else:
            import asyncio

            replies = await asyncio.gather(
                *(
                    self._call(
                        "delete_objects",
                        Bucket=self.bucket,
                        Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
                    )
                    for batch in batches
                )
            )
            errors = [e for r in replies for e in r.get("Errors", [])]
        if errors:
            raise OSError(f"DeleteObjects failed for {len(errors)} keys: {errors[:3]}")
        return len(keys)
