"""The public surface of fsmemory.store."""

from __future__ import annotations

import sys

import pytest

import fsmemory.store as store_pkg
from fsmemory.errors import MissingDependencyError
from fsmemory.store import (
    DiskKnowledgeStore,
    FsspecKnowledgeStore,
    KnowledgeStore,
    LockedKnowledgeStore,
    MemoryKnowledgeStore,
    SyncKnowledgeStore,
    VersionedKnowledgeStore,
)


def test_all_is_sorted_and_complete() -> None:
    public = {name for name in dir(store_pkg) if not name.startswith("_")}
    public -= {"annotations"}
    assert sorted(store_pkg.__all__) == store_pkg.__all__
    assert set(store_pkg.__all__) == public


def test_every_public_name_is_documented() -> None:
    for name in store_pkg.__all__:
        obj = getattr(store_pkg, name)
        if callable(obj) and not name.endswith(("Callback", "Mode")):
            assert obj.__doc__, name


def test_stores_satisfy_the_protocols(tmp_path: object) -> None:
    memory = MemoryKnowledgeStore()
    assert isinstance(memory, KnowledgeStore)
    assert isinstance(memory, VersionedKnowledgeStore)
    assert isinstance(DiskKnowledgeStore(str(tmp_path)), VersionedKnowledgeStore)
    assert isinstance(LockedKnowledgeStore(memory), VersionedKnowledgeStore)


def test_layering_store_imports_only_fs_and_errors() -> None:
    import ast
    from pathlib import Path

    allowed = ("fsmemory.fs", "fsmemory.errors", "fsmemory.store")
    for path in Path(store_pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("fsmemory")
            ):
                assert node.module.startswith(allowed), (path.name, node.module)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("fsmemory"):
                        assert alias.name.startswith(allowed), (path.name, alias.name)


def test_missing_redis_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsmemory.store import RedisKnowledgeStore, RedisLock

    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(MissingDependencyError, match=r"fsmemory\[redis\]"):
        RedisKnowledgeStore("redis://127.0.0.1:1/0")
    with pytest.raises(MissingDependencyError, match=r"fsmemory\[redis\]"):
        RedisLock("redis://127.0.0.1:1/0")


def test_bad_options() -> None:
    with pytest.raises(ValueError):
        MemoryKnowledgeStore(watch="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        FsspecKnowledgeStore("memory://x", poll_interval=0)
    with pytest.raises(ValueError):
        DiskKnowledgeStore("s3://bucket/x")
    with pytest.raises(TypeError):
        SyncKnowledgeStore(MemoryKnowledgeStore(), watch="none")


async def test_private_memory_stores_are_isolated_and_named_ones_shared() -> None:

    a, b = MemoryKnowledgeStore(), MemoryKnowledgeStore()
    await a.write("/x", "a")
    assert await b.read("/x") is None
    name = f"shared-{id(a)}"
    c, d = MemoryKnowledgeStore(name), MemoryKnowledgeStore(name)
    await c.write("/x", "c")
    assert await d.read("/x") == "c"
    await c.delete("/", allow_root=True)


async def test_private_memory_store_is_purged_when_dropped() -> None:
    import gc

    store = MemoryKnowledgeStore()
    root = store.root
    await store.write("/x", "y")
    assert root.list("", recursive=True)
    del store
    gc.collect()
    assert root.list("", recursive=True) == []
