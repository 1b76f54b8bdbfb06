"""Converters between events and the OpenAI / Anthropic message formats.

Plain dicts only: no provider SDK is imported. Responses may be passed as the SDK's
objects (anything with ``model_dump()``) or as dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fsmemory import _jsonutil
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

__all__ = [
    "from_anthropic_messages",
    "from_anthropic_response",
    "from_openai_messages",
    "from_openai_response",
    "to_anthropic_messages",
    "to_openai_messages",
]

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
ERROR_PREFIX = "Error: "


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        data = dump()
        if isinstance(data, dict):
            return data
    raise TypeError(f"expected a dict or an SDK model, not {type(obj).__name__}")


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = _jsonutil.loads(raw)
        except _jsonutil.JSONDecodeError:
            return {"_raw": raw}
        if isinstance(value, dict):
            return value
    return {"_raw": raw if isinstance(raw, str) else str(raw)}


def _text_of(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of parts/blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in ("text", "input_text"):
                parts.append(str(part.get("text", "")))
        return "".join(parts)
    return str(content)


# -- OpenAI Chat Completions -------------------------------------------------------------


def to_openai_messages(
    events: Sequence[Event], prompts: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Chat Completions ``messages`` for ``events``, the prompts as the first system
    message.

    A :class:`ModelResponse` and the :class:`ToolCall` events after it become one
    assistant message with ``tool_calls``; results become ``tool`` messages (errors
    prefixed ``Error: ``); a :class:`CompactionSummary` becomes a system message.
    Events the model does not see (alerts, usage, lifecycle) are skipped.
    """
    messages: list[dict[str, Any]] = []
    system = "\n\n".join(p for p in prompts if p)
    if system:
        messages.append({"role": "system", "content": system})
    assistant: dict[str, Any] | None = None
    for e in events:
        kind = type(e)
        if kind is ToolCall:
            assert isinstance(e, ToolCall)
            if assistant is None:
                assistant = {"role": "assistant", "content": None}
                messages.append(assistant)
            assistant.setdefault("tool_calls", []).append(
                {
                    "id": e.call_id,
                    "type": "function",
                    "function": {"name": e.name, "arguments": e.arguments_json()},
                }
            )
            continue
        assistant = None
        if kind is ModelResponse:
            assistant = {"role": "assistant", "content": e.text()}
            messages.append(assistant)
        elif kind is UserMessage:
            assert isinstance(e, UserMessage)
            msg: dict[str, Any] = {"role": "user", "content": e.content}
            if e.name:
                msg["name"] = e.name
            messages.append(msg)
        elif kind is ToolResult:
            assert isinstance(e, ToolResult)
            messages.append({"role": "tool", "tool_call_id": e.call_id, "content": e.content})
        elif kind is ToolError:
            assert isinstance(e, ToolError)
            messages.append(
                {"role": "tool", "tool_call_id": e.call_id, "content": ERROR_PREFIX + e.error}
            )
        elif kind is CompactionSummary:
            messages.append({"role": "system", "content": f"{SUMMARY_PREFIX}\n{e.text()}"})
    return messages


def _openai_message_events(msg: Mapping[str, Any], names: dict[str, str]) -> list[Event]:
    role = msg.get("role")
    content = msg.get("content")
    if role == "user":
        name = msg.get("name")
        return [UserMessage(_text_of(content), name=name if isinstance(name, str) else None)]
    if role == "assistant":
        out: list[Event] = []
        calls = msg.get("tool_calls") or []
        text = _text_of(content)
        if text or not calls:
            out.append(ModelResponse(text))
        for call in calls:
            call = _as_dict(call)
            fn = _as_dict(call.get("function") or {})
            call_id = str(call.get("id", ""))
            name = str(fn.get("name", ""))
            names[call_id] = name
            out.append(ToolCall(call_id, name, _parse_arguments(fn.get("arguments"))))
        return out
    if role == "tool":
        call_id = str(msg.get("tool_call_id", ""))
        text = _text_of(content)
        if text.startswith(ERROR_PREFIX):
            return [ToolError(call_id, text[len(ERROR_PREFIX) :], name=names.get(call_id))]
        return [ToolResult(call_id, text, name=names.get(call_id))]
    return []


def from_openai_messages(
    messages: Iterable[Mapping[str, Any] | Any],
) -> tuple[list[str], list[Event]]:
    """``(prompts, events)`` from Chat Completions ``messages``.

    ``system``/``developer`` messages become prompts, except a system message that
    starts with the compaction-summary prefix, which becomes a
    :class:`CompactionSummary` again. Tool results starting ``Error: `` become
    :class:`ToolError`. Arguments that are not valid JSON are kept as ``{"_raw": ...}``.
    """
    prompts: list[str] = []
    events: list[Event] = []
    names: dict[str, str] = {}
    for raw in messages:
        msg = _as_dict(raw)
        role = msg.get("role")
        if role in ("system", "developer"):
            text = _text_of(msg.get("content"))
            if text.startswith(SUMMARY_PREFIX + "\n"):
                events.append(CompactionSummary(text[len(SUMMARY_PREFIX) + 1 :]))
            elif text:
                prompts.append(text)
            continue
        events.extend(_openai_message_events(msg, names))
    return prompts, events


