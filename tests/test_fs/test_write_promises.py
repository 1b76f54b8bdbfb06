"""URLs whose filesystem cannot keep fsmemory's promise refuse writes, and say why.

* A caching filesystem (``simplecache::``, ``filecache::``, ``blockcache::``) answers from
  its local copy (readers never see other writers) and drops ``mode="create"`` (the lease
  guarding compare-and-swap is a plain overwrite): acknowledged ``remember()`` calls were
  lost with no error.
* A filesystem with fsspec's default create-only write (check, then write: ftp, sftp,
  http, ...) cannot hold a lease either.
* ``file:/abs`` is ``/abs``, as fsspec reads it (not ``./file:/abs``).
* A 501 (or 505) is the server saying it can never do it: not retried; neither is a 405.

Reads stay allowed wherever the filesystem can read.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from fsspec.spec import AbstractFileSystem

from fsmemory import KnowledgeMemory
from fsmemory.errors import BackendError, ReadOnlyStorageError
from fsmemory.fs import RetryPolicy, open_root
from fsmemory.fs.generic import FsspecRoot, write_refusal
from fsmemory.fs.local import LocalRoot


def _memory_files(base: str) -> dict[str, bytes]:
    fs = fsspec.filesystem("memory")
    return {p: fs.cat_file(p) for p in fs.find(base)}


@pytest.fixture
def stored_memory() -> Iterator[str]:
    """A memory written through ``memory://`` (a root that can write); its folder."""
    base = f"/fsm-promise-{uuid.uuid4().hex[:10]}"
    km = KnowledgeMemory(f"memory://{base}")
    km.remember("the door code is 1234", category="house")
    km.remember("favourite colour is blue", category="prefs", persistent=True)
    yield base
    fsspec.filesystem("memory").rm(base, recursive=True)


@pytest.mark.parametrize("chain", ["simplecache", "filecache", "blockcache"])
def test_caching_chains_refuse_writes_and_still_read(stored_memory: str, chain: str) -> None:
    before = _memory_files(stored_memory)
    url = f"{chain}::memory://{stored_memory}"
    if chain != "blockcache":  # fsspec's blockcache cannot read memory:// files at all
        km = KnowledgeMemory(url)
        assert "favourite colour is blue" in km.build_context()
        assert "1234" in km.recall("door code")[0].content
        with pytest.raises(ReadOnlyStorageError, match=rf"{chain}.*caching filesystem"):
            km.remember("a fact that would be lost")
        with pytest.raises(ReadOnlyStorageError):
            km.remember("a persistent one", persistent=True)
    root = open_root(url)
    assert root.read_only_reason is not None and "other writers" in root.read_only_reason
    for write in (
        lambda: root.write("x.txt", b"x"),
        lambda: root.write("x.txt", b"x", create_only=True),
        lambda: root.append("logs/x.jsonl", b"{}\n"),
        lambda: root.delete("MEMORY.md"),
        lambda: root.delete_many(["MEMORY.md"]),
        lambda: root.delete_tree("logs"),
        lambda: root.remove(""),
        lambda: root.lock("x").__enter__(),
    ):
        with pytest.raises(ReadOnlyStorageError, match="writes refused"):
            write()
    assert _memory_files(stored_memory) == before  # byte for byte


class CheckThenWriteFileSystem(MemoryFileSystem):  # type: ignore[misc]
    """An in-memory filesystem whose create-only write is fsspec's default: look for
    the file, then write it (what ftp, sftp and other filesystems do)."""

    protocol = "fsmtest-checkthenwrite"
    root_marker = "/"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]
    pipe_file = AbstractFileSystem.pipe_file


def test_check_then_write_filesystems_refuse_writes() -> None:
    fsspec.register_implementation(
        CheckThenWriteFileSystem.protocol, CheckThenWriteFileSystem, clobber=True
    )
    url = f"{CheckThenWriteFileSystem.protocol}://mem-{uuid.uuid4().hex[:8]}"
    root = open_root(url)
    assert isinstance(root, FsspecRoot)
    with pytest.raises(ReadOnlyStorageError, match="exclusively and atomically"):
        KnowledgeMemory(url).remember("a fact")
    assert CheckThenWriteFileSystem.store == {}


@pytest.mark.parametrize("protocol", ["ftp", "http", "https", "zip", "github"])
def test_protocols_without_exclusive_create_are_refused(protocol: str) -> None:
    cls = fsspec.get_filesystem_class(protocol)
    reason = write_refusal(cls)  # the class decides: no server needed
    assert reason is not None and "exclusively" in reason and cls.__name__ in reason


