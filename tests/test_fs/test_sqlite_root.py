"""SqliteRoot: the storage-layer conformance suite plus its own details."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsmemory.errors import InvalidInputError, InvalidPathError, LockTimeoutError
from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs import sqlite as sqlite_mod
from fsmemory.fs.sqlite import SqliteRoot
from fsmemory.testing.conformance import StorageRootTests, cas_increment_worker
from tests.test_fs.test_conformance import NameListingTests


class TestSqliteRootConformance(StorageRootTests, NameListingTests):
    """The fs-layer suite every StorageRoot passes, on ``sqlite://``."""

    @pytest.fixture
    def root(self, tmp_path: Path) -> Iterator[StorageRoot]:
        root = open_root(f"sqlite://{tmp_path}/db/store.db")
        yield root
        root.close()

    def backdoor_write(self, root: StorageRoot, rel: str, data: bytes) -> None:
        assert isinstance(root, SqliteRoot)
        with root._write_tx() as conn:
            conn.execute("DELETE FROM chunks WHERE path = ?", (rel,))
            conn.execute("INSERT INTO chunks (path, start, data) VALUES (?, 0, ?)", (rel, data))
            conn.execute(
                "INSERT OR REPLACE INTO files (path, size, base, nchunks, version, mtime)"
                " VALUES (?, ?, ?, 1, 1, 0)",
                (rel, len(data), len(data)),
            )


@pytest.fixture
def root(tmp_path: Path) -> Iterator[SqliteRoot]:
    root = SqliteRoot(tmp_path / "s.db")
    yield root
    root.close()


def test_open_root_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absolute = open_root(f"sqlite://{tmp_path}/a.db")
    assert isinstance(absolute, SqliteRoot) and absolute.database == f"{tmp_path}/a.db"
    monkeypatch.chdir(tmp_path)
    relative = open_root("sqlite://rel.db", {"durable": True, "timeout": 2})
    assert isinstance(relative, SqliteRoot)
    assert relative.database == str(tmp_path / "rel.db") and relative.durable
    with pytest.raises(InvalidInputError, match="bogus"):
        open_root("sqlite://x.db", {"bogus": 1})
    for bad in ("sqlite://", "sqlite://:memory:"):
        with pytest.raises(InvalidPathError):
            open_root(bad)
    absolute.close()
    relative.close()


def test_wal_mode_and_schema(root: SqliteRoot) -> None:
    root.write("a", b"x")
    conn = sqlite3.connect(root.database)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"files", "chunks", "locks"} <= tables
    conn.close()


def test_appends_are_chunk_rows_not_rewrites(root: SqliteRoot) -> None:
    root.write("log", b"base|")
    for i in range(10):
        root.append("log", f"{i}".encode())
    conn = root._conn()
    rows = conn.execute("SELECT start, data FROM chunks WHERE path='log' ORDER BY start").fetchall()
    assert [(start, bytes(data)) for start, data in rows][:2] == [(0, b"base|"), (5, b"0")]
    assert len(rows) == 11
    assert conn.execute("SELECT nchunks, size FROM files WHERE path='log'").fetchone() == (11, 15)
    assert root.read_bytes("log") == b"base|0123456789"


def test_read_range_across_base_and_chunks(root: SqliteRoot) -> None:
    root.write("f", b"0123456789")
    for piece in (b"abc", b"def", b"", b"ghij"):
        root.append("f", piece)
    whole = b"0123456789abcdefghij"
    assert root.read_bytes("f") == whole
    for start in range(len(whole) + 2):
        for end in [None, *range(len(whole) + 2)]:
            assert root.read_range("f", start, end) == whole[start:end], (start, end)
    info = root.stat("f")
    assert info is not None and info.size == len(whole)


def test_compaction_folds_chunks_into_the_base(
    root: SqliteRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_mod, "COMPACT_MIN_CHUNKS", 4)
    expected = b""
    offsets = []
    for i in range(40):
        piece = f"<{i}>".encode()
        offsets.append(root.append("wal", piece))
        expected += piece
    base, nchunks = (
        root._conn().execute("SELECT base, nchunks FROM files WHERE path='wal'").fetchone()
    )
    assert base > 0 and nchunks < 40
    rows = root._conn().execute("SELECT count(*) FROM chunks WHERE path='wal'").fetchone()
    assert rows[0] == nchunks
    assert root.read_bytes("wal") == expected
    assert offsets == [expected.index(f"<{i}>".encode()) for i in range(40)]
    assert root.read_range("wal", 5, 30) == expected[5:30]


def test_line_safe_append_on_chunks(root: SqliteRoot) -> None:
    root.append("j", b'{"a":1}\n')
    root.append("j", b'{"torn"')
    assert root.append("j", b'{"b":2}\n', line_safe=True) == len(b'{"a":1}\n{"torn"') + 1
    assert root.read_bytes("j") == b'{"a":1}\n{"torn"\n{"b":2}\n'


def test_versions_change_on_every_mutation(root: SqliteRoot) -> None:
    versions = {root.write("v", b"1")}
    root.append("v", b"2")
    versions.add(root.read("v").version)
    versions.add(root.write("v", b"1"))
    assert len(versions) == 3


def test_threads_get_their_own_connections(root: SqliteRoot) -> None:
    def work(tag: int) -> list[int]:
        return [root.append("t", f"{tag}:{i}\n".encode()) for i in range(50)]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        offsets = [o for r in pool.map(work, range(4)) for o in r]
    assert len(set(offsets)) == 200
    assert len(root._connections) >= 2
    assert len(root.read_bytes("t").splitlines()) == 200


def test_lease_lock(root: SqliteRoot) -> None:
    other = SqliteRoot(root.database)
    with root.lock("job", timeout=1):
        with pytest.raises(LockTimeoutError), other.lock("job", timeout=0.1):
            pass
        with other.lock("another-job", timeout=0.1):
            pass
    with other.lock("job", timeout=0.1):
        pass
    other.close()


def test_lease_lock_expires(root: SqliteRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_mod, "LEASE_SECONDS", 0.1)
    holder_inside = threading.Event()
    done = threading.Event()

    def crashed_holder() -> None:
        lock = root.lock("stale")
        lock.__enter__()  # never exits, like a crashed process
        holder_inside.set()
        done.wait(5)

    thread = threading.Thread(target=crashed_holder)
    thread.start()
    assert holder_inside.wait(5)
    started = time.monotonic()
    with SqliteRoot(root.database).lock("stale", timeout=5):
        assert time.monotonic() - started < 3
    done.set()
    thread.join()


def test_cas_across_processes(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/cas.db"
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(3, mp_context=ctx) as pool:
        counts = list(pool.map(cas_increment_worker, [url] * 3, [None] * 3, ["n"] * 3, [30] * 3))
    root = SqliteRoot(f"{tmp_path}/cas.db")
    assert root.read_bytes("n") == str(sum(counts)).encode()
    root.close()


def test_survives_fork(root: SqliteRoot) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    root.write("before", b"1")
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_child_append, args=(root,))
    proc.start()
    proc.join(30)
    assert proc.exitcode == 0
    assert root.read_bytes("child") == b"from the child"
    root.write("after", b"2")


def _child_append(root: SqliteRoot) -> None:
    root.append("child", b"from the child")
    root.close()
