"""LocalRoot.read_mapped: a whole file mapped read-only with the checks of any read,
and the index cache read through it."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import InvalidPathError, KeyNotFoundError, NotAFileError
from fsmemory.fs.local import LocalRoot
from fsmemory.memory import _index_cache

posix_only = pytest.mark.skipif(os.name == "nt", reason="mapped reads are POSIX only")


@posix_only
def test_a_mapped_file_reads_as_its_bytes(tmp_path: Path) -> None:
    root = LocalRoot(str(tmp_path))
    data = bytes(range(256)) * 1000 + b"\x00\n\xff"
    root.write("a/file.bin", data)
    got = root.read_mapped("a/file.bin")
    assert isinstance(got, mmap.mmap)
    assert bytes(got) == data == root.read_bytes("a/file.bin")
    with pytest.raises(TypeError):  # read-only: nothing reaches the file through it
        got[0] = 1  # type: ignore[index]
    assert root.read_bytes("a/file.bin") == data


@posix_only
def test_a_file_replaced_while_mapped_keeps_what_was_mapped(tmp_path: Path) -> None:
    """write() renames a new file into place: a mapping taken before it still reads the
    old bytes, byte for byte, and a new mapping reads the new ones."""
    root = LocalRoot(str(tmp_path))
    old, new = b"old " * 5000, b"new bytes, shorter"
    root.write("f", old)
    mapped = root.read_mapped("f")
    root.write("f", new)
    assert bytes(mapped) == old
    assert bytes(root.read_mapped("f")) == new


def test_an_empty_file_reads_as_no_bytes(tmp_path: Path) -> None:
    root = LocalRoot(str(tmp_path))
    root.write("empty", b"")
    assert root.read_mapped("empty") == b""


@pytest.mark.parametrize("path", ["../outside", "a/../../x", "/etc/passwd", "a\x00b", ""])
def test_hostile_paths_are_refused(tmp_path: Path, path: str) -> None:
    root = LocalRoot(str(tmp_path / "root"))
    with pytest.raises(InvalidPathError):
        root.read_mapped(path)


def test_what_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    root = LocalRoot(str(tmp_path))
    (tmp_path / "folder").mkdir()
    with pytest.raises(NotAFileError):
        root.read_mapped("folder")
    with pytest.raises(KeyNotFoundError):
        root.read_mapped("missing")
    if hasattr(os, "mkfifo"):  # a named pipe: refused at once, never waited on
        os.mkfifo(tmp_path / "pipe")
        with pytest.raises(NotAFileError):
            root.read_mapped("pipe")


@posix_only
def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"secret")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(outside)
    root = LocalRoot(str(tmp_path / "root"))
    with pytest.raises(InvalidPathError):
        root.read_mapped("link")


@posix_only
def test_the_index_cache_is_mapped_and_answers_as_a_fresh_parse(tmp_path: Path) -> None:
    """A cold open loads the index cache through a mapping; it answers as an open that
    parses every file, and the cache file is left byte for byte."""
    km = KnowledgeMemory(tmp_path / "m")
    pad = "x" * 200  # a memory large enough for a cache (MIN_BYTES)
    for i in range(_index_cache.MIN_BYTES // 200 + 50):
        km.remember(f"note {i} about {'tea' if i % 3 else 'coffee'} and item {i % 17} {pad}")
    km.recall("tea")
    cache = km.root.read_cache(_index_cache.CACHE_NAME)
    assert isinstance(cache, mmap.mmap)
    before = bytes(cache)
    cached = KnowledgeMemory(tmp_path / "m")
    parsed = KnowledgeMemory(tmp_path / "m", index_cache=False)
    for query in ("tea", "coffee item 3", "note 12", ""):
        assert [e.id for e in cached.recall(query, limit=10)] == [
            e.id for e in parsed.recall(query, limit=10)
        ]
    assert (tmp_path / "m" / ".fsmemory-cache.index").read_bytes() == before
