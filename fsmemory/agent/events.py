"""Events of an agent loop and the event log that keeps them.

Conversation events (what the model sees): :class:`UserMessage`,
:class:`ModelResponse`, :class:`ToolCall`, :class:`ToolResult`, :class:`ToolError`,
:class:`CompactionSummary`. Records beside them: :class:`ObserverAlert` (with its
:class:`Severity`) and :class:`Usage`. Lifecycle events the session emits to its
subscribers: ``Aggregation*`` / ``Compaction*`` ``Started``/``Completed``/``Failed``,
:class:`EventLogFailed`, :class:`HaltEvent`, delivered to each :data:`Subscriber`.
Every event round-trips through JSON
(:meth:`Event.to_dict` / :meth:`Event.from_dict`; types it does not know come back as
:class:`UnknownEvent`).

The event log is ``/log/<stream_id>.jsonl`` in a path store, one JSON line per event:
:func:`log_path`, :func:`check_stream_id`, :func:`encode_events`,
:func:`parse_event_lines`, :func:`read_event_log`, :func:`tail_event_log`,
:func:`load_history` and :func:`replay_history` read and write it.
"""

from __future__ import annotations

from fsmemory.agent._events import (
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
from fsmemory.agent._log import (
    EVENT_LOG_DIR,
    check_stream_id,
    encode_events,
    load_history,
    log_path,
    parse_event_lines,
    read_event_log,
    replay_history,
    tail_event_log,
)
from fsmemory.agent._session import Subscriber

__all__ = [
    "EVENT_LOG_DIR",
    "AggregationCompleted",
    "AggregationFailed",
    "AggregationStarted",
    "CompactionCompleted",
    "CompactionFailed",
    "CompactionStarted",
    "CompactionSummary",
    "Event",
    "EventLogFailed",
    "HaltEvent",
    "ModelResponse",
    "ObserverAlert",
    "Severity",
    "Subscriber",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "UnknownEvent",
    "Usage",
    "UserMessage",
    "check_stream_id",
    "encode_events",
    "load_history",
    "log_path",
    "parse_event_lines",
    "read_event_log",
    "replay_history",
    "tail_event_log",
]
