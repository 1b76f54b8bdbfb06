"""Converters between events and the OpenAI / Anthropic message formats.

Three wire formats: OpenAI Chat Completions ``messages``, OpenAI Responses ``input``
items, and Anthropic Messages. Plain dicts only: no provider SDK is imported. Responses
and items may be passed as the SDK's objects (anything with ``model_dump()``) or as
dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
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
    "from_openai_responses_input",
    "to_anthropic_messages",
    "to_openai_messages",
    "to_openai_responses_input",
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


# Content parts that carry text: Chat Completions ("text"), Responses input and output.
_TEXT_PARTS = ("text", "input_text", "output_text")


def _text_of(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of parts/blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        parts: list[str] = []
        for part in content:
            if not isinstance(part, str | Mapping) and callable(getattr(part, "model_dump", None)):
                part = _as_dict(part)
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS:
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
    """Events of an OpenAI response plus a :class:`Usage`: a Chat Completions
    ``ChatCompletion`` (its first choice) or a Responses API ``Response``.

    Accepts the SDK's objects or their dicts. For a ``Response``, each ``message`` output
    item becomes a :class:`ModelResponse` (its ``output_text`` parts joined; a refusal's
    text when it has no other text, with ``stop_reason="refusal"``) and each
    ``function_call`` item a :class:`ToolCall` with its ``call_id``, ``name`` and
    ``arguments``, in output order. ``stop_reason`` is the response's ``status``
    (``"completed"``, ``"failed"``, ...) or, for an incomplete response, the reason
    (``"max_output_tokens"``, ``"content_filter"``). A response with neither gives one
    empty :class:`ModelResponse` (so its stop reason is kept). Reasoning items, hosted
    tool calls (web search, file search, code interpreter, ...) and other output items
    are not events: a loop that must send them back keeps ``response.output`` itself
    or continues with ``previous_response_id``.

    Raises:
        ValueError: a ``function_call`` item without a string ``call_id`` or ``name``
            (it could not be answered), or a ``Response`` whose ``output`` is not a list.
    """
    data = _as_dict(response)
    model = data.get("model") if isinstance(data.get("model"), str) else None
    if "choices" not in data and (data.get("object") == "response" or "output" in data):
        return _responses_events(data, model)
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
    _append_usage(events, data, model, "prompt_tokens", "completion_tokens")
    return events


def _int(value: Any) -> int:
    """A token count: a number or numeric text as an int; None, bools and anything else
    that is not a count give 0."""
    if isinstance(value, bool) or value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def _append_usage(
    events: list[Event],
    data: Mapping[str, Any],
    model: str | None,
    input_key: str,
    output_key: str,
    count: Callable[[Any], int] = _int,
) -> None:
    """Append the :class:`Usage` of a response whose ``usage`` object (when it has one)
    counts tokens under ``input_key`` / ``output_key``, each read by ``count``."""
    usage = data.get("usage")
    if usage is not None:
        u = _as_dict(usage)
        events.append(
            Usage(
                input_tokens=count(u.get(input_key)),
                output_tokens=count(u.get(output_key)),
                model=model,
            )
        )


def _int_or_zero(value: Any) -> int:
    """A token count read strictly, ``int(value or 0)``: text that is not a number raises."""
    return int(value or 0)


# -- OpenAI Responses --------------------------------------------------------------------


def _responses_stop_reason(data: Mapping[str, Any]) -> str | None:
    status = data.get("status")
    if status == "incomplete":
        details = data.get("incomplete_details")
        reason = _as_dict(details).get("reason") if details is not None else None
        return reason if isinstance(reason, str) else "incomplete"
    return status if isinstance(status, str) else None


def _required_str(item: Mapping[str, Any], key: str, kind: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"a {kind} item without a string {key!r}: {_describe(item)}")
    return value


def _describe(item: Mapping[str, Any]) -> str:
    """A short, safe description of an item for error messages (keys and type only)."""
    keys = sorted(str(k)[:40] for k in item)[:12]
    return f"type={repr(item.get('type'))[:40]}, keys={keys}"


def _message_text(content: Any) -> tuple[str, bool]:
    """``(text, refused)`` of an output message's content parts."""
    text = _text_of(content)
    if text or isinstance(content, str) or content is None:
        return text, False
    refusals = [
        str(part.get("refusal", ""))
        for part in (_as_dict(p) for p in content)
        if part.get("type") == "refusal"
    ]
    return "".join(refusals), bool(refusals)


