"""``redis://`` storage root over :class:`fsmemory.implementations.redis.RedisFileSystem`.

Every primitive is one atomic server-side script: reads return content and version
together, compare-and-swap compares the file's monotonically increasing version, append
is a native ``APPEND`` returning its offset (``line_safe``'s guard inside the same
script), and the inherited ranged read a ``GETRANGE``. The client never retries by
itself; the root's :class:`~fsmemory.fs.retry.RetryPolicy` does (an append only with
``unique=True``, see :meth:`RedisRoot.append`).

:mod:`fsmemory.implementations.redis_client` is re-exported here as ``redis_client`` for
the layers above storage (the path store's lock, the snapshot backend).
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from fsmemory.errors import ConflictError
from fsmemory.fs.base import Capabilities, Versioned
from fsmemory.fs.errors import translated
from fsmemory.fs.generic import FsspecRoot, _find_at_line_start
from fsmemory.implementations import redis_client

__all__ = ["RedisRoot", "redis_client"]


class RedisRoot(FsspecRoot):
    """A directory in Redis (``redis://host:port/DB/path``)."""

    capabilities = Capabilities(conditional_write=True, native_append=True)

    @classmethod
    def _connect(cls, url: str, options: dict[str, Any]) -> tuple[Any, str]:
        """A :class:`~fsmemory.implementations.redis.RedisFileSystem` for ``url`` (options:
        ``prefix``, ``password``, ``client``, ...; see :meth:`FsspecRoot.from_url` for
        ``retry``).

        Raises:
            MissingDependencyError: redis-py is missing (``pip install 'fsmemory[redis]'``).
        """
        redis_client.redis_module()  # MissingDependencyError before fsspec wraps it
        from fsmemory.implementations import register

        with suppress(ValueError):  # another implementation was registered deliberately
            register(clobber=False)
        return super()._connect(url, options)

    def _read_versioned(self, full: str, path: str) -> Versioned:
        with translated(path):
            data, version = self.fs.cat_file_with_version(full)
        return Versioned(data, str(version))

    def _token(self, info: dict[str, Any]) -> str:
        return str(info.get("version"))

    def _put(self, full: str, path: str, data: bytes, if_version: str | None, create: bool) -> str:
        if if_version is None and not create:
            with translated(path):
                return str(self.fs.pipe_file(full, data))
        if create:
            expected = 0
        elif if_version is not None and if_version.isascii() and if_version.isdigit():
            expected = int(if_version)
        else:
            expected = -1
        if expected < 0 or (expected == 0 and not create):
            # Versions are positive integers: any other token can never match.
            raise ConflictError(f"{path!r} has no version {if_version!r}")
        with translated(path):
            return str(self.fs.pipe_if_version(full, data, expected))

    def append(
        self, path: str, data: bytes, *, line_safe: bool = False, unique: bool = False
    ) -> int:
        """Native, atomic ``APPEND``; returns the offset where ``data`` starts.

        With ``unique=True`` a transient failure is retried under the root's policy once a
        read of the file shows that the lost try did not land (when it did, its offset
        is returned). Otherwise the append is tried once: after a lost reply (a
        :class:`~fsmemory.errors.BackendError`) it may or may not have run.
        """
        full = self.full_path(path)
        payload = bytes(data)

        def once() -> int:
            with translated(path):
                offset, _version = self.fs.append_bytes(full, payload, line_safe=line_safe)
            return int(offset)

        if not unique or not payload:
            return once()

        def find() -> int:
            return _find_at_line_start(self._read_versioned(full, path).data, payload)

        return self.retry.append(once, find, what=f"append {path}")
