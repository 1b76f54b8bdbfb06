"""The user's LLM as a plain callable, prompt templates and transcripts."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from fsmemory.agent._events import (
    CompactionSummary,
    Event,
    ModelResponse,
    ToolCall,
    ToolError,
    ToolResult,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:
    from fsmemory.agent._context import StrategyContext

__all__ = [
    "Summarizer",
    "check_summarize",
    "fill_template",
    "render_transcript",
    "run_summarizer",
    "summarize_with",
]

#: The user's LLM: ``summarize(prompt) -> text``, a plain or ``async`` function (or
#: callable object). It may also return ``(text, usage)`` with a :class:`Usage` to
#: have the tokens reported on the ``*Completed`` lifecycle event.
Summarizer: TypeAlias = Callable[[str], "str | tuple[str, Usage] | Awaitable[Any]"]

_PLACEHOLDER = re.compile(r"\{(existing|events)\}")


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """Replace the exact placeholders ``{existing}`` and ``{events}`` in one pass.

    Everything else is literal: other braces (JSON examples, ``{name}``) stay as
    written, and text substituted in is never scanned again. This is not
    ``str.format``: ``{{`` is two braces, not an escape.
    """
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def check_summarize(summarize: object, prompt: object) -> None:
    """Refuse a ``summarize`` that cannot be called, or a ``prompt`` template that is
    not a str (strategies check both when built; any str is a template).

    Raises:
        TypeError: ``summarize`` is not callable, or ``prompt`` is not a str.
    """
    if not callable(summarize):
        raise TypeError("summarize must be a callable (prompt: str) -> str")
    if not isinstance(prompt, str):
        raise TypeError("prompt must be a str")


def _is_async_callable(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return inspect.iscoroutinefunction(call)


async def run_summarizer(fn: Summarizer, prompt: str) -> tuple[str, Usage | None]:
    """Call ``fn(prompt)`` and return ``(text, usage)``.

    An ``async`` callable is awaited on the loop; a plain one runs in a worker thread
    so a blocking LLM client never stalls the event loop.

    Raises:
        TypeError: the callable returned something other than text (or text + usage).
    """
    if _is_async_callable(fn):
        result: Any = await fn(prompt)  # type: ignore[misc]
    else:
        result = await asyncio.to_thread(fn, prompt)
        if inspect.isawaitable(result):
            result = await result
    usage: Usage | None = None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Usage | None):
        result, usage = result
    if not isinstance(result, str):
        raise TypeError(f"summarize must return str, not {type(result).__name__}")
    return result, usage


async def summarize_with(
    fn: Summarizer, template: str, values: Mapping[str, str], ctx: StrategyContext
) -> str:
    """Fill ``template`` with ``values`` (see :func:`fill_template`), ask ``fn`` and
    count the tokens it reports on ``ctx``; the text it answered."""
    text, usage = await run_summarizer(fn, fill_template(template, values))
    ctx.add_usage(usage)
    return text


def render_transcript(events: Sequence[Event], *, max_chars: int | None = None) -> str:
    """The conversational events as plain text, one entry per line group.

    ``user: ...``, ``assistant: ...``, ``tool call NAME {json}``, ``tool result NAME:
    ...``, ``tool error NAME: ...``, ``earlier summary: ...``. Other events are left
    out. With ``max_chars`` the oldest entries are dropped to fit.
    """
    parts: list[str] = []
    for e in events:
        kind = type(e)
        if kind is UserMessage:
            parts.append(f"user: {e.text()}")
        elif kind is ModelResponse:
            if e.text():
                parts.append(f"assistant: {e.text()}")
        elif kind is ToolCall:
            assert isinstance(e, ToolCall)
            parts.append(f"tool call {e.name} {e.arguments_json()}")
        elif kind is ToolResult:
            assert isinstance(e, ToolResult)
            parts.append(f"tool result {e.name or e.call_id}: {e.content}")
        elif kind is ToolError:
            assert isinstance(e, ToolError)
            parts.append(f"tool error {e.name or e.call_id}: {e.error}")
        elif kind is CompactionSummary:
            parts.append(f"earlier summary: {e.text()}")
    if max_chars is not None:
        total = 0
        keep = 0
        for part in reversed(parts):
            total += len(part) + 1
            if total > max_chars:
                break
            keep += 1
        parts = parts[len(parts) - keep :]
    return "\n".join(parts)
