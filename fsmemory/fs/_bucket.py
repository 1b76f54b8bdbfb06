"""Plumbing shared by the object-store roots (S3, GCS): keys under a bucket prefix and
running the async filesystem's coroutines."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fsmemory.errors import InvalidPathError
from fsmemory.fs.generic import FsspecRoot
from fsmemory.fs.paths import validate_path

__all__ = ["BucketRoot"]

_T = TypeVar("_T")


class BucketRoot(FsspecRoot):
    """An :class:`FsspecRoot` whose files are keys under ``prefix`` in one bucket.

    Subclasses set ``self.prefix`` (the key prefix of the root, no slashes at the ends)
    and ``self.fs`` (an async fsspec filesystem).
    """

    prefix: str

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
