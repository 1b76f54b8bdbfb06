"""Aggregation: turn new events into knowledge files in the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fsmemory.agent._checks import check_count, check_optional_count
from fsmemory.agent._context import StrategyContext
from fsmemory.agent._events import Event
from fsmemory.agent._policies import CONVERSATIONS_DIR, WORKING_MEMORY_PATH
from fsmemory.agent._summarize import (
    Summarizer,
    check_summarize,
    render_transcript,
    summarize_with,
)
from fsmemory.errors import ConflictError
from fsmemory.store import KnowledgeStore, VersionedKnowledgeStore

__all__ = [
    "DEFAULT_CONVERSATION_SUMMARY_PROMPT",
    "DEFAULT_WORKING_MEMORY_PROMPT",
    "AggregateStrategy",
    "AggregateTrigger",
    "ConversationSummaryAggregate",
    "WorkingMemoryAggregate",
]

DEFAULT_WORKING_MEMORY_PROMPT = """\
You keep the working memory of an assistant: a short markdown note it reads at the \
start of every conversation.

Current working memory (may be empty):
<working_memory>
{existing}
</working_memory>

Latest conversation:
<conversation>
{events}
</conversation>

Write the updated working memory. Keep what still matters from the current note, \
add what the conversation taught about the user, their goals, preferences and open \
threads, and drop what is outdated or contradicted. Use short bullet points. Reply \
with the note only."""

DEFAULT_CONVERSATION_SUMMARY_PROMPT = """\
Summarize this conversation for the assistant's future self.

<conversation>
{events}
</conversation>

