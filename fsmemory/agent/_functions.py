"""The ``remember`` and ``recall`` tools of seed 000, for any LLM tool-calling API.

::

    from fsmemory import KnowledgeMemory
    from fsmemory.agent import knowledge_tools

    km = KnowledgeMemory("./agent_memory")
    tools = knowledge_tools(km)                       # [remember, recall]
    openai_tools = [t.openai_schema() for t in tools]  # or strict=True, responses_schema()
    anthropic_tools = [t.anthropic_schema() for t in tools]
    by_name = {t.name: t for t in tools}
    result = by_name[call.name](**json.loads(call.arguments))   # a string for the model

A tool never raises on bad arguments from the model: it returns a sentence saying what
was wrong, so the model can correct itself. ``null`` for an optional argument (what a
strict-mode schema makes the model send) means its default. Recalled content is rendered on one line
(newlines escaped), so a memory cannot start a new numbered item or forge structure in
the tool result.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from fsmemory.agent._schema import ToolSchema
from fsmemory.errors import FsMemoryError
from fsmemory.memory import KnowledgeEntry, KnowledgeMemory, escape_line

__all__ = [
    "DEFAULT_RECALL_LIMIT",
    "FunctionTool",
    "knowledge_tools",
    "make_recall_tool",
    "make_remember_tool",
    "parse_bool",
    "recall_text",
]

_T = TypeVar("_T")

_TRUE = {"true", "yes", "1", "y", "on"}
_FALSE = {"false", "no", "0", "n", "off", ""}
#: How many memories ``recall`` returns when the model gives no ``limit``.
DEFAULT_RECALL_LIMIT = 5


def parse_bool(value: object) -> bool:
    """A boolean from what a model may send: a bool, 0/1, or "true"/"false"/"yes"/"no"/"1"/"0".

    Raises:
        ValueError: anything else.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ValueError(f"expected true or false, got {value!r}")


