"""Google Cloud Storage root: native compare-and-swap through gcsfs.

Every primitive is one JSON-API request, issued through gcsfs's ``_call`` (so
credentials, retries and the endpoint work exactly as in gcsfs):

==============================  =====================================================
operation                       requests
==============================  =====================================================
``read``                        1 media ``GET`` (generation from ``x-goog-generation``)
``read_range``                  1 media ``GET`` with ``Range``
``stat``                        1 metadata ``GET``
``write``                       1 multipart upload (new generation from the response)
``write(if_version=gen)``       1 multipart upload with ``ifGenerationMatch=<gen>``
``write(create_only=True)``     1 multipart upload with ``ifGenerationMatch=0``
``append``                      1 media ``GET`` + 1 conditional upload per attempt
``list`` / ``list_dirs``        1 objects ``list`` per 1000 names, never cached
``delete``                      1 ``DELETE`` (404 means it did not exist)
==============================  =====================================================

The version token is the object's generation. GCS answers a failed
``ifGenerationMatch`` with HTTP 412 (gcsfs raises ``FileExistsError``), which becomes
:class:`~fsmemory.errors.ConflictError`.

gcsfs >= 2025 enables experimental zonal-bucket support by default, which makes every
operation against an emulator or a plain bucket wait on a gRPC probe; unless the
environment sets ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT`` to true, the root uses the plain
``gcsfs.core.GCSFileSystem``. fsmemory never sets that variable itself (a library call
changes no process-wide state); a process that sets it to false before importing gcsfs
also skips importing the experimental module (~50-100 ms of a first GCS open here).

Retries: gcsfs retries every failed request itself, up to 6 times with pauses growing
to 32 s, and resends conditional uploads blindly (a lost reply then turns into a 412 for
a write that landed). The filesystem :meth:`GCSRoot.from_url` builds is a subclass of
gcsfs's whose requests are tried once; the root's :class:`~fsmemory.fs.retry.RetryPolicy`
(storage option ``retry``) retries instead, with a total deadline, and resolves
ambiguous conditional writes by reading the object back (see :mod:`fsmemory.fs.retry`).
gcsfs sets no request timeout by default (a stalled connection waits for ever); unless
``requests_timeout`` is given, connecting is bounded by 10 s and each read by 60 s.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import uuid
from typing import Any

import orjson

from fsmemory.errors import BackendError, ConflictError, MissingDependencyError
from fsmemory.fs._bucket import BucketRoot, single_try_subclass
from fsmemory.fs.base import FileInfo, Versioned
from fsmemory.fs.generic import _mtime

__all__ = ["GCSRoot"]


#: gcsfs's switch for its experimental zonal-bucket support (we default it to "false")
ZB_HNS_ENV = "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"

#: concurrent requests used by :meth:`GCSRoot.delete_tree`
_DELETE_CONCURRENCY = 16

_LIST_FIELDS = "items(name,size,generation,updated),prefixes,nextPageToken"


#: seconds to wait for a connection / for each read of a response, unless the caller
#: passes ``requests_timeout``
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0

# Names of the subclasses built by _single_try_class, so pickle can find them again.
_SINGLE_TRY_NAME = {False: "GCSFileSystemSingleTry", True: "ExtendedGCSFileSystemSingleTry"}


def _gcsfs_class(*, experimental: bool | None = None) -> Any:
    """The gcsfs filesystem class: the plain one unless the environment asks for the
    experimental zonal-bucket class (``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=true``)."""
    try:
        import gcsfs
        import gcsfs.core
    except ImportError as exc:
        raise MissingDependencyError("gcsfs", "gcs") from exc
    if experimental is None:
        experimental = os.environ.get(ZB_HNS_ENV, "").strip().lower() in ("true", "1")
    if experimental:
        return gcsfs.GCSFileSystem
    # gcsfs may have been imported earlier with the experimental class as its default.
    return gcsfs.core.GCSFileSystem


def _single_try_class(experimental: bool | None = None) -> Any:
    """A subclass of the gcsfs class whose HTTP requests are tried once (our retry policy
    retries them); the gcsfs class itself when its retry wrapper cannot be undone."""
    base = _gcsfs_class(experimental=experimental)
    inner = getattr(base._request, "__wrapped__", None)
    if inner is None:  # pragma: no cover - a gcsfs without the retry decorator
        return base
    name = _SINGLE_TRY_NAME[base is not _gcsfs_class(experimental=False)]
    return single_try_subclass(__name__, name, base, {"_request": inner})


def __getattr__(name: str) -> Any:
    """Build the single-try gcsfs subclasses on demand (unpickling a filesystem)."""
    for experimental, cls_name in _SINGLE_TRY_NAME.items():
        if name == cls_name:
            return _single_try_class(experimental)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _quote(part: str) -> str:
    from urllib.parse import quote

    return quote(part, safe="")


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


class GCSRoot(BucketRoot):
    """A prefix in a GCS bucket (``gs://bucket/prefix``) with native compare-and-swap.

    Built by :meth:`~fsmemory.fs.generic.FsspecRoot.from_url`; the constructor arguments
    are :class:`BucketRoot`'s, ``fs`` being a ``gcsfs.GCSFileSystem``.
    """

    service = "GCS"

    @staticmethod
    def _fs_class() -> Any:
        """gcsfs's filesystem, tried once per request (see the module docs). Storage
        options are gcsfs's (``token``, ``project``, ``endpoint_url``,
        ``requests_timeout``, ...) plus ``retry`` (:meth:`FsspecRoot.from_url`).

        Raises:
            MissingDependencyError: gcsfs is not installed (``pip install 'fsmemory[gcs]'``).
        """
        return _single_try_class()

    @staticmethod
    def _configure(opts: dict[str, Any]) -> None:
        if opts.get("requests_timeout") is None:
            import aiohttp

            opts["requests_timeout"] = aiohttp.ClientTimeout(
                total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT
            )

    # -- plumbing ----------------------------------------------------------------------
    def _media_url(self, bucket: str, key: str, generation: str | None = None) -> str:
        pin = f"&generation={generation}" if generation else ""
        return (
            f"{self.fs._location}/download/storage/v1/b/{_quote(bucket)}/o/{_quote(key)}"
            f"?alt=media{pin}"
        )

    async def _download(
        self, bucket: str, key: str, byte_range: str | None, generation: str | None = None
    ) -> tuple[bytes, str | None, bool]:
        """``(data, generation, whole)``; ``whole`` is False when a range was served."""
        headers = {"Range": byte_range} if byte_range else None
        resp_headers, data = await self.fs._call(
            "GET", self._media_url(bucket, key, generation), headers=headers
        )
        gen = resp_headers.get("X-Goog-Generation")
        return bytes(data), gen, "Content-Range" not in resp_headers

    async def _metadata(self, bucket: str, key: str) -> dict[str, Any]:
        meta: dict[str, Any] = await self.fs._call("GET", "b/{}/o/{}", bucket, key, json_out=True)
        return meta

    async def _read_pinned(self, bucket: str, key: str) -> tuple[bytes, str]:
        """Read content and generation consistently in one request when possible."""
        data, gen, _ = await self._download(bucket, key, None)
        if gen is not None:
            return data, gen
        # No x-goog-generation header (a proxy dropped it): pin the generation first,
        # then download exactly that generation, so content and version still match.
        gen = str((await self._metadata(bucket, key))["generation"])
        data, _, _ = await self._download(bucket, key, None, gen)
        return data, gen

    async def _upload(
        self, bucket: str, key: str, data: bytes, if_generation: str | None
    ) -> dict[str, Any]:
        body, boundary = _multipart_body(key, data)
        result: dict[str, Any] = await self.fs._call(
            "POST",
            f"{self.fs._location}/upload/storage/v1/b/{_quote(bucket)}/o",
            uploadType="multipart",
            ifGenerationMatch=if_generation,
            headers={"Content-Type": f'multipart/related; boundary="{boundary}"'},
            data=body,
            json_out=True,
        )
        return result

    # -- FsspecRoot hooks --------------------------------------------------------------
    def _read_versioned(self, full: str, path: str) -> Versioned:
        """One media ``GET``: content and generation from the same response."""
        bucket, key = self._split(full)
        with self._translated(path):
            data, gen = self._run(self._read_pinned, bucket, key)
        return Versioned(data, gen)

    def _put(self, full: str, path: str, data: bytes, if_version: str | None, create: bool) -> str:
        """One multipart upload, with ``ifGenerationMatch`` when conditional."""
        bucket, key = self._split(full)
        if if_version is not None and not (if_version.isascii() and if_version.isdigit()):
            # Generations are integers: any other token can never match.
            raise ConflictError(f"{path!r} has no version {if_version!r}")
        condition = "0" if create else if_version
        try:
            with self._translated(path):
                meta = self._run(self._upload, bucket, key, data, condition)
        except ConflictError as exc:
            if if_version is not None:
                raise ConflictError(f"{path!r} changed since version {if_version}") from exc
            raise ConflictError(f"{path!r} already exists") from exc
        finally:
            self.fs.invalidate_cache(full)
        generation = meta.get("generation")
        if generation is None:
            raise BackendError(f"{path}: upload response carries no generation")
        return str(generation)

    def _token(self, info: dict[str, Any]) -> str:
        return str(info.get("generation", ""))

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

    def _info_of(self, rel: str, obj: dict[str, Any]) -> FileInfo:
        return FileInfo(rel, int(obj.get("size") or 0), _mtime(obj), str(obj.get("generation", "")))

    async def _head(self, key: str) -> dict[str, Any]:
        return await self._metadata(self.bucket, key)

    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        if start == 0 and end is None:
            return (await self._download(self.bucket, key, None))[0]
        # Ask for one byte before ``start``: reading exactly at the end of the object (a
        # reader tailing a log) then gets that byte back instead of an HTTP 416, which
        # gcsfs logs as an error with a traceback.
        lo = start - 1 if start > 0 else 0
        byte_range = f"bytes={lo}-" if end is None else f"bytes={lo}-{end - 1}"
        data, _, whole = await self._download(self.bucket, key, byte_range)
        if whole:  # the server ignored Range and sent everything
            return data[start:end]
        return data[start - lo :]

    async def _bucket_exists(self) -> bool:
        try:
            await self.fs._call("GET", "b/{}", self.bucket, json_out=True)
        except FileNotFoundError:
            return False
        return True

    # -- StorageRoot -------------------------------------------------------------------
    async def _delete_object(self, key: str) -> None:
        """One ``DELETE`` (404 when the object does not exist)."""
        await self.fs._call("DELETE", "b/{}/o/{}", self.bucket, key)

    async def _delete_keys(self, keys: builtins.list[str]) -> int:
        """Concurrent ``DELETE`` requests; objects already gone do not count."""
        gate = asyncio.Semaphore(_DELETE_CONCURRENCY)

        async def one(key: str) -> bool:
            async with gate:
                try:
                    await self._delete_object(key)
                except FileNotFoundError:
                    return False
                return True

        return sum(await asyncio.gather(*(one(k) for k in keys)))
