"""``sqlite://`` storage root: a whole store in one durable local file.

URL form: ``sqlite:///absolute/path/store.db`` or ``sqlite://relative/store.db``.
Storage options: ``durable`` (``synchronous=FULL`` instead of ``NORMAL``) and ``timeout``
(seconds to wait for another writer, default 30).

* ``files(path, size, base, nchunks, version, mtime)`` holds each file's metadata and
  ``chunks(path, start, data)`` its bytes by offset. A write stores one chunk; an append
  adds a chunk row and updates the metadata row (rewriting a blob would copy the whole
  file per call), so it is O(1) in the file size and a ranged read seeks straight to
  its first chunk. When the appended chunks outgrow the first one they are folded back
  into one (amortized O(1)).
* Every mutation is one ``BEGIN IMMEDIATE`` transaction (atomic across threads and
  processes), in WAL mode with a busy timeout: readers never block writers, writers
  queue. Versions are random 63-bit integers drawn per write (no ABA).
* Each thread (and each process after a ``fork``) gets its own connection.
* Inline on the path store's event loop (inside :func:`fsmemory.fs._nowait.no_wait`) a
  transaction that finds the write lock held fails at once with
  :class:`~fsmemory.fs._nowait.WouldBlock` and the store repeats the call in a worker
  thread, where it waits up to ``timeout`` (then
  :class:`~fsmemory.errors.LockTimeoutError`; any other SQLite failure is a
  :class:`~fsmemory.errors.BackendError`).

There is no fsspec filesystem behind this root: :attr:`SqliteRoot.fs` is ``None``.
"""

from __future__ import annotations

import builtins
import os
import secrets
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

from fsmemory.errors import (
    BackendError,
    ConflictError,
    InvalidPathError,
    KeyNotFoundError,
    LockTimeoutError,
)
from fsmemory.fs._nowait import WouldBlock, must_not_wait, retry_until
from fsmemory.fs.base import (
    Capabilities,
    FileInfo,
    StorageRoot,
    Versioned,
    check_options,
)
from fsmemory.fs.paths import RESERVED_PREFIX, children, is_reserved_name, validate_path

__all__ = ["SqliteRoot"]

#: fold the chunks into one once there are at least this many of them and the appended
#: ones hold at least as many bytes as the first (so each byte is copied O(1) times)
COMPACT_MIN_CHUNKS = 256
LEASE_SECONDS = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path    TEXT PRIMARY KEY,
    size    INTEGER NOT NULL,
    base    INTEGER NOT NULL,
    nchunks INTEGER NOT NULL,
    version INTEGER NOT NULL,
    mtime   REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    path  TEXT NOT NULL,
    start INTEGER NOT NULL,
    data  BLOB NOT NULL,
    PRIMARY KEY (path, start)
);
CREATE TABLE IF NOT EXISTS locks (
    name    TEXT PRIMARY KEY,
    owner   TEXT NOT NULL,
    expires REAL NOT NULL
);
"""


def _new_version() -> int:
    return secrets.randbits(63)


def _has_reserved(rel: str) -> bool:
    return any(is_reserved_name(segment) for segment in rel.split("/"))


def _join(conn: sqlite3.Connection, path: str) -> bytes:
    """The content of ``path``: its chunks in offset order."""
    return b"".join(
        bytes(r[0])
        for r in conn.execute("SELECT data FROM chunks WHERE path = ? ORDER BY start", (path,))
    )


def _last_byte(conn: sqlite3.Connection, path: str) -> bytes:
    row = conn.execute(
        "SELECT substr(data, -1) FROM chunks WHERE path = ? ORDER BY start DESC LIMIT 1", (path,)
    ).fetchone()
    return bytes(row[0]) if row is not None else b""


def _compact(conn: sqlite3.Connection, path: str) -> None:
    """Fold the chunks of ``path`` into one chunk at offset 0."""
    data = _join(conn, path)
    conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
    conn.execute("INSERT INTO chunks (path, start, data) VALUES (?, 0, ?)", (path, data))


def _busy(exc: sqlite3.Error) -> bool:
    """True for "database is locked" / "database table is locked" (SQLITE_BUSY/LOCKED)."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def _upper(prefix: str) -> str:
    """Exclusive upper bound of the paths under ``prefix/`` ('/' + 1 == '0')."""
    return prefix + "0"


