"""The one place that builds redis-py clients and translates their errors.

Used by the ``redis://`` filesystem
(:class:`~fsmemory.implementations.redis.RedisFileSystem`), the path store's
:class:`~fsmemory.store.RedisLock` and :class:`~fsmemory.store.RedisKnowledgeStore`, and
the Redis snapshot backend; re-exported by :mod:`fsmemory.fs.redis` for the layers above
storage.

* :func:`new_client` / :func:`client_from_url` build a synchronous or ``redis.asyncio``
  client that **never retries a command by itself** (a retried script after a lost
  reply could apply an append twice; fsmemory retries where it is safe).
* :func:`convert_client` turns a client of one flavour into the other with the same
  connection settings; :func:`is_async_client` tells them apart.
* :func:`redis_errors` turns every redis-py failure into
  :class:`~fsmemory.errors.BackendError` (with the original chained).

Importing this module does not import redis-py; each function does, and raises
:class:`~fsmemory.errors.MissingDependencyError` (``pip install 'fsmemory[redis]'``)
when it is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fsmemory.errors import BackendError, require

__all__ = [
    "client_from_url",
    "convert_client",
    "is_async_client",
    "new_client",
    "redis_errors",
    "redis_module",
]

# Connection settings that mean the same to both client flavours.
_PORTABLE = (
    "host",
    "port",
    "db",
    "username",
    "password",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_keepalive",
    "client_name",
    "encoding",
    "encoding_errors",
    "decode_responses",
)


def redis_module(*, asynchronous: bool = False) -> Any:
    """``redis`` or ``redis.asyncio``.

    Raises:
        MissingDependencyError: redis-py is not installed.
    """
    return require("redis.asyncio" if asynchronous else "redis", "redis")


def _no_retry() -> Any:
    retry = require("redis.retry", "redis")
    backoff = require("redis.backoff", "redis")
    return retry.Retry(backoff.NoBackoff(), 0)  # type: ignore[attr-defined]


def new_client(*, asynchronous: bool = False, **kwargs: Any) -> Any:
    """A client built from keyword arguments (``host``, ``port``, ``db``, ...), without
    client-side retries unless ``retry`` is given."""
    kwargs.setdefault("retry", _no_retry())
    return redis_module(asynchronous=asynchronous).Redis(**kwargs)


def client_from_url(url: str, *, asynchronous: bool = False, **kwargs: Any) -> Any:
    """A client for ``redis://[user:password@]host:port/DB`` (``rediss://`` for TLS),
    without client-side retries unless ``retry`` is given."""
    kwargs.setdefault("retry", _no_retry())
    return redis_module(asynchronous=asynchronous).Redis.from_url(url, **kwargs)


def is_async_client(client: Any) -> bool:
    """True for a ``redis.asyncio`` client."""
    return type(client).__module__.startswith("redis.asyncio")


def connection_settings(client: Any) -> dict[str, Any]:
    """The portable connection settings of ``client`` (address, database, credentials,
    timeouts, TLS, unix socket), as keyword arguments of :func:`new_client`."""
    pool = client.connection_pool
    source = dict(pool.connection_kwargs)
    kwargs = {key: source[key] for key in _PORTABLE if key in source}
    if "path" in source:
        kwargs["unix_socket_path"] = source["path"]
        kwargs.pop("host", None)
        kwargs.pop("port", None)
    if "ssl" in getattr(pool, "connection_class", type(None)).__name__.lower():
        kwargs["ssl"] = True
    return kwargs


def convert_client(client: Any, *, asynchronous: bool) -> Any:
    """``client`` itself when it is of the requested flavour, else a new client with its
    connection settings (a pool belongs to one flavour, so it is not shared)."""
    if is_async_client(client) == asynchronous:
        return client
    return redis_module(asynchronous=asynchronous).Redis(**connection_settings(client))


@contextmanager
def redis_errors(where: str) -> Iterator[None]:
    """Re-raise redis-py failures as :class:`~fsmemory.errors.BackendError` naming
    ``where`` (e.g. ``"redis 127.0.0.1:6379/0"``)."""
    try:
        yield
    except Exception as exc:
        if not isinstance(exc, redis_module().exceptions.RedisError):
            raise
        raise BackendError(f"{where}: {type(exc).__name__}: {exc}") from exc
