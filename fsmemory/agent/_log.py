"""The per-stream event log: ``/log/<stream_id>.jsonl``, one JSON line per event."""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterable

from fsmemory import _jsonutil
from fsmemory.agent._events import CompactionCompleted, Event
from fsmemory.store import KnowledgeStore

logger = logging.getLogger(__name__)

EVENT_LOG_DIR = "/log"

_STREAM_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


def check_stream_id(stream_id: str) -> str:
    """Return ``stream_id`` when it is usable in file names, else raise ValueError.

    Allowed: 1-128 characters of ``A-Z a-z 0-9 . _ -``, not starting with ``.`` or ``-``.
    """
    if not isinstance(stream_id, str) or not _STREAM_ID.match(stream_id):
        raise ValueError(
            f"stream_id must be 1-128 characters of A-Z a-z 0-9 . _ - "
            f"(not starting with '.' or '-'), got {stream_id!r}"
        )
    return stream_id


def log_path(stream_id: str) -> str:
    """``/log/<stream_id>.jsonl``."""
    return f"{EVENT_LOG_DIR}/{check_stream_id(stream_id)}.jsonl"


def encode_events(events: Iterable[Event]) -> str:
    """The JSON lines for ``events`` (one per event, each ``\\n``-terminated)."""
    return b"".join(e.to_json_line() for e in events).decode("utf-8")


def parse_event_lines(text: str, *, source: str = "event log") -> list[Event]:
    """Events from JSON lines.

    A line that is not a JSON object is skipped with a warning; a last line without
    its ``\\n`` (an append still in flight) is skipped silently. Unknown event types
    come back as :class:`~fsmemory.agent.UnknownEvent`.
    """
    events: list[Event] = []
    lines = text.split("\n")
    lines.pop()  # "" after the final newline, or an unterminated tail
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = _jsonutil.loads(line)
        except _jsonutil.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            warnings.warn(f"{source}: skipping line {number}: not a JSON object", stacklevel=2)
            continue
        events.append(Event.from_dict(data))
    return events


async def read_event_log(store: KnowledgeStore, stream_id: str) -> list[Event]:
    """Every event in ``/log/<stream_id>.jsonl``, in order (``[]`` when missing).

    This includes the lifecycle events the session logged and the events a
    compaction dropped from the live history.
    """
    path = log_path(stream_id)
    text = await store.read(path)
    if not text:
        return []
    return parse_event_lines(text, source=path)


async def tail_event_log(
    store: KnowledgeStore, stream_id: str, offset: int = 0
) -> tuple[list[Event], int]:
    """The events appended to ``/log/<stream_id>.jsonl`` since byte ``offset``, and
    the offset to pass next time -- for an observer following a live stream.

    Offsets are UTF-8 byte offsets (``read_range`` semantics), not character counts;
    a last line still being appended (no ``\\n`` yet) is left for the next call.
    """
    text = await store.read_range(log_path(stream_id), offset)
    complete, newline, _ = text.rpartition("\n")
    if not newline:
        return [], offset
    consumed = complete + newline
    events = parse_event_lines(consumed, source=log_path(stream_id))
    return events, offset + len(consumed.encode("utf-8"))


def replay_history(events: Iterable[Event]) -> list[Event]:
    """The live history a session had after the logged ``events``.

    History events are appended in order; each :class:`CompactionCompleted` replaces
    the history by the events it names; lifecycle events are not history. An event
    logged twice (a retried append) counts once.
    """
    history: list[Event] = []
    by_id: dict[str, Event] = {}
    for e in events:
        if isinstance(e, CompactionCompleted):
            if e.history_ids:
                history = [by_id[i] for i in e.history_ids if i in by_id]
            continue
        if e.lifecycle or e.id in by_id:
            continue
        by_id[e.id] = e
        history.append(e)
    return history


async def load_history(store: KnowledgeStore, stream_id: str) -> list[Event]:
    """The history to resume ``stream_id`` with: its event log replayed, compactions
    included (see :func:`replay_history`)."""
    return replay_history(await read_event_log(store, stream_id))
