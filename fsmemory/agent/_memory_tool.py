"""A handler for Anthropic's client-side memory tool (``memory_20250818``) on any store.

The model sends commands on paths under ``/memories``; this handler answers them from
a :class:`~fsmemory.store.KnowledgeStore` (so from any fsspec URL: a folder, S3, GCS,
Redis, ...), with the reference implementation's path rules and result strings.
Differences from the reference's local-folder tool, all on the safe side:

* edits (``str_replace``, ``insert``) are compare-and-swap writes, retried on a
  concurrent change, so two agents editing one file never lose an update;
  ``create`` is a create-only write;
* a path such as ``/memoriesX`` is refused (the reference only checks the prefix);
* deleting the root through an alias (``/memories/``, ``/memories/a/..``) is refused
  like ``/memories`` itself;
* paths the store refuses (NUL, control characters, percent-encoded dot segments, ...)
  and over-large content are reported as errors;
* a directory's size in ``view`` is the total size of the files below it;
* a refusal that no retry can change (a symbolic link, which may lead outside
  ``/memories``, a path the store does not accept, content over the store's size limit, a
  directory where a file is needed) says so and that retrying will not help; only other
  storage failures (network, service, lock) end with "Try again later".
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fsmemory import _jsonutil
from fsmemory.agent._schema import ToolSchema
from fsmemory.agent._tools import file_in_the_way
from fsmemory.errors import (
    BucketNotFoundError,
    ConflictError,
    ContentTooLargeError,
    FsMemoryError,
    InvalidInputError,
    InvalidPathError,
    KeyNotFoundError,
    NotAFileError,
    ReadOnlyStorageError,
)
from fsmemory.store import (
    FsspecKnowledgeStore,
    KnowledgeStore,
    VersionedKnowledgeStore,
    normalize_path,
)

__all__ = ["MEMORY_COMMANDS", "AnthropicMemoryTool", "MemoryToolResult"]

logger = logging.getLogger(__name__)

MEMORY_COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")

_PREFIX = "/memories"
_RESERVED = ".fsmemory"  # fsmemory's own names (lock, temp and lease files)
_MAX_LINES = 999_999
_LINE_NUMBER_WIDTH = len(str(_MAX_LINES))
_USER_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._@-]{0,127}$")


class _Fail(Exception):
    """A command failed; the message is what the model is told."""


@dataclass(frozen=True, slots=True)
class MemoryToolResult:
    """The outcome of one memory command.

    Attributes:
        content: the text for the model.
        is_error: True when the command failed (send ``is_error`` with the result).
    """

    content: str
    is_error: bool = False

    def __str__(self) -> str:
        return self.content

    def to_anthropic(self, tool_use_id: str) -> dict[str, Any]:
        """The ``tool_result`` content block answering ``tool_use_id``."""
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.content,
        }
        if self.is_error:
            block["is_error"] = True
        return block


def _format_size(size: int) -> str:
    if size <= 0:
        return "0B"
    units = ("B", "K", "M", "G")
    index = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**index)
    if value == int(value):
        return f"{int(value)}{units[index]}"
    return f"{value:.1f}{units[index]}"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(
        f"{str(number).rjust(_LINE_NUMBER_WIDTH)}\t{line}"
        for number, line in enumerate(lines, first)
    )


def _as_input(command: Any) -> dict[str, Any]:
    if isinstance(command, Mapping):
        return dict(command)
    if isinstance(command, str):
        try:
            value = _jsonutil.loads(command)
        except _jsonutil.JSONDecodeError as exc:
            raise _Fail("The tool input is not valid JSON.") from exc
        if isinstance(value, dict):
            return value
        raise _Fail("The tool input must be a JSON object.")
    dump = getattr(command, "model_dump", None)
    if callable(dump):
        data = dump()
        if isinstance(data, dict):
            return data
    raise _Fail("The tool input must be an object with a 'command'.")


class AnthropicMemoryTool(ToolSchema):
    """Answers Anthropic memory-tool commands from a knowledge store.

    Commands: ``view`` (a directory 2 levels deep, or a file with line numbers,
    optional ``view_range``), ``create``, ``str_replace``, ``insert``, ``delete``,
    ``rename``. The model's ``/memories/...`` maps to ``<root>/...`` in the store:
    ``root`` defaults to ``/memories``, or ``/users/<user_id>/memories`` with a
    ``user_id``, so one bucket can hold many users' memories apart.

    Nothing the model sends makes this raise: every failure is a
    :class:`MemoryToolResult` with ``is_error=True``.

    Args:
        store: a store, or a URL / local path to open one on.
        user_id: keep this user's memories under ``/users/<user_id>/memories``.
        root: the store folder that ``/memories`` maps to (overrides ``user_id``).
        storage_options: for a URL: passed to fsspec (credentials, endpoint, ...).
        max_file_chars: the largest file a command may create or produce.
        max_attempts: compare-and-swap attempts for an edit before giving up.

    Use with the Anthropic SDK: pass :meth:`tool_param` (or ``anthropic_schema()``) in
    ``tools=[...]`` and answer each ``tool_use`` block named ``memory`` with
    ``(await tool.execute(block.input)).to_anthropic(block.id)``. Other providers get
    the same commands as a function tool: ``openai_schema(strict=...)``,
    ``responses_schema(strict=...)`` (see :class:`~fsmemory.agent.ToolSchema`).
    """

    name = "memory"
    description = (
        "Your persistent memory directory /memories: view, create, str_replace, insert, "
        "delete and rename files in it. Check it before starting a task; record progress "
        "and facts as you go."
    )

    def __init__(
        self,
        store: KnowledgeStore | str | os.PathLike[str],
        *,
        user_id: str | None = None,
        root: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        max_file_chars: int = 1_000_000,
        max_attempts: int = 8,
    ) -> None:
        if isinstance(store, str | os.PathLike):
            options = dict(storage_options or {})
            self.store: KnowledgeStore = FsspecKnowledgeStore(
                os.fspath(store), storage_options=options
            )
        elif storage_options:
            raise ValueError("storage_options is for a store given as a URL, not a store object")
        else:
            self.store = store
        if user_id is not None and (not isinstance(user_id, str) or not _USER_ID.match(user_id)):
            raise ValueError(
                f"user_id must be 1-128 characters of A-Z a-z 0-9 . _ @ -, got {user_id!r}"
            )
        if root is None:
            root = f"/users/{user_id}/memories" if user_id is not None else _PREFIX
        self.root = normalize_path(root)
        if self.root == "/":
            raise ValueError("root must be a folder below '/'")
        self.user_id = user_id
        self.max_file_chars = max_file_chars
        self.max_attempts = max(1, max_attempts)
        self._versioned = isinstance(self.store, VersionedKnowledgeStore)

    def __repr__(self) -> str:
        return f"AnthropicMemoryTool({self.store!r}, root={self.root!r})"

    # -- schemas -------------------------------------------------------------------------
    @staticmethod
    def tool_param(cache_control: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``tools=[...]`` entry for Anthropic's Messages API."""
        param: dict[str, Any] = {"type": "memory_20250818", "name": "memory"}
        if cache_control is not None:
            param["cache_control"] = dict(cache_control)
        return param

    @staticmethod
    def input_schema() -> dict[str, Any]:
        """A JSON schema of the commands, to offer the same tool to other providers."""
        path = {"type": "string", "description": "A path under /memories."}
        return {
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": list(MEMORY_COMMANDS)},
                "path": path,
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "view: [first line, last line]; -1 means the end.",
                },
                "file_text": {"type": "string", "description": "create: the file's text."},
                "old_str": {"type": "string", "description": "str_replace: unique text."},
                "new_str": {"type": "string", "description": "str_replace: replacement."},
                "insert_line": {
                    "type": "integer",
                    "description": "insert: the line number to insert after (0 = top).",
                },
                "insert_text": {"type": "string", "description": "insert: the text."},
                "old_path": path,
                "new_path": path,
            },
            "required": ["command"],
        }

    def parameters_schema(self) -> dict[str, Any]:
        """The arguments as one JSON schema (:meth:`input_schema`), for providers without
        Anthropic's built-in memory tool."""
        return self.input_schema()

    def anthropic_schema(self) -> dict[str, Any]:
        """The ``tools=[...]`` entry for Anthropic Messages: the built-in memory tool
        (:meth:`tool_param`), which Claude is trained on."""
        return self.tool_param()

    # -- dispatch ------------------------------------------------------------------------
    async def execute(self, command: Any) -> MemoryToolResult:
        """Run one command: a dict (``block.input``), its JSON text, or an SDK command
        model. Never raises for what the model sent."""
        data: dict[str, Any] = {}
        try:
            data = _as_input(command)
            name = data.get("command")
            if name == "view":
                text = await self.view(_req(data, "path", str, name), data.get("view_range"))
            elif name == "create":
                text = await self.create(
                    _req(data, "path", str, name), _req(data, "file_text", str, name)
                )
            elif name == "str_replace":
                text = await self.str_replace(
                    _req(data, "path", str, name),
                    _req(data, "old_str", str, name),
                    _req(data, "new_str", str, name),
                )
            elif name == "insert":
                text = await self.insert(
                    _req(data, "path", str, name),
                    _req(data, "insert_line", int, name),
                    _req(data, "insert_text", str, name),
                )
            elif name == "delete":
                text = await self.delete(_req(data, "path", str, name))
            elif name == "rename":
                text = await self.rename(
                    _req(data, "old_path", str, name), _req(data, "new_path", str, name)
                )
            else:
                raise _Fail(f"Unknown command: {name}")
        except _Fail as exc:
            return MemoryToolResult(str(exc), is_error=True)
        except (FsMemoryError, OSError) as exc:
            # The details (backend, exception, internal paths) go to the log; the model
            # gets one sentence in its own terms, the same on every backend.
            logger.warning("memory tool command %r failed: %r", data.get("command"), exc)
            return MemoryToolResult(_storage_failure(exc, data), True)
        return MemoryToolResult(text)

    def execute_sync(self, command: Any) -> MemoryToolResult:
        """:meth:`execute` from synchronous code (not from inside a running loop).

        Raises:
            RuntimeError: called from a running event loop (``await execute`` there).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.execute(command))
        raise RuntimeError("execute_sync was called inside an event loop: await execute()")

    # -- paths ---------------------------------------------------------------------------
    def _resolve(self, path: str) -> str:
        """The store path for the model's ``path``, or _Fail with the reference's text."""
        if path != _PREFIX and not path.startswith(_PREFIX + "/"):
            raise _Fail(f"Path must start with /memories, got: {path}")
        parts: list[str] = []
        for segment in path[len(_PREFIX) :].split("/"):
            if segment in ("", "."):
                continue
            if segment == "..":
                if not parts:
                    raise _Fail(f"Path {path} would escape /memories directory")
                parts.pop()
                continue
            parts.append(segment)
        target = self.root + ("/" + "/".join(parts) if parts else "")
        try:
            return normalize_path(target)
        except InvalidPathError as exc:
            # The validator names the store path; the model only knows its own.
            reason = str(exc).replace(f": {target.strip('/')!r}", "")
            raise _Fail(f"Invalid path {path}: {reason}") from exc

    def _shown(self, spath: str) -> str:
        """The model's ``/memories/...`` name of a store path below the root."""
        return _PREFIX + spath[len(self.root) :]

    async def _is_dir(self, spath: str) -> bool:
        if spath == self.root:
            return True
        if await self.store.list(spath):
            return await self.store.read(spath) is None
        # An empty folder (made by hand, or left by a local delete) is listed by its parent.
        parent, _, name = spath.rpartition("/")
        return f"{name}/" in await self.store.list(parent or "/")

    async def _exists(self, spath: str) -> bool:
        return await self.store.exists(spath) or await self._is_dir(spath)

    async def _check_parents(self, spath: str, path: str) -> None:
        """Refuse a path below a file, the same way on every backend."""
        blocker = await file_in_the_way(self.store, spath, self.root)
        if blocker is not None:
            raise _Fail(f"Cannot create {path}: {self._shown(blocker)} is a file, not a directory.")

    async def _walk(self, spath: str) -> tuple[list[str], list[str]]:
        """Every file and every folder below the folder ``spath`` (store paths).

        fsmemory's own files (``.fsmemory*``, e.g. a local lock file) are never shown.
        """
        files: list[str] = []
        folders: list[str] = []
        pending = [spath]
        while pending:
            folder = pending.pop()
            for name in await self.store.list(folder):
                if name.startswith(_RESERVED):
                    continue
                child = f"{folder}/{name.rstrip('/')}"
                if name.endswith("/"):
                    pending.append(child)
                    folders.append(child)
                else:
                    files.append(child)
        return files, folders

    async def _size(self, spath: str) -> int:
        if self._versioned:
            assert isinstance(self.store, VersionedKnowledgeStore)
            info = await self.store.stat(spath)
            return 0 if info is None else info.size
        text = await self.store.read(spath)
        return 0 if text is None else len(text.encode("utf-8"))

    def _check_size(self, text: str) -> None:
        if len(text) > self.max_file_chars:
            raise _Fail(
                f"The file would have {len(text)} characters; the limit is {self.max_file_chars}."
            )

    # -- commands ------------------------------------------------------------------------
    async def view(self, path: str, view_range: Any = None) -> str:
        """A directory listing (2 levels, hidden items excluded) or a numbered file."""
        spath = self._resolve(path)
        text = None if spath == self.root else await self.store.read(spath)
        if text is None:
            if not await self._is_dir(spath):
                raise _Fail(f"The path {path} does not exist. Please provide a valid path.")
            return await self._view_dir(path, spath)
        lines = text.split("\n")
        if len(lines) > _MAX_LINES:
            raise _Fail(f"File {path} exceeds maximum line limit of 999,999 lines.")
        first = 1
        if view_range is not None:
            if (
                not isinstance(view_range, list | tuple)
                or len(view_range) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
            ):
                raise _Fail("Invalid `view_range` parameter: it should be a list of two integers.")
            start = max(1, view_range[0]) - 1
            end = len(lines) if view_range[1] == -1 else view_range[1]
            lines = lines[start:end]
            first = start + 1
        return f"Here's the content of {path} with line numbers:\n" + _numbered(lines, first)

    async def _view_dir(self, path: str, spath: str) -> str:
        files, folders = await self._walk(spath)
        sizes = dict(zip(files, await asyncio.gather(*(self._size(f) for f in files)), strict=True))
        cut = len(spath) + 1
        entries: dict[str, int] = {}  # relative name (dirs end with /) -> size
        for folder in folders:  # empty ones too
            parts = folder[cut:].split("/")
            if len(parts) <= 2 and not any(p.startswith(".") for p in parts):
                entries["/".join(parts) + "/"] = 0
        for file, size in sizes.items():
            rel = file[cut:]
            parts = rel.split("/")
            if any(p.startswith(".") for p in parts[:2]):
                continue
            for depth in range(1, min(len(parts), 2) + 1):
                is_dir = depth < len(parts)
                key = "/".join(parts[:depth]) + ("/" if is_dir else "")
                entries[key] = entries.get(key, 0) + size
        display = path.rstrip("/") or path
        lines = [f"{_format_size(sum(sizes.values()))}\t{path}"]
        for key in sorted(entries, key=lambda k: k.rstrip("/").split("/")):
            lines.append(f"{_format_size(entries[key])}\t{display}/{key}")
        header = (
            f"Here're the files and directories up to 2 levels deep in {path}, "
            f"excluding hidden items:"
        )
        return header + "\n" + "\n".join(lines)

    async def create(self, path: str, file_text: str) -> str:
        """Create a new file; an existing one is never overwritten."""
        spath = self._resolve(path)
        self._check_size(file_text)
        if spath == self.root or await self._exists(spath):
            raise _Fail(f"File {path} already exists")
        await self._check_parents(spath, path)
        if self._versioned:
            assert isinstance(self.store, VersionedKnowledgeStore)
            try:
                await self.store.write(spath, file_text, create_only=True)
            except ConflictError as exc:
                raise _Fail(f"File {path} already exists") from exc
        else:
            await self.store.write(spath, file_text)
        return f"File created successfully at: {path}"

    async def _edit(self, path: str, change: Any) -> tuple[str, Any]:
        """Read-modify-write ``path`` as a compare-and-swap; ``change(content)`` returns
        ``(new_content, info)`` or raises _Fail. Retries when the file changed."""
        spath = self._resolve(path)
        for _ in range(self.max_attempts):
            version: str | None = None
            if self._versioned:
                assert isinstance(self.store, VersionedKnowledgeStore)
                info = await self.store.stat(spath)
                version = None if info is None else info.version
            content = None if spath == self.root else await self.store.read(spath)
            if content is None:
                if await self._is_dir(spath):
                    raise _Fail(f"The path {path} is not a file.")
                if version is not None:
                    raise _Fail(
                        f"The file {path} no longer exists (may have been deleted or "
                        f"renamed concurrently)."
                    )
                raise _Fail(f"The path {path} does not exist. Please provide a valid path.")
            new_content, extra = change(content)
            self._check_size(new_content)
            if not self._versioned:
                await self.store.write(spath, new_content)
                return new_content, extra
            assert isinstance(self.store, VersionedKnowledgeStore)
            try:
                await self.store.write(spath, new_content, if_version=version)
            except ConflictError:
                continue
            return new_content, extra
        raise _Fail(f"The file {path} kept changing concurrently; it was not edited.")

    async def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """Replace the one occurrence of ``old_str``; returns a numbered snippet."""

        def change(content: str) -> tuple[str, int]:
            count = content.count(old_str)
            if count == 0:
                raise _Fail(
                    f"No replacement was performed, old_str `{old_str}` did not appear "
                    f"verbatim in {path}."
                )
            if count > 1:
                lines: list[int] = []
                start = 0
                while (pos := content.find(old_str, start)) != -1:
                    lines.append(content.count("\n", 0, pos) + 1)
                    start = pos + 1
                raise _Fail(
                    f"No replacement was performed. Multiple occurrences of old_str "
                    f"`{old_str}` in lines: {', '.join(map(str, lines))}. Please ensure it "
                    f"is unique"
                )
            pos = content.find(old_str)
            return content.replace(old_str, new_str), content.count("\n", 0, pos)

        new_content, changed = await self._edit(path, change)
        new_lines = new_content.split("\n")
        first = max(0, changed - 2)
        last = min(len(new_lines), changed + 3)
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + _numbered(new_lines[first:last], first + 1)
        )

    async def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        """Insert ``insert_text`` after line ``insert_line`` (0 = at the top)."""

        def change(content: str) -> tuple[str, None]:
            # Split on "\n" only: other lines keep their bytes (CRLF, U+2028, \x0c, ...),
            # which str.splitlines() would treat as line breaks and rewrite.
            lines = content.split("\n")
            if lines[-1] == "":
                lines.pop()  # the end of the last line, not a line of its own
            if insert_line < 0 or insert_line > len(lines):
                raise _Fail(
                    f"Invalid `insert_line` parameter: {insert_line}. It should be within "
                    f"the range [0, {len(lines)}]."
                )
            lines.insert(insert_line, insert_text.rstrip("\n"))
            new_content = "\n".join(lines)
            if not new_content.endswith("\n"):
                new_content += "\n"
            return new_content, None

        await self._edit(path, change)
        return f"The file {path} has been edited."

    async def delete(self, path: str) -> str:
        """Delete a file or a directory with everything in it."""
        spath = self._resolve(path)
        if spath == self.root:
            raise _Fail("Cannot delete the /memories directory itself")
        if not await self._exists(spath):
            raise _Fail(f"The path {path} does not exist")
        await self.store.delete(spath)
        return f"Successfully deleted {path}"

    async def rename(self, old_path: str, new_path: str) -> str:
        """Move a file or a directory; the destination must not exist."""
        old = self._resolve(old_path)
        new = self._resolve(new_path)
        if old == self.root:
            raise _Fail("Cannot rename the /memories directory itself")
        if new == self.root or await self._exists(new):
            raise _Fail(f"The destination {new_path} already exists")
        if not await self._exists(old):
            raise _Fail(f"The path {old_path} does not exist")
        if new.startswith(old + "/"):
            raise _Fail(f"Cannot move {old_path} into itself")
        await self._check_parents(new, new_path)
        if await self.store.read(old) is not None:
            await self._move_file(old, new, new_path)
        else:
            for file in (await self._walk(old))[0]:
                await self._move_file(file, new + file[len(old) :], new_path)
            await self.store.delete(old)
        return f"Successfully renamed {old_path} to {new_path}"

    async def _move_file(self, old: str, new: str, new_path: str) -> None:
        if not self._versioned:
            text = await self.store.read(old)
            if text is not None:
                await self.store.write(new, text)
                await self.store.delete(old)
            return
        store = self.store
        assert isinstance(store, VersionedKnowledgeStore)
        info = await store.stat(old)
        data = await store.read_bytes(old)
        if info is None or data is None:
            return  # moved or deleted concurrently
        try:
            new_version = await store.write_bytes(new, data, create_only=True)
        except ConflictError as exc:
            raise _Fail(f"The destination {new_path} already exists") from exc
        # The store has no conditional delete: re-check that the source is unchanged
        # and carry over an edit made meanwhile, so the move does not lose it.
        for _ in range(self.max_attempts):
            latest = await store.stat(old)
            if latest is None:
                return
            if latest.version == info.version:
                await store.delete(old)
                return
            data = await store.read_bytes(old)
            if data is None:
                return
            new_version = await store.write_bytes(new, data, if_version=new_version)
            info = latest

    async def clear_all_memory(self) -> str:
        """Delete everything under the root (``"All memory cleared"``)."""
        await self.store.delete(self.root)
        return "All memory cleared"


