"""The memory tool tells a refusal that can never succeed from a failure worth retrying.

An agent told "Try again later" retries; a symlink out of ``/memories``, a path the store
will not accept or content over the store's limit fails the same way every time, so the
answer must say so. Nothing outside the root is read or changed, nothing inside is lost.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from fsmemory.agent import AnthropicMemoryTool
from fsmemory.agent.tools import MEMORY_COMMANDS
from fsmemory.errors import BackendError, ConflictError, LockTimeoutError
from fsmemory.store import DiskKnowledgeStore, FsspecKnowledgeStore, MemoryKnowledgeStore
from tests.test_agent.conftest import CountingStore

SECRET = "outside secret 7731\n"
FINAL = "This will fail the same way every time: do not retry it."


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file bytes, or the target of a symlink."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirs, names in os.walk(root):
        for name in [*names, *dirs]:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = "-> " + os.readlink(full)
            elif full.is_file():
                out[rel] = full.read_bytes()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture
def planted(tmp_path: Path) -> tuple[AnthropicMemoryTool, Path, Path]:
    """A tool on a local folder whose ``/memories`` holds symlinks to a folder outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "sub").mkdir()
    (outside / "sub" / "deep.txt").write_text(SECRET)
    store_root = tmp_path / "store"
    memories = store_root / "memories"
    memories.mkdir(parents=True)
    (memories / "ok.txt").write_bytes(b"kept line\r\nsecond\n")
    (memories / "folder").mkdir()
    (memories / "folder" / "inner.md").write_bytes(b"inner\n")
    os.symlink(outside / "secret.txt", memories / "link.txt")
    os.symlink(outside, memories / "dirlink")
    os.symlink(outside / "sub", memories / "folder" / "sublink")
    os.symlink("/etc/hostname", memories / "abs.txt")
    tool = AnthropicMemoryTool(DiskKnowledgeStore(store_root, watch="none"))
    return tool, store_root, outside


def _commands(path: str) -> list[dict[str, Any]]:
    return [
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "overwrite"},
        {"command": "create", "path": path + "/new.txt", "file_text": "planted"},
        {"command": "str_replace", "path": path, "old_str": "outside", "new_str": "pwned"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/moved.txt"},
        {"command": "rename", "old_path": "/memories/ok.txt", "new_path": path + "/in.txt"},
        {"command": "rename", "old_path": "/memories/folder", "new_path": path + "/f"},
    ]


SYMLINKED = [
    "/memories/link.txt",
    "/memories/abs.txt",
    "/memories/dirlink",
    "/memories/dirlink/secret.txt",
    "/memories/dirlink/sub/deep.txt",
    "/memories/folder/sublink",
    "/memories/folder/sublink/deep.txt",
    "/memories/folder/../dirlink/secret.txt",
]


@pytest.mark.parametrize("path", SYMLINKED)
async def test_symlinks_out_of_the_root_are_final_refusals(
    planted: tuple[AnthropicMemoryTool, Path, Path], path: str
) -> None:
    tool, store_root, outside = planted
    before_outside = _tree(outside)
    before_store = _tree(store_root)
    for command in _commands(path):
        result = await tool.execute(command)
        assert result.is_error, (command, result.content)
        assert "Try again" not in result.content, (command, result.content)
        assert "outside secret" not in result.content
        assert str(outside) not in result.content and str(store_root) not in result.content
        if result.content.startswith("Refused"):
            assert "symbolic link" in result.content and result.content.endswith(FINAL)
    # Nothing outside was read into an answer or changed; nothing inside was lost.
    assert _tree(outside) == before_outside
    assert _tree(store_root) == before_store