def _under(prefix: str) -> tuple[str, list[Any], int]:
    """The SQL condition keeping the paths under the folder ``prefix`` (validated; all
    paths for ``""``), its arguments, and the length of ``prefix/``."""
    validate_path(prefix, allow_empty=True)
    if not prefix:
        return "1", [], 0
    return "path >= ? AND path < ?", [f"{prefix}/", _upper(prefix)], len(prefix) + 1


class SqliteRoot(StorageRoot):
    """A store kept in one SQLite database file.

    Args:
        database: path of the database file (created with its parent folder).
        url: the URL it was opened from, for messages.
        durable: ``synchronous=FULL`` (survives power loss) instead of ``NORMAL``
            (survives process crashes).
        timeout: seconds to wait for a concurrent writer before failing.
    """

    capabilities = Capabilities(conditional_write=True, native_append=True, local_io=True)

    def __init__(
        self,
        database: str | os.PathLike[str],
        *,
        url: str | None = None,
        durable: bool = False,
        timeout: float = 30.0,
    ) -> None:
        text = os.fspath(database)
        if not text or text == ":memory:" or "\x00" in text:
            raise InvalidPathError(f"not a usable SQLite database path: {text!r}")
        self.database = os.path.abspath(os.path.expanduser(text))
        self.root = self.database
        self.url = url if url is not None else f"sqlite://{self.database}"
        self.fs: Any = None
        self.durable = durable
        self.timeout = timeout
        self._local = threading.local()
        self._guard = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._orphans: list[sqlite3.Connection] = []
        self._pid = os.getpid()

    @classmethod
    def from_url(cls, url: str, options: Mapping[str, Any] | None = None) -> SqliteRoot:
        """Open ``sqlite:///path/to/file.db`` (options: ``durable``, ``timeout``).

        Raises:
            InvalidInputError: any other option.
        """
        _, _, rest = url.partition("://")
        rest = rest.split("?", 1)[0]
        opts = dict(options or {})
        check_options("sqlite://", opts, ("durable", "timeout"))
        return cls(
            rest,
            url=url,
            durable=bool(opts.get("durable", False)),
            timeout=float(opts.get("timeout", 30.0)),
        )

    # -- connections -------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:
            # Inherited across fork: never touch (or close) the parent's connections.
            with self._guard:
                self._orphans.extend(self._connections)
                self._connections = []
                self._local = threading.local()
                self._pid = os.getpid()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        quick = must_not_wait()
        if conn is None:
            conn = self._connect(quick)
            self._local.conn = conn
            self._local.quick = quick
            with self._guard:
                self._connections.append(conn)
        elif quick != self._local.quick:
            # Inline on an event loop: never wait for the write lock, fail at once.
            wait_ms = 0 if quick else int(self.timeout * 1000)
            conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
            self._local.quick = quick
        return conn

    def _connect(self, quick: bool) -> sqlite3.Connection:
        os.makedirs(os.path.dirname(self.database), exist_ok=True)
        with self._errors():
            conn = sqlite3.connect(
                self.database, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        conn.execute(f"PRAGMA busy_timeout = {0 if quick else int(self.timeout * 1000)}")
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with self._errors():
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if str(mode).lower() != "wal":  # pragma: no cover - exotic filesystems
                        raise sqlite3.OperationalError(f"WAL mode unavailable ({mode})")
                    conn.execute("PRAGMA synchronous = " + ("FULL" if self.durable else "NORMAL"))
                    conn.executescript(_SCHEMA)
                break
            except LockTimeoutError:
                if quick or time.monotonic() > deadline:
                    conn.close()
                    raise
                time.sleep(0.01)
            except BaseException:
                conn.close()
                raise
        return conn

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite failures as fsmemory errors: a held write lock is a lock timeout (or,
        inline on an event loop, :class:`WouldBlock`), anything else a backend error."""
        try:
            yield
        except sqlite3.Error as exc:
            if not _busy(exc):
                raise BackendError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
            if must_not_wait():
                raise WouldBlock(f"{self.url}: another connection holds the write lock") from exc
            raise LockTimeoutError(
                f"{self.url}: another connection held the write lock for {self.timeout} s"
            ) from exc

    @contextmanager
    def _tx(self, begin: str = "BEGIN") -> Iterator[sqlite3.Connection]:
        """One transaction: committed when the block succeeds, rolled back otherwise."""
        with self._errors():
            conn = self._conn()
            conn.execute(begin)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _write_tx(self) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction: takes the database's write lock at once."""
        return self._tx("BEGIN IMMEDIATE")

    def _query(self, sql: str, args: Any) -> builtins.list[Any]:
        """The rows of one read-only statement (outside a transaction)."""
        with self._errors():
            return self._conn().execute(sql, args).fetchall()

    # -- reads -------------------------------------------------------------------------
    def read(self, path: str) -> Versioned:
        """Read a whole file with its version. Raises :class:`KeyNotFoundError`."""
        validate_path(path)
        with self._tx() as conn:
            row = conn.execute("SELECT version FROM files WHERE path = ?", (path,)).fetchone()
            if row is None:
                raise KeyNotFoundError(path)
            data = _join(conn, path)
        return Versioned(data, str(row[0]))

    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """Read bytes ``[start, end)``, touching only the chunks that overlap it."""
        self.check_range(start, end)
        validate_path(path)
        with self._tx() as conn:
            row = conn.execute("SELECT size FROM files WHERE path = ?", (path,)).fetchone()
            if row is None:
                raise KeyNotFoundError(path)
            stop = row[0] if end is None else min(end, row[0])
            if stop <= start:
                return b""
            (first,) = conn.execute(
                "SELECT max(start) FROM chunks WHERE path = ? AND start <= ?", (path, start)
            ).fetchone()
            rows = conn.execute(
                "SELECT start, data FROM chunks WHERE path = ? AND start >= ? AND start < ?"
                " ORDER BY start",
                (path, first or 0, stop),
            )
            parts = []
            for chunk_start, chunk in rows:
                a = max(start - chunk_start, 0)
                b = min(stop - chunk_start, len(chunk))
                if b > a:
                    parts.append(bytes(chunk[a:b]))
        return b"".join(parts)

    def stat(self, path: str) -> FileInfo | None:
        """Size, mtime and version (the token is the compare-and-swap version)."""
        validate_path(path)
        rows = self._query("SELECT size, mtime, version FROM files WHERE path = ?", (path,))
        if not rows:
            return None
        size, mtime, version = rows[0]
        return FileInfo(path, int(size), float(mtime), str(version))

    def list(self, prefix: str = "", *, recursive: bool = False) -> list[FileInfo]:
        """Files under ``prefix`` in path order (one index range scan)."""
        where, args, cut = _under(prefix)
        if not recursive:
            where += " AND instr(substr(path, ?), '/') = 0"
            args.append(cut + 1)
        sql = f"SELECT path, size, mtime, version FROM files WHERE {where} ORDER BY path"
        return [
            FileInfo(p, int(size), float(mtime), str(version))
            for p, size, mtime, version in self._query(sql, args)
            if RESERVED_PREFIX not in p or not _has_reserved(p[cut:])
        ]

    def list_dirs(self, prefix: str = "") -> builtins.list[str]:
        """Immediate subdirectory names implied by the files under ``prefix``."""
        where, args, cut = _under(prefix)
        sql = (
            "SELECT DISTINCT substr(path, ?, instr(substr(path, ?), '/') - 1) FROM files"
            f" WHERE instr(substr(path, ?), '/') > 0 AND {where}"
        )
        rows = self._query(sql, [cut + 1] * 3 + args)
        return sorted(str(r[0]) for r in rows if not is_reserved_name(str(r[0])))

    def list_names(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """Names of the immediate files and subdirectories of ``prefix``, unsorted: one
        index range scan and no per-file metadata."""
        where, args, cut = _under(prefix)
        rows = self._query(f"SELECT substr(path, ?) FROM files WHERE {where}", [cut + 1, *args])
        return children(rest for (rest,) in rows)

    # -- writes ------------------------------------------------------------------------
    def write(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Replace a file in one transaction (see :meth:`StorageRoot.write`)."""
        self.check_condition(if_version, create_only)
        validate_path(path)
        payload = bytes(data)
        version = _new_version()
        with self._write_tx() as conn:
            row = conn.execute("SELECT version FROM files WHERE path = ?", (path,)).fetchone()
            if create_only and row is not None:
                raise ConflictError(f"{path!r} already exists")
            if if_version is not None and (row is None or str(row[0]) != if_version):
                raise ConflictError(f"{path!r} changed since version {if_version}")
            if row is not None:
                conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
            if payload:
                conn.execute(
                    "INSERT INTO chunks (path, start, data) VALUES (?, 0, ?)", (path, payload)
                )
            conn.execute(
                "INSERT INTO files (path, size, base, nchunks, version, mtime)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(path) DO UPDATE SET size = excluded.size, base = excluded.base,"
                " nchunks = excluded.nchunks, version = excluded.version,"
                " mtime = excluded.mtime",
                (path, len(payload), len(payload), int(bool(payload)), version, time.time()),
            )
        return str(version)

    def append(
        self, path: str, data: bytes, *, line_safe: bool = False, unique: bool = False
    ) -> int:
        """Append as one chunk row (O(1) in the file size); returns the start offset.

        ``unique`` is accepted and ignored: an append is one transaction, never retried
        after an ambiguous failure, so it cannot land twice.
        """
        validate_path(path)
        payload = bytes(data)
        now = time.time()
        with self._write_tx() as conn:
            row = conn.execute(
                "SELECT size, base, nchunks FROM files WHERE path = ?", (path,)
            ).fetchone()
            if row is None:
                size, base, nchunks = 0, 0, 0
                conn.execute(
                    "INSERT INTO files (path, size, base, nchunks, version, mtime)"
                    " VALUES (?, 0, 0, 0, 0, ?)",
                    (path, now),
                )
            else:
                size, base, nchunks = row
            if line_safe and size and _last_byte(conn, path) != b"\n":
                payload = b"\n" + payload
            if payload:
                conn.execute(
                    "INSERT INTO chunks (path, start, data) VALUES (?, ?, ?)",
                    (path, size, payload),
                )
                nchunks += 1
                if size == 0:
                    base = len(payload)
            new_size = size + len(payload)
            if nchunks >= COMPACT_MIN_CHUNKS and new_size - base >= base:
                _compact(conn, path)
                base, nchunks = new_size, 1
            conn.execute(
                "UPDATE files SET size = ?, base = ?, nchunks = ?, version = ?, mtime = ?"
                " WHERE path = ?",
                (new_size, base, nchunks, _new_version(), now, path),
            )
            return int(size) + len(payload) - len(data)

    def delete(self, path: str) -> bool:
        """Delete one file; False when it did not exist."""
        validate_path(path)
        with self._write_tx() as conn:
            gone = conn.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount
            if gone:
                conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        return bool(gone)

    def delete_tree(self, prefix: str) -> int:
        """Delete every file under ``prefix`` (the whole store for ``""``) in one transaction."""
        validate_path(prefix, allow_empty=True)
        with self._write_tx() as conn:
            if not prefix:
                count = conn.execute("DELETE FROM files").rowcount
                conn.execute("DELETE FROM chunks")
                return int(count)
            bounds = (f"{prefix}/", _upper(prefix))
            count = conn.execute("DELETE FROM files WHERE path >= ? AND path < ?", bounds).rowcount
            conn.execute("DELETE FROM chunks WHERE path >= ? AND path < ?", bounds)
        return int(count)

    # -- locking -----------------------------------------------------------------------
    @contextmanager
    def lock(self, name: str = "root", *, timeout: float = 30.0) -> Iterator[None]:
        """A cross-process lease named ``name`` (a row of the ``locks`` table).

        A lease older than 30 s is taken over, so a crashed holder cannot block for ever.
        """
        owner = uuid.uuid4().hex

        def take() -> bool:
            now = time.time()
            with self._write_tx() as conn:
                row = conn.execute("SELECT expires FROM locks WHERE name = ?", (name,)).fetchone()
                if row is not None and float(row[0]) >= now:
                    return False
                conn.execute(
                    "INSERT OR REPLACE INTO locks (name, owner, expires) VALUES (?, ?, ?)",
                    (name, owner, now + LEASE_SECONDS),
                )
                return True

        retry_until(take, timeout, f"lock {name!r} on {self.url}")
        try:
            yield
        finally:
            with self._write_tx() as conn:
                conn.execute("DELETE FROM locks WHERE name = ? AND owner = ?", (name, owner))

    def close(self) -> None:
        """Close every connection this root opened in this process."""
        with self._guard:
            conns, self._connections = self._connections, []
            self._local = threading.local()
        for conn in conns:
            with suppress(sqlite3.Error):
                conn.close()
