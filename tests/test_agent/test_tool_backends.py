"""The model's tools answer the same on every backend, in the model's own terms.

The memory-tool handler and the ``knowledge`` tool run here on memory://, a local
folder, S3 (moto) and Redis: for the same commands the model must read the same
results, never an internal path, an exception name or a backend's quirk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from fsmemory.agent import AnthropicMemoryTool, KnowledgeConfig, KnowledgeTool
from fsmemory.store import DiskKnowledgeStore, FsspecKnowledgeStore, MemoryKnowledgeStore
from tests.test_memory.conftest import backend_location

BACKENDS = [
    "memory",
    "local",
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("redis", marks=pytest.mark.redis),
]


@pytest.fixture(params=BACKENDS)
def url_options(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    return backend_location(request, request.param, tmp_path)


# Commands that fail for reasons of the model's making; one line each, as the model sees it.
SCRIPT: list[tuple[dict[str, Any], bool, str]] = [
    (
        {"command": "create", "path": "/memories/a.md", "file_text": "x"},
        False,
        "File created successfully at: /memories/a.md",
    ),
    (
        {"command": "create", "path": "/memories/a.md/b.md", "file_text": "x"},
        True,
        "Cannot create /memories/a.md/b.md: /memories/a.md is a file, not a directory.",
    ),
    (
        {"command": "view", "path": "/memories/a.md/b.md"},
        True,
        "The path /memories/a.md/b.md does not exist. Please provide a valid path.",
    ),
    (
        {"command": "create", "path": "/memories/d/e.md", "file_text": "y"},
        False,
        "File created successfully at: /memories/d/e.md",
    ),
    (
        {"command": "create", "path": "/memories/d", "file_text": "x"},
        True,
        "File /memories/d already exists",
    ),
    (
        {"command": "str_replace", "path": "/memories/d", "old_str": "x", "new_str": "y"},
        True,
        "The path /memories/d is not a file.",
    ),
    (
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/d/e.md/f"},
        True,
        "Cannot create /memories/d/e.md/f: /memories/d/e.md is a file, not a directory.",
    ),
    (
        {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/a.md/zz"},
        True,
        "Cannot create /memories/a.md/zz: /memories/a.md is a file, not a directory.",
    ),
    (
        {"command": "create", "path": "/memories/.fsmemory.lock", "file_text": "x"},
        True,
        "Invalid path /memories/.fsmemory.lock: names starting with '.fsmemory' are reserved",
    ),
    (
        {"command": "view", "path": "/memories"},
        False,
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n2B\t/memories\n1B\t/memories/a.md\n1B\t/memories/d/\n1B\t/memories/d/e.md",
    ),
]


@pytest.mark.parametrize("user_id", [None, "u-42"])
async def test_memory_tool_answers_the_same_everywhere(
    url_options: tuple[str, dict[str, Any]], user_id: str | None
) -> None:
    url, options = url_options
    tool = AnthropicMemoryTool(url, storage_options=options, user_id=user_id)
    for command, is_error, expected in SCRIPT:
        result = await tool.execute(command)
        assert (result.is_error, result.content) == (is_error, expected), command
    # Nothing was created by the refused commands.
    assert await tool.store.read(f"{tool.root}/a.md") == "x"
    assert await tool.store.list(tool.root) == ["a.md", "d/"]


async def test_storage_failure_names_no_internal_path(
    url_options: tuple[str, dict[str, Any]],
) -> None:
    """A failure inside the store (here: writing below a file, behind the handler's
    back, the way a concurrent writer would) is one neutral sentence; a retry would
    meet the same file, so it does not say "try again"."""
    url, options = url_options
    tool = AnthropicMemoryTool(url, storage_options=options, user_id="u-7")
    await tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"})

    async def no_parent_check(spath: str, path: str) -> None:
        return None

    tool._check_parents = no_parent_check  # type: ignore[method-assign]
    result = await tool.execute({"command": "create", "path": "/memories/a.md/b", "file_text": "y"})
    if not result.is_error:  # object stores take it: then the model's view is unchanged
        assert result.content == "File created successfully at: /memories/a.md/b"
        return
    assert result.content == (
        "Refused: `create` on /memories/a.md/b cannot be done: a directory stands where a "
        "file is needed, or a file where a directory is needed. This will fail the same way "
        "every time: do not retry it."
    )


async def test_knowledge_tool_answers_the_same_everywhere(
    url_options: tuple[str, dict[str, Any]],
) -> None:
    url, options = url_options
    tool = KnowledgeTool(FsspecKnowledgeStore(url, storage_options=options))

    async def call(**kwargs: Any) -> str:
        return await tool.call(kwargs)

    assert await call(action="write", path="/a.md", content="x") == "Wrote 1 characters to /a.md."
    assert await call(action="write", path="/a.md/b.md", content="y") == (
        "Error: cannot write /a.md/b.md: /a.md is a file, not a folder."
    )
    assert await call(action="append", path="/a.md/b/c.md", content="y") == (
        "Error: cannot append /a.md/b/c.md: /a.md is a file, not a folder."
    )
    assert (
        await call(action="write", path="/d/e.md", content="z") == "Wrote 1 characters to /d/e.md."
    )
    assert (
        await call(action="write", path="/d", content="z")
        == "Error: /d is a folder; give a file path."
    )
    assert await call(action="list", path="/") == "a.md\nd/"
    assert await call(action="read", path="/a.md") == "x"


async def test_memory_tool_takes_storage_options_on_s3(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    tool = AnthropicMemoryTool(s3_root_url, storage_options=s3_storage_options)
    result = await tool.execute({"command": "create", "path": "/memories/s3.md", "file_text": "hi"})
    assert not result.is_error, result.content
    again = FsspecKnowledgeStore(s3_root_url, storage_options=s3_storage_options)
    assert await again.read("/memories/s3.md") == "hi"
    config = KnowledgeConfig(store=s3_root_url, storage_options=s3_storage_options)
    assert await config.store.read("/memories/s3.md") == "hi"


# -- 13.3: lines the model did not touch keep their bytes -----------------------------------

ODD = "crlf\r\nsep\u2028arated\nnel\x85x\nvt\x0bff\x0cfs\x1cgs\x1drs\x1e!\nlast"


@pytest.mark.parametrize("store_kind", ["memory", "disk"])
@pytest.mark.parametrize("line", [0, 1, 3, 5])
async def test_insert_keeps_other_lines_byte_identical(
    tmp_path: Path, store_kind: str, line: int
) -> None:
    store: Any = (
        MemoryKnowledgeStore()
        if store_kind == "memory"
        else DiskKnowledgeStore(tmp_path / "s", watch="none")
    )
    tool = AnthropicMemoryTool(store)
    for text in (ODD, ODD + "\n"):
        await tool.store.delete("/memories/f.md")
        assert not (
            await tool.execute({"command": "create", "path": "/memories/f.md", "file_text": text})
        ).is_error
        result = await tool.execute(
            {
                "command": "insert",
                "path": "/memories/f.md",
                "insert_line": line,
                "insert_text": "NEW",
            }
        )
        assert not result.is_error, result.content
        lines = text.removesuffix("\n").split("\n")
        expected = "\n".join([*lines[:line], "NEW", *lines[line:]]) + "\n"
        assert await tool.store.read("/memories/f.md") == expected
    if store_kind == "disk":  # on disk too, to the byte
        assert (tmp_path / "s" / "memories" / "f.md").read_bytes() == expected.encode()


async def test_insert_line_range_counts_newlines_only() -> None:
    tool = AnthropicMemoryTool(MemoryKnowledgeStore())
    await tool.execute(
        {"command": "create", "path": "/memories/f.md", "file_text": "a\u2028b\r\nc\n"}
    )
    result = await tool.execute(
        {"command": "insert", "path": "/memories/f.md", "insert_line": 3, "insert_text": "x"}
    )
    assert (
        result.content
        == "Invalid `insert_line` parameter: 3. It should be within the range [0, 2]."
    )


async def test_view_and_str_replace_number_lines_by_newline() -> None:
    tool = AnthropicMemoryTool(MemoryKnowledgeStore())
    await tool.execute({"command": "create", "path": "/memories/f.md", "file_text": ODD})
    view = (await tool.execute({"command": "view", "path": "/memories/f.md"})).content
    assert view.split("\n")[1:] == [f"{n:>6}\t{line}" for n, line in enumerate(ODD.split("\n"), 1)]
    edit = await tool.execute(
        {
            "command": "str_replace",
            "path": "/memories/f.md",
            "old_str": "last",
            "new_str": "end",
        }
    )
    assert edit.content.endswith("     5\tend")
    assert await tool.store.read("/memories/f.md") == ODD.replace("last", "end")
    knowledge = KnowledgeTool(tool.store)
    assert await knowledge.call({"action": "read", "path": "/memories/f.md"}) == ODD.replace(
        "last", "end"
    )


# -- view: fsmemory's own files never, empty folders always --------------------------------


async def test_view_lists_empty_folders_and_hides_fsmemory_files(tmp_path: Path) -> None:
    tool = AnthropicMemoryTool(DiskKnowledgeStore(tmp_path, watch="none"))
    await tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "abc"})
    await tool.execute(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "b", "new_str": "B"}
    )
    os.makedirs(tmp_path / "memories" / "empty")
    os.makedirs(tmp_path / "memories" / "sub" / "inner")
    (tmp_path / "memories" / ".fsmemory.lock").write_text("")
    assert (await tool.execute({"command": "view", "path": "/memories"})).content.split("\n")[
        1:
    ] == [
        "3B\t/memories",
        "3B\t/memories/a.md",
        "0B\t/memories/empty/",
        "0B\t/memories/sub/",
        "0B\t/memories/sub/inner/",
    ]
    assert (await tool.execute({"command": "view", "path": "/memories/empty"})).content.split("\n")[
        1:
    ] == ["0B\t/memories/empty"]
    assert (
        await tool.execute({"command": "create", "path": "/memories/empty", "file_text": "x"})
    ).content == ("File /memories/empty already exists")
    moved = await tool.execute(
        {"command": "rename", "old_path": "/memories/sub", "new_path": "/memories/moved"}
    )
    assert not moved.is_error, moved.content
    assert (await tool.execute({"command": "delete", "path": "/memories/empty"})).content == (
        "Successfully deleted /memories/empty"
    )
    assert not (tmp_path / "memories" / "empty").exists()


async def test_memory_tool_takes_a_path_and_refuses_options_for_a_store(tmp_path: Path) -> None:
    tool = AnthropicMemoryTool(tmp_path / "mem")
    assert not (
        await tool.execute({"command": "create", "path": "/memories/p.md", "file_text": "p"})
    ).is_error
    assert (tmp_path / "mem" / "memories" / "p.md").read_text() == "p"
    with pytest.raises(ValueError, match="storage_options is for a store given as a URL"):
        AnthropicMemoryTool(MemoryKnowledgeStore(), storage_options={"anon": True})
    with pytest.raises(ValueError, match="storage_options is for a store given as a URL"):
        KnowledgeConfig(store=MemoryKnowledgeStore(), storage_options={"anon": True})