Say what the user wanted, what was decided or done, and what is still open, in a \
few sentences or bullet points. Reply with the summary only."""


@runtime_checkable
class AggregateStrategy(Protocol):
    """Extracts knowledge from new events and writes it to the store."""

    async def aggregate(
        self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
    ) -> None:
        """Persist what matters in ``events`` (the events since the last fire)."""
        ...


@dataclass(frozen=True, slots=True)
class AggregateTrigger:
    """When aggregation fires. ``AggregateTrigger()`` alone never fires: opt in.

    Attributes:
        every_n_turns: after every N completed turns.
        every_n_events: once N events were recorded since the last fire.
        on_end: when the session ends (each fire is usually an LLM call).
    """

    every_n_turns: int | None = None
    every_n_events: int | None = None
    on_end: bool = False

    def __post_init__(self) -> None:
        for name in ("every_n_turns", "every_n_events"):
            check_optional_count(name, getattr(self, name))

    @property
    def fires_ever(self) -> bool:
        """False for a trigger with nothing enabled."""
        return bool(self.every_n_turns or self.every_n_events or self.on_end)

    def should_fire(self, turns: int, events: int) -> bool:
        """True when ``turns`` turns / ``events`` events since the last fire reach a
        threshold (``on_end`` is handled by the session)."""
        if events <= 0:
            return False
        if self.every_n_turns is not None and turns >= self.every_n_turns:
            return True
        return self.every_n_events is not None and events >= self.every_n_events


class _SummaryAggregate:
    """What both aggregations share: the user's LLM, a prompt template, and a
    transcript of the new events cut to ``max_transcript_chars``."""

    def __init__(
        self, summarize: Summarizer, prompt: str, max_transcript_chars: int | None
    ) -> None:
        check_summarize(summarize, prompt)
        self.summarize = summarize
        self.prompt = prompt
        self.max_transcript_chars = max_transcript_chars

    def _transcript(self, events: Sequence[Event]) -> str:
        return render_transcript(events, max_chars=self.max_transcript_chars)

    async def _summary(self, ctx: StrategyContext, values: dict[str, str]) -> str:
        """The prompt filled with ``values``, answered: the file body to write."""
        text = await summarize_with(self.summarize, self.prompt, values, ctx)
        return text.strip() + "\n"


class WorkingMemoryAggregate(_SummaryAggregate):
    """Merge new events into the rolling note ``/memory/working.md``.

    The prompt template gets ``{existing}`` (the current note, ``""`` at first) and
    ``{events}`` (a transcript of the new events); only those two exact placeholders
    are replaced, so braces anywhere else in a custom prompt are kept as written.

    Concurrent sessions do not lose each other's updates: the note is read with its
    version and written back as a compare-and-swap; when another writer got there
    first the merge is redone on the new note (one more ``summarize`` call), up to
    ``max_attempts`` times.

    Args:
        summarize: the user's LLM, ``(prompt) -> str`` (sync or async).
        prompt: the merge template.
        path: the note's path.
        max_transcript_chars: at most this many characters of transcript (newest kept).
        max_attempts: compare-and-swap attempts before giving up (ConflictError).
    """

    name = "working_memory"

    def __init__(
        self,
        summarize: Summarizer,
        prompt: str = DEFAULT_WORKING_MEMORY_PROMPT,
        *,
        path: str = WORKING_MEMORY_PATH,
        max_transcript_chars: int | None = 200_000,
        max_attempts: int = 5,
    ) -> None:
        super().__init__(summarize, prompt, max_transcript_chars)
        self.path = path
        self.max_attempts = check_count("max_attempts", max_attempts)

    def __repr__(self) -> str:
        return f"WorkingMemoryAggregate(path={self.path!r})"

    async def aggregate(
        self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
    ) -> None:
        """Merge ``events`` into the note (nothing happens without conversation)."""
        transcript = self._transcript(events)
        if not transcript:
            return
        versioned = isinstance(store, VersionedKnowledgeStore)
        for _ in range(self.max_attempts):
            version: str | None = None
            if versioned:
                assert isinstance(store, VersionedKnowledgeStore)
                info = await store.stat(self.path)
                version = None if info is None else info.version
            existing = (await store.read(self.path)) or ""
            body = await self._summary(ctx, {"existing": existing.strip(), "events": transcript})
            if not versioned:
                await store.write(self.path, body)
                return
            assert isinstance(store, VersionedKnowledgeStore)
            try:
                await store.write(
                    self.path,
                    body,
                    if_version=version,
                    create_only=version is None,
                )
                return
            except ConflictError:
                continue
        raise ConflictError(f"{self.path} kept changing under {self.max_attempts} merge attempts")


class ConversationSummaryAggregate(_SummaryAggregate):
    """Write a summary of the new events to
    ``/memory/conversations/<UTC timestamp>_<stream_id>.md`` (one file per fire).

    The timestamp (``YYYYMMDDTHHMMSSffffffZ``) makes names sort by time, which is what
    ``EpisodicMemoryPolicy`` relies on. Files are created create-only, so two fires in
    the same microsecond never overwrite each other.

    Args:
        summarize: the user's LLM, ``(prompt) -> str`` (sync or async).
        prompt: the template; ``{events}`` is replaced by the transcript.
        directory: where summaries go.
        max_transcript_chars: at most this many characters of transcript (newest kept).
    """

    name = "conversation_summary"

    def __init__(
        self,
        summarize: Summarizer,
        prompt: str = DEFAULT_CONVERSATION_SUMMARY_PROMPT,
        *,
        directory: str = CONVERSATIONS_DIR,
        max_transcript_chars: int | None = 200_000,
    ) -> None:
        super().__init__(summarize, prompt, max_transcript_chars)
        self.directory = directory.rstrip("/")

    def __repr__(self) -> str:
        return f"ConversationSummaryAggregate(directory={self.directory!r})"

    def path_for(self, ctx: StrategyContext, attempt: int = 0) -> str:
        """The file a fire at ``ctx.now`` writes (``attempt`` > 0 adds a suffix)."""
        stamp = ctx.now.strftime("%Y%m%dT%H%M%S%fZ")
        suffix = f"-{attempt}" if attempt else ""
        return f"{self.directory}/{stamp}_{ctx.stream_id}{suffix}.md"

    async def aggregate(
        self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
    ) -> None:
        """Summarize ``events`` into a new file (nothing without conversation)."""
        transcript = self._transcript(events)
        if not transcript:
            return
        body = await self._summary(ctx, {"events": transcript})
        if not isinstance(store, VersionedKnowledgeStore):
            await store.write(self.path_for(ctx), body)
            return
        for attempt in range(100):
            try:
                await store.write(self.path_for(ctx, attempt), body, create_only=True)
                return
            except ConflictError:
                continue
        raise ConflictError("could not find a free name for the conversation summary")
