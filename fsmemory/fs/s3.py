"""S3 storage root: native compare-and-swap through s3fs.

Every primitive is one S3 request, issued through s3fs's ``_call_s3`` (so credentials,
retries, endpoint and request options work exactly as in s3fs):

==============================  =====================================================
operation                       requests
==============================  =====================================================
``read``                        1 ``GetObject`` (body and ETag from the same response)
``read_range``                  1 ranged ``GetObject``
``stat``                        1 ``HeadObject``
``write``                       1 ``PutObject`` (new ETag from the response)
``write(if_version=etag)``      1 ``PutObject`` with ``If-Match: <etag>``
``write(create_only=True)``     1 ``PutObject`` with ``If-None-Match: *``
``append``                      1 ``GetObject`` + 1 conditional ``PutObject`` per attempt
``list`` / ``list_dirs``        1 ``ListObjectsV2`` per 1000 keys, never cached
``delete``                      1 ``HeadObject`` + 1 ``DeleteObject``
``delete_tree``                 listing + 1 ``DeleteObjects`` per 1000 keys
==============================  =====================================================

The version token is the object's ETag (without quotes). S3 answers a failed
``If-Match``/``If-None-Match`` with HTTP 412, which becomes
:class:`~fsmemory.errors.ConflictError`. An ``If-Match`` on a missing key answers 404,
which is also a conflict (the version the caller saw is gone).

Listings bypass s3fs's directory cache, which never expires by default and would hide
objects written by other processes; the filesystem is also created with
``use_listings_cache=False`` (unless the caller sets it) so code that uses ``root.fs``
directly does not see stale listings either.

Retries: s3fs's and botocore's own retries are switched off (the filesystem
:meth:`S3Root.from_url` builds is a subclass of s3fs's that tries each request once, and
botocore gets ``retries={"total_max_attempts": 1}`` unless ``config_kwargs`` says
otherwise), and every request is retried by the root's
:class:`~fsmemory.fs.retry.RetryPolicy` instead (storage option ``retry``), with backoff
and a total deadline. A blind client-side retry of a conditional ``PutObject`` whose
reply was lost would get 412 and report a conflict for a write that landed -- and aiohttp
itself resends a ``PUT`` once when a kept-alive connection drops. So every conditional
``PutObject`` carries a random marker in its user metadata (``x-amz-meta-fsmemory-write``)
and, after an ambiguous failure or a 412, one ``HeadObject`` tells exactly whether the
object is this write (see :mod:`fsmemory.fs.retry`).
Each request is bounded by botocore's ``connect_timeout`` (5 s) and ``read_timeout``
(15 s), s3fs's defaults, which ``config_kwargs`` may change.
"""

from __future__ import annotations

import asyncio
import builtins
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from fsmemory.errors import ConflictError, KeyNotFoundError, MissingDependencyError
from fsmemory.fs._bucket import BucketRoot, single_try_subclass
from fsmemory.fs.base import FileInfo, Versioned
from fsmemory.fs.generic import _mtime

