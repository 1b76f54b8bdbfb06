"""Turning a redis-py client of one flavour (sync / asyncio) into the other."""

from __future__ import annotations

from typing import Any

from fsmemory.errors import require

__all__ = ["is_async_client", "rebuild_client"]

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


def is_async_client(client: Any) -> bool:
    """True for a ``redis.asyncio`` client."""
    return type(client).__module__.startswith("redis.asyncio")


def rebuild_client(client: Any, *, asynchronous: bool) -> Any:
    """A client of the requested flavour with ``client``'s connection settings.

    The pool of the original is not shared (a pool belongs to one flavour); only the
    address, database, credentials and timeouts are carried over, plus TLS and unix
    sockets.
    """
    module = require("redis.asyncio" if asynchronous else "redis", "redis")
    pool = client.connection_pool
    source = dict(pool.connection_kwargs)
    kwargs = {key: source[key] for key in _PORTABLE if key in source}
    if "path" in source:
        kwargs["unix_socket_path"] = source["path"]
        kwargs.pop("host", None)
        kwargs.pop("port", None)
    if "ssl" in getattr(pool, "connection_class", type(None)).__name__.lower():
        kwargs["ssl"] = True
    return module.Redis(**kwargs)  # type: ignore[attr-defined]
