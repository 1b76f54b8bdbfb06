"""No store call blocks the event loop on a lock: a call that would wait for a lock
held elsewhere (SQLite's write lock, a local folder's ``flock``) moves to a worker
thread, so the loop keeps running -- and a holder on the same loop can release."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from fsmemory.errors import BackendError, LockTimeoutError
from fsmemory.store import DiskKnowledgeStore, FsspecKnowledgeStore, SqliteKnowledgeStore


async def _runs_while_locked(
    call: Callable[[], Awaitable[Any]], release: Callable[[], None]
) -> Any:
    """Start ``call`` while a lock is held, prove the loop keeps ticking while it waits,
    then release the lock from this very loop and return the call's result."""
    task = asyncio.ensure_future(call())
    ticks = 0
    while ticks < 5:  # five turns of the loop while the call waits for the lock
        await asyncio.sleep(0.01)
        ticks += 1
    assert not task.done(), "the call returned although the lock was held"
    release()
    return await task


async def test_sqlite_waits_off_the_loop_for_another_writer(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    store = SqliteKnowledgeStore(db, watch="none", timeout=10)
    await store.write("/log", "a\n")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    try:
        offset = await _runs_while_locked(
            lambda: store.append("/log", "b\n"), lambda: holder.execute("COMMIT")
        )
    finally:
        holder.close()
    assert offset == 2
    assert await store.read("/log") == "a\nb\n"
    # Unlocked again: the next calls run inline as before.
    assert await store.write("/other", "x")
    await store.close()


async def test_sqlite_lock_timeout_is_an_fsmemory_error(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    store = SqliteKnowledgeStore(db, watch="none", timeout=0.2)
    await store.write("/log", "a\n")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LockTimeoutError, match="write lock"):
            await store.append("/log", "b\n")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert await store.read("/log") == "a\n"  # nothing half-applied
    await store.close()


async def test_sqlite_other_failures_are_backend_errors(tmp_path: Path) -> None:
    db = tmp_path / "not-a-database.db"
    db.write_bytes(b"this is a hand-written file, not SQLite" * 100)
    store = SqliteKnowledgeStore(db, watch="none")
    with pytest.raises(BackendError):
        await store.read("/x")
    assert db.read_bytes().startswith(b"this is a hand-written file")  # untouched
    await store.close()


async def test_local_folder_waits_off_the_loop_for_another_process_lock(
    tmp_path: Path,
) -> None:
    store = DiskKnowledgeStore(tmp_path / "root", watch="none")
    await store.write("/log", "a\n")
    fd = os.open(tmp_path / "root" / ".fsmemory.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what another process appending holds
    try:
        offset = await _runs_while_locked(
            lambda: store.append("/log", "b\n"), lambda: fcntl.flock(fd, fcntl.LOCK_UN)
        )
    finally:
        os.close(fd)
    assert offset == 2
    assert (tmp_path / "root" / "log").read_bytes() == b"a\nb\n"
    await store.close()


async def test_local_folder_compare_and_swap_waits_off_the_loop(tmp_path: Path) -> None:
    store = FsspecKnowledgeStore(str(tmp_path / "root"), watch="none")
    version = await store.write("/doc", "v1")
    fd = os.open(tmp_path / "root" / ".fsmemory.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        new = await _runs_while_locked(
            lambda: store.write("/doc", "v2", if_version=version),
            lambda: fcntl.flock(fd, fcntl.LOCK_UN),
        )
    finally:
        os.close(fd)
    assert new != version
    assert await store.read("/doc") == "v2"
    assert not any(p.name.startswith(".fsmemory-tmp") for p in (tmp_path / "root").iterdir())
    await store.close()
