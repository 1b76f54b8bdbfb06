"""``memory://`` listings while other code writes fsspec's global store without our lock."""

from __future__ import annotations

import gc
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest

from fsmemory.fs.memory import MemoryRoot


class _WritesWhenCollected:
    """Cyclic garbage whose finalizer writes a file, as an unclosed fsspec file can.

    Each one leaves a successor behind, so a collection is pending at every allocation
    of a listing, not only before it starts: until :attr:`writing` is switched off, as
    the test does when it ends (a link left for a later test would write the store in
    the middle of that test's listing).
    """

    writing = True

    def __init__(self, fs: Any, path: str, left: int) -> None:
        self.fs = fs
        self.path = path
        self.left = left
        self.me = self

    def __del__(self) -> None:
        if not _WritesWhenCollected.writing:
            return
        self.fs.pipe_file(f"{self.path}/{self.left}", b"x")
        if self.left:
            _WritesWhenCollected(self.fs, self.path, self.left - 1)


@pytest.fixture
def eager_gc() -> Iterator[None]:
    old = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.collect()


def test_list_survives_a_store_write_during_iteration(eager_gc: None) -> None:
    fs = fsspec.filesystem("memory")
    base = f"/threads-{uuid.uuid4().hex}"
    root = MemoryRoot(base)
    for i in range(50):
        root.write(f"logs/{i:03d}.md", b"entry\n")
    outside = f"/outside-{uuid.uuid4().hex}"
    _WritesWhenCollected.writing = True
    try:
        for round_ in range(10):
            _WritesWhenCollected(fs, f"{outside}/{round_}", 200)
            names = [info.path for info in root.list("logs", recursive=True)]
            assert names == [f"logs/{i:03d}.md" for i in range(50)]
            dirs, files = root.list_names("")
            assert "logs" in files or "logs" in dirs
    finally:
        _WritesWhenCollected.writing = False
        gc.collect()
        if fs.exists(outside):
            fs.rm(outside, recursive=True)
        fs.rm(base, recursive=True)
