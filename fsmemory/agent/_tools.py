"""The ``knowledge`` tool: the model's own access to the knowledge store."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fsmemory import _jsonutil
from fsmemory.agent._log import EVENT_LOG_DIR
from fsmemory.agent._schema import ToolSchema
from fsmemory.errors import (
    ContentTooLargeError,
    FsMemoryError,
    InvalidInputError,
    InvalidPathError,
    ReadOnlyStorageError,
)
from fsmemory.store import KnowledgeStore, normalize_path

__all__ = ["KNOWLEDGE_ACTIONS", "KnowledgeTool", "file_in_the_way"]

logger = logging.getLogger(__name__)

# The end of a refusal no retry can change (an agent told "try again" retries forever).
_FINAL = "this fails the same way every time: do not retry it."

KNOWLEDGE_ACTIONS = ("read", "write", "append", "list", "delete")

_DESCRIPTION = (
    "Read and write your persistent knowledge store: plain files under '/' that outlive "
    "this conversation. Actions: 'list' a folder (its SKILL.md comes first: read it), "
    "'read' a file, 'write' a file (replaces it), 'append' to a file, 'delete' a file or "
    "folder. /log holds the conversation record and is read-only."
)


def _is_under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


async def file_in_the_way(store: KnowledgeStore, path: str, top: str = "/") -> str | None:
    """The first folder of ``path`` below ``top`` that is a file, or None.

    Nothing can be created under a file. Object stores would accept it (``a.md`` and
    ``a.md/b.md`` side by side) while folders and Redis refuse it, so the tools check
    this themselves and answer the same on every backend. Only a file in the way costs
    more than a missing-file lookup.
    """
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        folder = "/" + "/".join(parts[:depth])
        below = top == "/" or folder.startswith(top + "/")
        if below and await store.read(folder) is not None:
            return folder
    return None


class KnowledgeTool(ToolSchema):
    """``knowledge(action, path, content)`` over a store, for the model to call.

    Every outcome, including bad input, is a string for the model; nothing raises for
    what the model sends. Refused: deleting ``/`` (the whole store), and writing,
    appending to or deleting anything under a read-only folder (``/log`` by default,
    where the event log lives). Paths are validated by the store: ``..``, NUL,
    control characters and the like are reported as errors, never stored.

    Args:
        store: the knowledge store.
        read_only: folders the model may read and list but not change.
        max_content_chars: the largest ``content`` accepted by write/append.
        max_read_chars: a read returns at most this many characters (the rest is cut
            with a note).
    """

    name = "knowledge"
    description = _DESCRIPTION

    def __init__(
        self,
        store: KnowledgeStore,
        *,
        read_only: tuple[str, ...] = (EVENT_LOG_DIR,),
        max_content_chars: int = 1_000_000,
        max_read_chars: int = 100_000,
    ) -> None:
        self.store = store
        self.read_only = tuple(normalize_path(p) for p in read_only)
        self.max_content_chars = max_content_chars
        self.max_read_chars = max_read_chars

    def __repr__(self) -> str:
        return f"KnowledgeTool({self.store!r})"

    # -- schemas (openai_schema, responses_schema, anthropic_schema: see ToolSchema) -----
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": list(KNOWLEDGE_ACTIONS),
                    "description": "What to do.",
                },
                "path": {
                    "type": "string",
                    "description": "A file or folder path starting with '/', "
                    "e.g. '/memory/notes.md'.",
                },
                "content": {
                    "type": "string",
                    "description": "The text to write or append (write/append only).",
                },
            },
            "required": ["action", "path"],
            "additionalProperties": False,
        }

    # -- calls ---------------------------------------------------------------------------
    async def call(self, arguments: Mapping[str, Any] | str) -> str:
        """Run the tool with the model's arguments (a dict or its JSON text)."""
        if isinstance(arguments, str):
            try:
                parsed = _jsonutil.loads(arguments) if arguments.strip() else {}
            except _jsonutil.JSONDecodeError:
                return "Error: the arguments are not valid JSON."
            if not isinstance(parsed, dict):
                return "Error: the arguments must be a JSON object."
            arguments = parsed
        return await self(arguments.get("action"), arguments.get("path"), arguments.get("content"))

    async def __call__(self, action: Any, path: Any = "/", content: Any = None) -> str:
        """Run one action; returns the text for the model."""
        if action not in KNOWLEDGE_ACTIONS:
            return f"Error: unknown action {action!r}; use one of {', '.join(KNOWLEDGE_ACTIONS)}."
        if not isinstance(path, str) or not path:
            return "Error: 'path' must be a non-empty string."
        try:
            norm = normalize_path(path)
        except InvalidPathError as exc:
            return f"Error: invalid path {path!r}: {exc}"
        try:
            if action == "read":
                return await self._read(norm)
            if action == "list":
                return await self._list(norm)
            if action == "delete":
                return await self._delete(norm)
            return await self._put(action, norm, content)
        except InvalidPathError as exc:
            return f"Error: invalid path {path!r}: {exc}"
        except ContentTooLargeError:
            return f"Error: {norm} would be larger than the store allows; {_FINAL}"
        except InvalidInputError:
            return f"Error: the store does not accept this {action} of {norm}; {_FINAL}"
        except ReadOnlyStorageError:
            return f"Error: the store is read-only, it cannot {action} {norm}; {_FINAL}"
        except (FsMemoryError, OSError) as exc:
            # The details (backend, internal paths) go to the log; the model gets one
            # sentence that is the same on every backend.
            logger.warning("knowledge tool %s %s failed: %r", action, norm, exc)
            return f"Error: the store failed to {action} {norm}; try again later."

    def _protected(self, norm: str) -> str | None:
        for folder in self.read_only:
            if _is_under(norm, folder):
                return folder
        return None

    async def _read(self, norm: str) -> str:
        text = await self.store.read(norm)
        if text is None:
            if await self.store.exists(norm):
                return f"Error: {norm} is a folder; use action 'list'."
            return f"Error: {norm} does not exist."
        if len(text) > self.max_read_chars:
            return (
                text[: self.max_read_chars]
                + f"\n[... cut: showing {self.max_read_chars} of {len(text)} characters]"
            )
        return text

    async def _list(self, norm: str) -> str:
        names = await self.store.list(norm)
        if not names:
            if norm != "/" and not await self.store.exists(norm):
                return f"Error: {norm} does not exist."
            if norm != "/" and await self.store.read(norm) is not None:
                return f"Error: {norm} is a file; use action 'read'."
            return f"{norm} is empty."
        names.sort(key=lambda n: (n != "SKILL.md", n))
        return "\n".join(names)

    async def _delete(self, norm: str) -> str:
        if norm == "/":
            return "Error: refusing to delete '/', the whole knowledge store."
        folder = self._protected(norm)
        if folder is not None:
            return f"Error: {folder} is read-only; it cannot be deleted or changed."
        if not await self.store.exists(norm):
            return f"Error: {norm} does not exist."
        await self.store.delete(norm)
        return f"Deleted {norm}."

    async def _put(self, action: str, norm: str, content: Any) -> str:
        if not isinstance(content, str):
            return f"Error: '{action}' needs 'content' (a string)."
        if len(content) > self.max_content_chars:
            return (
                f"Error: content has {len(content)} characters; the limit is "
                f"{self.max_content_chars}."
            )
        if norm == "/":
            return "Error: '/' is a folder; give a file path."
        folder = self._protected(norm)
        if folder is not None:
            return f"Error: {folder} is read-only; it cannot be deleted or changed."
        blocker = await file_in_the_way(self.store, norm)
        if blocker is not None:
            return f"Error: cannot {action} {norm}: {blocker} is a file, not a folder."
        if await self.store.list(norm):
            return f"Error: {norm} is a folder; give a file path."
        if action == "write":
            await self.store.write(norm, content)
            return f"Wrote {len(content)} characters to {norm}."
        await self.store.append(norm, content)
        return f"Appended {len(content)} characters to {norm}."
