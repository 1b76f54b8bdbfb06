"""The knowledge tool: actions, refusals and hostile input."""

from __future__ import annotations

from typing import Any

import pytest

from fsmemory.agent import KnowledgeTool
from fsmemory.agent.tools import KNOWLEDGE_ACTIONS
from fsmemory.errors import BackendError
from fsmemory.store import MemoryKnowledgeStore
from tests.test_agent.conftest import CountingStore


async def call(tool: KnowledgeTool, **kwargs: Any) -> str:
    return await tool.call(kwargs)


@pytest.fixture
def tool(any_store: Any) -> KnowledgeTool:
    return KnowledgeTool(any_store, max_content_chars=1000, max_read_chars=50)


async def test_write_read_append_list_delete(tool: KnowledgeTool) -> None:
    assert await call(tool, action="write", path="/artifacts/plan.md", content="step 1\n") == (
        "Wrote 7 characters to /artifacts/plan.md."
    )
    assert await call(tool, action="append", path="artifacts//plan.md/", content="step 2\n") == (
        "Appended 7 characters to /artifacts/plan.md."
    )
    assert await call(tool, action="read", path="/artifacts/plan.md") == "step 1\nstep 2\n"
    await call(tool, action="write", path="/artifacts/SKILL.md", content="how to")
    await call(tool, action="write", path="/artifacts/a.md", content="a")
    await call(tool, action="write", path="/artifacts/sub/b.md", content="b")
    assert (await call(tool, action="list", path="/artifacts")).splitlines() == [
        "SKILL.md",
        "a.md",
        "plan.md",
        "sub/",
    ]
    assert await call(tool, action="delete", path="/artifacts/sub") == "Deleted /artifacts/sub."
    assert (
        await call(tool, action="read", path="/artifacts/sub/b.md")
        == "Error: /artifacts/sub/b.md does not exist."
    )


async def test_errors_for_missing_and_wrong_kinds(tool: KnowledgeTool) -> None:
    await call(tool, action="write", path="/d/f.md", content="x")
    assert await call(tool, action="read", path="/nope.md") == "Error: /nope.md does not exist."
    assert await call(tool, action="read", path="/d") == "Error: /d is a folder; use action 'list'."
    assert await call(tool, action="list", path="/nope") == "Error: /nope does not exist."
    assert (
        await call(tool, action="list", path="/d/f.md")
        == "Error: /d/f.md is a file; use action 'read'."
    )
    assert await call(tool, action="delete", path="/nope") == "Error: /nope does not exist."
    assert (
        await call(tool, action="write", path="/", content="x")
        == "Error: '/' is a folder; give a file path."
    )
    assert (
        await call(tool, action="write", path="/x.md")
        == "Error: 'write' needs 'content' (a string)."
    )
    assert (await call(tool, action="append", path="/x.md", content=3)).startswith(
        "Error: 'append' needs"
    )
    assert (await call(tool, action="rm", path="/x")).startswith("Error: unknown action 'rm'")
    assert await call(tool, action="read", path="") == "Error: 'path' must be a non-empty string."
    assert await call(tool, action="read") == "Error: 'path' must be a non-empty string."


async def test_list_of_empty_root(tool: KnowledgeTool) -> None:
    assert await call(tool, action="list", path="/") == "/ is empty."


async def test_refuses_to_delete_root_or_touch_the_log(tool: KnowledgeTool) -> None:
    await call(tool, action="write", path="/keep.md", content="k")
    await tool.store.append("/log/s.jsonl", '{"type":"x"}\n')
    for path in ("/", "//", "/./", "/artifacts/.."):
        result = await call(tool, action="delete", path=path)
        assert result.startswith("Error:"), path
    assert (
        await call(tool, action="delete", path="/")
        == "Error: refusing to delete '/', the whole knowledge store."
    )
    assert (
        await call(tool, action="delete", path="/log")
        == "Error: /log is read-only; it cannot be deleted or changed."
    )
    assert (await call(tool, action="delete", path="/log/s.jsonl")).startswith(
        "Error: /log is read-only"
    )
    assert (await call(tool, action="write", path="/log/s.jsonl", content="forged")).startswith(
        "Error: /log is read-only"
    )
    assert (await call(tool, action="append", path="log/s.jsonl", content="forged")).startswith(
        "Error: /log is read-only"
    )
    assert await call(tool, action="read", path="/log/s.jsonl") == '{"type":"x"}\n'
    assert await call(tool, action="read", path="/keep.md") == "k"
    assert (
        await call(tool, action="write", path="/logbook.md", content="fine")
        == "Wrote 4 characters to /logbook.md."
    )


@pytest.mark.parametrize(
    "path",
    [
        "/../etc/passwd",
        "/a/../../x",
        "/%2e%2e/x",
        "/a/%2E%2e/b",
        "/a\x00b",
        "/a\\b",
        "/a/./b",
        "/.fsmemory-lock",
        "/" + "x" * 2000,
    ],
)
async def test_hostile_paths_are_errors_not_exceptions(tool: KnowledgeTool, path: str) -> None:
    for action in KNOWLEDGE_ACTIONS:
        result = await call(tool, action=action, path=path, content="x")
        assert result.startswith("Error: invalid path"), (action, path, result)
    assert await tool.store.list("/") == []


async def test_huge_content_and_long_reads(tool: KnowledgeTool) -> None:
    assert await call(tool, action="write", path="/big", content="x" * 1001) == (
        "Error: content has 1001 characters; the limit is 1000."
    )
    await call(tool, action="write", path="/mid", content="y" * 80)
    out = await call(tool, action="read", path="/mid")
    assert out.startswith("y" * 50) and out.endswith("[... cut: showing 50 of 80 characters]")


async def test_json_string_arguments() -> None:
    tool = KnowledgeTool(MemoryKnowledgeStore())
    assert (
        await tool.call('{"action": "write", "path": "/a", "content": "b"}')
        == "Wrote 1 characters to /a."
    )
    assert await tool.call("{nope") == "Error: the arguments are not valid JSON."
    assert await tool.call("[1]") == "Error: the arguments must be a JSON object."
    assert (await tool.call("")).startswith("Error: unknown action")


async def test_store_failure_is_an_error_string() -> None:
    counting = CountingStore(MemoryKnowledgeStore())
    counting.fail["write"] = BackendError("S3 is down")
    tool = KnowledgeTool(counting)  # type: ignore[arg-type]
    assert await call(tool, action="write", path="/a", content="b") == (
        "Error: the store failed to write /a; try again later."
    )


def test_schemas() -> None:
    tool = KnowledgeTool(MemoryKnowledgeStore())
    schema = tool.parameters_schema()
    assert schema["properties"]["action"]["enum"] == list(KNOWLEDGE_ACTIONS)
    assert tool.openai_schema()["function"]["parameters"] == schema
    assert tool.anthropic_schema()["input_schema"] == schema
    assert "knowledge" in repr(tool).lower()
