"""The OpenAI Responses API, checked against the openai SDK's own types.

Responses are built as the SDK builds them (``Response.model_validate`` on payloads
shaped like the API's), and every produced ``input`` item is validated as the SDK's
``ResponseInputItemParam``: "valid Responses input" is checked, not assumed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsmemory.agent import (
    Assembly,
    from_openai_response,
    from_openai_responses_input,
    to_openai_messages,
    to_openai_responses_input,
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

openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")

from openai.types.responses import Response, ResponseInputItemParam  # noqa: E402

_ITEM = pydantic.TypeAdapter(ResponseInputItemParam)


def _valid(items: list[dict[str, Any]]) -> None:
    """Each item validates as the SDK's input item and loses no key doing so (a
    TypedDict drops keys it does not declare, so a misspelt key would show here)."""
    for item in items:
        assert _ITEM.validate_python(item, strict=True) == item, item


def _response(output: list[dict[str, Any]], **extra: Any) -> Response:
    payload: dict[str, Any] = {
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1741476542,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [
            {
                "type": "function",
                "name": "recall",
                "description": "Search long-term memory.",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                    "additionalProperties": False,
                },
                "strict": True,
            }
        ],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 328,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 52,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 380,
        },
        "user": None,
        "metadata": {},
    }
    payload.update(extra)
    return Response.model_validate(payload)


def _message(text: str, item_id: str = "msg_67ccd2bf17f0819081ff3bb2cf6508e6") -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


_REASONING = {
    "type": "reasoning",
    "id": "rs_6820f383d7c08191846711c5df8233bc0ac5ba57aafcbac7",
    "summary": [{"type": "summary_text", "text": "The user asks about tea."}],
}


def test_a_response_with_tool_calls_gives_the_calls() -> None:
    """The calls came back as the usage record only: a loop never saw them."""
    response = _response(
        [
            _REASONING,
            _message("Let me look that up."),
            _call("call_12345xyz", "recall", '{"query":"tea"}'),
            _call("call_67890abc", "recall", '{"query":"coffee"}'),
        ]
    )
    events = from_openai_response(response)
    assert [type(e) for e in events] == [ModelResponse, ToolCall, ToolCall, Usage]
    text, first, second, usage = events
    assert isinstance(text, ModelResponse) and text.content == "Let me look that up."
    assert text.model == "gpt-4.1-2025-04-14" and text.stop_reason == "completed"
    assert isinstance(first, ToolCall) and isinstance(second, ToolCall)
    assert (first.call_id, first.name, first.arguments) == (
        "call_12345xyz",
        "recall",
        {"query": "tea"},
    )
    assert second.arguments == {"query": "coffee"}
    assert isinstance(usage, Usage)
    assert (usage.input_tokens, usage.output_tokens, usage.model) == (
        328,
        52,
        "gpt-4.1-2025-04-14",
    )
    # the dict form of the same response gives the same events
    again = from_openai_response(response.model_dump())
    assert [e.to_dict() | {"id": "", "timestamp": ""} for e in again] == [
        e.to_dict() | {"id": "", "timestamp": ""} for e in events
    ]


def test_only_calls_give_no_empty_text_and_nothing_gives_the_stop_reason() -> None:
    calls = from_openai_response(_response([_call("c1", "recall", "{}")]))
    assert [type(e) for e in calls] == [ToolCall, Usage]
    assert isinstance(calls[0], ToolCall) and calls[0].arguments == {}
    cut = from_openai_response(
        _response(
            [_REASONING],
            status="incomplete",
            incomplete_details={"reason": "max_output_tokens"},
        )
    )
    assert isinstance(cut[0], ModelResponse)
    assert (cut[0].content, cut[0].stop_reason) == ("", "max_output_tokens")


def test_a_refusal_keeps_its_text() -> None:
    refused = _response(
        [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "refusal", "refusal": "I can't help with that."}],
            }
        ]
    )
    first = from_openai_response(refused)[0]
    assert isinstance(first, ModelResponse)
    assert (first.content, first.stop_reason) == ("I can't help with that.", "refusal")


def _history() -> list[Event]:
    return [
        CompactionSummary("they talked about tea"),
        UserMessage("what do I like to drink?", name="alice"),
        ModelResponse("Let me check."),
        ToolCall("call_1", "recall", {"query": "drink"}),
        ToolCall("call_2", "recall", {"query": "tea"}),
        ToolResult("call_1", "Found 1 memory:\n1. likes tea", name="recall"),
        ToolError("call_2", "timeout", name="recall"),
        ObserverAlert("not sent"),
        Usage(input_tokens=5),
        ModelResponse(""),
        ModelResponse("You like tea."),
    ]


def test_the_input_items_are_valid_responses_input() -> None:
    items = to_openai_responses_input(_history(), ["You are helpful.", "", "Be brief."])
    _valid(items)
    assert items == [
        {"type": "message", "role": "system", "content": "You are helpful.\n\nBe brief."},
        {
            "type": "message",
            "role": "system",
            "content": "[Summary of the earlier conversation]\nthey talked about tea",
        },
        {"type": "message", "role": "user", "content": "what do I like to drink?"},
        {"type": "message", "role": "assistant", "content": "Let me check."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "recall",
            "arguments": '{"query":"drink"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "recall",
            "arguments": '{"query":"tea"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "Found 1 memory:\n1. likes tea",
        },
        {"type": "function_call_output", "call_id": "call_2", "output": "Error: timeout"},
        {"type": "message", "role": "assistant", "content": "You like tea."},
    ]
    # the whole list is what the SDK's `input=` takes
    from openai.types.responses import ResponseInputParam

    pydantic.TypeAdapter(ResponseInputParam).validate_python(items)


def test_the_assembly_gives_responses_input_and_chat_is_unchanged() -> None:
    a = Assembly(["Be brief."], _history())
    assert a.to_openai_responses() == to_openai_responses_input(a.events, a.prompts)
    _valid(a.to_openai_responses())
    assert a.to_openai() == to_openai_messages(a.events, a.prompts)
    assert a.to_openai()[0] == {"role": "system", "content": "Be brief."}
    # why a second format: Chat Completions' tool messages are not Responses input
    tool_message = next(m for m in a.to_openai() if m["role"] == "tool")
    with pytest.raises(pydantic.ValidationError):
        _ITEM.validate_python(tool_message, strict=True)


def test_input_items_round_trip() -> None:
    events = _history()
    prompts, back = from_openai_responses_input(to_openai_responses_input(events, ["sys"]))
    assert prompts == ["sys"]
    seen = [
        e for e in events if e.conversational and not (type(e) is ModelResponse and not e.text())
    ]
    assert [(type(e), e.text()) for e in back] == [(type(e), e.text()) for e in seen]
    names = [getattr(e, "name", None) for e in back if isinstance(e, ToolResult | ToolError)]
    assert names == ["recall", "recall"]
    # an output given as content parts keeps its text parts
    parts = {
        "type": "function_call_output",
        "call_id": "c",
        "output": [
            {"type": "input_text", "text": "chart of "},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
            {"type": "input_text", "text": "sales"},
        ],
    }
    _valid([parts])
    assert [(type(e), e.text()) for e in from_openai_responses_input([parts])[1]] == [
        (ToolResult, "chart of sales")
    ]


def test_a_loop_that_appends_response_output_reads_back() -> None:
    """The SDK's documented loop: ``input += response.output`` then the outputs."""
    response = _response([_message("Checking."), _call("call_9", "recall", '{"query":"x"}')])
    history: list[Any] = [{"role": "user", "content": "hi"}]
    history += response.output
    history.append({"type": "function_call_output", "call_id": "call_9", "output": "none"})
    prompts, events = from_openai_responses_input(history)
    assert prompts == []
    assert [type(e) for e in events] == [UserMessage, ModelResponse, ToolCall, ToolResult]
    result = events[-1]
    assert isinstance(result, ToolResult) and result.name == "recall"
    prompts, plain = from_openai_responses_input("just text")
    assert prompts == [] and [(type(e), e.text()) for e in plain] == [(UserMessage, "just text")]


