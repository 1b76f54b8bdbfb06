"""Local folders: what a person or a tool leaves in the folder is seen as it is.

* A same-size edit in place whose timestamps were set back (``touch -r``, sync tools
  restoring mtimes) changes the local change token (the ctime cannot be set back), so a
  warm instance and a fresh cache-loaded one both see it.
* A named pipe (or any file that is not a regular one) at a cache path, at MEMORY.md, at
  a log or at the settings file never hangs a process: cache files are ignored, user
  files give a clear error or are skipped, and nothing is written into the pipe.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import NotAFileError
from fsmemory.fs.local import LocalRoot

FILLERS = 900  # enough rows and bytes for the index cache file to be written and read
FACTS = 420  # enough bytes of MEMORY.md for its context cache file


def _log_path(folder: Path) -> Path:
    return folder / "logs" / f"{datetime.now(UTC):%Y-%m-%d}.jsonl"


@pytest.fixture(scope="module")
def big_memory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A memory whose index cache file exists: a persistent fact, a log entry to edit,
    and fillers."""
    folder = tmp_path_factory.mktemp("big") / "mem"
    km = KnowledgeMemory(str(folder))
    km.remember("favourite colour is blue", category="prefs", persistent=True)
    km.remember("the door code is 1234", category="house")
    for i in range(FACTS):  # a MEMORY.md large enough for its context cache file
        km.remember(
            f"standing fact {i}: " + "the garden path is lined with lavender " * 4,
            category="garden",
            persistent=True,
        )
    for i in range(FILLERS):
        km.remember(f"filler note number {i} about gardening, weather and trains " * 3)
    km.recall("door")  # writes the index cache
    KnowledgeMemory(str(folder)).build_context()  # may write the context cache
    assert (folder / ".fsmemory-cache.index").is_file()
    return folder


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) in place, then set atime and mtime back."""
    assert len(old) == len(new)
    before = os.stat(path)
    data = path.read_bytes()
    offset = data.index(old)
    time.sleep(0.02)  # past the filesystem's timestamp granularity
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(new)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


# -- item: change tokens include the ctime ------------------------------------------------


def test_local_token_changes_on_same_size_edit_with_restored_mtime(tmp_path: Path) -> None:
    root = LocalRoot(str(tmp_path))
    root.write("notes/a.txt", b"hello world\n")
    listed = root.list("notes")[0]
    stated = root.stat("notes/a.txt")
    assert stated is not None and stated.token == listed.token
    _edit_in_place(tmp_path / "notes" / "a.txt", b"world", b"WORLD")
    after = root.stat("notes/a.txt")
    assert after is not None and after.token != stated.token
    assert root.list("notes")[0].token == after.token
    assert not root.rewritten(stated, after)  # the same file object, edited in place


def test_same_size_edits_with_restored_mtime_are_seen(big_memory: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    shutil.copytree(big_memory, folder)
    warm = KnowledgeMemory(str(folder))
    assert "1234" in warm.recall("door code")[0].content
    assert warm.get_persistent_facts()["prefs"] == ["favourite colour is blue"]
    fresh_before = KnowledgeMemory(str(folder))
    fresh_before.recall("door")  # a cache-loaded instance, warm too from here on

    cache = (folder / ".fsmemory-cache.index").read_bytes()
    _edit_in_place(folder / "MEMORY.md", b"blue", b"pink")
    _edit_in_place(_log_path(folder), b"code is 1234", b"code is 9876")

    assert (folder / ".fsmemory-cache.index").read_bytes() == cache  # from before the edits
    for km in (KnowledgeMemory(str(folder)), warm, fresh_before):
        assert km.get_persistent_facts()["prefs"] == ["favourite colour is pink"]
        assert "9876" in km.recall("door code")[0].content
        assert not km.recall("1234")
        context = km.build_context()
        assert "favourite colour is pink" in context and "blue" not in context
    cold = KnowledgeMemory(str(folder))  # the first call of a fresh process is a context
    assert "favourite colour is pink" in cold.build_context()
    plain = KnowledgeMemory(str(folder), index_cache=False)
    assert [e.content for e in KnowledgeMemory(str(folder)).entries()] == [
        e.content for e in plain.entries()
    ]


# -- item: named pipes and other special files --------------------------------------------

_SCRIPT = textwrap.dedent(
    """
    import sys
    from fsmemory import KnowledgeMemory
    from fsmemory.errors import FsMemoryError
    km = KnowledgeMemory(sys.argv[1])
    for name, call in (
        ("context", km.build_context),
        ("recall", lambda: km.recall("door code")),
        ("facts", km.get_persistent_facts),
        ("remember", lambda: km.remember("a new note", category="house")),
        ("remember_fact", lambda: km.remember("a new fact", category="prefs", persistent=True)),
    ):
        try:
            out = call()
        except FsMemoryError as exc:
            print(name, "ERROR", type(exc).__name__, exc, flush=True)
        else:
            print(name, "OK", repr(out)[:200], flush=True)
    """
)

CACHE_FILES = (".fsmemory-cache.index", ".fsmemory-cache.context")


def _run_with_fifo(big_memory: Path, tmp_path: Path, relative: str) -> dict[str, str]:
    folder = tmp_path / "mem"
    shutil.copytree(big_memory, folder)
    target = folder / relative
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(folder)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:  # pragma: no cover - the failure this guards
        pytest.fail(f"a named pipe at {relative} hung the process")
    assert done.returncode == 0, done.stderr
    assert os.path.exists(target)
    results = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert set(results) == {"context", "recall", "facts", "remember", "remember_fact"}
    return results


@pytest.mark.parametrize("relative", CACHE_FILES)
def test_named_pipe_at_a_cache_path_is_ignored(
    big_memory: Path, tmp_path: Path, relative: str
) -> None:
    results = _run_with_fifo(big_memory, tmp_path, relative)
    assert all(r.startswith("OK") for r in results.values()), results
    assert "favourite colour is blue" in results["context"]
    assert "1234" in results["recall"]


def test_named_pipe_at_memory_md(big_memory: Path, tmp_path: Path) -> None:
    results = _run_with_fifo(big_memory, tmp_path, "MEMORY.md")
    assert "1234" in results["recall"]
    assert results["remember"].startswith("OK")
    # The persistent fact cannot go into a pipe: a clear refusal, not a hang or a loss.
    assert results["remember_fact"].startswith("ERROR NotAFileError")
    assert "named pipe" in results["remember_fact"]


def test_named_pipe_at_todays_log(big_memory: Path, tmp_path: Path) -> None:
    relative = str(_log_path(Path("")))
    results = _run_with_fifo(big_memory, tmp_path, relative)
    assert "favourite colour is blue" in results["context"]
    for name in ("remember", "remember_fact"):
        assert results[name].startswith("ERROR NotAFileError"), results
        assert "named pipe" in results[name]


def test_named_pipe_at_the_settings_file(big_memory: Path, tmp_path: Path) -> None:
    results = _run_with_fifo(big_memory, tmp_path, "fsmemory.json")
    for name, result in results.items():
        assert result.startswith(("OK", "ERROR NotAFileError")), (name, result)


def test_local_root_refuses_special_files(tmp_path: Path) -> None:
    root = LocalRoot(str(tmp_path))
    os.mkfifo(tmp_path / "pipe")
    os.mkfifo(tmp_path / ".fsmemory-cache.index")
    started = time.monotonic()
    with pytest.raises(NotAFileError, match="named pipe"):
        root.read_bytes("pipe")
    with pytest.raises(NotAFileError, match="named pipe"):
        root.read_range("pipe", 0, 10)
    assert root.read_ranges([("pipe", 0, 10)]) == [None]
    with pytest.raises(NotAFileError, match="named pipe"):
        root.append("pipe", b"line\n")
    with pytest.raises(NotAFileError, match="named pipe"):
        root.update("pipe", lambda old: b"new")
    assert root.read_cache("index") is None
    assert root.stat("pipe") is None
    assert [i.path for i in root.list("")] == []
    assert time.monotonic() - started < 5
