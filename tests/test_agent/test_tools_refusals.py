"""KnowledgeTool: content over the store's size limit is a final refusal, not "try again"."""

from __future__ import annotations

from pathlib import Path

from fsmemory.agent import KnowledgeTool
from fsmemory.errors import BackendError
from fsmemory.store import FsspecKnowledgeStore, MemoryKnowledgeStore
from tests.test_agent.conftest import CountingStore

FINAL = "this fails the same way every time: do not retry it."


async def test_content_over_the_store_limit_is_final(tmp_path: Path) -> None:
    tool = KnowledgeTool(FsspecKnowledgeStore(str(tmp_path), max_file_bytes=20, watch="none"))
    assert await tool("write", "/memory/a.md", "x" * 10) == "Wrote 10 characters to /memory/a.md."
    before = (tmp_path / "memory" / "a.md").read_bytes()
    assert await tool("append", "/memory/a.md", "y" * 15) == (
        f"Error: /memory/a.md would be larger than the store allows; {FINAL}"
    )
    assert await tool("write", "/memory/a.md", "z" * 30) == (
        f"Error: /memory/a.md would be larger than the store allows; {FINAL}"
    )
    assert await tool("write", "/memory/b.md", "z" * 30) == (
        f"Error: /memory/b.md would be larger than the store allows; {FINAL}"
    )
    assert (tmp_path / "memory" / "a.md").read_bytes() == before
    assert not (tmp_path / "memory" / "b.md").exists()


async def test_a_service_failure_still_says_try_again() -> None:
    counting = CountingStore(MemoryKnowledgeStore())
    counting.fail["write"] = BackendError("connection reset")
    tool = KnowledgeTool(counting)  # type: ignore[arg-type]
    answer = await tool("write", "/memory/a.md", "x")
    assert answer == "Error: the store failed to write /memory/a.md; try again later."