def _responses_item_events(
    item: Mapping[str, Any],
    names: dict[str, str],
    prompts: list[str] | None,
    model: str | None = None,
    stop: str | None = None,
) -> list[Event]:
    """Events of one Responses item (input or output); ``prompts`` collects system and
    developer messages (None: they are not expected and are skipped)."""
    kind = item.get("type")
    if kind == "function_call":
        call_id = _required_str(item, "call_id", "function_call")
        name = _required_str(item, "name", "function_call")
        names[call_id] = name
        return [ToolCall(call_id, name, _parse_arguments(item.get("arguments")))]
    if kind == "function_call_output":
        call_id = _required_str(item, "call_id", "function_call_output")
        output = item.get("output")
        text = output if isinstance(output, str) else _text_of(output)
        if text.startswith(ERROR_PREFIX):
            return [ToolError(call_id, text[len(ERROR_PREFIX) :], name=names.get(call_id))]
        return [ToolResult(call_id, text, name=names.get(call_id))]
    if kind not in ("message", None):
        return []  # reasoning, hosted tools, item references: not events
    role = item.get("role")
    if role == "user":
        return [UserMessage(_text_of(item.get("content")))]
    if role == "assistant":
        text, refused = _message_text(item.get("content"))
        return [ModelResponse(text, model=model, stop_reason="refusal" if refused else stop)]
    if role in ("system", "developer") and prompts is not None:
        text = _text_of(item.get("content"))
        if text.startswith(SUMMARY_PREFIX + "\n"):
            return [CompactionSummary(text[len(SUMMARY_PREFIX) + 1 :])]
        if text:
            prompts.append(text)
    return []


def _responses_events(data: Mapping[str, Any], model: str | None) -> list[Event]:
    output = data.get("output")
    if output is None:
        output = []
    if isinstance(output, str | bytes | Mapping) or not isinstance(output, Iterable):
        raise ValueError(f"a Response's output must be a list, not {type(output).__name__}")
    stop = _responses_stop_reason(data)
    events: list[Event] = []
    names: dict[str, str] = {}
    for raw in output:
        events.extend(_responses_item_events(_as_dict(raw), names, None, model, stop))
    if not events:
        events.append(ModelResponse("", model=model, stop_reason=stop))
    _append_usage(events, data, model, "input_tokens", "output_tokens")
    return events


def to_openai_responses_input(
    events: Sequence[Event], prompts: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Responses API ``input`` items for ``events``, the prompts as the first ``system``
    message (``client.responses.create(model=..., input=items)``).

    A :class:`UserMessage` becomes a user message and a :class:`ModelResponse` with text
    an assistant message (``{"type": "message", "role": ..., "content": text}``); a
    :class:`ToolCall` a ``function_call`` item (``call_id``, ``name``, ``arguments`` as
    JSON text); a :class:`ToolResult` a ``function_call_output`` item, a
    :class:`ToolError` one whose output starts ``Error: ``; a :class:`CompactionSummary`
    a system message. Events the model does not see (alerts, usage, lifecycle) are
    skipped, and so is a :class:`UserMessage`'s ``name`` (the Responses API has no such
    field). The items are plain dicts, valid as the SDK's ``ResponseInputItemParam``.
    """
    items: list[dict[str, Any]] = []
    system = "\n\n".join(p for p in prompts if p)
    if system:
        items.append({"type": "message", "role": "system", "content": system})
    for e in events:
        kind = type(e)
        if kind is ToolCall:
            assert isinstance(e, ToolCall)
            items.append(
                {
                    "type": "function_call",
                    "call_id": e.call_id,
                    "name": e.name,
                    "arguments": e.arguments_json(),
                }
            )
        elif kind is ToolResult:
            assert isinstance(e, ToolResult)
            items.append(
                {"type": "function_call_output", "call_id": e.call_id, "output": e.content}
            )
        elif kind is ToolError:
            assert isinstance(e, ToolError)
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": e.call_id,
                    "output": ERROR_PREFIX + e.error,
                }
            )
        elif kind is UserMessage:
            items.append({"type": "message", "role": "user", "content": e.text()})
        elif kind is ModelResponse:
            if e.text():
                items.append({"type": "message", "role": "assistant", "content": e.text()})
        elif kind is CompactionSummary:
            items.append(
                {"type": "message", "role": "system", "content": f"{SUMMARY_PREFIX}\n{e.text()}"}
            )
    return items


def from_openai_responses_input(
    items: str | Iterable[Mapping[str, Any] | Any],
) -> tuple[list[str], list[Event]]:
    """``(prompts, events)`` from Responses API ``input`` items -- the inverse of
    :func:`to_openai_responses_input`, and what a loop holds when it appends
    ``response.output`` to its input.

    A plain string input is one user message. ``system``/``developer`` messages become
    prompts (one starting with the compaction-summary prefix a
    :class:`CompactionSummary`); user and assistant messages, ``function_call`` and
    ``function_call_output`` items become events as in :func:`from_openai_response`
    (outputs starting ``Error: `` become :class:`ToolError`; an output given as content
    parts keeps their text). Reasoning items, hosted tool calls and item references
    are skipped.

    Raises:
        ValueError: a ``function_call`` or ``function_call_output`` item without a string
            ``call_id`` (or a call without a ``name``).
    """
    if isinstance(items, str):
        return [], [UserMessage(items)]
    prompts: list[str] = []
    events: list[Event] = []
    names: dict[str, str] = {}
    for raw in items:
        events.extend(_responses_item_events(_as_dict(raw), names, prompts))
    return prompts, events


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
    _append_usage(events, data, model, "input_tokens", "output_tokens", count=_int_or_zero)
    return events