HOSTILE = [
    "\x00",
    "line one\nline two\r\n\u2028",
    '{"query": "nul \\u0000 inside", "n": [1, 2]}',
    "not json {",
    '["a list", "not an object"]',
    "x" * 2_000_000,
    '{"query": "' + "y" * 1_000_000 + '"}',
    "",
]


@pytest.mark.parametrize("arguments", HOSTILE, ids=lambda a: repr(a[:20]))
def test_hostile_arguments_survive_the_round_trip(arguments: str) -> None:
    response = _response([_call("call_h", "recall", arguments)])
    call = from_openai_response(response)[0]
    assert isinstance(call, ToolCall)
    items = to_openai_responses_input([call])
    _valid(items)
    sent = items[0]["arguments"]
    if arguments == "":
        assert sent == "{}"
    else:
        # what the model wrote comes back as it wrote it, or as the same JSON object
        try:
            same = json.loads(sent) == json.loads(arguments)
        except ValueError:
            same = False
        assert sent == arguments or same
    back = from_openai_responses_input(items)[1][0]
    assert isinstance(back, ToolCall) and back.arguments == call.arguments


def test_hostile_outputs_and_messages_are_valid_input() -> None:
    text = "nul \x00 newline \n and a big one " + "z" * 1_000_000
    items = to_openai_responses_input(
        [UserMessage(text), ModelResponse(text), ToolCall("c", "t"), ToolResult("c", text)]
    )
    _valid(items)
    _, back = from_openai_responses_input(items)
    assert [e.text() for e in back] == [text, text, "t {}", text]