def from_openai_response(response: Mapping[str, Any] | Any) -> list[Event]:
    """Events of a Chat Completions response (its first choice) plus a :class:`Usage`.

    Accepts the SDK's ``ChatCompletion`` object or its dict.
    """
    data = _as_dict(response)
    model = data.get("model") if isinstance(data.get("model"), str) else None
    choices = data.get("choices") or []
    events: list[Event] = []
    if choices:
        choice = _as_dict(choices[0])
        msg = _as_dict(choice.get("message") or {})
        msg.setdefault("role", "assistant")
        events = _openai_message_events(msg, {})
        finish = choice.get("finish_reason")
        events = [
            ModelResponse(
                e.content, model=model, stop_reason=finish if isinstance(finish, str) else None
            )
            if isinstance(e, ModelResponse)
            else e
            for e in events
        ]
    usage = data.get("usage")
    if usage is not None:
        u = _as_dict(usage)
        events.append(
            Usage(
                input_tokens=int(u.get("prompt_tokens") or 0),
                output_tokens=int(u.get("completion_tokens") or 0),
                model=model,
            )
        )
    return events


# -- Anthropic Messages ------------------------------------------------------------------


def _push(messages: list[dict[str, Any]], role: str, block: dict[str, Any]) -> None:
    """Append ``block``, merging into the last message when it has the same role."""
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].append(block)
    else:
        messages.append({"role": role, "content": [block]})


def to_anthropic_messages(
    events: Sequence[Event], prompts: Sequence[str] = ()
) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` for the Anthropic Messages API.

    Content is always a list of blocks; consecutive events of one role are merged
    into one message (the API wants user and assistant turns to alternate). Tool
    calls become ``tool_use`` blocks, results ``tool_result`` blocks (``is_error`` for
    :class:`ToolError`). Compaction summaries are appended to the system text.
    """
    system_parts = [p for p in prompts if p]
    messages: list[dict[str, Any]] = []
    for e in events:
        kind = type(e)
        if kind is UserMessage:
            _push(messages, "user", {"type": "text", "text": e.text()})
        elif kind is ModelResponse:
            if e.text():
                _push(messages, "assistant", {"type": "text", "text": e.text()})
        elif kind is ToolCall:
            assert isinstance(e, ToolCall)
            _push(
                messages,
                "assistant",
                {"type": "tool_use", "id": e.call_id, "name": e.name, "input": e.arguments},
            )
        elif kind is ToolResult:
            assert isinstance(e, ToolResult)
            _push(
                messages,
                "user",
                {"type": "tool_result", "tool_use_id": e.call_id, "content": e.content},
            )
        elif kind is ToolError:
            assert isinstance(e, ToolError)
            _push(
                messages,
                "user",
                {
                    "type": "tool_result",
                    "tool_use_id": e.call_id,
                    "content": e.error,
                    "is_error": True,
                },
            )
        elif kind is CompactionSummary:
            system_parts.append(f"{SUMMARY_PREFIX}\n{e.text()}")
    return "\n\n".join(system_parts), messages


def _blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [_as_dict(b) for b in content]


def _anthropic_message_events(
    role: Any, content: Any, names: dict[str, str], model: str | None = None
) -> list[Event]:
    events: list[Event] = []
    texts: list[str] = []

    def flush_text() -> None:
        if texts:
            joined = "".join(texts)
            events.append(
                UserMessage(joined) if role == "user" else ModelResponse(joined, model=model)
            )
            texts.clear()

    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use" and role == "assistant":
            flush_text()
            call_id = str(block.get("id", ""))
            name = str(block.get("name", ""))
            names[call_id] = name
            events.append(ToolCall(call_id, name, _parse_arguments(block.get("input"))))
        elif kind == "tool_result":
            flush_text()
            call_id = str(block.get("tool_use_id", ""))
            text = _text_of(block.get("content"))
            if block.get("is_error"):
                events.append(ToolError(call_id, text, name=names.get(call_id)))
            else:
                events.append(ToolResult(call_id, text, name=names.get(call_id)))
    flush_text()
    return events


def from_anthropic_messages(
    messages: Iterable[Mapping[str, Any] | Any], system: str | Sequence[Any] | None = None
) -> tuple[list[str], list[Event]]:
    """``(prompts, events)`` from Anthropic ``messages`` (and the ``system`` param).

    Text blocks become :class:`UserMessage` / :class:`ModelResponse`, ``tool_use``
    :class:`ToolCall`, ``tool_result`` :class:`ToolResult` or (``is_error``)
    :class:`ToolError`. Other blocks (images, thinking) are skipped.
    """
    prompts: list[str] = []
    events: list[Event] = []
    if system:
        chunks = _text_of(system).split(f"{SUMMARY_PREFIX}\n")
        last = len(chunks) - 1
        # to_anthropic_messages joined the parts with blank lines
        cleaned = [c.removesuffix("\n\n") if i < last else c for i, c in enumerate(chunks)]
        if cleaned[0]:
            prompts.append(cleaned[0])
        events.extend(CompactionSummary(chunk) for chunk in cleaned[1:])
    names: dict[str, str] = {}
    for raw in messages:
        msg = _as_dict(raw)
        events.extend(_anthropic_message_events(msg.get("role"), msg.get("content"), names))
    return prompts, events


def from_anthropic_response(message: Mapping[str, Any] | Any) -> list[Event]:
    """Events of an Anthropic ``Message`` (SDK object or dict) plus a :class:`Usage`."""
    data = _as_dict(message)
    model = data.get("model") if isinstance(data.get("model"), str) else None
    events = _anthropic_message_events("assistant", data.get("content"), {}, model)
    stop = data.get("stop_reason")
    if isinstance(stop, str):
        events = [
            ModelResponse(e.content, model=e.model, stop_reason=stop)
            if isinstance(e, ModelResponse)
            else e
            for e in events
        ]
    usage = data.get("usage")
    if usage is not None:
        u = _as_dict(usage)
        events.append(
            Usage(
                input_tokens=int(u.get("input_tokens") or 0),
                output_tokens=int(u.get("output_tokens") or 0),
                model=model,
            )
        )
    return events
