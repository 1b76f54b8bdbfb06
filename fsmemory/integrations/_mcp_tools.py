"""The MCP tools over a :class:`~fsmemory.memory.KnowledgeMemory` (needs the ``mcp`` SDK).

Imported only by :func:`fsmemory.integrations.mcp.create_server`, so the command line
can register ``fsmemory mcp`` without the SDK installed. The tool functions are methods
with real annotations: the SDK derives each tool's JSON schema from them (integers are
``integer``, bounds are ``minimum``/``maximum``), validates the arguments a client
sends, and turns a :class:`ToolError` into a tool result with ``isError`` set.

The SDK's own validation is lax (``"yes"`` is a true boolean, ``"5"`` an integer, an
undeclared argument is dropped): :class:`StrictServer` first checks each call against a
strict model of the same signature (JSON types as declared, no undeclared argument).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, get_type_hints

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from fsmemory.agent import KnowledgeTool
from fsmemory.agent.tools import recall_text
from fsmemory.errors import FsMemoryError
from fsmemory.integrations.mcp import DEFAULT_MAX_CONTEXT_CHARS, bound_context
from fsmemory.memory import KnowledgeMemory, escape_line
from fsmemory.memory.validation import MAX_CATEGORY_CHARS
from fsmemory.store import FsspecKnowledgeStore

__all__ = ["MemoryTools", "StrictServer", "build_server", "strict_model"]

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
        max_context_chars: the bound of the ``context`` tool's text
            (:func:`~fsmemory.integrations.mcp.bound_context`; None or 0: none).
    """

    def __init__(
        self,
        memory: KnowledgeMemory,
        knowledge_store: FsspecKnowledgeStore | None = None,
        *,
        max_context_chars: int | None = DEFAULT_MAX_CONTEXT_CHARS,
    ) -> None:
        self.memory = memory
        self.max_context_chars = max_context_chars
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
        return bound_context(text, self.max_context_chars) or "The memory is empty."

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


def strict_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters (their annotations, ``Field`` bounds and
    defaults) that validates strictly: JSON types as declared (no ``"yes"`` for a
    boolean, no ``"5"`` for an integer) and no argument that ``fn`` does not declare."""
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(fn).parameters.items():
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (hints[name], default)
    config = ConfigDict(strict=True, extra="forbid")
    model: type[BaseModel] = create_model(f"{fn.__name__}_arguments", __config__=config, **fields)
    return model


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _argument_problems(name: str, error: ValidationError, declared: Mapping[str, Any]) -> str:
    """One message naming each bad argument (values shortened: they are the caller's)."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        if item["type"] == "extra_forbidden":
            problems.append(f"{where}: not an argument of {name}")
        elif item["type"] == "missing":
            problems.append(f"{where}: required")
        else:
            problems.append(f"{where}: {item['msg']} (got {_shown(item['input'])})")
    accepted = ", ".join(declared) or "none"
    return f"Invalid arguments for {name!r}: {'; '.join(problems)}. Arguments: {accepted}."


class StrictServer(MCPServer):
    """An :class:`MCPServer` whose tools registered with :meth:`add_strict_tool` are
    called only with arguments their :func:`strict_model` accepts; any other call is a
    tool error naming each bad argument, before the SDK's lax validation runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._strict: dict[str, type[BaseModel]] = {}

    def add_strict_tool(self, fn: Callable[..., Any], annotations: ToolAnnotations) -> None:
        """Register ``fn`` as a tool (unstructured output) checked strictly."""
        self.add_tool(fn, annotations=annotations, structured_output=False)
        self._strict[fn.__name__] = strict_model(fn)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Check ``arguments`` strictly, then call the tool as :class:`MCPServer` does.

        Raises:
            ToolError: an argument of the wrong JSON type, out of its bounds, missing, or
                not declared by the tool.
        """
        model = self._strict.get(name)
        if model is not None:
            try:
                model.model_validate(arguments)
            except ValidationError as exc:
                raise ToolError(_argument_problems(name, exc, model.model_fields)) from exc
        return await super().call_tool(name, arguments, context)


def build_server(tools: MemoryTools, *, name: str = "fsmemory", version: str = "") -> MCPServer:
    """An :class:`MCPServer` offering ``tools`` (``knowledge`` only when it is configured),
    their arguments checked strictly (:class:`StrictServer`)."""
    server = StrictServer(name=name, version=version, instructions=_INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    removes = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    server.add_strict_tool(tools.remember, writes)
    server.add_strict_tool(tools.recall, read_only)
    server.add_strict_tool(tools.forget, removes)
    server.add_strict_tool(tools.context, read_only)
    if tools.knowledge_tool is not None:
        server.add_strict_tool(tools.knowledge, removes)
    return server
