"""SyncKnowledgeStore: the blocking facade."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fsmemory.errors import ConflictError, InvalidPathError
from fsmemory.store import LockedKnowledgeStore, MemoryKnowledgeStore, SyncKnowledgeStore


def _exercise(store: SyncKnowledgeStore) -> None:
    store.write("/a/b.md", "héllo")
    assert store.read("a//b.md/") == "héllo"
    assert store.read("/missing") is None
    assert store.list("/") == ["a/"]
    assert store.exists("/a")
    assert store.append("/log", "x\n") == 0
    assert store.append("/log", "é\n") == 2
    assert store.read_range("/log", 2) == "é\n"
    assert store.read_range("/log", 3) == "\n"
    info = store.stat("/a/b.md")
    assert info is not None and info.size == 6
    store.write("/a/b.md", "v2", if_version=info.version)
    with pytest.raises(ConflictError):
        store.write("/a/b.md", "v3", if_version=info.version)
    store.write_bytes("/bin", b"\x00\x01")
    assert store.read_bytes("/bin") == b"\x00\x01"
    with pytest.raises(InvalidPathError):
        store.read("/../etc")
    with pytest.raises(InvalidPathError):
        store.delete("/")
    store.delete("/a")
    assert not store.exists("/a")
    store.delete("/", allow_root=True)
    assert store.list("/") == []


def test_direct_over_a_url(tmp_path: Path) -> None:
    with SyncKnowledgeStore(str(tmp_path / "s"), watch="poll") as store:
        _exercise(store)
        assert store._runner is None  # no event loop thread was needed


def test_over_a_wrapped_async_store() -> None:
    with SyncKnowledgeStore(LockedKnowledgeStore(MemoryKnowledgeStore())) as store:
        _exercise(store)
        assert store._runner is not None


@pytest.mark.parametrize("wrapped", [False, True])
def test_on_change_with_a_plain_callback(tmp_path: Path, wrapped: bool) -> None:
    seen: list[str] = []
    done = threading.Event()

    def callback(path: str) -> None:
        seen.append(path)
        if path == "/w/2":
            done.set()

    inner = MemoryKnowledgeStore(poll_interval=0.05)
    target = LockedKnowledgeStore(inner) if wrapped else inner
    with SyncKnowledgeStore(target) as store:
        sub = store.on_change("/w", callback)
        store.write("/w/1", "x")
        store.write("/w/2", "y")
        assert done.wait(5)
        sub.close()
        sub.close()
        assert sub.closed
        store.write("/w/3", "z")
        time.sleep(0.2)
    assert seen == ["/w/1", "/w/2"]


def test_threads_appending_through_one_facade(tmp_path: Path) -> None:
    with SyncKnowledgeStore(str(tmp_path / "t")) as store:

        def worker(tag: int) -> None:
            for i in range(50):
                store.append("/log", f"{tag}:{i:02d}\n")

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lines = (store.read("/log") or "").splitlines()
        assert sorted(lines) == sorted(f"{t}:{i:02d}" for t in range(4) for i in range(50))


def test_calling_the_facade_from_its_own_callback_is_refused() -> None:
    errors: list[BaseException] = []
    done = threading.Event()
    store = SyncKnowledgeStore(LockedKnowledgeStore(MemoryKnowledgeStore(watch="none")))

    def callback(path: str) -> None:
        try:
            store.read(path)
        except RuntimeError as exc:
            errors.append(exc)
        done.set()

    store.on_change("/", callback)
    store.write("/x", "1")
    assert done.wait(5)
    store.close()
    assert errors and "own change callbacks" in str(errors[0])
