"""The context handed to aggregation and compaction strategies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fsmemory.agent._events import Event, Usage

__all__ = ["StrategyContext"]


async def _no_persist(events: Sequence[Event]) -> None:
    """The default ``persist``: nothing to make durable outside a session."""
    return None


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


@dataclass
class StrategyContext:
    """What a strategy knows about the run it works for.

    Attributes:
        stream_id: the conversation's stream id.
        actor_name: the agent's name.
        now: the current time (aware, UTC) when the strategy was called.
        persist: ``await ctx.persist(events)`` makes sure ``events`` are in the
            stream's event log (a no-op for events the harness already logged); a
            compaction calls it with what it drops.
        usage: a strategy may set the tokens its LLM calls used; the harness puts them
            on the ``*Completed`` event.
    """

    stream_id: str = "default"
    actor_name: str = "assistant"
    now: datetime = field(default_factory=_utcnow)
    persist: Callable[[Sequence[Event]], Awaitable[None]] = _no_persist
    usage: Usage | None = None

    def add_usage(self, usage: Usage | None) -> None:
        """Add ``usage`` to :attr:`usage` (no-op for None)."""
        if usage is None:
            return
        if self.usage is None:
            self.usage = usage
        else:
            self.usage = Usage(
                input_tokens=self.usage.input_tokens + usage.input_tokens,
                output_tokens=self.usage.output_tokens + usage.output_tokens,
                model=self.usage.model or usage.model,
            )
