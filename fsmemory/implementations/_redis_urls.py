"""URLs of :class:`~fsmemory.implementations.redis.RedisFileSystem`: the database number in
the path, the ``?prefix=TENANT`` query, and the constructor arguments a URL names."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from fsmemory.errors import InvalidPathError

__all__ = ["kwargs_from_url", "split_db", "split_url", "take_prefix"]


def split_db(path: str) -> tuple[int | None, str]:
    """Split a URL path ``/DB/rest`` into (DB, rest); DB is None when absent."""
    head, _, rest = path.lstrip("/").partition("/")
    if head.isascii() and head.isdigit():
        return int(head), rest
    return None, path.lstrip("/")


#: ``?prefix=TENANT`` closing the authority or a path segment (fsspec composes URLs by
#: appending ``/name``, so the query a user typed at the end ends up in the middle)
_PREFIX_QUERY = re.compile(r"\?prefix=([^/?#]*)(?=/|\Z)")


def take_prefix(url: str) -> tuple[str, str | None]:
    """``url`` without its ``?prefix=TENANT`` query, and the tenant (None: no query).

    The query may close the authority or any path segment: ``redis://h/0/mem?prefix=T``
    and what fsspec makes of it when it joins a name (``redis://h/0/mem?prefix=T/x``)
    both address ``mem/...`` of tenant ``T``; so does ``redis://h:6379?prefix=T/mem``.

    Raises:
        InvalidPathError: the URL names two different prefixes.
    """
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    found: list[str] = []
    user, at, host = authority.rpartition("@")
    match = _PREFIX_QUERY.search(host)
    if match is not None and match.end() == len(host):
        found.append(match.group(1))
        authority = user + at + host[: match.start()]
    if slash:
        found += _PREFIX_QUERY.findall(path)
        path = _PREFIX_QUERY.sub("", path)
    tenants = {unquote(value) for value in found}
    if len(tenants) > 1:
        raise InvalidPathError(f"{url!r} names more than one Redis key prefix")
    return f"{scheme}://{authority}{slash}{path}", (tenants.pop() if tenants else None)


def split_url(url: str) -> tuple[SplitResult, str, str | None]:
    """Split a ``redis://`` URL into its authority, its path and its ``?prefix=`` option.

    Unlike :func:`urllib.parse.urlsplit`, ``?`` and ``#`` inside the path are part of
    the file name (``notes/what?.md``, ``c#sharp.md``): Redis URLs have no fragment, and
    the only query they know is ``?prefix=TENANT`` (see :func:`take_prefix`).

    Raises:
        InvalidPathError: the URL names two different prefixes.
    """
    plain, prefix = take_prefix(url)
    scheme, _, rest = plain.partition("://")
    authority, _, path = rest.partition("/")
    return urlsplit(f"{scheme}://{authority}"), path, prefix


def kwargs_from_url(path: str) -> dict[str, Any]:
    """Constructor kwargs of :class:`~fsmemory.implementations.redis.RedisFileSystem`
    (host, port, db, username, password, ssl, prefix) a URL names; ``{}`` for a plain path.

    Raises:
        InvalidPathError: a bad port, or two different prefixes.
    """
    if not isinstance(path, str) or not path.startswith(("redis://", "rediss://")):
        return {}
    url, url_path, prefix = split_url(path)
    out: dict[str, Any] = {}
    if url.hostname:
        out["host"] = url.hostname
    try:
        port = url.port
    except ValueError as exc:
        raise InvalidPathError(f"invalid port in Redis URL: {exc}") from exc
    if port is not None:
        out["port"] = port
    if url.username:
        out["username"] = unquote(url.username)
    if url.password is not None:
        out["password"] = unquote(url.password)
    db, _ = split_db(url_path)
    if db is not None:
        out["db"] = db
    if url.scheme == "rediss":
        out["ssl"] = True
    if prefix is not None:
        out["prefix"] = prefix
    return out