def test_missing_fields() -> None:
    # a function_call that could not be answered is an error, not a silent skip
    for broken in (
        {"type": "function_call", "name": "recall", "arguments": "{}"},
        {"type": "function_call", "call_id": "c1", "arguments": "{}"},
        {"type": "function_call", "call_id": 7, "name": "recall"},
    ):
        with pytest.raises(ValueError, match="function_call"):
            from_openai_response({"object": "response", "model": "m", "output": [broken]})
        with pytest.raises(ValueError, match="function_call"):
            from_openai_responses_input([broken])
    # the error names the item without repeating what it holds
    huge = {"type": "function_call", "name": "n" * 100_000, "arguments": "a" * 100_000}
    with pytest.raises(ValueError, match="call_id") as caught:
        from_openai_responses_input([huge])
    assert len(str(caught.value)) < 300
    with pytest.raises(ValueError, match="function_call_output"):
        from_openai_responses_input([{"type": "function_call_output", "output": "x"}])
    with pytest.raises(ValueError, match="list"):
        from_openai_response({"object": "response", "output": "text"})
    for junk in (None, 7, "function_call"):
        with pytest.raises(TypeError, match="expected a dict"):
            from_openai_response({"object": "response", "output": [junk]})
    # missing optional parts: no arguments, no content, no usage, no model
    events = from_openai_response(
        {
            "object": "response",
            "output": [
                {"type": "function_call", "call_id": "c1", "name": "recall"},
                {"type": "message", "role": "assistant"},
            ],
        }
    )
    assert [type(e) for e in events] == [ToolCall, ModelResponse]
    assert isinstance(events[0], ToolCall) and events[0].arguments == {}
    assert isinstance(events[1], ModelResponse) and events[1].content == ""
    # usage with junk counts gives 0, not a crash
    usage = from_openai_response(
        {"object": "response", "output": [], "usage": {"input_tokens": None, "output_tokens": "x"}}
    )[-1]
    assert isinstance(usage, Usage) and (usage.input_tokens, usage.output_tokens) == (0, 0)


def test_other_output_items_are_skipped_not_errors() -> None:
    response = _response(
        [
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "tea"},
            },
            _REASONING,
            _message("Tea is a drink."),
        ]
    )
    events = from_openai_response(response)
    assert [type(e) for e in events] == [ModelResponse, Usage]
    items = to_openai_responses_input(events)
    _valid(items)
    assert items == [{"type": "message", "role": "assistant", "content": "Tea is a drink."}]


def test_chat_completions_responses_still_convert() -> None:
    events = from_openai_response(
        {
            "object": "chat.completion",
            "model": "m",
            "choices": [{"finish_reason": "stop", "message": {"content": "hi"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
    )
    assert [type(e) for e in events] == [ModelResponse, Usage]
    assert isinstance(events[1], Usage) and events[1].input_tokens == 3


def test_a_session_loop_on_the_responses_api() -> None:
    """A KnowledgeSession driven by Responses replies: the model's knowledge-tool call is
    answered, every request is valid input and the call and its output reach the model
    paired, and the event log keeps them."""
    import asyncio

    from openai.types.responses import FunctionToolParam, ResponseInputParam

    from fsmemory.agent import ConversationPolicy, KnowledgeConfig, KnowledgeSession
    from fsmemory.store import MemoryKnowledgeStore

    requests: list[list[dict[str, Any]]] = []
    replies = [
        _response(
            [
                _call(
                    "call_k1",
                    "knowledge",
                    '{"action": "write", "path": "/notes/tea.md", "content": "green\\n"}',
                )
            ]
        ),
        _response([_message("Noted: you like green tea.")]),
    ]

    def create(*, input: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Response:
        pydantic.TypeAdapter(ResponseInputParam).validate_python(input, strict=True)
        for tool in tools:
            pydantic.TypeAdapter(FunctionToolParam).validate_python(tool)
        requests.append(input)
        return replies[len(requests) - 1]

    async def main() -> list[Event]:
        store = MemoryKnowledgeStore()
        session = KnowledgeSession(KnowledgeConfig(store=store), policies=[ConversationPolicy()])
        async with session:
            await session.record(UserMessage("remember that I like green tea"))
            while True:
                a = await session.assemble()
                events = from_openai_response(
                    create(input=a.to_openai_responses(), tools=session.tools("responses"))
                )
                await session.record(*events)
                calls = [e for e in events if isinstance(e, ToolCall)]
                if not calls:
                    break
                for call in calls:
                    result = await session.run_tool(call)
                    assert result is not None
                    await session.record(result)
            await session.end_turn()
        assert await store.read("/notes/tea.md") == "green\n"
        return list(session.history)

    history = asyncio.run(main())
    second = requests[1]
    kinds = [item.get("type") for item in second]
    assert kinds[-2:] == ["function_call", "function_call_output"]
    assert second[-2]["call_id"] == second[-1]["call_id"] == "call_k1"
    assert not second[-1]["output"].startswith("Error")
    assert [type(e) for e in history if e.conversational] == [
        UserMessage,
        ToolCall,
        ToolResult,
        ModelResponse,
    ]
