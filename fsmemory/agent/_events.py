"""Typed events for what an agent loop produces, plus the harness's lifecycle events.

Every event is a frozen, slotted dataclass with an ``id`` (random hex), a ``timestamp``
(ISO 8601, UTC) and ``to_dict`` / ``from_dict``. ``Event.from_dict`` dispatches on the
``"type"`` key; a type this version does not know comes back as :class:`UnknownEvent`
holding the raw dict, so a log written by a newer version survives a round trip.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from fsmemory import _jsonutil

E = TypeVar("E", bound="Event")

_REGISTRY: dict[str, type[Event]] = {}
# Per class: the payload fields (everything but id/timestamp and non-serialized ones).
_PAYLOAD: dict[type[Event], tuple[str, ...]] = {}


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> str:
    return datetime.now(tz=UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def describe_exception(exc: BaseException) -> str:
    """``"TypeName: message"`` -- how failure events describe an exception."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Severity(StrEnum):
    """How serious an :class:`ObserverAlert` is. ``FATAL`` makes ``AlertPolicy`` halt."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    FATAL = "fatal"


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base class of every event.

    Attributes:
        id: a unique id (random hex); tool calls are paired by ``call_id``, not by it.
        timestamp: when the event was created, ISO 8601 in UTC (``...Z``).

    Class attributes:
        event_type: the ``"type"`` written by :meth:`to_dict`.
        conversational: part of the conversation the model sees (``ConversationPolicy``
            keeps exactly these).
        lifecycle: emitted by the harness about itself (never part of the history).
    """

    event_type: ClassVar[str] = "event"
    conversational: ClassVar[bool] = False
    lifecycle: ClassVar[bool] = False
    # The fields that must be strings (checked on creation), and the one ``text`` shows.
    _str_fields: ClassVar[tuple[str, ...]] = ()
    _text_field: ClassVar[str | None] = None

    id: str = field(default_factory=_new_id)
    timestamp: str = field(default_factory=_now)

    def __post_init__(self) -> None:
        for name in self._str_fields:
            _check_str(name, getattr(self, name))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Explicit form: dataclass(slots=True) re-creates the class, which breaks the
        # zero-argument super() of methods defined in its body.
        super(Event, cls).__init_subclass__(**kwargs)
        name = cls.__dict__.get("event_type")
        # dataclass(slots=True) re-creates the class: the second one must win.
        if isinstance(name, str) and name not in ("event", "unknown"):
            _REGISTRY[name] = cls

    def text(self) -> str:
        """The full text a model would see for this event (``""`` when not shown)."""
        return "" if self._text_field is None else str(getattr(self, self._text_field))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``{"type": ..., "id": ..., "timestamp": ..., fields...}``."""
        data: dict[str, Any] = {
            "type": self.event_type,
            "id": self.id,
            "timestamp": self.timestamp,
        }
        for name in _payload_fields(type(self)):
            data[name] = _to_json(getattr(self, name))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """Rebuild an event from :meth:`to_dict` output.

        Called on :class:`Event` it dispatches on ``data["type"]``; unknown types, and
        known types whose fields do not fit, come back as :class:`UnknownEvent`.
        Called on a subclass it builds that subclass (``TypeError``/``ValueError`` when
        the fields do not fit).
        """
        if cls is not Event:
            return cls._build(data)
        kind = data.get("type")
        target = _REGISTRY.get(kind) if isinstance(kind, str) else None
        if target is None:
            return UnknownEvent.wrap(data)
        try:
            return target._build(data)
        except (TypeError, ValueError, KeyError):
            return UnknownEvent.wrap(data)

    @classmethod
    def _build(cls, data: Mapping[str, Any]) -> Event:
        kwargs = {name: data[name] for name in _payload_fields(cls) if name in data}
        return cls(**kwargs, **_stamp_of(data))

    def to_json_line(self) -> bytes:
        """One JSON line (``\\n``-terminated) as written to the event log."""
        return _jsonutil.dumps_line(self.to_dict())


def _payload_fields(cls: type[Event]) -> tuple[str, ...]:
    names = _PAYLOAD.get(cls)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in ("id", "timestamp") and f.metadata.get("serialize", True)
        )
        _PAYLOAD[cls] = names
    return names


def _stamp_of(data: Mapping[str, Any]) -> dict[str, str]:
    """The ``id`` and ``timestamp`` of a raw event dict that are strings (the others
    get fresh values)."""
    return {k: v for k in ("id", "timestamp") if isinstance(v := data.get(k), str)}


def _to_json(value: Any) -> Any:
    if isinstance(value, Event):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    """``value`` with anything JSON cannot hold turned into lists or strings."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _check_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")


