"""Keeping tool calls and their results together when a history is cut."""

from __future__ import annotations

from collections.abc import Sequence

from fsmemory.agent._events import Event, ToolCall, ToolError, ToolResult

__all__ = ["compaction_cut", "pair_safe_tail", "repair_tool_pairs"]

_OUTPUTS = (ToolResult, ToolError)


def pair_safe_tail(events: Sequence[Event], start: int) -> list[Event]:
    """``events[start:]`` without tool results whose call lies before ``start``.

    Cutting a history's head can only orphan results (a result always follows its
    call), so dropping those is enough for the kept suffix to be valid for every
    provider. Cost is O(len(events) - start).
    """
    kept = list(events[max(0, start) :])
    calls = {e.call_id for e in kept if type(e) is ToolCall}
    if any(isinstance(e, _OUTPUTS) and e.call_id not in calls for e in kept):
        kept = [e for e in kept if not (isinstance(e, _OUTPUTS) and e.call_id not in calls)]
    return kept


def compaction_cut(events: Sequence[Event], target: int) -> int:
    """Index where a compaction keeping about ``target`` events should cut.

    The cut moves earlier (keeping more than ``target``) rather than separate a kept
    result from its call, so a compacted history never holds an orphan.
    """
    if target < 0:
        raise ValueError("target must be >= 0")
    start = max(0, len(events) - target)
    if start == 0:
        return 0
    call_index: dict[str, int] | None = None
    while True:
        kept_calls = {e.call_id for e in events[start:] if type(e) is ToolCall}
        orphans = [
            e.call_id
            for e in events[start:]
            if isinstance(e, _OUTPUTS) and e.call_id not in kept_calls
        ]
        if not orphans:
            return start
        if call_index is None:
            call_index = {}
            for i, e in enumerate(events):
                if type(e) is ToolCall and e.call_id not in call_index:
                    call_index[e.call_id] = i
        earlier = [call_index[c] for c in orphans if call_index.get(c, start) < start]
        if not earlier:
            return start  # results without any call at all: nothing to keep them with
        start = min(earlier)


def repair_tool_pairs(events: Sequence[Event]) -> list[Event]:
    """Drop tool results with no call anywhere before them, and tool calls that were
    never answered although the conversation moved on past them.

    A call still waiting for its result at the very end of the history is kept (the
    loop is about to run it). Useful before sending a hand-edited or merged history.
    """
    seen_calls: set[str] = set()
    answered: set[str] = set()
    for e in events:
        if type(e) is ToolCall:
            seen_calls.add(e.call_id)
        elif isinstance(e, _OUTPUTS) and e.call_id in seen_calls:
            answered.add(e.call_id)
    # index of the last event that is neither a call nor an output: calls after it pend
    last_other = -1
    for i, e in enumerate(events):
        if not (type(e) is ToolCall or isinstance(e, _OUTPUTS)):
            last_other = i
    out: list[Event] = []
    calls_so_far: set[str] = set()
    for i, e in enumerate(events):
        if type(e) is ToolCall:
            if e.call_id in answered or i > last_other:
                out.append(e)
                calls_so_far.add(e.call_id)
        elif isinstance(e, _OUTPUTS):
            if e.call_id in calls_so_far:
                out.append(e)
        else:
            out.append(e)
    return out
