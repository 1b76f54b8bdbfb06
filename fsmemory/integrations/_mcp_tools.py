"""The MCP tools over a :class:`~fsmemory.memory.KnowledgeMemory` (needs the ``mcp`` SDK).

Imported only by :func:`fsmemory.integrations.mcp.create_server`, so the command line
can register ``fsmemory mcp`` without the SDK installed. The tool functions are methods
with real annotations: the SDK derives each tool's JSON schema from them (integers are
``integer``, bounds are ``minimum``/``maximum``), validates the arguments a client
sends, and turns a :class:`ToolError` into a tool result with ``isError`` set.
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from fsmemory.agent import KnowledgeTool
from fsmemory.agent._functions import recall_text
from fsmemory.errors import FsMemoryError
from fsmemory.memory import KnowledgeMemory, escape_line
from fsmemory.memory.validation import MAX_CATEGORY_CHARS
from fsmemory.store import FsspecKnowledgeStore

__all__ = ["MemoryTools", "build_server"]

logger = logging.getLogger(__name__)

MAX_RECALL_LIMIT = 100

_INSTRUCTIONS = (
    "Long-term memory that outlives this conversation, kept as plain files. Call "
    "'context' at the start of a task to see what is known, 'recall' to look something "
    "up, 'remember' to save a durable fact (set persistent=true for facts that must "
    "never expire), and 'forget' with an id from 'recall' to remove a wrong fact."
)

#: Folders and files of the memory layout that the ``knowledge`` tool may read but not
#: change: they are written through ``remember``/``forget`` only.
READ_ONLY_PATHS = ("/log", "/logs", "/MEMORY.md")


class MemoryTools:
    """The tool functions of the server, bound to one memory.

    Args:
        memory: the memory the tools read and write.
        knowledge_store: when given, a ``knowledge`` tool over this path store.
    """

    def __init__(
        self, memory: KnowledgeMemory, knowledge_store: FsspecKnowledgeStore | None = None
    ) -> None:
        self.memory = memory
        self.knowledge_tool = (
            None
            if knowledge_store is None
            else KnowledgeTool(knowledge_store, read_only=READ_ONLY_PATHS)
        )

    def remember(
        self,
        content: Annotated[
            str, Field(description="The fact to remember, in one or a few sentences.")
        ],
        category: Annotated[
            str,
            Field(
                description="A short label such as preferences, personal, technical, "
                "project (letters, digits, spaces and - _ . / : @ + & ' ,).",
                max_length=MAX_CATEGORY_CHARS,
            ),
        ] = "general",
        persistent: Annotated[
            bool,
            Field(description="true: keep it permanently in MEMORY.md; false: a dated note."),
        ] = False,
        importance: Annotated[
            float,
            Field(description="0.0 (trivia) to 1.0 (critical); ranks recall.", ge=0.0, le=1.0),
        ] = 0.5,
        ttl_days: Annotated[
            float | None,
            Field(description="Forget it after this many days (omit: never).", ge=0.0),
        ] = None,
    ) -> str:
        """Save a fact to long-term memory so it is available in future conversations."""
        try:
            result = self.memory.try_remember(
                content,
                category=category,
                persistent=persistent,
                importance=importance,
                ttl_days=ttl_days,
            )
        except (FsMemoryError, ValueError, OSError) as exc:
            raise ToolError(f"Not saved: {exc}") from exc
        if not result.stored:
            if result.rejected_by == "duplicate":
                raise ToolError(
                    "Not saved: a duplicate of an existing memory (same or nearly the same text)."
                )
            raise ToolError(f"Not saved: rejected by the {result.rejected_by} filter.")
        where = "long-term memory (MEMORY.md)" if persistent else "memory"
        return f"Saved to {where} under [{category.strip()}] with id {result.id}."

    def recall(
        self,
        query: Annotated[
            str,
            Field(description="Keywords to look up; empty returns the most important memories."),
        ] = "",
        limit: Annotated[
            int, Field(description="The most memories to return.", ge=1, le=MAX_RECALL_LIMIT)
        ] = 5,
        category: Annotated[
            str | None, Field(description="Only memories of this category (omit: all).")
        ] = None,
    ) -> str:
        """Search long-term memory: the closest matches, ranked by relevance, then importance."""
        try:
            found = self.memory.recall(query, limit=limit, category=category)
        except (FsMemoryError, ValueError, OSError) as exc:
            raise ToolError(f"Could not search the memory: {exc}") from exc
        return recall_text(query, found, show_ids=True)

    def forget(
        self,
        id: Annotated[
            str, Field(description="The id of the memory, as shown by 'recall'.", min_length=1)
        ],
    ) -> str:
        """Remove one memory by its id (from 'recall'), e.g. a fact that turned out wrong."""
        try:
            removed = self.memory.forget(id)
        except (FsMemoryError, ValueError, OSError) as exc:
            raise ToolError(f"Could not forget {id!r}: {exc}") from exc
        if not removed:
            raise ToolError(f"No memory with id {escape_line(id)!r}; use 'recall' to find ids.")
        return f"Forgot {id}."

    def context(self) -> str:
        """The memory as a prompt block: long-term facts by category, then recent notes."""
        try:
            text = self.memory.build_context()
        except (FsMemoryError, ValueError, OSError) as exc:
            raise ToolError(f"Could not read the memory: {exc}") from exc
        return text or "The memory is empty."

    async def knowledge(
        self,
        action: Annotated[
            Literal["read", "write", "append", "list", "delete"], Field(description="What to do.")
        ],
        path: Annotated[
            str,
            Field(description="A file or folder path starting with '/', e.g. '/notes/project.md'."),
        ],
        content: Annotated[
            str | None, Field(description="The text to write or append (write/append only).")
        ] = None,
    ) -> str:
        """Read and write plain files under '/' that outlive this conversation.

        'list' a folder, 'read' a file, 'write' (replace) or 'append' to a file, 'delete' a
        file or folder. MEMORY.md and the logs are read-only here: use 'remember'/'forget'.
        """
        assert self.knowledge_tool is not None
        text = await self.knowledge_tool(action, path, content)
        if text.startswith("Error:"):
            raise ToolError(text)
        return text


def build_server(tools: MemoryTools, *, name: str = "fsmemory", version: str = "") -> MCPServer:
    """An :class:`MCPServer` offering ``tools`` (``knowledge`` only when it is configured)."""
    server: MCPServer = MCPServer(name=name, version=version, instructions=_INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    removes = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    server.add_tool(tools.remember, annotations=writes, structured_output=False)
    server.add_tool(tools.recall, annotations=read_only, structured_output=False)
    server.add_tool(tools.forget, annotations=removes, structured_output=False)
    server.add_tool(tools.context, annotations=read_only, structured_output=False)
    if tools.knowledge_tool is not None:
        server.add_tool(tools.knowledge, annotations=removes, structured_output=False)
    return server
