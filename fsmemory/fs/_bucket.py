"""Plumbing shared by the object-store roots (S3, GCS): keys under a bucket prefix and
running the async filesystem's coroutines."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fsmemory.errors import InvalidPathError
from fsmemory.fs.base import Capabilities
from fsmemory.fs.generic import FsspecRoot
from fsmemory.fs.paths import validate_path
from fsmemory.fs.retry import RetryPolicy, policy_from_options

__all__ = ["BucketRoot"]

_T = TypeVar("_T")
_B = TypeVar("_B", bound="BucketRoot")


class BucketRoot(FsspecRoot):
    """An :class:`FsspecRoot` whose files are keys under ``prefix`` in one bucket of an
    object store with native compare-and-swap (S3, GCS).

    Args:
        fs: the store's async fsspec filesystem.
        root: ``bucket`` or ``bucket/prefix`` (no protocol).
        url: the URL it was opened from.
        retry: the retry policy of this root.

    Raises:
        InvalidPathError: ``root`` names no bucket.
    """

    capabilities = Capabilities(
        conditional_write=True,
        native_append=False,
        atomic_write=True,
        ranged_read=True,
        watch=False,
    )
    #: the service's name in messages ("S3", "GCS")
    service = "object store"

    def __init__(
        self, fs: Any, root: str, *, url: str | None = None, retry: RetryPolicy | None = None
    ) -> None:
        super().__init__(fs, root, url=url, retry=retry)
        bucket, key = self._split(self.root)
        if not bucket:
            raise InvalidPathError(f"{self.service} URLs need a bucket: {url or root!r}")
        self.bucket: str = bucket
        #: the key prefix of the root inside the bucket ("" for the bucket itself)
        self.prefix: str = key.strip("/")

    @classmethod
    def _open(cls: type[_B], url: str, options: Mapping[str, Any] | None, fs_class: Any) -> _B:
        """Build the filesystem for ``url`` (our retries only, no stale listings) and the
        root on it; ``retry`` in ``options`` is this root's policy."""
        opts: dict[str, Any] = dict(fs_class._get_kwargs_from_urls(url))
        opts.update(options or {})
        if not fs_class._strip_protocol(url).strip("/").split("/", 1)[0]:
            # Before the filesystem exists: building it may look for credentials.
            raise InvalidPathError(f"{cls.service} URLs need a bucket: {url!r}")
        policy = policy_from_options(opts)
        opts.setdefault("use_listings_cache", False)
        cls._configure(opts)
        fs = fs_class(**opts)
        root = fs._strip_protocol(url).rstrip("/")
        return cls(fs, root, url=url, retry=policy)

    @staticmethod
    def _configure(opts: dict[str, Any]) -> None:
        """Adjust the filesystem options before it is built (a subclass hook)."""

    def _split(self, full: str) -> tuple[str, str]:
        """``(bucket, key)`` of a path inside the filesystem."""
        bucket, _, key = full.lstrip("/").partition("/")
        return bucket, key

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
