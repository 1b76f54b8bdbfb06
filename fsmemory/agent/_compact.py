"""Compaction: trim the stream's own history (not just what one model call sees)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fsmemory.agent._checks import check_count, check_optional_count
from fsmemory.agent._context import StrategyContext
from fsmemory.agent._events import CompactionSummary, Event
from fsmemory.agent._pairs import compaction_cut
from fsmemory.agent._summarize import (
    Summarizer,
    check_summarize,
    render_transcript,
    summarize_with,
)
from fsmemory.store import KnowledgeStore

__all__ = [
    "DEFAULT_COMPACT_PROMPT",
    "DEFAULT_COMPACT_TRIGGER_EVENTS",
    "CompactStrategy",
    "CompactTrigger",
    "SummarizeCompact",
    "TailWindowCompact",
]

#: ``CompactTrigger(max_events=...)`` used when a strategy has no ``target``.
DEFAULT_COMPACT_TRIGGER_EVENTS = 200

DEFAULT_COMPACT_PROMPT = """\
The start of a long conversation is being removed from the assistant's context. \
Summarize it so the assistant can carry on without it.

<conversation>
{events}
</conversation>

Keep facts, decisions, names, numbers, results of tool calls that still matter, and \
open questions. If the conversation starts with an earlier summary, fold it in. Reply \
with the summary only."""


@runtime_checkable
class CompactStrategy(Protocol):
    """Replaces a stream's history with a shorter one."""

    async def compact(
        self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
    ) -> list[Event]:
        """The new history (events it drops should go through ``ctx.persist``)."""
        ...


@dataclass(frozen=True, slots=True)
class CompactTrigger:
    """When compaction fires: once any threshold is crossed.

    Attributes:
        max_events: the history holds more than this many events.
        max_tokens: the history's full text is estimated above this many tokens.
        chars_per_token: characters per token for that estimate.

    Raises:
        ValueError: no threshold is set (the trigger could never fire), or a value is
            out of range.
    """

    max_events: int | None = None
    max_tokens: int | None = None
    chars_per_token: float = 4

    def __post_init__(self) -> None:
        if self.max_events is None and self.max_tokens is None:
            raise ValueError("CompactTrigger needs max_events and/or max_tokens")
        for name in ("max_events", "max_tokens"):
            check_optional_count(name, getattr(self, name))
        if not self.chars_per_token > 0:
            raise ValueError("chars_per_token must be > 0")

    def estimate_tokens(self, chars: int) -> int:
        """Tokens estimated for ``chars`` characters of text."""
        return math.ceil(chars / self.chars_per_token)

    def should_fire(self, events: int, chars: int) -> bool:
        """True when ``events`` events holding ``chars`` characters cross a threshold."""
        if self.max_events is not None and events > self.max_events:
            return True
        return self.max_tokens is not None and self.estimate_tokens(chars) > self.max_tokens


class _HeadCompact:
    """What both compactions share: keep the last ``target`` events (the cut moves
    earlier rather than separate a kept tool result from its call), put what stands
    for the dropped head in front, and make sure the dropped events are in the event
    log (unless ``persist`` is off)."""

    def __init__(self, target: int, persist: bool) -> None:
        self.target = check_count("target", target)
        self.persist = persist

    def __repr__(self) -> str:
        return f"{type(self).__name__}(target={self.target})"

    async def compact(
        self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
    ) -> list[Event]:
        """The new history: what stands for the head of the history, then its tail."""
        cut = compaction_cut(events, self.target)
        if cut == 0:
            return list(events)
        dropped = events[:cut]
        head = await self._stand_in(dropped, ctx)
        if self.persist:
            await ctx.persist(dropped)
        return [*head, *events[cut:]]

    async def _stand_in(self, dropped: Sequence[Event], ctx: StrategyContext) -> list[Event]:
        """The events put in front of the kept tail in place of ``dropped``."""
        return []


class TailWindowCompact(_HeadCompact):
    """Keep the last ``target`` events; the dropped ones go to the event log.

    No LLM call. The cut moves earlier rather than separate a kept tool result from
    its call. Dropped events are never lost: they are already in
    ``/log/<stream_id>.jsonl`` when the event log is on, and are appended there when it
    is off (unless ``persist=False``).

    Args:
        target: how many events to keep.
        persist: make sure dropped events are in the event log.
    """

    name = "tail_window"

    def __init__(self, target: int, *, persist: bool = True) -> None:
        super().__init__(target, persist)


class SummarizeCompact(_HeadCompact):
    """Replace all but the last ``target`` events by one :class:`CompactionSummary`.

    One ``summarize`` call per fire. An earlier summary in the dropped part is folded
    into the new one, so summaries roll up. Dropped events are persisted as with
    :class:`TailWindowCompact`.

    Args:
        target: how many recent events to keep verbatim.
        summarize: the user's LLM, ``(prompt) -> str`` (sync or async).
        prompt: the template; ``{events}`` is replaced by the dropped events' transcript.
        persist: make sure dropped events are in the event log.
        max_transcript_chars: at most this many characters of transcript (newest kept).

    Raises:
        TypeError: ``summarize`` is not callable, or ``prompt`` is not a str.
        ValueError: ``target`` is not an int >= 1.
    """

    name = "summarize"

    def __init__(
        self,
        target: int,
        summarize: Summarizer,
        *,
        prompt: str = DEFAULT_COMPACT_PROMPT,
        persist: bool = True,
        max_transcript_chars: int | None = 400_000,
    ) -> None:
        check_summarize(summarize, prompt)
        super().__init__(target, persist)
        self.summarize = summarize
        self.prompt = prompt
        self.max_transcript_chars = max_transcript_chars

    async def _stand_in(self, dropped: Sequence[Event], ctx: StrategyContext) -> list[Event]:
        """One summary of ``dropped`` (none when it holds no conversation)."""
        transcript = render_transcript(dropped, max_chars=self.max_transcript_chars)
        if not transcript:  # nothing conversational to summarize
            return []
        replaced = sum(
            (e.replaced or 1) if isinstance(e, CompactionSummary) else 1 for e in dropped
        )
        text = await summarize_with(self.summarize, self.prompt, {"events": transcript}, ctx)
        return [CompactionSummary(text.strip(), replaced=replaced)]