# -- conversation ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UserMessage(Event):
    """What the user asked.

    Attributes:
        content: the request text.
        name: an optional speaker name.
    """

    event_type: ClassVar[str] = "user_message"
    conversational: ClassVar[bool] = True
    _str_fields: ClassVar[tuple[str, ...]] = ("content",)
    _text_field: ClassVar[str | None] = "content"

    content: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ModelResponse(Event):
    """The text the model answered (its tool calls follow as :class:`ToolCall` events).

    Attributes:
        content: the answer text (``""`` when the model only called tools).
        model: the model name, when known.
        stop_reason: why the model stopped (``"end_turn"``, ``"tool_calls"``, ...).
    """

    event_type: ClassVar[str] = "model_response"
    conversational: ClassVar[bool] = True
    _str_fields: ClassVar[tuple[str, ...]] = ("content",)
    _text_field: ClassVar[str | None] = "content"

    content: str = ""
    model: str | None = None
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall(Event):
    """The model asked to run a tool.

    Attributes:
        call_id: the provider's id for the call; results refer to it.
        name: the tool name.
        arguments: the parsed arguments (a JSON object). Arguments that were not valid
            JSON are kept as ``{"_raw": "<text>"}`` and sent back verbatim.
    """

    event_type: ClassVar[str] = "tool_call"
    conversational: ClassVar[bool] = True
    _str_fields: ClassVar[tuple[str, ...]] = ("call_id", "name")

    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Event.__post_init__(self)
        if not isinstance(self.arguments, dict):
            raise TypeError("arguments must be a dict")

    def arguments_json(self) -> str:
        """The arguments as the JSON text a provider expects."""
        raw = self.arguments.get("_raw")
        if len(self.arguments) == 1 and isinstance(raw, str):
            return raw
        try:
            return _jsonutil.dumps(self.arguments).decode("utf-8")
        except TypeError:  # a value JSON cannot hold: show it as text
            return _jsonutil.dumps(_jsonable(self.arguments)).decode("utf-8")

    def text(self) -> str:
        """``name`` followed by the JSON arguments."""
        return f"{self.name} {self.arguments_json()}"


@dataclass(frozen=True, slots=True)
class ToolResult(Event):
    """What a tool returned.

    Attributes:
        call_id: the :class:`ToolCall` this answers.
        content: the result text.
        name: the tool name, when known.
    """

    event_type: ClassVar[str] = "tool_result"
    conversational: ClassVar[bool] = True
    _str_fields: ClassVar[tuple[str, ...]] = ("call_id", "content")
    _text_field: ClassVar[str | None] = "content"

    call_id: str
    content: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolError(Event):
    """A tool call failed. An event, not an exception: the model is told about it.

    Attributes:
        call_id: the :class:`ToolCall` this answers.
        error: what went wrong, as shown to the model.
        name: the tool name, when known.
    """

    event_type: ClassVar[str] = "tool_error"
    conversational: ClassVar[bool] = True
    _str_fields: ClassVar[tuple[str, ...]] = ("call_id", "error")
    _text_field: ClassVar[str | None] = "error"

    call_id: str
    error: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionSummary(Event):
    """A summary standing in for events a compaction removed from the history.

    Attributes:
        content: the summary text.
        replaced: how many events it stands for (cumulative over compactions).
    """

    event_type: ClassVar[str] = "compaction_summary"
    conversational: ClassVar[bool] = True
    _str_fields: ClassVar[tuple[str, ...]] = ("content",)
    _text_field: ClassVar[str | None] = "content"

    content: str
    replaced: int = 0


@dataclass(frozen=True, slots=True)
class ObserverAlert(Event):
    """An alert raised by an observer (a monitor, a guardrail) about the run.

    It reaches the model only through ``AlertPolicy``; a ``FATAL`` one halts the loop.

    Attributes:
        message: what the observer saw.
        severity: a :class:`Severity` (a plain string is accepted).
        source: which observer raised it.
    """

    event_type: ClassVar[str] = "observer_alert"
    _str_fields: ClassVar[tuple[str, ...]] = ("message",)
    _text_field: ClassVar[str | None] = "message"

    message: str
    severity: Severity = Severity.WARNING
    source: str | None = None

    def __post_init__(self) -> None:
        Event.__post_init__(self)
        if not isinstance(self.severity, Severity):
            object.__setattr__(self, "severity", Severity(str(self.severity).lower()))


