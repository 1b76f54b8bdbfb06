"""The Anthropic memory-tool handler: commands, reference strings, paths, races."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fsmemory.agent import AnthropicMemoryTool
from fsmemory.agent.tools import MEMORY_COMMANDS, MemoryToolResult
from fsmemory.errors import BackendError
from fsmemory.store import MemoryKnowledgeStore
from tests.test_agent.conftest import CountingStore, PlainStore, run


async def ex(tool: AnthropicMemoryTool, **command: Any) -> MemoryToolResult:
    return await tool.execute(command)


async def ok(tool: AnthropicMemoryTool, **command: Any) -> str:
    result = await ex(tool, **command)
    assert not result.is_error, result.content
    return result.content


async def err(tool: AnthropicMemoryTool, **command: Any) -> str:
    result = await ex(tool, **command)
    assert result.is_error, result.content
    return result.content


@pytest.fixture
def tool(any_store: Any) -> AnthropicMemoryTool:
    return AnthropicMemoryTool(any_store)


async def test_create_and_view_file(tool: AnthropicMemoryTool) -> None:
    assert await ok(
        tool, command="create", path="/memories/notes.md", file_text="alpha\nbeta\n"
    ) == ("File created successfully at: /memories/notes.md")
    assert await tool.store.read("/memories/notes.md") == "alpha\nbeta\n"
    assert await ok(tool, command="view", path="/memories/notes.md") == (
        "Here's the content of /memories/notes.md with line numbers:\n"
        "     1\talpha\n     2\tbeta\n     3\t"
    )
    assert await ok(tool, command="view", path="/memories/notes.md", view_range=[2, -1]) == (
        "Here's the content of /memories/notes.md with line numbers:\n     2\tbeta\n     3\t"
    )
    assert (await ok(tool, command="view", path="/memories/notes.md", view_range=[0, 1])).endswith(
        "     1\talpha"
    )
    assert await err(tool, command="create", path="/memories/notes.md", file_text="x") == (
        "File /memories/notes.md already exists"
    )
    assert await err(tool, command="view", path="/memories/none.md") == (
        "The path /memories/none.md does not exist. Please provide a valid path."
    )
    assert (await err(tool, command="view", path="/memories/notes.md", view_range=[1])).startswith(
        "Invalid `view_range`"
    )


async def test_view_directory(tool: AnthropicMemoryTool) -> None:
    await ok(tool, command="create", path="/memories/a.md", file_text="x" * 10)
    await ok(tool, command="create", path="/memories/sub/b.md", file_text="y" * 2048)
    await ok(tool, command="create", path="/memories/sub/deep/c.md", file_text="z" * 1536)
    await ok(tool, command="create", path="/memories/.hidden/d.md", file_text="h")
    await ok(tool, command="create", path="/memories/.e.md", file_text="h")
    out = await ok(tool, command="view", path="/memories")
    assert out.splitlines() == [
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
        "3.5K\t/memories",
        "10B\t/memories/a.md",
        "3.5K\t/memories/sub/",
        "2K\t/memories/sub/b.md",
        "1.5K\t/memories/sub/deep/",
    ]
    empty = AnthropicMemoryTool(MemoryKnowledgeStore())
    assert (await ok(empty, command="view", path="/memories")).splitlines()[1] == "0B\t/memories"


async def test_str_replace(tool: AnthropicMemoryTool) -> None:
    await ok(
        tool, command="create", path="/memories/f.md", file_text="l1\nl2\nname: Ann\nl4\nl5\nl6\n"
    )
    out = await ok(tool, command="str_replace", path="/memories/f.md", old_str="Ann", new_str="Bob")
    assert out == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\tl1\n     2\tl2\n     3\tname: Bob\n     4\tl4\n     5\tl5"
    )
    assert await err(
        tool, command="str_replace", path="/memories/f.md", old_str="Zed", new_str="x"
    ) == ("No replacement was performed, old_str `Zed` did not appear verbatim in /memories/f.md.")
    assert await err(
        tool, command="str_replace", path="/memories/f.md", old_str="l", new_str="x"
    ) == (
        "No replacement was performed. Multiple occurrences of old_str `l` in lines: 1, 2, 4, 5, 6. "
        "Please ensure it is unique"
    )
    assert await err(
        tool, command="str_replace", path="/memories/nope.md", old_str="a", new_str="b"
    ) == ("The path /memories/nope.md does not exist. Please provide a valid path.")
    await ok(tool, command="create", path="/memories/dir/x.md", file_text="x")
    assert await err(
        tool, command="str_replace", path="/memories/dir", old_str="a", new_str="b"
    ) == ("The path /memories/dir is not a file.")


async def test_insert(tool: AnthropicMemoryTool) -> None:
    await ok(tool, command="create", path="/memories/f.md", file_text="a\nb")
    assert await ok(
        tool, command="insert", path="/memories/f.md", insert_line=1, insert_text="new\n"
    ) == ("The file /memories/f.md has been edited.")
    assert await tool.store.read("/memories/f.md") == "a\nnew\nb\n"
    await ok(tool, command="insert", path="/memories/f.md", insert_line=0, insert_text="top")
    assert await tool.store.read("/memories/f.md") == "top\na\nnew\nb\n"
    assert await err(
        tool, command="insert", path="/memories/f.md", insert_line=9, insert_text="x"
    ) == ("Invalid `insert_line` parameter: 9. It should be within the range [0, 4].")
    assert (
        await err(tool, command="insert", path="/memories/f.md", insert_line=-1, insert_text="x")
    ).startswith("Invalid `insert_line` parameter: -1.")


async def test_delete(tool: AnthropicMemoryTool) -> None:
    await ok(tool, command="create", path="/memories/d/x.md", file_text="x")
    await ok(tool, command="create", path="/memories/y.md", file_text="y")
    assert (
        await ok(tool, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    )
    assert (
        await ok(tool, command="delete", path="/memories/y.md")
        == "Successfully deleted /memories/y.md"
    )
    assert (
        await err(tool, command="delete", path="/memories/y.md")
        == "The path /memories/y.md does not exist"
    )
    for root in ("/memories", "/memories/", "/memories/a/..", "/memories/./"):
        assert (
            await err(tool, command="delete", path=root)
            == "Cannot delete the /memories directory itself"
        )


async def test_rename(tool: AnthropicMemoryTool) -> None:
    await ok(tool, command="create", path="/memories/a.md", file_text="A")
    await ok(tool, command="create", path="/memories/b.md", file_text="B")
    assert await ok(
        tool, command="rename", old_path="/memories/a.md", new_path="/memories/archive/a1.md"
    ) == ("Successfully renamed /memories/a.md to /memories/archive/a1.md")
    assert await tool.store.read("/memories/archive/a1.md") == "A"
    assert not await tool.store.exists("/memories/a.md")
    assert await err(
        tool, command="rename", old_path="/memories/b.md", new_path="/memories/archive/a1.md"
    ) == ("The destination /memories/archive/a1.md already exists")
    assert await err(
        tool, command="rename", old_path="/memories/zz.md", new_path="/memories/q.md"
    ) == ("The path /memories/zz.md does not exist")
    # a directory moves with its contents
    assert await ok(
        tool, command="rename", old_path="/memories/archive", new_path="/memories/old"
    ) == ("Successfully renamed /memories/archive to /memories/old")
    assert await tool.store.read("/memories/old/a1.md") == "A"
    assert not await tool.store.exists("/memories/archive")
    assert (
        await err(tool, command="rename", old_path="/memories/old", new_path="/memories/old/inner")
    ).startswith("Cannot move")
    assert await err(tool, command="rename", old_path="/memories", new_path="/memories/x") == (
        "Cannot rename the /memories directory itself"
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "Path must start with /memories, got: /etc/passwd"),
        ("memories/a", "Path must start with /memories, got: memories/a"),
        ("/memoriesX/a", "Path must start with /memories, got: /memoriesX/a"),
        (
            "/memories/../etc/passwd",
            "Path /memories/../etc/passwd would escape /memories directory",
        ),
        ("/memories/a/../../x", "Path /memories/a/../../x would escape /memories directory"),
    ],
)
async def test_path_rules(tool: AnthropicMemoryTool, path: str, message: str) -> None:
    for command in (
        {"command": "view"},
        {"command": "create", "file_text": "x"},
        {"command": "delete"},
    ):
        assert await err(tool, path=path, **command) == message


@pytest.mark.parametrize(
    "path",
    [
        "/memories/%2e%2e/x",
        "/memories/a\x00b",
        "/memories/a\\b",
        "/memories/\x1b[31m",
        "/memories/" + "x" * 2000,
    ],
)
async def test_hostile_paths_never_raise(tool: AnthropicMemoryTool, path: str) -> None:
    for command in MEMORY_COMMANDS:
        result = await ex(
            tool,
            command=command,
            path=path,
            old_path=path,
            new_path=path + "2",
            file_text="x",
            old_str="a",
            new_str="b",
            insert_line=0,
            insert_text="t",
        )
        assert result.is_error, (command, path)
    assert await tool.store.list("/") == []


async def test_dot_segments_inside_the_root_resolve(tool: AnthropicMemoryTool) -> None:
    await ok(tool, command="create", path="/memories/a/../b.md", file_text="b")
    assert await tool.store.read("/memories/b.md") == "b"


async def test_missing_or_bad_parameters(tool: AnthropicMemoryTool) -> None:
    assert (
        await err(tool, command="view") == "Missing or invalid parameter `path` for command `view`."
    )
    assert (
        await err(tool, command="create", path="/memories/a")
        == "Missing or invalid parameter `file_text` for command `create`."
    )
    assert (
        await err(tool, command="insert", path="/memories/a", insert_line=True, insert_text="x")
    ).startswith("Missing or invalid parameter `insert_line`")
    assert await err(tool, command="explode", path="/memories") == "Unknown command: explode"
    assert (await tool.execute("{bad json")).is_error
    assert (await tool.execute('{"command": "view", "path": "/memories"}')).content.startswith(
        "Here're"
    )
    assert (await tool.execute(42)).is_error


async def test_size_limit() -> None:
    tool = AnthropicMemoryTool(MemoryKnowledgeStore(), max_file_chars=10)
    assert await err(tool, command="create", path="/memories/a", file_text="x" * 11) == (
        "The file would have 11 characters; the limit is 10."
    )
    await ok(tool, command="create", path="/memories/a", file_text="x" * 10)
    assert (
        await err(tool, command="insert", path="/memories/a", insert_line=0, insert_text="more")
    ).startswith("The file would have")


async def test_per_user_roots_are_isolated() -> None:
    store = MemoryKnowledgeStore()
    alice = AnthropicMemoryTool(store, user_id="alice")
    bob = AnthropicMemoryTool(store, user_id="bob")
    await ok(alice, command="create", path="/memories/me.md", file_text="I am Alice")
    assert (await err(bob, command="view", path="/memories/me.md")).startswith(
        "The path /memories/me.md does not exist"
    )
    assert await store.read("/users/alice/memories/me.md") == "I am Alice"
    assert (await err(alice, command="view", path="/memories/../../bob/memories")).endswith(
        "would escape /memories directory"
    )
    with pytest.raises(ValueError):
        AnthropicMemoryTool(store, user_id="../bob")
    with pytest.raises(ValueError):
        AnthropicMemoryTool(store, root="/")
    custom = AnthropicMemoryTool(store, root="/tenants/t1/mem")
    await ok(custom, command="create", path="/memories/x", file_text="t")
    assert await store.read("/tenants/t1/mem/x") == "t"


async def test_url_constructor_and_clear_all(tmp_path: Path) -> None:
    tool = AnthropicMemoryTool(str(tmp_path / "state"), user_id="u1")
    await ok(tool, command="create", path="/memories/a.md", file_text="on disk")
    assert (tmp_path / "state" / "users" / "u1" / "memories" / "a.md").read_text() == "on disk"
    assert await tool.clear_all_memory() == "All memory cleared"
    assert not (tmp_path / "state" / "users" / "u1" / "memories" / "a.md").exists()


async def test_concurrent_edits_lose_nothing() -> None:
    """Edits are compare-and-swap: 30 concurrent inserts all land."""
    tool = AnthropicMemoryTool(MemoryKnowledgeStore(), max_attempts=100)
    await ok(tool, command="create", path="/memories/log.md", file_text="start\n")

    class Yielding(CountingStore):
        async def read(self, path: str) -> Any:
            text = await self.inner.read(path)
            await asyncio.sleep(0)  # let the other edits interleave
            return text

    tool.store = Yielding(tool.store)  # type: ignore[assignment]

    async def main() -> list[MemoryToolResult]:
        return await asyncio.gather(
            *(
                tool.execute(
                    {
                        "command": "insert",
                        "path": "/memories/log.md",
                        "insert_line": 1,
                        "insert_text": f"entry {i}",
                    }
                )
                for i in range(30)
            )
        )

    results = await main()
    assert all(not r.is_error for r in results)
    lines = (await tool.store.read("/memories/log.md") or "").splitlines()
    assert sorted(lines) == sorted(["start"] + [f"entry {i}" for i in range(30)])
    assert tool.store.calls["stat"] > 30  # type: ignore[attr-defined]  # some retried


async def test_create_is_create_only_under_a_race() -> None:
    tool = AnthropicMemoryTool(MemoryKnowledgeStore())

    async def main() -> list[MemoryToolResult]:
        return await asyncio.gather(
            *(
                tool.execute({"command": "create", "path": "/memories/x.md", "file_text": f"v{i}"})
                for i in range(10)
            )
        )

    results = await main()
    assert sum(not r.is_error for r in results) == 1


async def test_plain_store_fallback() -> None:
    tool = AnthropicMemoryTool(PlainStore())  # type: ignore[arg-type]
    await ok(tool, command="create", path="/memories/a.md", file_text="a\nb\n")
    await ok(tool, command="str_replace", path="/memories/a.md", old_str="b", new_str="c")
    await ok(tool, command="rename", old_path="/memories/a.md", new_path="/memories/z.md")
    assert (await ok(tool, command="view", path="/memories")).splitlines()[
        2
    ] == "4B\t/memories/z.md"


async def test_storage_errors_are_results() -> None:
    counting = CountingStore(MemoryKnowledgeStore())
    counting.fail["write"] = BackendError("bucket gone")
    tool = AnthropicMemoryTool(counting)  # type: ignore[arg-type]
    result = await ex(tool, command="create", path="/memories/a", file_text="x")
    assert result.is_error and result.content == (
        "Storage error: the memory store failed during `create` on /memories/a. Try again later."
    )


def test_result_block_and_params() -> None:
    assert MemoryToolResult("done").to_anthropic("tu_1") == {
        "type": "tool_result",
        "tool_use_id": "tu_1",
        "content": "done",
    }
    assert MemoryToolResult("bad", True).to_anthropic("tu_2")["is_error"] is True
    assert str(MemoryToolResult("x")) == "x"
    assert AnthropicMemoryTool.tool_param() == {"type": "memory_20250818", "name": "memory"}
    assert AnthropicMemoryTool.tool_param({"type": "ephemeral"})["cache_control"] == {
        "type": "ephemeral"
    }
    tool = AnthropicMemoryTool(MemoryKnowledgeStore())
    schema = tool.openai_schema()["function"]["parameters"]
    assert schema["properties"]["command"]["enum"] == list(MEMORY_COMMANDS)


def test_execute_sync(tmp_path: Path) -> None:
    tool = AnthropicMemoryTool(str(tmp_path))
    assert not tool.execute_sync(
        {"command": "create", "path": "/memories/s.md", "file_text": "sync"}
    ).is_error
    assert tool.execute_sync({"command": "view", "path": "/memories/s.md"}).content.endswith(
        "1\tsync"
    )

    async def inside() -> None:
        with pytest.raises(RuntimeError):
            tool.execute_sync({"command": "view", "path": "/memories"})

    run(inside())


async def test_sdk_like_command_objects() -> None:
    class Cmd:
        def model_dump(self) -> dict[str, Any]:
            return {"command": "view", "path": "/memories"}

    tool = AnthropicMemoryTool(MemoryKnowledgeStore())
    assert (await tool.execute(Cmd())).content.startswith("Here're the files")
