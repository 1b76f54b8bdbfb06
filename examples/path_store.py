"""The async path store: artifacts, a write-ahead log with append/read_range, a watcher.

Run: python examples/path_store.py [URL]

URL defaults to a temporary local folder; any store URL works (``memory://demo``,
``sqlite:///tmp/agent.db``, ``redis://localhost:6379/0``, ``s3://bucket/agent``, ...).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile

from fsmemory.errors import ConflictError
from fsmemory.store import FsspecKnowledgeStore, LockedKnowledgeStore, SyncKnowledgeStore


async def demo(url: str) -> None:
    store = FsspecKnowledgeStore(url, poll_interval=0.1)
    print(f"store: {store!r}")

    # 1. Artifacts: plain files under implied directories; writes are atomic.
    await store.write("/artifacts/report.md", "# Q3 report\n\nRevenue is up.\n")
    await store.write("/memory/working.md", "- user prefers short answers\n")
    print("list('/'):", await store.list("/"))
    print("list('/artifacts'):", await store.list("/artifacts"))

    # 2. A watcher: called after each committed change under /log (and for outside edits).
    seen: list[str] = []

    async def on_log_change(path: str) -> None:
        seen.append(path)

    sub = await store.on_change("/log", on_log_change)

    # 3. A write-ahead log: append returns the byte offset of each record...
    wal = "/log/session-1.jsonl"
    offsets = []
    for i, event in enumerate(["started", "tool_call", "tool_result", "answered"]):
        record = json.dumps({"seq": i, "event": event, "note": "héllo"}, ensure_ascii=False)
        record += "\n"
        offsets.append(await store.append(wal, record))
    print("record offsets:", offsets)

    # ...so a reader that remembers its cursor reads only what is new.
    cursor = offsets[2]
    tail = await store.read_range(wal, cursor)
    print("records from the cursor on:", [json.loads(line)["event"] for line in tail.splitlines()])

    # An offset inside a multi-byte character snaps to the next character boundary
    # (a character belongs to the range holding its first byte): never an error.
    first = (await store.read_range(wal, 0, offsets[1])).encode()
    inside = first.index("é".encode()) + 1  # the second byte of 'é'
    print("from inside 'é':", repr(await store.read_range(wal, inside, inside + 4)))

    # 4. Compare-and-swap: a read-modify-write that cannot lose a concurrent update.
    info = await store.stat("/memory/working.md")
    assert info is not None
    current = await store.read("/memory/working.md") or ""
    await store.write("/memory/working.md", current + "- timezone: UTC\n", if_version=info.version)
    try:
        await store.write("/memory/working.md", "stale overwrite", if_version=info.version)
    except ConflictError:
        print("a stale compare-and-swap was refused")

    # 5. Serialize writers per path with a lock (in-process here; RedisLock across hosts).
    locked = LockedKnowledgeStore(store, timeout=5)
    async with locked.hold("/memory/counter"):
        value = int(await locked.read("/memory/counter") or "0")
        await locked.write("/memory/counter", str(value + 1))

    await asyncio.sleep(0.2)  # let the watcher's callbacks run
    print("watcher saw:", sorted(set(seen)))
    await sub.close()

    # Cleanup: deleting the whole store needs an explicit opt-in.
    await store.delete("/", allow_root=True)
    await store.close()


def sync_demo(url: str) -> None:
    """The same store from plain synchronous code (scripts, notebooks)."""
    with SyncKnowledgeStore(url) as store:
        store.write("/notes/today.md", "- shipped the path store\n")
        offset = store.append("/log/script.jsonl", '{"event": "ran"}\n')
        print("sync:", store.list("/"), "offset", offset, store.read("/notes/today.md"))
        store.delete("/", allow_root=True)


def main() -> None:
    if len(sys.argv) > 1:
        url = sys.argv[1]
        asyncio.run(demo(url))
        sync_demo(url)
        return
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(demo(f"{tmp}/agent-state"))
        sync_demo(f"{tmp}/agent-state")


if __name__ == "__main__":
    main()