@dataclass(frozen=True, slots=True)
class Usage(Event):
    """Token usage of one model call (or of a summarization).

    Attributes:
        input_tokens: prompt tokens.
        output_tokens: completion tokens.
        model: the model name, when known.
    """

    event_type: ClassVar[str] = "usage"

    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens``."""
        return self.input_tokens + self.output_tokens


# -- lifecycle ---------------------------------------------------------------------------


def _usage_from(value: Any) -> Usage | None:
    if value is None or isinstance(value, Usage):
        return value
    if isinstance(value, Mapping):
        built = Usage.from_dict(value)
        if isinstance(built, Usage):
            return built
    raise TypeError("usage must be a Usage or its dict")


@dataclass(frozen=True, slots=True)
class AggregationStarted(Event):
    """An aggregation strategy is about to run.

    Attributes:
        strategy: the strategy's name.
        events: how many new events it aggregates.
    """

    event_type: ClassVar[str] = "aggregation_started"
    lifecycle: ClassVar[bool] = True

    strategy: str
    events: int = 0


@dataclass(frozen=True, slots=True)
class AggregationCompleted(Event):
    """An aggregation strategy finished.

    Attributes:
        strategy: the strategy's name.
        events: how many events it aggregated.
        usage: tokens its summarization used, when the summarizer reported them.
    """

    event_type: ClassVar[str] = "aggregation_completed"
    lifecycle: ClassVar[bool] = True

    strategy: str
    events: int = 0
    usage: Usage | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "usage", _usage_from(self.usage))


@dataclass(frozen=True, slots=True)
class AggregationFailed(Event):
    """An aggregation strategy raised; the turn went on. The events stay queued for
    the next fire.

    Attributes:
        strategy: the strategy's name.
        error: ``"TypeName: message"`` of the exception.
        exception: the exception itself (not serialized; None after a round trip).
    """

    event_type: ClassVar[str] = "aggregation_failed"
    lifecycle: ClassVar[bool] = True

    strategy: str
    error: str
    exception: BaseException | None = field(
        default=None, compare=False, repr=False, metadata={"serialize": False}
    )


@dataclass(frozen=True, slots=True)
class CompactionStarted(Event):
    """A compaction strategy is about to run.

    Attributes:
        strategy: the strategy's name.
        events_before: the history length before it.
    """

    event_type: ClassVar[str] = "compaction_started"
    lifecycle: ClassVar[bool] = True

    strategy: str
    events_before: int = 0


@dataclass(frozen=True, slots=True)
class CompactionCompleted(Event):
    """A compaction strategy replaced the history.

    Attributes:
        strategy: the strategy's name.
        events_before: the history length before.
        events_after: the history length after.
        history_ids: the ids of the new history, in order (lets the event log be
            replayed into the compacted history, see ``load_history``).
        usage: tokens its summarization used, when reported.
    """

    event_type: ClassVar[str] = "compaction_completed"
    lifecycle: ClassVar[bool] = True

    strategy: str
    events_before: int = 0
    events_after: int = 0
    history_ids: tuple[str, ...] = ()
    usage: Usage | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "history_ids", tuple(str(i) for i in self.history_ids))
        object.__setattr__(self, "usage", _usage_from(self.usage))


@dataclass(frozen=True, slots=True)
class CompactionFailed(Event):
    """A compaction strategy raised; the history is left as it was.

    Attributes:
        strategy: the strategy's name.
        error: ``"TypeName: message"`` of the exception.
        exception: the exception itself (not serialized).
    """

    event_type: ClassVar[str] = "compaction_failed"
    lifecycle: ClassVar[bool] = True

    strategy: str
    error: str
    exception: BaseException | None = field(
        default=None, compare=False, repr=False, metadata={"serialize": False}
    )


@dataclass(frozen=True, slots=True)
class EventLogFailed(Event):
    """Appending to the event log raised; the lines are kept and retried next flush.

    Attributes:
        path: the log's store path.
        error: ``"TypeName: message"`` of the exception.
        pending: how many events wait to be written.
        exception: the exception itself (not serialized).
    """

    event_type: ClassVar[str] = "event_log_failed"
    lifecycle: ClassVar[bool] = True

    path: str
    error: str
    pending: int = 0
    exception: BaseException | None = field(
        default=None, compare=False, repr=False, metadata={"serialize": False}
    )


@dataclass(frozen=True, slots=True)
class HaltEvent(Event):
    """The loop should stop: ``AlertPolicy`` saw a ``FATAL`` alert.

    Attributes:
        reason: the alert's message.
        alert_id: the id of the alert that caused it.
        source: the observer that raised the alert.
    """

    event_type: ClassVar[str] = "halt"
    lifecycle: ClassVar[bool] = True

    reason: str
    alert_id: str | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class UnknownEvent(Event):
    """An event of a type this version does not know, kept as its raw dict.

    ``to_dict`` returns ``data`` unchanged, so it is written back exactly as read.

    Attributes:
        data: the raw dict (including its ``"type"``).
    """

    event_type: ClassVar[str] = "unknown"

    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def wrap(cls, data: Mapping[str, Any]) -> UnknownEvent:
        """Keep ``data`` (its ``id``/``timestamp`` are reused when they are strings)."""
        return cls(data=dict(data), **_stamp_of(data))

    @property
    def type_name(self) -> str:
        """The ``"type"`` of the raw dict (``""`` when absent)."""
        kind = self.data.get("type")
        return kind if isinstance(kind, str) else ""

    def to_dict(self) -> dict[str, Any]:
        """The raw dict, unchanged."""
        return dict(self.data)

    @classmethod
    def _build(cls, data: Mapping[str, Any]) -> Event:
        return cls.wrap(data)
