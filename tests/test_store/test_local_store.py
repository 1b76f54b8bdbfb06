"""Local-folder specifics of the path store: symlinks, file/dir clashes, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsmemory.errors import InvalidPathError
from fsmemory.store import DiskKnowledgeStore


async def test_symlinked_directory_does_not_leak_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    store = DiskKnowledgeStore(tmp_path / "root", watch="none")

    await store.write("/inside", "x")
    os.symlink(outside, tmp_path / "root" / "link")
    assert await store.list("/link") == []
    assert not await store.exists("/link")
    with pytest.raises(InvalidPathError):
        await store.read("/link/secret")
    assert await store.list("/") == ["inside"]  # the symlink itself is not listed


async def test_file_and_directory_cannot_share_a_name(tmp_path: Path) -> None:
    store = DiskKnowledgeStore(tmp_path / "root", watch="none")

    await store.write("/a/b", "x")
    with pytest.raises(InvalidPathError):
        await store.write("/a", "file over a directory")
    with pytest.raises(InvalidPathError):
        await store.write("/a/b/c", "file under a file")
    with pytest.raises(InvalidPathError):
        await store.append("/a", "x")
    assert await store.read("/a/b") == "x"


async def test_writes_leave_no_temp_files(tmp_path: Path) -> None:
    store = DiskKnowledgeStore(tmp_path / "root", watch="none")
    for i in range(20):
        await store.write("/f", f"v{i}")
        await store.append("/log", "x")
    names = sorted(p.name for p in (tmp_path / "root").iterdir())
    assert [n for n in names if not n.startswith(".fsmemory.lock")] == ["f", "log"]
    assert (tmp_path / "root" / "f").read_text() == "v19"


async def test_durable_store(tmp_path: Path) -> None:
    store = DiskKnowledgeStore(tmp_path / "root", watch="none", durable=True)

    await store.write("/d", "x")
    assert await store.append("/d", "y") == 1
    assert await store.read("/d") == "xy"