@dataclass(frozen=True)
class FunctionTool(ToolSchema):
    """A tool a model can call: a name, a description, a JSON schema for its arguments,
    and the function that runs it (returning the text the model reads).

    The provider definitions come from :class:`~fsmemory.agent.ToolSchema`:
    ``openai_schema(strict=...)``, ``responses_schema(strict=...)``,
    ``anthropic_schema()`` and ``schema(format)``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., str] = field(repr=False)

    def __call__(self, **kwargs: Any) -> str:
        """Run the tool with the model's arguments; always returns a string."""
        return self.function(**kwargs)

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (a copy of :attr:`parameters`)."""
        return copy.deepcopy(self.parameters)

    def as_openai_tool(self) -> dict[str, Any]:
        """Deprecated name of :meth:`openai_schema`."""
        _renamed("as_openai_tool", "openai_schema")
        return self.openai_schema()

    def as_anthropic_tool(self) -> dict[str, Any]:
        """Deprecated name of :meth:`anthropic_schema`."""
        _renamed("as_anthropic_tool", "anthropic_schema")
        return self.anthropic_schema()


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"FunctionTool.{old}() is deprecated: use {new}(), the name every fsmemory tool uses",
        DeprecationWarning,
        stacklevel=3,
    )


def make_remember_tool(km: KnowledgeMemory) -> FunctionTool:
    """The ``remember(content, category="general", persistent=False)`` tool."""

    def remember(
        content: object = None,
        category: object = "general",
        persistent: object = False,
        **extra: Any,
    ) -> str:
        if extra:
            return f"Error: unexpected argument(s): {', '.join(sorted(extra))}."
        if not isinstance(content, str) or not content.strip():
            return "Error: 'content' must be a non-empty string."
        try:
            keep = False if persistent is None else parse_bool(persistent)
        except ValueError:
            return "Error: 'persistent' must be true or false."
        if category is None:
            category = "general"
        if not isinstance(category, str):
            return "Error: 'category' must be a string."
        try:
            result = km.try_remember(content, category=category, persistent=keep)
        except (FsMemoryError, ValueError) as exc:
            return f"Error: could not remember that: {exc}"
        if not result.stored:
            if result.rejected_by == "duplicate":
                return "Not saved: a memory with the same or nearly the same content exists."
            return f"Not saved: the content was rejected by the {result.rejected_by} filter."
        where = "long-term memory" if keep else "memory"
        return f"Saved to {where} under [{category.strip()}]."

    return FunctionTool(
        name="remember",
        description="Save important information to long-term memory for future reference",
        parameters={
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The information to remember."},
                "category": {
                    "type": "string",
                    "description": "Category, e.g. preferences, personal, technical.",
                    "default": "general",
                },
                "persistent": {
                    "type": "boolean",
                    "description": "Keep permanently (survives log pruning).",
                    "default": False,
                },
            },
            "required": ["content"],
        },
        function=remember,
    )


def make_recall_tool(km: KnowledgeMemory) -> FunctionTool:
    """The ``recall(query, limit=5)`` tool: a keyword search of the memory."""

    def recall(query: object = "", limit: object = DEFAULT_RECALL_LIMIT, **extra: Any) -> str:
        if extra:
            return f"Error: unexpected argument(s): {', '.join(sorted(extra))}."
        if query is None:
            query = ""
        if not isinstance(query, str):
            return "Error: 'query' must be a string."
        count = _parse_limit(limit)
        try:
            found = km.recall(query, limit=count)
        except (FsMemoryError, ValueError) as exc:
            return f"Error: could not search the memory: {exc}"
        return recall_text(query, found)

    return FunctionTool(
        name="recall",
        description=(
            "Search long-term memory for stored facts, preferences and notes. Returns the "
            "closest matches ranked by relevance, then importance."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Keywords describing the information to look up; "
                    "empty returns the most important memories.",
                },
                "limit": {
                    "type": "integer",
                    "description": "Maximum number of memories to return "
                    f"(default {DEFAULT_RECALL_LIMIT}).",
                    "minimum": 1,
                    "default": DEFAULT_RECALL_LIMIT,
                },
            },
            "required": ["query"],
        },
        function=recall,
    )


def recall_text(query: str, found: Sequence[KnowledgeEntry], *, show_ids: bool = False) -> str:
    """The text a recall tool returns: a numbered list, one memory per line (newlines
    escaped, so a memory cannot forge another item), ids appended when ``show_ids``."""
    if not found:
        return f"No memories found matching '{escape_line(query)}'."
    noun = "memory" if len(found) == 1 else "memories"
    lines = [f"Found {len(found)} {noun}:"]
    for i, entry in enumerate(found, 1):
        suffix = f" (id: {entry.id})" if show_ids else ""
        lines.append(f"{i}. [{entry.category}] {escape_line(entry.content)}{suffix}")
    return "\n".join(lines)


def _parse_limit(limit: object) -> int:
    """The model's ``limit``: an integer, or its text ("3") as older schemas asked for;
    anything else (null, 0, "many") is the default."""
    if isinstance(limit, bool) or limit is None:
        return DEFAULT_RECALL_LIMIT
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    try:
        value = limit if isinstance(limit, int) else int(str(limit).strip())
    except ValueError:
        return DEFAULT_RECALL_LIMIT
    return value if value > 0 else DEFAULT_RECALL_LIMIT


@overload
def knowledge_tools(km: KnowledgeMemory) -> list[FunctionTool]: ...
@overload
def knowledge_tools(km: KnowledgeMemory, user_tools: Iterable[_T]) -> list[FunctionTool | _T]: ...


def knowledge_tools(
    km: KnowledgeMemory, user_tools: Iterable[_T] = ()
) -> list[FunctionTool] | list[FunctionTool | _T]:
    """``[remember, recall]`` for ``km``, followed by ``user_tools``; a user tool named
    ``remember`` or ``recall`` replaces ours (by its ``name`` attribute or dict key).

    Typed as ``list[FunctionTool]`` without user tools, else a list of
    :class:`FunctionTool` and the user tools' own type (``list[FunctionTool | dict[str,
    Any]]`` for tool dicts, say)."""
    mine = [make_remember_tool(km), make_recall_tool(km)]
    theirs = list(user_tools)
    taken = {_tool_name(t) for t in theirs}
    return [t for t in mine if t.name not in taken] + theirs


def _tool_name(tool: Any) -> str | None:
    name = getattr(tool, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(tool, dict):
        if isinstance(tool.get("name"), str):
            return str(tool["name"])
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
    return getattr(tool, "__name__", None)
