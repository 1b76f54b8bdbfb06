"""What the object-store roots (S3, GCS, Azure's obstore route) share: keys under a
bucket prefix, listing, ``stat``, ranged reads, deletes, exclusive creates and telling a
missing bucket from a missing key.

A service supplies only its requests (the hooks below: coroutines run by
:meth:`BucketRoot._run` on the async filesystem's loop, or in place on obstore).

A missing bucket: S3 names it in most error replies (``NoSuchBucket``), but a
``HeadObject`` answers a bare 404 and GCS answers 404 for a missing bucket and a missing
object alike. So the first "not found" of a root whose bucket was never seen to exist
costs one bucket request; when the bucket is missing every call raises
:class:`~fsmemory.errors.BucketNotFoundError` naming it, never a missing key.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from fsmemory.errors import BucketNotFoundError, InvalidPathError, KeyNotFoundError
from fsmemory.fs.base import Capabilities, FileInfo, Versioned
from fsmemory.fs.errors import http_status, translated
from fsmemory.fs.generic import FsspecRoot, _mtime
from fsmemory.fs.paths import validate_path
from fsmemory.fs.retry import idempotent

if TYPE_CHECKING:
    from fsmemory.fs._cloud import Cloud

__all__ = ["BucketRoot", "RoutedRoot", "client_subclass"]

_T = TypeVar("_T")

#: HTTP status of a range that starts at or past the end of the object
_RANGE_NOT_SATISFIABLE = 416

_SUBCLASSES: dict[tuple[str, str], Any] = {}


def client_subclass(
    module: str, name: str, base: Any, attrs: dict[str, Any], doc: str | None = None
) -> Any:
    """The subclass ``module.name`` of the client's filesystem class ``base`` with
    ``attrs`` (by default: its own retries switched off, so that our retry policy is the
    one that retries). Built once; ``module`` finds it again by name for pickle."""
    key = (module, name)
    cls = _SUBCLASSES.get(key)
    if cls is None:
        doc = doc or f"{base.__name__} whose requests are tried once (fsmemory retries)."
        namespace = {**attrs, "__module__": module, "__qualname__": name, "__doc__": doc}
        cls = _SUBCLASSES[key] = type(name, (base,), namespace)
    return cls


class BucketRoot(FsspecRoot):
    """An :class:`FsspecRoot` whose files are keys under ``prefix`` in one bucket of an
    object store with native compare-and-swap (S3, GCS).

    Args: those of :class:`~fsmemory.fs.generic.FsspecRoot`, ``root`` being ``bucket`` or
    ``bucket/prefix`` (no protocol).

    Raises:
        InvalidPathError: ``root`` names no bucket.
    """

    capabilities = Capabilities(conditional_write=True, native_append=False)
    #: the service's name in messages ("S3", "GCS")
    service = "object store"

    def __init__(self, fs: Any, root: str, **kwargs: Any) -> None:
        super().__init__(fs, root, **kwargs)
        bucket, key = self._split(self.root)
        if not bucket:
            where = kwargs.get("url") or root
            raise InvalidPathError(f"{self.service} URLs need a bucket: {where!r}")
        self.bucket: str = bucket
        #: the key prefix of the root inside the bucket ("" for the bucket itself)
        self.prefix: str = key.strip("/")
        self._bucket_seen = False

    # -- hooks for the services ----------------------------------------------------------
    async def _list_page(
        self, key_prefix: str, delimiter: bool, token: str | None
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[str], str | None]:
        """One page of a listing: ``(objects, common prefixes, next page token)``."""
        raise NotImplementedError

    def _info_of(self, rel: str, obj: dict[str, Any]) -> FileInfo:
        """The :class:`FileInfo` of a listed object or of :meth:`_head`'s metadata
        (here: its ``size``, its time and the change token :meth:`_token` reads)."""
        return FileInfo(rel, int(obj.get("size") or 0), _mtime(obj), self._token(obj))

    def _key_of(self, obj: dict[str, Any]) -> str:
        """The key of a listed object."""
        raise NotImplementedError

    async def _head(self, key: str) -> dict[str, Any]:
        """The object's metadata (one request); raises FileNotFoundError when missing."""
        raise NotImplementedError

    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        """Bytes ``[start, end)`` of the object in one request (``start < end``)."""
        raise NotImplementedError

    async def _bucket_exists(self) -> bool:
        """Whether the bucket exists: :meth:`_head_bucket` found it."""
        try:
            await self._head_bucket()
        except FileNotFoundError:
            return False
        return True

    async def _head_bucket(self) -> None:
        """One request about the bucket; raises FileNotFoundError when it is missing."""
        raise NotImplementedError

    async def _get_versioned(self, key: str) -> tuple[bytes, str]:
        """The object's content and version token from one download."""
        raise NotImplementedError

    async def _delete_object(self, key: str) -> None:
        """Delete one object; raises FileNotFoundError when it does not exist."""
        raise NotImplementedError

    async def _delete_keys(self, keys: builtins.list[str]) -> int:
        """Delete these objects (each known to exist a moment ago); returns the count."""
        raise NotImplementedError

    # -- plumbing ----------------------------------------------------------------------
    def _split(self, full: str) -> tuple[str, str]:
        """``(bucket, key)`` of a path inside the filesystem."""
        bucket, _, key = full.lstrip("/").partition("/")
        return bucket, key

    def _forget_cached(self, path: str) -> None:
        """Drop what the filesystem may have cached about ``path`` (after a change)."""
        self.fs.invalidate_cache(path)

    def _run(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run one of the filesystem's coroutines on its event loop."""
        from fsspec.asyn import sync

        result: _T = sync(self.fs.loop, func, *args)
        return result

    def _key(self, path: str) -> str:
        """The object key of a root-relative path (validated)."""
        validate_path(path)
        return f"{self.prefix}/{path}" if self.prefix else path

    def _dir_key(self, prefix: str) -> str:
        """The key prefix (with trailing ``/``) of the directory ``prefix``."""
        validate_path(prefix, allow_empty=True)
        parts = [p for p in (self.prefix, prefix) if p]
        return "/".join(parts) + "/" if parts else ""

    def _rel(self, key: str) -> str | None:
        """Root-relative path of ``key``, or None for keys we never expose."""
        if self.prefix:
            if not key.startswith(self.prefix + "/"):
                return None
            key = key[len(self.prefix) + 1 :]
        try:
            return validate_path(key)
        except InvalidPathError:
            return None

    @contextmanager
    def _translated(self, path: str) -> Iterator[None]:
        """:func:`~fsmemory.fs.errors.translated`, telling a missing bucket apart from a
        missing key (see the module docs)."""
        try:
            with translated(path):
                yield
        except BucketNotFoundError as exc:
            raise BucketNotFoundError(self.bucket, self.service) from exc
        except KeyNotFoundError:
            if not self._bucket_seen:
                with translated(self.bucket):
                    exists = self._run(self._bucket_exists)
                if not exists:
                    raise BucketNotFoundError(self.bucket, self.service) from None
                self._bucket_seen = True
            raise
        self._bucket_seen = True

    def _list_all(
        self, key_prefix: str, delimiter: bool
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[str]]:
        async def pages() -> tuple[builtins.list[dict[str, Any]], builtins.list[str]]:
            objects: builtins.list[dict[str, Any]] = []
            prefixes: builtins.list[str] = []
            token: str | None = None
            while True:
                page, common, token = await self._list_page(key_prefix, delimiter, token)
                objects.extend(page)
                prefixes.extend(common)
                if not token:
                    return objects, prefixes

        return self._run(pages)

    def _read_versioned(self, full: str, path: str) -> Versioned:
        """One download (:meth:`_get_versioned`): content and version from the same
        response."""
        with self._translated(path):
            data, version = self._run(self._get_versioned, self._split(full)[1])
        return Versioned(data, version)

    # -- StorageRoot -------------------------------------------------------------------
    @idempotent
    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """One ranged download; a range past the end reads as ``b""``."""
        self.check_range(start, end)
        key = self._key(path)
        if end is not None and end <= start:
            if self.stat(path) is None:
                raise KeyNotFoundError(path)
            return b""
        with self._translated(path):
            try:
                return self._run(self._get_range, key, start, end)
            except Exception as exc:
                # 416: the object exists but ends before ``start`` (or is empty).
                if http_status(exc) == _RANGE_NOT_SATISFIABLE:
                    return b""
                raise

    @idempotent
    def stat(self, path: str) -> FileInfo | None:
        """One metadata request; None when the object does not exist."""
        key = self._key(path)
        try:
            with self._translated(path):
                meta = self._run(self._head, key)
        except KeyNotFoundError:
            return None
        return self._info_of(path, meta)

    @idempotent
    def list(self, prefix: str = "", *, recursive: bool = False) -> builtins.list[FileInfo]:
        """One listing request per 1000 keys, straight from the service (never cached)."""
        key_prefix = self._dir_key(prefix)
        with self._translated(prefix):
            objects, _ = self._list_all(key_prefix, not recursive)
        return self._infos(objects)

    def _infos(self, objects: Iterable[dict[str, Any]]) -> builtins.list[FileInfo]:
        """The listing entries of listed objects, sorted by path (keys a root never
        exposes and "directory markers" left out)."""
        out = []
        for obj in objects:
            key = self._key_of(obj)
            if key.endswith("/"):
                continue  # a "directory marker" made by some tools
            rel = self._rel(key)
            if rel is not None:
                out.append(self._info_of(rel, obj))
        out.sort(key=lambda i: i.path)
        return out

    @idempotent
    def list_names(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """Files and subdirectories of ``prefix`` from one delimited listing."""
        key_prefix = self._dir_key(prefix)
        with self._translated(prefix):
            objects, prefixes = self._list_all(key_prefix, True)
        files = []
        for obj in objects:
            name = self._key_of(obj)[len(key_prefix) :]
            if name and _valid_name(name):
                files.append(name)
        dirs = {name for p in prefixes if _valid_name(name := p[len(key_prefix) :].rstrip("/"))}
        return files, builtins.list(dirs)

    @idempotent
    def delete(self, path: str) -> bool:
        """Delete one object; False when it did not exist."""
        key = self._key(path)
        try:
            with self._translated(path):
                self._run(self._delete_object, key)
        except KeyNotFoundError:
            return False
        finally:
            self._forget_cached(f"{self.bucket}/{key}")
        return True

    @idempotent
    def delete_tree(self, prefix: str) -> int:
        """Delete every file under ``prefix`` (one listing, then batched deletes)."""
        return self.delete_many([info.path for info in self.list(prefix, recursive=True)])

    @idempotent
    def delete_many(self, paths: Sequence[str]) -> int:
        """Delete these files in as few requests as the service allows (S3: one
        ``DeleteObjects`` per 1000 keys); files already gone are skipped."""
        keys = [self._key(path) for path in paths]
        if not keys:
            return 0
        try:
            with self._translated(paths[0]):
                return self._run(self._delete_keys, keys)
        finally:
            self._forget_cached(self.root)

    _put = FsspecRoot._put_native
    _create_exclusive = FsspecRoot._create_with_put


class RoutedRoot(BucketRoot):
    """A bucket root of a service served by obstore or by its fsspec client: the base of
    S3's and GCS's roots and of every obstore root, whose :meth:`from_url` opens the
    route the service's :class:`~fsmemory.fs._cloud.Cloud` (class attribute ``cloud``)
    picks. (In a forked child an obstore root changes its class to the fallback's:
    no class here may add ``__slots__``.)
    """

    #: the service's routes and their predicate
    cloud: ClassVar[Cloud]
    #: which client sends this root's requests: ``"obstore"`` or the fallback's name
    #: (``"s3fs"``, ``"gcsfs"``)
    client: ClassVar[str]

    @classmethod
    def from_url(cls, url: str, options: Mapping[str, Any] | None = None) -> Any:
        """Open ``url`` with the fallback client's storage options (s3fs's, gcsfs's or
        adlfs's) plus ``retry`` (:meth:`~fsmemory.fs.generic.FsspecRoot.from_url`) and
        ``client``: ``"auto"`` (default), ``"obstore"`` or the fallback's name (the
        service's ``FSMEMORY_*_CLIENT`` variable sets the default). Which configuration
        takes which route: the service's module docs.

        Raises:
            InvalidInputError: a malformed ``retry`` or ``client`` option, or
                ``client="obstore"`` with a configuration only the fallback can serve.
            InvalidPathError: the URL names no bucket or container.
            MissingDependencyError: the route's package is not installed (the service's
                extra for obstore, the fallback's own extra for it).
        """
        return cls.cloud.open(url, options)


def _valid_name(name: str) -> bool:
    """True for one visible path segment (not a reserved or malformed name)."""
    if "/" in name:
        return False
    try:
        validate_path(name)
    except InvalidPathError:
        return False
    return True
