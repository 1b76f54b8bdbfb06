"""Open a storage root from a URL plus ``storage_options``, the way fsspec users expect."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from typing import Any

from fsmemory.errors import InvalidPathError, MissingDependencyError
from fsmemory.fs.base import StorageRoot

__all__ = ["ROOT_CLASSES", "open_root", "split_protocol"]

#: protocol (None: a bare local path) -> ("module:Class", extra) of the root that knows
#: that backend's quirks; the extra is None when the root needs no optional package.
#: Protocols not listed use :class:`fsmemory.fs.generic.FsspecRoot` (any fsspec URL).
ROOT_CLASSES: dict[str | None, tuple[str, str | None]] = {
    None: ("fsmemory.fs.local:LocalRoot", None),
    "file": ("fsmemory.fs.local:LocalRoot", None),
    "local": ("fsmemory.fs.local:LocalRoot", None),
    "memory": ("fsmemory.fs.memory:MemoryRoot", None),
    "sqlite": ("fsmemory.fs.sqlite:SqliteRoot", None),
    "s3": ("fsmemory.fs.s3:S3Root", "s3"),
    "s3a": ("fsmemory.fs.s3:S3Root", "s3"),
    "gs": ("fsmemory.fs.gcs:GCSRoot", "gcs"),
    "gcs": ("fsmemory.fs.gcs:GCSRoot", "gcs"),
    "az": ("fsmemory.fs.azure:AzureRoot", "azure"),
    "abfs": ("fsmemory.fs.azure:AzureRoot", "azure"),
    "abfss": ("fsmemory.fs.azure:AzureRoot", "azure"),
    "redis": ("fsmemory.fs.redis:RedisRoot", "redis"),
    "rediss": ("fsmemory.fs.redis:RedisRoot", "redis"),
}
_GENERIC = ("fsmemory.fs.generic:FsspecRoot", None)


#: the head of an fsspec chain (``simplecache::s3://b/k``): fsspec reads a bare
#: lower-case word before ``::`` as a protocol
_CHAIN_HEAD = re.compile(r"[a-z]+")
#: what fsspec's local filesystem strips from a path (``file:/abs`` is ``/abs``)
_LOCAL_PREFIXES = ("file:", "local:")


def split_protocol(url: str) -> tuple[str | None, str]:
    """The protocol of a URL and the rest, as fsspec resolves the URL.

    ``"s3://b/k"`` -> ``("s3", "b/k")``; ``"file:/abs"`` -> ``("file", "/abs")`` (fsspec's
    local filesystem strips ``file:`` and ``local:``); a chain
    ``"simplecache::s3://b/k"`` -> ``("simplecache::s3", "b/k")``
    (``"simplecache::/abs"`` -> ``("simplecache::file", "/abs")``); ``"data:..."`` ->
    ``("data", ...)``; a bare path (or a one-letter "protocol", a Windows drive) ->
    ``(None, path)``.
    """
    head, chained, inner = url.partition("::")
    if chained and _CHAIN_HEAD.fullmatch(head):
        outer, _, inner = url.rpartition("::")
        protocol, rest = split_protocol(inner)
        return f"{outer}::{protocol or 'file'}", rest
    protocol, sep, rest = url.partition("://")
    if sep and len(protocol) > 1:
        return protocol.lower(), rest
    for prefix in _LOCAL_PREFIXES:
        if url.startswith(prefix):
            return prefix[:-1], url[len(prefix) :]
    if url.startswith("data:"):
        return "data", url[len("data:") :]
    return None, url


def _root_class(protocol: str | None) -> type[StorageRoot]:
    target, extra = ROOT_CLASSES.get(protocol, _GENERIC)
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:  # a package the root module imports is missing
        missing = (exc.name or module_name).partition(".")[0]
        if extra is None:
            raise MissingDependencyError(
                missing, None, hint=f"Python's {missing!r} module is missing"
            ) from exc
        raise MissingDependencyError(missing, extra) from exc
    cls: type[StorageRoot] = getattr(module, cls_name)
    return cls


def open_root(
    url: str | os.PathLike[str] | StorageRoot,
    storage_options: Mapping[str, Any] | None = None,
    *,
    durable: bool | None = None,
) -> StorageRoot:
    """Open the storage root at ``url``.

    Args:
        url: a local path, ``file://``, ``memory://``, ``s3://``, ``gs://``,
            ``redis://``, ``sqlite://`` or any other fsspec URL. An existing root is
            returned as is.
        storage_options: the backend's options (credentials, endpoint, ...), plus
            ``retry`` for network roots (:meth:`fsmemory.fs.generic.FsspecRoot.from_url`).
            Local folders take ``durable`` (``fsync`` after writes), ``sqlite://`` takes
            ``durable`` and ``timeout``, ``memory://`` takes none; an option a local
            root does not understand is refused, never dropped.
        durable: ``True`` is the same as the ``durable`` storage option (kept for
            existing callers).

    Raises:
        InvalidPathError: the URL is empty or malformed.
        InvalidInputError: an option the root does not understand, or a malformed one.
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
    if durable:
        options["durable"] = True
    protocol, _ = split_protocol(text)
    return _root_class(protocol).from_url(text, options)
