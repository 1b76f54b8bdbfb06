"""A bucket root over obstore (the Python bindings of Rust's ``object_store``).

:class:`ObstoreRoot` serves the primitives of :class:`~fsmemory.fs._bucket.BucketRoot`
with the synchronous functions of obstore on one store of the bucket or container (an
``S3Store``, ``GCSStore`` or ``AzureStore`` without a prefix of its own, built with
obstore's retries off by :func:`fsmemory.fs._cloud.shared_store`): the root's prefix is
added to every key here, as on the other bucket roots.

==============================  =====================================================
operation                       requests
==============================  =====================================================
``read``                        1 ``GET`` (body and ETag from the same response)
``read_range``                  1 ranged ``GET``
``read_ranges``                 1 ranged ``GET`` per range, sent concurrently
``stat``                        1 ``HEAD``
``write``                       1 ``PUT`` (new ETag from the response)
``write(if_version=etag)``      1 ``PUT`` with ``If-Match`` (obstore's update mode)
``write(create_only=True)``     1 ``PUT`` with ``If-None-Match: *`` (create mode)
``append``                      1 ``GET`` + 1 conditional ``PUT`` per attempt
``list`` / ``list_dirs``        1 listing request per 1000 keys, never cached
``delete``                      1 ``HEAD`` + 1 ``DELETE``
``delete_many``/``delete_tree`` the service's batch delete (S3: 1000 keys a request)
``list_with_cache``             the listing, the cache ``GET`` and the ``GET`` of each
                                file of ``fetch_with_listing`` sent together
==============================  =====================================================

Errors become fsmemory's (:func:`map_error`, reading the HTTP status from obstore's
message, the only place it reports it): a missing object a ``FileNotFoundError``, a failed
precondition :class:`~fsmemory.errors.ConflictError`, a missing bucket
:class:`~fsmemory.errors.BucketNotFoundError`, an untrusted certificate a
:class:`~fsmemory.errors.BackendError` saying so, no complete reply a transient
:class:`ObstoreConnectionError`, any other reply an :class:`ObstoreHTTPError`. A
conditional write carries a random marker in its user metadata (``fsmemory-write``) that
one ``GET`` without body reads back after an ambiguous failure.

Process safety: only obstore's synchronous calls are used (its async calls under a
short-lived event loop can abort the interpreter at exit), and no thread or pool is kept
between calls. obstore's tokio runtime does not survive ``fork()``: in a child forked
from a process that used it, a root becomes its ``fork_class`` (the fallback root of the
same URL and options), and :func:`obstore_usable` makes the route chooser take the
fallback from the start.
"""

from __future__ import annotations

import builtins
import os
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from fsmemory._log import get_logger
from fsmemory.errors import BackendError, BucketNotFoundError, ConflictError
from fsmemory.fs._bucket import RoutedRoot
from fsmemory.fs.base import CacheData, FileInfo
from fsmemory.fs.paths import cache_paths
from fsmemory.fs.retry import RetryPolicy

if TYPE_CHECKING:
    from fsmemory.fs._cloud import Route
    from fsmemory.fs.generic import FsspecRoot

__all__ = [
    "WRITE_MARKER",
    "ObstoreConnectionError",
    "ObstoreHTTPError",
    "ObstoreRoot",
    "WrongRegionError",
    "map_error",
    "obstore_usable",
    "quote_etag",
    "unquote_etag",
]

_T = TypeVar("_T")

logger = get_logger(__name__)

#: user-metadata key of the marker a conditional write carries
WRITE_MARKER = "fsmemory-write"

#: how obstore words the status of a reply it did not accept
_STATUS = re.compile(r"status code: (\d{3})\b")
#: a URL in obstore's message (it holds the key, which must not steer the mapping)
_URL = re.compile(r"https?://\S+")
#: service error codes of a missing bucket or container (in the reply's body)
_MISSING_BUCKET = ("<Code>NoSuchBucket</Code>", "<Code>ContainerNotFound</Code>")
#: the region S3 names in an ``AuthorizationHeaderMalformed`` reply
_REGION = re.compile(r"<Region>([a-z0-9-]{1,40})</Region>")
#: words of a certificate the client refused
_TLS_WORDS = ("certificate", "InvalidCertificate", "UnknownIssuer", "tls handshake")
#: words of a request that never got a complete reply
_TRANSPORT_WORDS = (
    "error sending request",
    "timed out",
    "timeout",
    "connection",
    "error decoding response body",
    "body write aborted",
    "unexpected end of file",
)
#: most concurrent requests of one ``read_ranges``
_MAX_THREADS = 8


