"""Converters to and from OpenAI Chat Completions and Anthropic Messages."""

from __future__ import annotations

import itertools
from typing import Any

from fsmemory.agent import (
    from_anthropic_messages,
    from_anthropic_response,
    from_openai_messages,
    from_openai_response,
    to_anthropic_messages,
    to_openai_messages,
)
from fsmemory.agent.events import (
    CompactionSummary,
    Event,
    ModelResponse,
    ObserverAlert,
    ToolCall,
    ToolError,
    ToolResult,
    Usage,
    UserMessage,
)


def _conversation() -> list[Event]:
    return [
        CompactionSummary("they talked about tea"),
        UserMessage("weather in Paris and Rome?"),
        ModelResponse("Let me check."),
        ToolCall("c1", "weather", {"city": "Paris"}),
        ToolCall("c2", "weather", {"city": "Rome"}),
        ToolResult("c1", "sunny", name="weather"),
        ToolError("c2", "timeout", name="weather"),
        ObserverAlert("not sent"),
        Usage(input_tokens=1),
        ModelResponse("Paris is sunny; Rome timed out."),
        UserMessage("thanks"),
        ToolCall("c3", "log", {}),  # a tool call with no text before it
        ToolResult("c3", "ok", name="log"),
    ]


def _shape(events: list[Event]) -> list[tuple[str, str]]:
    out = []
    for e in events:
        key = getattr(e, "call_id", "")
        out.append((type(e).__name__, e.text() + "|" + key))
    return out


def test_openai_messages_shape() -> None:
    msgs = to_openai_messages(_conversation(), ["You are helpful.", "Be brief."])
    assert msgs[0] == {"role": "system", "content": "You are helpful.\n\nBe brief."}
    assert msgs[1]["role"] == "system" and "they talked about tea" in msgs[1]["content"]
    assistant = msgs[3]
    assert assistant["role"] == "assistant" and assistant["content"] == "Let me check."
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "weather",
        "arguments": '{"city":"Paris"}',
    }
    assert msgs[4] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    assert msgs[5] == {"role": "tool", "tool_call_id": "c2", "content": "Error: timeout"}
    assert msgs[6] == {"role": "assistant", "content": "Paris is sunny; Rome timed out."}
    assert msgs[8]["role"] == "assistant" and msgs[8]["content"] is None
    assert "not sent" not in str(msgs)


def test_openai_round_trip() -> None:
    events = _conversation()
    prompts, back = from_openai_messages(to_openai_messages(events, ["sys"]))
    assert prompts == ["sys"]
    expected = [e for e in events if e.conversational]
    assert _shape(back) == _shape(expected)
    errors = [e for e in back if isinstance(e, ToolError)]
    assert errors[0].name == "weather"


def test_openai_raw_arguments_survive() -> None:
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{broken"}},
            ],
        },
        {"role": "tool", "tool_call_id": "x", "content": "r"},
    ]
    _, events = from_openai_messages(msgs)
    assert events[0] == UserMessage("ab", id=events[0].id, timestamp=events[0].timestamp)
    call = events[1]
    assert isinstance(call, ToolCall) and call.arguments == {"_raw": "{broken"}
    again = to_openai_messages(events)
    assert again[1]["tool_calls"][0]["function"]["arguments"] == "{broken"


class _Model:
    """Stands in for an SDK pydantic model."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def model_dump(self) -> dict[str, Any]:
        return self._data


def test_from_openai_response() -> None:
    response = {
        "model": "gpt-x",
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "t1",
                            "type": "function",
                            "function": {
                                "name": "knowledge",
                                "arguments": '{"action":"list","path":"/"}',
                            },
                        },
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }
    for resp in (response, _Model(response)):
        events = from_openai_response(resp)
        assert isinstance(events[0], ToolCall) and events[0].arguments == {
            "action": "list",
            "path": "/",
        }
        usage = events[-1]
        assert isinstance(usage, Usage) and (
            usage.input_tokens,
            usage.output_tokens,
            usage.model,
        ) == (12, 3, "gpt-x")
    text = from_openai_response(
        {"model": "m", "choices": [{"finish_reason": "stop", "message": {"content": "hi"}}]}
    )
    assert (
        isinstance(text[0], ModelResponse)
        and text[0].stop_reason == "stop"
        and text[0].model == "m"
    )


def test_anthropic_messages_shape() -> None:
    system, msgs = to_anthropic_messages(_conversation(), ["You are helpful."])
    assert system.startswith(
        "You are helpful.\n\n[Summary of the earlier conversation]\nthey talked"
    )
    roles = [m["role"] for m in msgs]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles  # alternating
    assistant = msgs[1]["content"]
    assert assistant[0] == {"type": "text", "text": "Let me check."}
    assert assistant[1] == {
        "type": "tool_use",
        "id": "c1",
        "name": "weather",
        "input": {"city": "Paris"},
    }
    results = msgs[2]["content"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "c1", "content": "sunny"}
    assert results[1]["is_error"] is True
    # the user's "thanks" follows the last assistant text in its own user turn
    assert msgs[4]["content"] == [{"type": "text", "text": "thanks"}]


def test_anthropic_round_trip() -> None:
    events = _conversation()
    system, msgs = to_anthropic_messages(events, ["sys"])
    prompts, back = from_anthropic_messages(msgs, system=system)
    assert prompts == ["sys"]
    expected = [e for e in events if e.conversational]
    assert _shape(back) == _shape(expected)


def test_anthropic_skips_empty_text_and_unknown_blocks() -> None:
    _, msgs = to_anthropic_messages([UserMessage("u"), ModelResponse("")])
    assert msgs == [{"role": "user", "content": [{"type": "text", "text": "u"}]}]
    _, events = from_anthropic_messages(
        [
            {"role": "user", "content": "plain string"},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "ok"}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "z",
                        "content": [{"type": "text", "text": "r"}],
                    }
                ],
            },
        ]
    )
    assert [type(e) for e in events] == [UserMessage, ModelResponse, ToolResult]
    assert events[2].text() == "r"


def test_from_anthropic_response() -> None:
    message = {
        "model": "claude-x",
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "tu1",
                "name": "memory",
                "input": {"command": "view", "path": "/memories"},
            },
        ],
        "usage": {"input_tokens": 20, "output_tokens": 4},
    }
    for msg in (message, _Model(message)):
        events = from_anthropic_response(msg)
        assert isinstance(events[0], ModelResponse) and events[0].stop_reason == "tool_use"
        assert events[0].model == "claude-x"
        assert isinstance(events[1], ToolCall) and events[1].arguments["command"] == "view"
        assert isinstance(events[2], Usage) and events[2].input_tokens == 20


def test_only_prompts() -> None:
    assert to_openai_messages([], ["a", ""]) == [{"role": "system", "content": "a"}]
    assert to_anthropic_messages([], []) == ("", [])
