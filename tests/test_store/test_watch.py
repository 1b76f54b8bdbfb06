"""on_change details: watchdog vs polling, fallbacks, duplicates, ordering.

No fixed sleeps: each test waits for the notification it expects (``wait_for``), and
"nothing more arrives" is shown by a later marker change that must arrive after it --
delivery is in order, and outside edits reach the watcher in the order they were made.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from fsmemory.store import DiskKnowledgeStore, MemoryKnowledgeStore, Subscription
from fsmemory.testing.store_conformance import wait_for


class Recorder:
    """A callback that records the paths it is given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, changed: str) -> None:
        self.seen.append(changed)

    async def until(self, path: str, count: int = 1) -> None:
        """Wait until ``path`` was reported ``count`` times."""
        assert await wait_for(lambda: self.seen.count(path) >= count), (path, self.seen)


async def test_disk_store_works_without_watchdog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "watchdog", None)
    monkeypatch.setitem(sys.modules, "watchdog.observers", None)
    store = DiskKnowledgeStore(tmp_path / "s", poll_interval=0.05)
    rec = Recorder()
    sub = await store.on_change("/", rec)
    try:
        assert sub.mode == "poll"
        (tmp_path / "s").mkdir(exist_ok=True)
        (tmp_path / "s" / "by-hand.md").write_text("edited outside")
        await rec.until("/by-hand.md")
    finally:
        await sub.close()


@pytest.mark.parametrize("watch", ["auto", "poll"])
async def test_store_writes_are_reported_once(tmp_path: Path, watch: str) -> None:
    if watch == "auto":
        pytest.importorskip("watchdog")
    folder = tmp_path / "s"
    store = DiskKnowledgeStore(folder, watch=watch, poll_interval=0.05)  # type: ignore[arg-type]
    rec = Recorder()
    async with await store.on_change("/", rec):
        await store.write("/a", "1")
        await rec.until("/a")
        await store.write("/b", "2")
        await store.append("/b", "3")
        await rec.until("/b")
        await store.delete("/a")
        await rec.until("/a", 2)
        (folder / "zz-marker").write_text("by hand")  # seen after any late echo
        await rec.until("/zz-marker")
    seen = rec.seen
    if watch == "auto":
        assert seen.count("/a") == 2  # the write, then the delete
    else:  # a poll racing with a write may report it once more (at least once)
        assert 2 <= seen.count("/a") <= 3
    assert 1 <= seen.count("/b") <= 2  # write + append may coalesce while one is pending
    assert set(seen) == {"/a", "/b", "/zz-marker"}


async def test_outside_edits_on_local_folder_with_watchdog(tmp_path: Path) -> None:
    pytest.importorskip("watchdog")
    store = DiskKnowledgeStore(tmp_path / "s")  # default 1 s polling would be too slow
    rec = Recorder()
    async with await store.on_change("/notes", rec):
        (tmp_path / "s" / "notes").mkdir(parents=True)
        (tmp_path / "s" / "notes" / "n.md").write_text("hand edit")
        await rec.until("/notes/n.md")
        (tmp_path / "s" / "notes" / "n.md").unlink()
        await rec.until("/notes/n.md", 2)


async def test_directory_delete_is_one_notification(tmp_path: Path) -> None:
    pytest.importorskip("watchdog")
    store = DiskKnowledgeStore(tmp_path / "s")
    for i in range(5):
        await store.write(f"/d/f{i}", "x")
    rec = Recorder()
    async with await store.on_change("/", rec):
        await store.delete("/d")
        await rec.until("/d")
        (tmp_path / "s" / "marker").write_text("by hand")  # after the deletions' events
        await rec.until("/marker")
    # A hand write may arrive as two events (create, then modify); what matters is
    # that everything before the marker is the one directory notification.
    assert rec.seen[: rec.seen.index("/marker")] == ["/d"]
    assert set(rec.seen) == {"/d", "/marker"}


async def test_watch_none_reports_only_in_process_writes() -> None:
    store = MemoryKnowledgeStore(watch="none")
    rec = Recorder()
    async with await store.on_change("/", rec) as sub:
        assert sub.mode == "local"  # no watcher at all: nothing from outside can come
        store.root.write("outside", b"x")
        await store.write("/inside", "y")
        await rec.until("/inside")
    assert rec.seen == ["/inside"]


async def test_two_stores_on_one_root_see_each_others_writes(tmp_path: Path) -> None:
    writer = DiskKnowledgeStore(tmp_path / "s", watch="none")
    watcher = DiskKnowledgeStore(tmp_path / "s", watch="none")
    rec = Recorder()
    async with await watcher.on_change("/", rec):
        await writer.write("/shared", "x")
        await rec.until("/shared")
    assert rec.seen == ["/shared"]


async def test_callbacks_run_in_order_and_may_be_sync() -> None:
    store = MemoryKnowledgeStore(watch="none")
    seen: list[str] = []
    sub = await store.on_change("/", seen.append)
    try:
        for i in range(5):
            await store.write(f"/f{i}", "x")
        assert await wait_for(lambda: len(seen) >= 5)
    finally:
        await sub.close()
    assert seen == [f"/f{i}" for i in range(5)]


async def test_slow_callback_never_blocks_the_writer_and_coalesces() -> None:
    """The callback does not return until all 200 appends are done: were the writer
    waiting for it, the appends could never finish."""
    store = MemoryKnowledgeStore(watch="none")
    seen: list[str] = []
    release = asyncio.Event()

    async def slow(path: str) -> None:
        seen.append(path)
        if path == "/log":
            await release.wait()

    sub = await store.on_change("/", slow)
    try:
        appends = asyncio.gather(*(store.append("/log", "x") for _ in range(200)))
        assert await wait_for(appends.done)
        assert len(await appends) == 200
        release.set()
        await store.write("/end", "marker")  # delivered after every pending "/log"
        assert await wait_for(lambda: "/end" in seen)
    finally:
        release.set()
        await sub.close()
    assert seen[-1] == "/end"
    assert 1 <= seen.count("/log") <= 2  # 200 changes, coalesced while one was pending


async def test_closing_from_inside_the_callback() -> None:
    store = MemoryKnowledgeStore(watch="none")
    seen: list[str] = []
    holder: list[Subscription] = []

    async def once(path: str) -> None:
        seen.append(path)
        await holder[0].close()

    holder.append(await store.on_change("/", once))
    witness = Recorder()
    async with await store.on_change("/", witness):
        await store.write("/a", "1")
        assert await wait_for(lambda: holder[0].closed)
        await store.write("/b", "2")
        await witness.until("/b")  # published: only the closed subscription missed it
    assert seen == ["/a"]


async def test_store_close_closes_subscriptions() -> None:
    store = MemoryKnowledgeStore(poll_interval=0.05)

    async def callback(path: str) -> None:
        return None

    sub = await store.on_change("/", callback)
    await store.close()
    assert sub.closed