__all__ = ["S3Root"]


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

    Built by :meth:`~fsmemory.fs.generic.FsspecRoot.from_url`; the constructor arguments
    are :class:`BucketRoot`'s, ``fs`` being an ``s3fs.S3FileSystem``.
    """

    service = "S3"

    # aiohttp resends a PUT once on a dropped kept-alive connection (see the module doc).
    _hidden_retries: ClassVar[bool] = True

    @staticmethod
    def _fs_class() -> Any:
        """s3fs's filesystem, tried once per request (see the module docs). Storage
        options are s3fs's (``key``, ``secret``, ``anon``,
        ``client_kwargs={"endpoint_url": ...}``, ...) plus ``retry``
        (:meth:`FsspecRoot.from_url`).

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
        bucket, key, _ = self.fs.split_path(full)
        return bucket, key

    async def _get(self, bucket: str, key: str, byte_range: str | None) -> tuple[bytes, str, bool]:
        """``(data, etag, whole)``; ``whole`` is False when a range was served."""
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

    # -- FsspecRoot hooks --------------------------------------------------------------
    def _read_versioned(self, full: str, path: str) -> Versioned:
        """One ``GetObject``: content and ETag from the same response."""
        bucket, key = self._split(full)
        with self._translated(path):
            data, etag, _ = self._run(self._get, bucket, key, None)
        return Versioned(data, etag)

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
        tagged with ``marker`` in its user metadata when given."""
        bucket, key = self._split(full)
        kwargs: dict[str, Any] = {}
        if marker is not None:
            kwargs["Metadata"] = {WRITE_MARKER: marker}
        if create:
            kwargs["IfNoneMatch"] = "*"
        if if_version is not None:
            kwargs["IfMatch"] = _quote_etag(if_version)
        try:
            with self._translated(path):
                resp = self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, **kwargs)
        except KeyNotFoundError as exc:
            if if_version is not None:
                raise ConflictError(f"{path!r} no longer exists (version {if_version})") from exc
            raise
        finally:
            self.fs.invalidate_cache(full)
        return _strip_etag(resp["ETag"])

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
                head = self.fs.call_s3("head_object", Bucket=bucket, Key=key)
            metadata = head.get("Metadata") or {}
            return metadata.get(WRITE_MARKER) == marker, _strip_etag(head.get("ETag", ""))

        return (lambda: self._put(full, path, data, if_version, create, marker=marker)), probe

    def _token(self, info: dict[str, Any]) -> str:
        return _strip_etag(info.get("ETag") or info.get("etag") or "")

    # -- BucketRoot hooks --------------------------------------------------------------
    async def _list_page(
        self, key_prefix: str, delimiter: bool, token: str | None
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[str], str | None]:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": key_prefix}
        if delimiter:
            kwargs["Delimiter"] = "/"
        if token:
            kwargs["ContinuationToken"] = token
        page = await self.fs._call_s3("list_objects_v2", **kwargs)
        prefixes = [p["Prefix"] for p in page.get("CommonPrefixes", [])]
        following = page.get("NextContinuationToken") if page.get("IsTruncated") else None
        return page.get("Contents", []), prefixes, following

    def _key_of(self, obj: dict[str, Any]) -> str:
        return str(obj["Key"])

    def _info_of(self, rel: str, obj: dict[str, Any]) -> FileInfo:
        size = obj.get("Size", obj.get("ContentLength"))
        return FileInfo(rel, int(size or 0), _mtime(obj), _strip_etag(obj.get("ETag", "")))

    async def _head(self, key: str) -> dict[str, Any]:
        head: dict[str, Any] = await self.fs._call_s3("head_object", Bucket=self.bucket, Key=key)
        return head

    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        byte_range = f"bytes={start}-" if end is None else f"bytes={start}-{end - 1}"
        data, _, whole = await self._get(self.bucket, key, byte_range)
        # A server that ignores Range sends the whole object (200, no Content-Range).
        return data[start:end] if whole else data

    async def _bucket_exists(self) -> bool:
        try:
            await self.fs._call_s3("head_bucket", Bucket=self.bucket)
        except FileNotFoundError:
            return False
        return True

    # -- StorageRoot -------------------------------------------------------------------
    async def _delete_object(self, key: str) -> None:
        """``HeadObject`` (S3 deletes missing keys silently) then ``DeleteObject``."""
        await self.fs._call_s3("head_object", Bucket=self.bucket, Key=key)
        await self.fs._call_s3("delete_object", Bucket=self.bucket, Key=key)

    async def _delete_keys(self, keys: builtins.list[str]) -> int:
        """``DeleteObjects`` batches of 1000 keys, sent concurrently."""
        batches = [keys[i : i + _DELETE_BATCH] for i in range(0, len(keys), _DELETE_BATCH)]
        results = await asyncio.gather(
            *(
                self.fs._call_s3(
                    "delete_objects",
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
                )
                for batch in batches
            )
        )
        errors = [e for r in results for e in r.get("Errors", [])]
        if errors:
            raise OSError(f"DeleteObjects failed for {len(errors)} keys: {errors[:3]}")
        return len(keys)