def test_filesystems_that_create_exclusively_are_writable() -> None:
    assert write_refusal(fsspec.filesystem("memory")) is None
    dirfs = fsspec.filesystem("dir", path="/fsm-dirfs", fs=fsspec.filesystem("memory"))
    assert write_refusal(dirfs) is None
    cached = fsspec.filesystem("simplecache", target_protocol="memory")
    assert write_refusal(fsspec.filesystem("dir", path="/x", fs=cached)) is not None
    s3fs = pytest.importorskip("s3fs")
    assert write_refusal(s3fs.S3FileSystem) is None


# -- URL spellings -------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["file:{abs}", "local:{abs}", "file://{abs}", "{abs}"])
def test_local_spellings_resolve_as_fsspec_resolves_them(
    spelling: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    target = tmp_path / "mem"
    url = spelling.format(abs=target)
    root = open_root(url)
    assert isinstance(root, LocalRoot)
    _, fsspec_path = fsspec.url_to_fs(url)
    assert root.root == fsspec_path == str(target)
    KnowledgeMemory(url).remember("stored where fsspec says")
    assert list(cwd.iterdir()) == []
    assert KnowledgeMemory(str(target)).recall("stored")[0].content == "stored where fsspec says"


def test_relative_file_spelling_is_relative_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    root = open_root("file:rel/mem")
    assert root.root == fsspec.url_to_fs("file:rel/mem")[1] == str(tmp_path / "rel" / "mem")


# -- http: read-only, and 501/405 are final ------------------------------------------------


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; ``/status-NNN`` answers NNN. Counts requests by path."""

    counts: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        self.counts[self.path] = self.counts.get(self.path, 0) + 1
        name = self.path.rsplit("/", 1)[-1]
        if name.startswith("status-"):
            self.send_error(int(name.removeprefix("status-")))
            return
        super().do_GET()

    do_HEAD = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_folder(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    folder = tmp_path / "site"
    folder.mkdir()
    handler = functools.partial(_Handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Handler.counts.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


def test_http_is_read_only_and_says_so_at_once(http_folder: tuple[str, Path]) -> None:
    base, folder = http_folder
    (folder / "mem").mkdir()
    (folder / "mem" / "MEMORY.md").write_bytes(b"# Agent Memory\n\n## prefs\n- blue\n")
    root = open_root(f"{base}/mem", {"retry": RetryPolicy(attempts=6, base_delay=0.2)})
    assert root.read_bytes("MEMORY.md").endswith(b"- blue\n")
    with pytest.raises(ReadOnlyStorageError, match="http"):
        root.write("MEMORY.md", b"overwritten")
    with pytest.raises(ReadOnlyStorageError):
        root.append("logs/2026-01-01.jsonl", b"{}\n")
    assert (folder / "mem" / "MEMORY.md").read_bytes().endswith(b"- blue\n")
    assert sorted(os.listdir(folder / "mem")) == ["MEMORY.md"]


@pytest.mark.parametrize("status", [501, 505, 405])
def test_final_http_statuses_are_not_retried(http_folder: tuple[str, Path], status: int) -> None:
    base, _ = http_folder
    root = open_root(base, {"retry": RetryPolicy(attempts=6, base_delay=0.05)})
    with pytest.raises((BackendError, OSError)):
        root.read_bytes(f"status-{status}")
    assert _Handler.counts.get(f"/status-{status}") == 1, _Handler.counts


def test_a_503_is_still_retried(http_folder: tuple[str, Path]) -> None:
    base, _ = http_folder
    policy = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.01)
    root = open_root(base, {"retry": policy})
    with pytest.raises(BackendError, match="gave up after 3 tries"):
        root.read_bytes("status-503")
    assert _Handler.counts.get("/status-503") == 3


# -- a generic root sees other writers -----------------------------------------------------


@pytest.mark.s3
def test_generic_root_over_a_listing_cache_sees_other_writers(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """s3fs (like gcsfs and adlfs, which az:// reaches through the generic root) keeps
    listings for ever by default: a generic root built on it never saw the files and
    sizes another writer changed."""
    generic = FsspecRoot.from_url(s3_root_url, s3_storage_options)
    assert generic.read_only_reason is None
    other = open_root(s3_root_url, s3_storage_options)
    other.write("logs/a.jsonl", b"one\n")
    assert [(i.path, i.size) for i in generic.list("", recursive=True)] == [("logs/a.jsonl", 4)]
    assert generic.list_names("logs") == (["a.jsonl"], [])
    other.write("logs/a.jsonl", b"one\ntwo\n")
    other.write("logs/b.jsonl", b"three\n")
    assert [(i.path, i.size) for i in generic.list("", recursive=True)] == [
        ("logs/a.jsonl", 8),
        ("logs/b.jsonl", 6),
    ]
    assert sorted(generic.list_names("logs")[0]) == ["a.jsonl", "b.jsonl"]
    stat = generic.stat("logs/b.jsonl")
    assert stat is not None and stat.size == 6
