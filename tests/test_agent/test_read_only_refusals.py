"""A store on a URL that refuses writes for good (a caching chain, ftp, http) is a
final refusal for both agent tools: "try again later" would have an agent retry forever."""

from __future__ import annotations

import uuid

import fsspec
import pytest

from fsmemory.agent import AnthropicMemoryTool, KnowledgeTool
from fsmemory.errors import ReadOnlyStorageError
from fsmemory.store import FsspecKnowledgeStore


@pytest.fixture
def read_only_url() -> str:
    """``simplecache::memory://...`` holding one file: readable, never writable."""
    name = f"ro-{uuid.uuid4().hex[:10]}"
    fsspec.filesystem("memory").pipe(f"/{name}/memories/kept.md", b"kept\n")
    fsspec.filesystem("memory").pipe(f"/{name}/memory/kept.md", b"kept\n")
    return f"simplecache::memory://{name}"


async def test_knowledge_tool_says_read_only_is_final(read_only_url: str) -> None:
    store = FsspecKnowledgeStore(read_only_url, watch="none")
    with pytest.raises(ReadOnlyStorageError):
        await store.write("memory/new.md", "x")
    tool = KnowledgeTool(store)
    answer = await tool("write", "/memory/new.md", "x")
    assert answer == (
        "Error: the store is read-only, it cannot write /memory/new.md; "
        "this fails the same way every time: do not retry it."
    )
    assert "try again" not in answer
    assert "kept" in await tool("read", "/memory/kept.md")


async def test_memory_tool_says_read_only_is_final(read_only_url: str) -> None:
    tool = AnthropicMemoryTool(FsspecKnowledgeStore(read_only_url, watch="none"))
    for call in (
        {"command": "create", "path": "/memories/new.md", "file_text": "x"},
        {"command": "str_replace", "path": "/memories/kept.md", "old_str": "kept", "new_str": "k"},
        {"command": "delete", "path": "/memories/kept.md"},
    ):
        result = await tool.execute(call)
        assert result.is_error
        assert result.content.startswith("Refused:") and "read-only" in result.content, result
        assert "Try again" not in result.content
    name = read_only_url.split("memory://")[1]
    assert fsspec.filesystem("memory").cat(f"/{name}/memories/kept.md") == b"kept\n"
