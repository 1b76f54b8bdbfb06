"""``redis://`` and ``rediss://``: an fsspec filesystem whose files live in Redis.

URL form::

    redis://[user:password@]host:port/DB/path/to/file[?prefix=TENANT]
    rediss://...                                  (the same over TLS)

The first path segment is the database number when it is all digits; otherwise the
database is 0 and the whole path names the file (so a top-level directory with a purely
numeric name needs an explicit database: ``redis://host/0/2024/notes.md``).

Storage model (see :mod:`fsmemory.implementations._redis_lua` for the details). All keys of
one tenant start with ``{prefix}:`` -- the braces make the prefix a cluster hash tag and
keep two tenants apart even when one prefix starts with the other:

- ``{prefix}:d:<path>``  the file's bytes, a plain string (GETRANGE/APPEND/STRLEN are native),
- ``{prefix}:m:<path>``  a hash with ``version``, ``mtime``, ``created`` (server clock),
- ``{prefix}:i:<dir>``   a hash of the directory's immediate children (``f`` or ``d``),
- ``{prefix}:seq``       the counter versions are drawn from.

Every mutation is one Lua script, so data, metadata and directory indexes change together
or not at all, and ``ls`` reads one hash instead of scanning the keyspace. Versions
increase monotonically and are never reused, which makes :meth:`RedisFileSystem.pipe_if_version`
a safe compare-and-swap (no ABA after a delete and re-create).

Directories: writing a file creates its parent directories implicitly; an implicit directory
disappears with its last child (like an object store). Directories made by ``mkdir`` /
``makedirs`` are explicit and stay until ``rmdir`` / ``rm(recursive=True)``.

Needs Redis >= 5 (scripts read the server clock with TIME before writing; tested with
6.2). The client this module builds never retries a command by itself: a retried script
after a lost reply could apply an append twice. Retry at a higher level, where the
operation is known to be idempotent (or is a compare-and-swap).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, NoReturn
from urllib.parse import quote

from fsspec.callbacks import DEFAULT_CALLBACK
from fsspec.spec import AbstractFileSystem, make_instance
from fsspec.utils import isfilelike, stringify_path

from fsmemory.errors import (
    BackendError,
    ConflictError,
    InvalidPathError,
    KeyNotFoundError,
    MissingDependencyError,
)
from fsmemory.implementations._redis_file import RedisFile
from fsmemory.implementations._redis_lua import SCRIPTS
from fsmemory.implementations._redis_urls import kwargs_from_url, split_db, split_url, take_prefix
from fsmemory.implementations.redis_client import new_client, redis_errors

try:
    import redis
    from redis.commands.core import Script
except ImportError as exc:  # exercised by the missing-extra tests
    raise MissingDependencyError("redis", "redis") from exc

__all__ = ["DEFAULT_PREFIX", "BytesLike", "RedisFile", "RedisFileSystem"]

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "fsm"
"""Key prefix used when none is given: keys look like ``{fsm}:d:notes/MEMORY.md``."""

_PROTOCOLS = ("redis", "rediss")
_FORBIDDEN_PREFIX_CHARS = frozenset("{}\x00")
BytesLike = bytes | bytearray | memoryview
"""Data accepted by the write methods."""


def _to_bytes(data: BytesLike) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"expected bytes-like data, got {type(data).__name__}")


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _epoch(value: Any) -> float:
    try:
        return float(_text(value) or 0.0)
    except ValueError:
        return 0.0


class RedisFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """An fsspec filesystem storing files, metadata and directory indexes in Redis.

    Args:
        host: Redis host name or address.
        port: Redis TCP port.
        db: Redis database number.
        username: ACL user name (Redis 6+), or None.
        password: password, or None.
        ssl: connect with TLS (what ``rediss://`` means).
        prefix: key prefix keeping tenants apart; may not contain ``{``, ``}`` or NUL.
        client: an existing ``redis.Redis`` to use instead of building one. Pickling the
            filesystem then records its connection settings, never the live client.
        socket_timeout: seconds to wait for a reply.
        socket_connect_timeout: seconds to wait for a connection.
        connection_kwargs: extra keyword arguments for ``redis.Redis`` (TLS certificates,
            ``max_connections``, ``unix_socket_path``, ...).
        **storage_options: passed to :class:`fsspec.AbstractFileSystem`.

    The connection pool is created lazily on first use, so constructing (or unpickling)
    a filesystem does no I/O. Raises :class:`fsmemory.errors.BackendError` when Redis is
    unreachable or refuses a command, :class:`FileNotFoundError` for missing files and
    :class:`fsmemory.errors.InvalidPathError` for paths with ``.``/``..`` segments or NUL.
    """

    protocol: ClassVar[tuple[str, ...]] = _PROTOCOLS
    root_marker: ClassVar[str] = ""

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        ssl: bool = False,
        prefix: str = DEFAULT_PREFIX,
        client: redis.Redis | None = None,
        socket_timeout: float | None = 30.0,
        socket_connect_timeout: float | None = 10.0,
        connection_kwargs: Mapping[str, Any] | None = None,
        **storage_options: Any,
    ) -> None:
        super().__init__(**storage_options)
        if not prefix or _FORBIDDEN_PREFIX_CHARS & set(prefix):
            raise InvalidPathError(f"invalid Redis key prefix {prefix!r}")
        self.host = host
        self.port = int(port)
        self.db = int(db)
        self.username = username
        self.ssl = ssl
        self.prefix = prefix
        self._password = password
        self._socket_timeout = socket_timeout
        self._socket_connect_timeout = socket_connect_timeout
        self._connection_kwargs = dict(connection_kwargs or {})
        self._client: redis.Redis | None = client
        if client is not None:
            conn = client.connection_pool.connection_kwargs
            self.host = str(conn.get("host", host))
            self.port = int(conn.get("port", port))
            self.db = int(conn.get("db", db))
        self._scripts: dict[str, Script] = {}
        self._lock = threading.Lock()
        self._base = "{" + prefix + "}:"
        self._seq_key = self._base + "seq"

    # ------------------------------------------------------------------ connection

    @property
    def client(self) -> redis.Redis:
        """The ``redis.Redis`` client, created (with its connection pool) on first use."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    kwargs: dict[str, Any] = {
                        "host": self.host,
                        "port": self.port,
                        "db": self.db,
                        "username": self.username,
                        "password": self._password,
                        "ssl": self.ssl,
                        "socket_timeout": self._socket_timeout,
                        "socket_connect_timeout": self._socket_connect_timeout,
                    }
                    kwargs.update(self._connection_kwargs)
                    logger.debug("connecting to redis %s:%s/%s", self.host, self.port, self.db)
                    self._client = new_client(**kwargs)
        return self._client

    def _script(self, name: str) -> Script:
        script = self._scripts.get(name)
        if script is None:
            script = self.client.register_script(SCRIPTS[name])
            self._scripts[name] = script
        return script

    def _call(self, name: str, path: str, *args: str | bytes | int) -> list[Any]:
        with redis_errors(f"redis {self.host}:{self.port}/{self.db}"):
            reply = self._script(name)(keys=[self._seq_key], args=[self._base, path, *args])
        if not isinstance(reply, list) or not reply:
            raise BackendError(f"unexpected reply from Redis script {name!r}: {reply!r}")
        reply[0] = _text(reply[0])
        return reply

    @staticmethod
    def _fail(status: str, path: str, reply: list[Any]) -> NoReturn:
        if status == "ENOENT":
            raise KeyNotFoundError(errno.ENOENT, "No such file or directory", path)
        if status == "EISDIR":
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if status == "ENOTDIR":
            raise NotADirectoryError(errno.ENOTDIR, "A parent is a file, not a directory", path)
        if status == "EEXIST":
            raise FileExistsError(errno.EEXIST, "File exists", path)
        if status == "ENOTEMPTY":
            raise OSError(errno.ENOTEMPTY, "Directory not empty", path)
        if status == "CONFLICT":
            raise ConflictError(f"{path}: version is {int(reply[1])}, not the expected one")
        if status == "CHANGED":
            raise ConflictError(f"{path}: file was replaced while being read; reopen it")
        raise BackendError(f"{path}: unexpected status {status!r} from Redis")

    def _ok(self, name: str, path: str, *args: str | bytes | int) -> list[Any]:
        reply = self._call(name, path, *args)
        if reply[0] != "OK":
            self._fail(reply[0], path, reply)
        return reply

    # ------------------------------------------------------------------ URLs, pickling

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        """Turn ``redis://host:port/DB/a/b`` (or ``/a/b/``) into the path ``a/b``."""
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        text = stringify_path(path)
        for proto in _PROTOCOLS:
            if text.startswith(proto + "::"):
                text = text[len(proto) + 2 :]
                break
        if text.startswith(("redis://", "rediss://")):
            text = split_db(split_url(text)[1])[1]
        return "/".join(seg for seg in text.split("/") if seg)

    @staticmethod
    def _get_kwargs_from_urls(path: str) -> dict[str, Any]:
        """Constructor kwargs (host, port, db, username, password, ssl, prefix) of a URL."""
        return kwargs_from_url(path)

    def unstrip_protocol(self, name: str) -> str:
        """Full URL of ``name`` on this server (without credentials), naming the tenant
        (``?prefix=``) unless it is the default one: opened again, the URL addresses
        the same key."""
        if name.startswith(("redis://", "rediss://")):
            return name
        scheme = "rediss" if self.ssl else "redis"
        url = f"{scheme}://{self.host}:{self.port}/{self.db}/{self._strip_protocol(name)}"
        if self.prefix == DEFAULT_PREFIX:
            return url
        return f"{url}?prefix={quote(self.prefix, safe='')}"

    @property
    def fsid(self) -> str:
        """Identity of the storage this filesystem addresses: server, database and prefix."""
        return f"redis://{self.host}:{self.port}/{self.db}/{{{self.prefix}}}"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the constructor arguments; a live client becomes its connection settings."""
        options = dict(self.storage_options)
        client = options.pop("client", None)
        if client is not None:
            conn = client.connection_pool.connection_kwargs
            for key in ("host", "port", "db", "username", "password"):
                if conn.get(key) is not None:
                    options[key] = conn[key]
            if "ssl" in client.connection_pool.connection_class.__name__.lower():
                options["ssl"] = True
        return make_instance, (type(self), self.storage_args, options)

    # ------------------------------------------------------------------ paths

    def _path(self, path: Any) -> str:
        raw = stringify_path(path)
        if "\x00" in raw:
            raise InvalidPathError(f"NUL byte in path {raw!r}")
        if raw.startswith(("redis://", "rediss://")):
            self._check_same_storage(raw)
        norm: str = self._strip_protocol(raw)
        if any(seg in (".", "..") for seg in norm.split("/")):
            raise InvalidPathError(f"'.' and '..' segments are not allowed: {raw!r}")
        return norm

    def _check_same_storage(self, url: str) -> None:
        """Refuse a URL naming another database or tenant than this filesystem's: its
        path would otherwise silently address a key of this one."""
        _, url_path, prefix = split_url(url)
        db, _ = split_db(url_path)
        if (db is not None and db != self.db) or (prefix is not None and prefix != self.prefix):
            raise InvalidPathError(
                f"{url!r} names another Redis database or prefix than this filesystem's "
                f"({self.db}, {self.prefix!r})"
            )

    def _composable(self, path: Any) -> Any:
        """``path`` (a URL, a plain path, or a list of them) without ``?prefix=`` queries.

        fsspec's bulk operations read a ``?`` in a path they are given as a glob, so a
        URL carrying the tenant would copy ``x`` to ``target/newfile?prefix=T/x``
        instead of ``target/newfile``: the query is checked against this filesystem's
        prefix and dropped before fsspec sees it.

        Raises:
            InvalidPathError: the URL names another database or prefix.
        """
        if isinstance(path, list | tuple):
            return [self._composable(p) for p in path]
        if isinstance(path, str) and path.startswith(("redis://", "rediss://")):
            self._check_same_storage(path)
            return take_prefix(path)[0]
        return path

    def copy(self, path1: Any, path2: Any, *args: Any, **kwargs: Any) -> Any:
        """fsspec's ``copy`` (and so ``cp`` and ``mv``) on paths whose ``?prefix=``
        query is checked and dropped first (see :meth:`_composable`)."""
        return super().copy(self._composable(path1), self._composable(path2), *args, **kwargs)

    def get(self, rpath: Any, lpath: Any, *args: Any, **kwargs: Any) -> Any:
        """fsspec's ``get`` with the remote paths' ``?prefix=`` query checked and
        dropped first (see :meth:`_composable`)."""
        return super().get(self._composable(rpath), lpath, *args, **kwargs)

    def put(self, lpath: Any, rpath: Any, *args: Any, **kwargs: Any) -> Any:
        """fsspec's ``put`` with the remote paths' ``?prefix=`` query checked and
        dropped first (see :meth:`_composable`)."""
        return super().put(lpath, self._composable(rpath), *args, **kwargs)

    @staticmethod
    def _join(parent: str, name: str) -> str:
        return f"{parent}/{name}" if parent else name

    @staticmethod
    def _file_info(name: str, size: Any, version: Any, mtime: Any, created: Any) -> dict[str, Any]:
        return {
            "name": name,
            "size": int(size),
            "type": "file",
            "mtime": _epoch(mtime),
            "created": _epoch(created),
            "version": int(version),
        }

    # ------------------------------------------------------------------ reading

    def _stat(self, path: str) -> dict[str, Any]:
        reply = self._ok("info", path)
        if _text(reply[1]) == "d":
            return {"name": path, "size": 0, "type": "directory"}
        info = self._file_info(path, *reply[2:6])
        info["_base"] = int(reply[6])
        return info

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        """Details of a file (name, size, type, mtime, created, version) or directory.

        Raises:
            FileNotFoundError: nothing exists at ``path``.
        """
        info = self._stat(self._path(path))
        info.pop("_base", None)
        return info

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        """List a directory from its index (one hash read, never a keyspace scan).

        Args:
            path: a directory (its children are listed) or a file (itself is listed).
            detail: return info dicts (as :meth:`info`) instead of names.

        Returns:
            Entries sorted by name.

        Raises:
            FileNotFoundError: nothing exists at ``path``.
        """
        p = self._path(path)
        reply = self._call("ls", p, "1" if detail else "0")
        if reply[0] == "FILE":
            entries = [self._file_info(p, *reply[1:5])]
        elif reply[0] == "OK":
            entries = []
            for i in range(1, len(reply), 6):
                name = self._join(p, _text(reply[i]))
                if _text(reply[i + 1]) == "f":
                    entries.append(self._file_info(name, *reply[i + 2 : i + 6]))
                else:
                    entries.append({"name": name, "size": 0, "type": "directory"})
        else:
            self._fail(reply[0], p, reply)
        entries.sort(key=lambda e: e["name"])
        if detail:
            return entries
        return [e["name"] for e in entries]

    def exists(self, path: str, **kwargs: Any) -> bool:
        """Whether a file or directory exists; backend failures raise instead of hiding."""
        try:
            self._stat(self._path(path))
        except FileNotFoundError:
            return False
        return True

    def isdir(self, path: str) -> bool:
        """Whether ``path`` is a directory."""
        try:
            return bool(self._stat(self._path(path))["type"] == "directory")
        except FileNotFoundError:
            return False

    def isfile(self, path: str) -> bool:
        """Whether ``path`` is a file."""
        try:
            return bool(self._stat(self._path(path))["type"] == "file")
        except FileNotFoundError:
            return False

    def version(self, path: str) -> int:
        """The file's version (generation), or 0 when no file exists at ``path``.

        Versions come from one counter per prefix: every write or append gives the file a
        new, larger number, and a number is never reused, not even after a delete.
        """
        try:
            info = self._stat(self._path(path))
        except FileNotFoundError:
            return 0
        return int(info.get("version", 0))

    def checksum(self, path: str) -> int:
        """The file's version: it changes whenever the content may have changed."""
        return int(self.info(path)["version"])

    def modified(self, path: str) -> datetime:
        """Last modification time (server clock) as an aware UTC datetime."""
        return self._timestamp(path, "mtime")

    def created(self, path: str) -> datetime:
        """Creation time (server clock) as an aware UTC datetime."""
        return self._timestamp(path, "created")

    def _timestamp(self, path: str, field: str) -> datetime:
        info = self.info(path)
        if info["type"] != "file":
            raise IsADirectoryError(errno.EISDIR, "Directories carry no timestamps", path)
        return datetime.fromtimestamp(info[field], tz=UTC)

    def _read(
        self, path: str, start: int | None, end: int | None, base: int | None = None
    ) -> tuple[bytes, int]:
        reply = self._ok(
            "read",
            path,
            "" if start is None else int(start),
            "" if end is None else int(end),
            "" if base is None else int(base),
        )
        return bytes(reply[1]), int(reply[2])

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        """Read a file, or the slice ``[start:end]`` of it (Python slice semantics).

        The slice is computed and read on the server (GETRANGE) in one atomic step.

        Raises:
            FileNotFoundError: the file does not exist.
            IsADirectoryError: ``path`` is a directory.
        """
        return self._read(self._path(path), start, end)[0]

    def cat_file_with_version(
        self, path: str, start: int | None = None, end: int | None = None
    ) -> tuple[bytes, int]:
        """Read a file (or ``[start:end]``) and the version it had, atomically.

        Feed the version to :meth:`pipe_if_version` for a read-modify-write cycle.
        """
        return self._read(self._path(path), start, end)

    # ------------------------------------------------------------------ writing

    def _write(self, path: str, data: BytesLike, mode: str, expected: int = 0) -> int:
        return int(self._ok("write", path, _to_bytes(data), mode, int(expected))[1])

    def pipe_file(self, path: str, value: BytesLike, mode: str = "overwrite", **kwargs: Any) -> int:
        """Write a whole file atomically and return its new version.

        Args:
            path: file to write; missing parent directories are created.
            value: the bytes.
            mode: ``"overwrite"``, or ``"create"`` to fail when the file exists.

        Raises:
            FileExistsError: ``mode="create"`` and the file exists.
            IsADirectoryError: ``path`` is a directory.
            NotADirectoryError: an ancestor of ``path`` is a file.
        """
        if mode not in ("overwrite", "create"):
            raise ValueError(f"mode must be 'overwrite' or 'create', not {mode!r}")
        return self._write(self._path(path), value, "x" if mode == "create" else "w")

    def pipe_if_version(self, path: str, data: BytesLike, version: int) -> int:
        """Compare-and-swap: write ``data`` only if the file's version is ``version``.

        Args:
            path: file to write.
            data: the new content.
            version: the version the caller read (from :meth:`info`, :meth:`version` or
                :meth:`cat_file_with_version`); 0 means "the file must not exist".

        Returns:
            The new version.

        Raises:
            fsmemory.errors.ConflictError: the file's version is not ``version``.
        """
        if version < 0:
            raise ValueError("version must be >= 0")
        return self._write(self._path(path), data, "c", version)

    def append_bytes(
        self, path: str, data: BytesLike, *, line_safe: bool = False
    ) -> tuple[int, int]:
        """Append atomically on the server (APPEND), creating the file if missing.

        Concurrent appenders never interleave or lose bytes; the cost does not depend on
        the file's size.

        Args:
            path: the file.
            data: bytes to append.
            line_safe: when the file does not end with a newline, add one first (in the
                same atomic script) so ``data`` starts a fresh line.

        Returns:
            ``(offset, version)``: where ``data`` starts in the file, and the new version.
        """
        p = self._path(path)
        reply = self._ok("append", p, _to_bytes(data), "1" if line_safe else "")
        return int(reply[1]), int(reply[2])

    def touch(self, path: str, truncate: bool = True, **kwargs: Any) -> None:
        """Create an empty file, or (``truncate=False``) bump an existing file's mtime."""
        if truncate:
            self.pipe_file(path, b"")
        else:
            self.append_bytes(path, b"")

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """Copy a file on the server in one atomic step; a directory source makes a dir."""
        src, dst = self._path(path1), self._path(path2)
        reply = self._call("copy", src, dst, "w")
        if reply[0] == "DIR":
            self.makedirs(dst, exist_ok=True)
        elif reply[0] != "OK":
            self._fail(reply[0], src if reply[0] == "ENOENT" else dst, reply)

    def put_file(
        self,
        lpath: str,
        rpath: str,
        callback: Any = DEFAULT_CALLBACK,
        mode: str = "overwrite",
        **kwargs: Any,
    ) -> None:
        """Upload one local file (read whole, written in one atomic step)."""
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
            return
        with open(lpath, "rb") as f:
            data = f.read()
        callback.set_size(len(data))
        self.pipe_file(rpath, data, mode=mode)
        callback.relative_update(len(data))

    def get_file(
        self,
        rpath: str,
        lpath: Any,
        callback: Any = DEFAULT_CALLBACK,
        outfile: Any = None,
        **kwargs: Any,
    ) -> None:
        """Download one file with a single atomic read (a directory makes a local dir)."""
        if outfile is None and isfilelike(lpath):
            outfile = lpath
        try:
            data = self.cat_file(rpath)
        except IsADirectoryError:
            if outfile is None:
                os.makedirs(lpath, exist_ok=True)
                return
            raise
        callback.set_size(len(data))
        if outfile is None:
            parent = os.path.dirname(os.fspath(lpath))
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(lpath, "wb") as f:
                f.write(data)
        else:
            outfile.write(data)
        callback.relative_update(len(data))

    # ------------------------------------------------------------------ deleting, dirs

    def rm_file(self, path: str) -> None:
        """Delete one file.

        Raises:
            FileNotFoundError: no such file.
            IsADirectoryError: ``path`` is a directory.
        """
        self._ok("rm_file", self._path(path))

    def _rm(self, path: str) -> None:
        self.rm_file(path)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        """Delete files, or (``recursive=True``) whole trees, each in one atomic script.

        Args:
            path: a path, a glob pattern or a list of them.
            recursive: delete directories with their contents.
            maxdepth: only delete that many levels down (directories still holding
                deeper content are kept).

        Raises:
            FileNotFoundError: nothing matched.
            IsADirectoryError: a directory without ``recursive=True``.
        """
        if recursive and maxdepth is None:
            for p in self.expand_path(path, recursive=False):
                self._ok("rmtree", self._path(p))
            return
        for p in reversed(self.expand_path(path, recursive=recursive, maxdepth=maxdepth)):
            q = self._path(p)
            try:
                info = self._stat(q)
            except FileNotFoundError:
                if recursive:
                    continue  # an implicit directory that vanished with its last child
                raise
            if info["type"] == "file":
                self.rm_file(q)
            elif not recursive:
                raise IsADirectoryError(errno.EISDIR, "Use recursive=True for a directory", q)
            else:
                try:
                    self.rmdir(q)
                except OSError as exc:
                    if exc.errno != errno.ENOTEMPTY:
                        raise

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """Create an (explicit) directory that persists while empty.

        Raises:
            FileExistsError: something already exists at ``path``.
            FileNotFoundError: the parent is missing and ``create_parents`` is False.
            NotADirectoryError: an ancestor is a file.
        """
        self._ok("mkdir", self._path(path), "1" if create_parents else "0", "0")

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Create a directory and its missing parents (all explicit).

        Raises:
            FileExistsError: ``path`` exists (and ``exist_ok`` is False) or is a file.
        """
        self._ok("mkdir", self._path(path), "1", "1" if exist_ok else "0")

    def rmdir(self, path: str) -> None:
        """Remove an empty directory (the root is silently kept).

        Raises:
            OSError: the directory is not empty (``errno.ENOTEMPTY``).
            FileNotFoundError: no such directory.
            NotADirectoryError: ``path`` is a file.
        """
        self._ok("rmdir", self._path(path))

    # ------------------------------------------------------------------ files

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | str | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> RedisFile:
        return RedisFile(
            self,
            self._path(path),
            mode=mode,
            block_size=block_size,
            autocommit=autocommit,
            cache_options=cache_options,
            **kwargs,
        )
