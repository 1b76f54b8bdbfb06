"""Event classes: construction, JSON round trips, unknown types."""

from __future__ import annotations

import dataclasses

import pytest

from fsmemory import _jsonutil
from fsmemory.agent.events import (
    AggregationCompleted,
    AggregationFailed,
    AggregationStarted,
    CompactionCompleted,
    CompactionFailed,
    CompactionStarted,
    CompactionSummary,
    Event,
    EventLogFailed,
    HaltEvent,
    ModelResponse,
    ObserverAlert,
    Severity,
    ToolCall,
    ToolError,
    ToolResult,
    UnknownEvent,
    Usage,
    UserMessage,
)

SAMPLES: list[Event] = [
    UserMessage("hello", name="ann"),
    ModelResponse("hi there", model="m1", stop_reason="end_turn"),
    ToolCall("c1", "search", {"q": "x", "n": [1, 2], "nested": {"a": None}}),
    ToolResult("c1", "found 2", name="search"),
    ToolError("c1", "timeout", name="search"),
    CompactionSummary("earlier stuff", replaced=12),
    ObserverAlert("cost high", severity=Severity.ERROR, source="budget"),
    Usage(input_tokens=10, output_tokens=3, model="m1"),
    AggregationStarted(strategy="working_memory", events=4),
    AggregationCompleted(strategy="working_memory", events=4, usage=Usage(input_tokens=5)),
    AggregationFailed(strategy="working_memory", error="ValueError: x"),
    CompactionStarted(strategy="tail_window", events_before=10),
    CompactionCompleted(
        strategy="tail_window", events_before=10, events_after=3, history_ids=("a", "b", "c")
    ),
    CompactionFailed(strategy="summarize", error="RuntimeError: boom"),
    EventLogFailed(path="/log/s.jsonl", error="OSError: disk", pending=3),
    HaltEvent(reason="stop now", alert_id="x1", source="guard"),
]


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_round_trip_through_json(event: Event) -> None:
    data = event.to_dict()
    assert data["type"] == event.event_type
    assert data["id"] == event.id
    again = Event.from_dict(_jsonutil.loads(_jsonutil.dumps(data)))
    assert type(again) is type(event)
    assert again == event
    assert type(event).from_dict(data) == event


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_events_are_frozen_and_slotted(event: Event) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.id = "other"  # type: ignore[misc]
    assert not hasattr(event, "__dict__")


def test_every_event_type_is_distinct_and_has_a_doc() -> None:
    kinds = [e.event_type for e in SAMPLES]
    assert len(set(kinds)) == len(kinds)
    for e in SAMPLES:
        assert type(e).__doc__


def test_ids_and_timestamps() -> None:
    a, b = UserMessage("x"), UserMessage("x")
    assert a.id != b.id
    assert a.timestamp.endswith("Z") and "T" in a.timestamp
    assert a != b  # ids differ


def test_unknown_type_is_preserved_exactly() -> None:
    raw = {"type": "thinking_v9", "id": "abc", "timestamp": "t", "blob": [1, {"x": 2}]}
    event = Event.from_dict(raw)
    assert isinstance(event, UnknownEvent)
    assert event.type_name == "thinking_v9"
    assert event.id == "abc"
    assert event.to_dict() == raw
    assert Event.from_dict(event.to_dict()) == event
    assert not event.conversational and not event.lifecycle


def test_known_type_with_bad_fields_becomes_unknown() -> None:
    for raw in (
        {"type": "user_message"},
        {"type": "user_message", "content": 3},
        {"type": "tool_call", "call_id": "c", "name": "n", "arguments": "not a dict"},
        {"type": "observer_alert", "message": "m", "severity": "apocalyptic"},
    ):
        event = Event.from_dict(raw)
        assert isinstance(event, UnknownEvent)
        assert event.to_dict() == raw


def test_missing_type_is_unknown() -> None:
    assert isinstance(Event.from_dict({"content": "x"}), UnknownEvent)


def test_extra_fields_of_a_known_type_are_ignored() -> None:
    event = Event.from_dict({"type": "user_message", "content": "x", "future": 1})
    assert event == UserMessage("x", id=event.id, timestamp=event.timestamp)


def test_exception_is_kept_but_not_serialized() -> None:
    exc = ValueError("bad")
    failed = AggregationFailed(strategy="s", error="ValueError: bad", exception=exc)
    assert failed.exception is exc
    assert "exception" not in failed.to_dict()
    again = Event.from_dict(failed.to_dict())
    assert isinstance(again, AggregationFailed) and again.exception is None
    assert again == failed  # the exception does not take part in equality


def test_severity_accepts_strings() -> None:
    assert ObserverAlert("m", severity="FATAL").severity is Severity.FATAL  # type: ignore[arg-type]
    assert ObserverAlert("m").severity is Severity.WARNING
    with pytest.raises(ValueError):
        ObserverAlert("m", severity="nope")  # type: ignore[arg-type]


def test_type_checks() -> None:
    with pytest.raises(TypeError):
        UserMessage(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolCall("c", "n", "args")  # type: ignore[arg-type]


def test_text_is_the_full_model_visible_text() -> None:
    long = "x" * 5000
    assert UserMessage(long).text() == long
    call = ToolCall("c", "search", {"q": long})
    assert long in call.text() and call.text().startswith("search ")
    assert ToolError("c", "boom").text() == "boom"
    assert Usage(input_tokens=3).text() == ""
    assert AggregationStarted(strategy="s").text() == ""


def test_flags() -> None:
    conversational = {type(e) for e in SAMPLES if e.conversational}
    assert conversational == {
        UserMessage,
        ModelResponse,
        ToolCall,
        ToolResult,
        ToolError,
        CompactionSummary,
    }
    lifecycle = {type(e) for e in SAMPLES if e.lifecycle}
    assert lifecycle == {
        AggregationStarted,
        AggregationCompleted,
        AggregationFailed,
        CompactionStarted,
        CompactionCompleted,
        CompactionFailed,
        EventLogFailed,
        HaltEvent,
    }


def test_raw_arguments_round_trip() -> None:
    call = ToolCall("c", "n", {"_raw": "{not json"})
    assert call.arguments_json() == "{not json"
    assert ToolCall("c", "n", {}).arguments_json() == "{}"


def test_json_line_is_one_line() -> None:
    line = UserMessage("a\nb\u2028c\u0085d").to_json_line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert len(line.decode().splitlines()) == 1
    assert Event.from_dict(_jsonutil.loads(line)).text() == "a\nb\u2028c\u0085d"


def test_usage_total() -> None:
    assert Usage(input_tokens=2, output_tokens=5).total_tokens == 7