async def test_symlinked_file_is_named_as_such(
    planted: tuple[AnthropicMemoryTool, Path, Path],
) -> None:
    tool, _, _ = planted
    result = await tool.execute({"command": "view", "path": "/memories/link.txt"})
    assert result.is_error and result.content == (
        "Refused: `view` on /memories/link.txt cannot be done: it is, or passes through, a "
        "symbolic link, which the memory store does not follow (it may lead outside "
        f"/memories). {FINAL}"
    )
    result = await tool.execute(
        {"command": "rename", "old_path": "/memories/ok.txt", "new_path": "/memories/dirlink/x"}
    )
    assert result.content.startswith(
        "Refused: `rename` on /memories/ok.txt -> /memories/dirlink/x cannot be done: it is, "
        "or passes through, a symbolic link"
    )
    # The listing shows neither the links nor anything behind them.
    listing = (await tool.execute({"command": "view", "path": "/memories"})).content
    assert "link" not in listing and "secret" not in listing and "abs" not in listing
    assert "/memories/ok.txt" in listing and "/memories/folder/inner.md" in listing


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/memories/../x", "Path /memories/../x would escape /memories directory"),
        ("/memories/a/../../x", "Path /memories/a/../../x would escape /memories directory"),
        ("/memories/a\x00b", "Invalid path /memories/a\x00b: path contains a control character"),
        ("/memories/a\\b", "Invalid path /memories/a\\b: path contains a backslash"),
        ("/memories/%2e%2e/x", "Invalid path /memories/%2e%2e/x: path has an encoded traversal"),
        ("/memories/.fsmemory-lock", "Invalid path /memories/.fsmemory-lock: names starting"),
        ("/etc/passwd", "Path must start with /memories, got: /etc/passwd"),
    ],
)
async def test_invalid_paths_never_say_try_again(
    planted: tuple[AnthropicMemoryTool, Path, Path], path: str, message: str
) -> None:
    tool, store_root, outside = planted
    before = (_tree(outside), _tree(store_root))
    for command in MEMORY_COMMANDS:
        result = await tool.execute(
            {
                "command": command,
                "path": path,
                "old_path": path,
                "new_path": path + "2",
                "file_text": "x",
                "old_str": "a",
                "new_str": "b",
                "insert_line": 0,
                "insert_text": "t",
            }
        )
        assert result.is_error and result.content.startswith(message), (command, result.content)
        assert "Try again" not in result.content
    assert (_tree(outside), _tree(store_root)) == before


async def test_content_over_the_store_limit_is_final(tmp_path: Path) -> None:
    store = FsspecKnowledgeStore(str(tmp_path), max_file_bytes=20, watch="none")
    tool = AnthropicMemoryTool(store)
    assert not (
        await tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "small\n"})
    ).is_error
    before = (tmp_path / "memories" / "a.md").read_bytes()
    for command in (
        {"command": "create", "path": "/memories/b.md", "file_text": "x" * 21},
        {"command": "insert", "path": "/memories/a.md", "insert_line": 1, "insert_text": "y" * 30},
        {
            "command": "str_replace",
            "path": "/memories/a.md",
            "old_str": "small",
            "new_str": "z" * 30,
        },
    ):
        result = await tool.execute(command)
        assert result.is_error
        assert result.content == (
            f"Refused: `{command['command']}` on {command['path']} cannot be done: the file "
            f"would be larger than the memory store allows. {FINAL} Keep the file smaller "
            f"(split it)."
        )
    assert (tmp_path / "memories" / "a.md").read_bytes() == before
    assert not (tmp_path / "memories" / "b.md").exists()


@pytest.mark.parametrize(
    "error",
    [
        BackendError("connection reset"),
        LockTimeoutError("lock busy"),
        ConflictError("changed"),
        OSError("disk hiccup"),
    ],
)
async def test_transient_failures_still_say_try_again(error: Exception) -> None:
    counting = CountingStore(MemoryKnowledgeStore())
    await counting.inner.write("/memories/a", "x")
    counting.fail["read"] = error
    tool = AnthropicMemoryTool(counting)  # type: ignore[arg-type]
    result = await tool.execute({"command": "view", "path": "/memories/a"})
    assert result.is_error
    assert result.content.startswith("Storage error:")
    assert result.content.endswith("Try again later.")
    assert FINAL not in result.content