#: the process whose obstore runtime started (None: obstore not used yet)
_runtime_pid: int | None = None
#: the live obstore roots (a forked child turns them into their ``fork_class``)
_LIVE: weakref.WeakSet[ObstoreRoot] = weakref.WeakSet()


def obstore_usable() -> bool:
    """False in a child forked from a process that used obstore (its runtime is gone)."""
    return _runtime_pid is None or _runtime_pid == os.getpid()


def _mark_used() -> None:
    global _runtime_pid
    if _runtime_pid is None:
        _runtime_pid = os.getpid()


def _after_fork_in_child() -> None:
    if _runtime_pid is None:
        return
    for root in builtins.list(_LIVE):
        root._leave_obstore()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ObstoreHTTPError(OSError):
    """A reply of the service that obstore did not accept (``status``: its HTTP status)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class WrongRegionError(BackendError):
    """S3 answered that the bucket lives in another region than the request was signed
    for: HTTP 301 (``PermanentRedirect``, no ``Location``), or a 400
    ``AuthorizationHeaderMalformed`` whose body names the bucket's region.

    Attributes:
        region: the bucket's region when the reply named it, else None.
    """

    def __init__(self, message: str, region: str | None = None) -> None:
        super().__init__(message)
        self.region = region


class ObstoreConnectionError(ConnectionError):
    """A request that got no complete reply (refused, reset, timed out): transient."""


def _status(message: str) -> int | None:
    found = _STATUS.search(message)
    return int(found.group(1)) if found else None


def map_error(
    exc: BaseException, bucket: str, service: str, fallback: str = "fsspec"
) -> BaseException:
    """The exception a root raises for what obstore raised (see the module docs);
    ``fallback`` is the client a TLS failure's message says to force.

    ``FileNotFoundError`` (obstore's "not found") is returned as it is, unless the reply
    names a missing bucket; exceptions that are not obstore's are returned unchanged.
    """
    from obstore.exceptions import AlreadyExistsError, BaseError, PreconditionError

    message = str(exc)
    # The reply's body: after the last "status code:" of the message proper (the key
    # is quoted before it, and again raw in the "Debug source" that follows).
    body = message.partition("\n\nDebug source:")[0].rpartition("status code:")[2]
    if any(code in body for code in _MISSING_BUCKET):
        return BucketNotFoundError(bucket, service)
    if isinstance(exc, AlreadyExistsError):
        return ConflictError("already exists")
    if isinstance(exc, PreconditionError):
        if _status(message) == 404:  # If-Match on an object that is gone
            return ConflictError("the object no longer exists")
        return ConflictError("precondition failed (changed concurrently)")
    if isinstance(exc, FileNotFoundError) or not isinstance(exc, BaseError):
        return exc
    first = message.split("\n", 1)[0]
    status = _status(message)
    text = _URL.sub("", message)
    named = _REGION.search(body) if "AuthorizationHeaderMalformed" in body else None
    if status == 301 or "redirect without LOCATION" in text or named:
        return WrongRegionError(
            f"{service} bucket {bucket!r} is in another region than the one configured "
            f"(HTTP {status or 301}): set the region (client_kwargs={{'region_name': ...}} "
            f"or AWS_DEFAULT_REGION): {first}",
            named.group(1) if named else None,
        )
    if status is not None:
        return ObstoreHTTPError(status, first)
    lowered = text.lower()
    if any(word.lower() in lowered for word in _TLS_WORDS):
        return BackendError(
            f"TLS failure talking to {service} (the server's certificate is not trusted; "
            f"for a private CA force the {fallback} route with its CA bundle): {first}"
        )
    if any(word in lowered for word in _TRANSPORT_WORDS):
        return ObstoreConnectionError(first)
    return exc


def unquote_etag(etag: object) -> str:
    """An ETag as a version token: without its quotes ("" for None)."""
    return str(etag or "").strip('"')


def quote_etag(version: str) -> str:
    """A version token as the ETag of an ``If-Match`` header (quoted)."""
    return version if version.startswith('"') else f'"{version}"'


class ObstoreRoot(RoutedRoot):
    """A prefix in a bucket (or container) served by obstore.

    Args:
        store: the obstore store of the bucket (no prefix of its own; obstore's retries
            off).
        root: ``bucket`` or ``bucket/prefix`` (no protocol).
        url: the URL it was opened from.
        route: the :class:`~fsmemory.fs._cloud.Route` ``store`` was built from (None
            for a store built otherwise).
        retry: the retry policy of this root.
        fs_factory: builds the fsspec filesystem of :attr:`fs` on first use (for code
            that wants one, such as export); None: :attr:`fs` is None.
        observers: the list of :attr:`observers` (roots sharing a store share it);
            None: a list of its own.
        fork_class: the fsspec root class this root becomes in a forked child (see the
            module docs); None: such a child gets errors.

    Raises:
        InvalidPathError: ``root`` names no bucket.
    """

    #: which client sends the requests (see ``S3Root.client``)
    client: ClassVar[str] = "obstore"
    #: the ``obstore.store`` class of a bucket (``"S3Store"``)
    store_class: ClassVar[str]
    #: the user-metadata key of the marker a conditional write carries
    write_marker: ClassVar[str] = WRITE_MARKER
    #: extra keyword arguments of every ``obstore.put``
    put_options: ClassVar[Mapping[str, Any]] = {}
    #: None: ``delete_many`` uses the service's batch delete (S3); else one ``DELETE``
    #: per object, this many at a time (a service without a batch delete, or whose
    #: batch fails whole on one missing object)
    delete_threads: ClassVar[int | None] = None
    # obstore is built with retries off; its HTTP client resends nothing it has sent.
    _hidden_retries: ClassVar[bool] = False
    _marks_writes = True

    def __init__(
        self,
        store: Any,
        root: str,
        *,
        url: str,
        route: Route | None = None,
        retry: RetryPolicy | None = None,
        fs_factory: Callable[[], Any] | None = None,
        observers: builtins.list[Callable[[str, str], None]] | None = None,
        fork_class: type[FsspecRoot] | None = None,
    ) -> None:
        self.store = store
        self.route = route
        self._fork_class = fork_class
        #: callables told ``(operation, "bucket/key")`` before each obstore call (request
        #: counts in tests: a listing counts once per 1000 keys, a batch delete once)
        self.observers = [] if observers is None else observers
        # Files to read with the next list_with_cache, and what was read of them
        # (see fetch_with_listing): path -> bytes, or None for a missing file.
        self._fetch_next: dict[str, None] = {}
        self._fetched: dict[str, bytes | None] = {}
        super().__init__(None, root, url=url, retry=retry, fs_factory=fs_factory)
        _mark_used()
        _LIVE.add(self)

    def _leave_obstore(self) -> None:
        """In a forked child: become an instance of the fork class (whose :attr:`fs`
        is built by the same factory)."""
        if self._fork_class is not None:
            self.__class__ = self._fork_class  # type: ignore[assignment]

    def storage_key(self) -> tuple[str, ...]:
        """What identifies the files this root addresses (without building ``fs``)."""
        return (type(self).__qualname__, self.root, str(id(self.store)))

    # -- obstore calls -----------------------------------------------------------------
    @contextmanager
    def _mapped(self) -> Iterator[None]:
        """obstore's errors inside the block mapped to the root's (module docs)."""
        if not obstore_usable():
            raise BackendError(
                f"{self.url}: obstore cannot run in a process forked after it was used "
                "(its tokio runtime does not survive fork); start workers with 'spawn'"
            )
        try:
            yield
        except Exception as exc:
            mapped = map_error(exc, self.bucket, self.service, self.cloud.fallback)
            if mapped is exc:
                raise
            raise mapped from exc

    def _on_store(self, run: Callable[[Any], _T]) -> _T:
        """``run(self.store)`` with its errors mapped; when the service says the bucket
        is in another region and :meth:`_move_region` moves the store there, once more."""
        store = self.store
        try:
            with self._mapped():
                return run(store)
        except WrongRegionError as exc:
            if not self._move_region(exc, store):
                raise
        with self._mapped():
            return run(self.store)

    def _move_region(self, error: WrongRegionError, tried: Any) -> bool:
        """Point :attr:`store` (``tried`` when the request was sent) at the bucket's
        own region (S3); True when it is there now. Here: no region to move to."""
        return False

    def _call(self, func: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``func(self.store, *args, **kwargs)`` with its errors mapped."""

        def run(store: Any) -> _T:
            self._observe(func.__name__, args[0] if args else None)
            return func(store, *args, **kwargs)

        return self._on_store(run)

    def _observe(self, operation: str, target: object) -> None:
        for observer in builtins.list(self.observers):
            observer(operation, f"{self.bucket}/{target or ''}")

    def _version(self, meta: Mapping[str, Any]) -> str:
        """The version token of an object's metadata (its ETag, unquoted)."""
        return unquote_etag(meta.get("e_tag"))

    def _update_mode(self, version: str) -> dict[str, str]:
        """obstore's put mode that writes only over ``version`` (``If-Match``)."""
        return {"e_tag": quote_etag(version)}

    # -- plumbing ----------------------------------------------------------------------
    def _run(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run a hook of :class:`BucketRoot`: they are coroutines for the async
        filesystems; here they never wait (obstore's calls are synchronous), so one step
        finishes them."""
        coro = func(*args)
        assert isinstance(coro, Coroutine)
        try:
            coro.send(None)
        except StopIteration as done:
            result: _T = done.value
            return result
        coro.close()
        raise RuntimeError("an obstore request waited on an event loop")  # pragma: no cover

    def _forget_cached(self, path: str) -> None:
        """Nothing is cached."""

    def _cat_full(self, full: str) -> bytes:
        import obstore

        return bytes(self._call(obstore.get, self._split(full)[1]).bytes())

    def _rm_full(self, full: str) -> None:
        import obstore

        self._call(obstore.delete, self._split(full)[1])

    def _get(self, key: str, options: dict[str, Any] | None = None) -> tuple[bytes, str]:
        import obstore

        result = self._call(obstore.get, key, options=options)
        return bytes(result.bytes()), self._version(result.meta)

    # -- FsspecRoot hooks --------------------------------------------------------------
    async def _get_versioned(self, key: str) -> tuple[bytes, str]:
        """One ``GET``: content and version from the same response."""
        return self._get(key)

    def read_ranges(
        self, requests: Sequence[tuple[str, int, int | None]]
    ) -> builtins.list[bytes | None]:
        """One ranged ``GET`` per range, sent concurrently from a few threads (each
        retried on its own); a missing file gives None."""
        for _, start, end in requests:
            self.check_range(start, end)
        if len(requests) <= 1:
            return [self._range_or_none(r) for r in requests]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(_MAX_THREADS, len(requests))) as pool:
            return builtins.list(pool.map(self._range_or_none, requests))

    def _upload(
        self, full: str, data: bytes, if_version: str | None, create: bool, marker: str | None
    ) -> str:
        """One ``PUT``, create-only or ``If-Match`` when asked, tagged with ``marker``."""
        import obstore

        mode: Any = "overwrite"
        if create:
            mode = "create"
        elif if_version is not None:
            mode = self._update_mode(if_version)
        attributes = {self.write_marker: marker} if marker is not None else None
        key = self._split(full)[1]
        result = self._call(
            obstore.put, key, data, mode=mode, attributes=attributes, **self.put_options
        )
        return self._version(result)

    def _read_marker(self, full: str, path: str) -> tuple[str | None, str]:
        """The marker and version of the object (one ``GET`` without body)."""
        import obstore

        with self._translated(path):
            head = self._call(obstore.get, self._split(full)[1], options={"head": True})
        return (head.attributes or {}).get(self.write_marker), self._version(head.meta)

    def _token(self, info: dict[str, Any]) -> str:
        """The change token of a listed object or of ``stat``: its version."""
        return self._version(info)

    def fetch_with_listing(self, path: str) -> None:
        """Read ``path`` with the next :meth:`list_with_cache` (its ``GET`` sent with
        the listing and the cache's); :meth:`take_fetched` hands its bytes out once."""
        self._key(path)  # validated now, not on the listing's thread
        self._fetch_next[path] = None

    def take_fetched(self, path: str) -> tuple[bytes | None] | None:
        """What :meth:`list_with_cache` read of ``path`` (see
        :meth:`~fsmemory.fs.base.StorageRoot.take_fetched`), handed out once."""
        try:
            return (self._fetched.pop(path),)
        except KeyError:
            return None

    def _list_and_read_cache(
        self, name: str, want: Callable[[builtins.list[FileInfo]], bool] | None
    ) -> tuple[builtins.list[FileInfo], CacheData | BaseException | None]:
        """The listing and the cache file ``name`` in one round trip (for
        :meth:`list_with_cache`): the cache's ``GET`` runs on a thread while this one
        lists (and so does the ``GET`` of each file asked for by
        :meth:`fetch_with_listing`). A cache file that exists is read whatever ``want``
        says; a missing one costs that one ``GET`` (404). A failed cache read is no
        cache (logged); a failed read of an asked-for file leaves it to be read later
        (logged); a failed listing raises as :meth:`list` does."""
        with cache_paths():
            cache_key = self._key(self._cache_path(name))
        asked = builtins.list(self._fetch_next)
        self._fetch_next.clear()
        box: dict[str | None, Any] = {}

        def fetch(slot: str | None, key: str) -> None:
            try:
                box[slot] = self._get(key)[0]
            except BaseException as exc:
                box[slot] = exc

        threads = [
            threading.Thread(target=fetch, args=(slot, key), name="fsmemory-get", daemon=True)
            for slot, key in [(None, cache_key), *((p, self._key(p)) for p in asked)]
        ]
        for thread in threads:
            thread.start()
        try:
            listing = self.list("", recursive=True)
        finally:
            for thread in threads:
                thread.join()
        for path in asked:
            got = box[path]
            if isinstance(got, bytes):
                self._fetched[path] = got
            elif isinstance(got, FileNotFoundError):
                self._fetched[path] = None
            else:
                logger.info("%r of %s not read ahead: %s", path, self, got)
        cached = box[None]  # the cache file's bytes, or what its GET raised
        if isinstance(cached, BaseException) and not isinstance(
            cached, OSError | BackendError | ConflictError
        ):
            raise cached
        return listing, cached

    # -- BucketRoot hooks --------------------------------------------------------------
    def _list_all(
        self, key_prefix: str, delimiter: bool
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[str]]:
        """obstore pages the listing itself (1000 keys a request on S3)."""
        import obstore

        prefix = key_prefix or None
        if delimiter:
            page = self._call(obstore.list_with_delimiter, prefix)
            objects = [dict(o) for o in page["objects"]]
            return objects, [p + "/" for p in page["common_prefixes"]]

        def run(store: Any) -> builtins.list[dict[str, Any]]:
            objects: builtins.list[dict[str, Any]] = []
            for batch in obstore.list(store, prefix, chunk_size=1000):
                self._observe("list", prefix)
                objects.extend(dict(o) for o in batch)
            if not objects:
                self._observe("list", prefix)
            return objects

        return self._on_store(run), []

    def _key_of(self, obj: dict[str, Any]) -> str:
        return str(obj["path"])

    async def _head(self, key: str) -> dict[str, Any]:
        import obstore

        meta: dict[str, Any] = dict(self._call(obstore.head, key))
        return meta

    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        options: dict[str, Any] = {"range": {"offset": start}}
        if end is not None:
            options = {"range": (start, end)}
        try:
            return self._get(key, options)[0]
        except ObstoreHTTPError as exc:
            if exc.status == 416:  # the object ends before ``start``
                return b""
            raise

    async def _bucket_exists(self) -> bool:
        import obstore

        def run(store: Any) -> None:
            self._observe("list", "")
            for _ in obstore.list(store, None, chunk_size=1):
                break

        try:
            self._on_store(run)
        except (BucketNotFoundError, FileNotFoundError):
            return False
        return True

    async def _delete_object(self, key: str) -> None:
        """``HEAD`` (a delete of a missing key succeeds silently) then ``DELETE``."""
        import obstore

        self._call(obstore.head, key)
        self._call(obstore.delete, key)

    async def _delete_keys(self, keys: builtins.list[str]) -> int:
        """The service's batch delete (S3: ``DeleteObjects``, 1000 keys a request), or
        one ``DELETE`` per object, :attr:`delete_threads` at a time, objects already gone
        not counted."""
        import obstore

        if self.delete_threads is None:
            self._call(obstore.delete, keys)
            return len(keys)

        def one(key: str) -> bool:
            try:
                self._call(obstore.delete, key)
            except FileNotFoundError:
                return False
            return True

        if len(keys) == 1:
            return int(one(keys[0]))
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(self.delete_threads, len(keys))) as pool:
            return sum(pool.map(one, keys))