def _req(data: Mapping[str, Any], key: str, kind: type, command: Any) -> Any:
    value = data.get(key)
    if kind is int and isinstance(value, bool):
        value = None
    if not isinstance(value, kind):
        raise _Fail(f"Missing or invalid parameter `{key}` for command `{command}`.")
    return value


_FINAL = "This will fail the same way every time: do not retry it."


def _storage_failure(exc: BaseException, data: Mapping[str, Any]) -> str:
    """What the model is told when the store raised ``exc`` during the command ``data``.

    A refusal that no retry can change (a path the store will not follow or accept,
    content over the store's size limit, a directory where a file is needed, a missing
    file, a missing bucket) says so; only other failures (a network or service error, a
    lock or a compare-and-swap that kept losing) say "try again later". Store paths and
    backend details stay in the log: the model only sees its own ``/memories`` paths.
    """
    command = data.get("command")
    paths = [data.get(k) for k in ("path", "old_path", "new_path")]
    shown = [p for p in paths if isinstance(p, str) and len(p) < 300]
    where = f" on {' -> '.join(shown)}" if shown else ""
    clash = (
        f"Refused: `{command}`{where} cannot be done: a directory stands where a file "
        f"is needed, or a file where a directory is needed. {_FINAL}"
    )
    if isinstance(exc, InvalidPathError):
        reason = str(exc)
        if "cannot share this name" in reason:
            return clash
        if "symlink" in reason:
            why = (
                "it is, or passes through, a symbolic link, which the memory store does "
                "not follow (it may lead outside /memories)"
            )
        elif "reserved" in reason:
            why = "it names a file reserved for the memory store itself"
        else:
            why = "it is not a path the memory store accepts"
        return f"Refused: `{command}`{where} cannot be done: {why}. {_FINAL}"
    if isinstance(exc, ContentTooLargeError):
        return (
            f"Refused: `{command}`{where} cannot be done: the file would be larger than "
            f"the memory store allows. {_FINAL} Keep the file smaller (split it)."
        )
    if isinstance(exc, NotAFileError | NotADirectoryError | IsADirectoryError | FileExistsError):
        return clash  # a raw FileExistsError: a file where the folder would be (memory://)
    if isinstance(exc, KeyNotFoundError):
        return f"`{command}`{where} failed: the file does not exist (any more). {_FINAL}"
    if isinstance(exc, InvalidInputError):
        return f"Refused: the memory store does not accept this `{command}`{where}. {_FINAL}"
    if isinstance(exc, ReadOnlyStorageError):
        return (
            f"Refused: `{command}`{where} cannot be done: this memory store is read-only "
            f"(its storage cannot guarantee that a write loses nothing). {_FINAL}"
        )
    if isinstance(exc, BucketNotFoundError):
        return (
            f"The memory store is not set up (its storage bucket does not exist), so "
            f"`{command}`{where} cannot be done. Retrying will not help until it is created."
        )
    if isinstance(exc, ConflictError):
        return (
            f"Storage error: `{command}`{where} kept losing to concurrent changes of the "
            f"same file. Try again later."
        )
    return f"Storage error: the memory store failed during `{command}`{where}. Try again later."
