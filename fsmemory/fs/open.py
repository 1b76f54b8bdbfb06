"""Open a storage root from a URL plus ``storage_options``, the way fsspec users expect."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from fsmemory.errors import InvalidPathError, MissingDependencyError
from fsmemory.fs.base import StorageRoot

__all__ = ["ROOT_CLASSES", "open_root", "split_protocol"]

#: protocol -> ("module:Class", extra) of the root that knows that backend's quirks.
#: Protocols not listed use :class:`fsmemory.fs.generic.FsspecRoot`.
ROOT_CLASSES: dict[str, tuple[str, str]] = {
    "s3": ("fsmemory.fs.s3:S3Root", "s3"),
    "s3a": ("fsmemory.fs.s3:S3Root", "s3"),
    "gs": ("fsmemory.fs.gcs:GCSRoot", "gcs"),
    "gcs": ("fsmemory.fs.gcs:GCSRoot", "gcs"),
    "redis": ("fsmemory.fs.redis:RedisRoot", "redis"),
    "rediss": ("fsmemory.fs.redis:RedisRoot", "redis"),
    "sqlite": ("fsmemory.fs.sqlite:SqliteRoot", "sqlite"),
}

_BACKEND_MODULES = {"s3": "s3fs", "gcs": "gcsfs", "redis": "redis"}


def split_protocol(url: str) -> tuple[str | None, str]:
    """``"s3://b/k"`` -> ``("s3", "b/k")``; a bare path -> ``(None, path)``."""
    if "://" in url:
        protocol, rest = url.split("://", 1)
        return protocol.lower(), rest
    return None, url


def open_root(
    url: str | os.PathLike[str] | StorageRoot,
    storage_options: Mapping[str, Any] | None = None,
    *,
    durable: bool = False,
) -> StorageRoot:
    """Open the storage root at ``url``.

    Args:
        url: a local path, ``file://``, ``memory://``, ``s3://``, ``gs://``,
            ``redis://`` or any other fsspec URL. An existing root is returned as is.
        storage_options: passed to the fsspec filesystem (credentials, endpoint, ...).
        durable: on local folders, ``fsync`` after writes.

    Raises:
        InvalidPathError: the URL is empty or malformed.
        MissingDependencyError: the backend's optional extra is not installed.
    """
    if isinstance(url, StorageRoot):
        return url
    text = os.fspath(url)
    if not isinstance(text, str) or not text.strip():
        raise InvalidPathError("storage URL is empty")
    if "\x00" in text:
        raise InvalidPathError("storage URL contains NUL")
    options = dict(storage_options or {})
    protocol, rest = split_protocol(text)
    if protocol in (None, "file", "local"):
        from fsmemory.fs.local import LocalRoot

        return LocalRoot(rest or ".", url=text, durable=durable)
    if protocol == "memory":
        from fsmemory.fs.memory import MemoryRoot

        return MemoryRoot(rest, url=text)
    if protocol in ROOT_CLASSES:
        target, extra = ROOT_CLASSES[protocol]
        module_name, _, cls_name = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing == module_name:
                module = None
            else:
                raise MissingDependencyError(_BACKEND_MODULES.get(extra, missing), extra) from exc
        if module is not None:
            cls = getattr(module, cls_name)
            root: StorageRoot = cls.from_url(text, options)
            return root
    import fsspec

    from fsmemory.fs.generic import FsspecRoot

    try:
        fs, path = fsspec.url_to_fs(text, **options)
    except ImportError as exc:
        raise MissingDependencyError(str(exc.name or protocol), str(protocol)) from exc
    return FsspecRoot(fs, path, url=text)
