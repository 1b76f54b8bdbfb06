"""Fixtures and helpers for the agent-harness tests."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from fsmemory.store import DiskKnowledgeStore, MemoryKnowledgeStore

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion in a fresh event loop."""
    return asyncio.run(coro)


class CountingStore:
    """Delegates to a real store and counts the calls made through it.

    ``fail`` maps a method name to an exception raised instead of calling it.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.paths: list[tuple[str, str]] = []
        self.fail: dict[str, BaseException] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            if args and isinstance(args[0], str):
                self.paths.append((name, args[0]))
            if name in self.fail:
                raise self.fail[name]
            return await attr(*args, **kwargs)

        return wrapper


class PlainStore:
    """A minimal store with only the seed's protocol (no stat, no conditional writes)."""

    def __init__(self) -> None:
        self.inner = MemoryKnowledgeStore()

    async def read(self, path: str) -> str | None:
        return await self.inner.read(path)

    async def write(self, path: str, content: str) -> None:
        await self.inner.write(path, content)

    async def list(self, path: str = "/") -> list[str]:
        return await self.inner.list(path)

    async def delete(self, path: str) -> None:
        await self.inner.delete(path)

    async def exists(self, path: str) -> bool:
        return await self.inner.exists(path)

    async def append(self, path: str, content: str) -> int:
        return await self.inner.append(path, content)

    async def read_range(self, path: str, start: int, end: int | None = None) -> str:
        return await self.inner.read_range(path, start, end)

    async def on_change(self, path: str, callback: Any) -> Any:
        return await self.inner.on_change(path, callback)


@pytest.fixture
def store() -> MemoryKnowledgeStore:
    """A private in-memory store."""
    return MemoryKnowledgeStore()


@pytest.fixture
def disk_store(tmp_path: Path) -> DiskKnowledgeStore:
    """A store on a temporary local folder."""
    return DiskKnowledgeStore(tmp_path / "agent-state", watch="none")


@pytest.fixture(params=["memory", "disk"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each local store kind."""
    if request.param == "memory":
        return MemoryKnowledgeStore()
    return DiskKnowledgeStore(tmp_path / "agent-state", watch="none")
