"""``KnowledgeSession``: the harness a plain agent loop calls around each turn."""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from fsmemory import _jsonutil
from fsmemory.agent._config import KnowledgeConfig
from fsmemory.agent._context import StrategyContext
from fsmemory.agent._events import (
    AggregationCompleted,
    AggregationFailed,
    AggregationStarted,
    CompactionCompleted,
    CompactionFailed,
    CompactionStarted,
    Event,
    EventLogFailed,
    HaltEvent,
    ToolCall,
    ToolError,
    ToolResult,
    UserMessage,
    describe_exception,
)
from fsmemory.agent._log import check_stream_id, load_history, log_path
from fsmemory.agent._policies import (
    Assembly,
    AssemblyContext,
    AssemblyPolicy,
    assemble,
    validate_order,
)
from fsmemory.agent._schema import TOOL_FORMATS, ToolFormat
from fsmemory.agent._tools import KnowledgeTool
from fsmemory.store import KnowledgeStore

__all__ = ["KnowledgeSession", "Subscriber"]

logger = logging.getLogger(__name__)

#: Receives every event of the stream: recorded ones and the session's lifecycle
#: events. Plain or ``async``; an exception it raises is logged and ignored.
Subscriber = Callable[[Event], Awaitable[None] | None]


def _new_stream_id() -> str:
    return f"{datetime.now(tz=UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def _encode(event: Event) -> bytes:
    try:
        return event.to_json_line()
    except TypeError as exc:  # a value orjson cannot serialize (a set, an object...)
        logger.warning("event %s is not JSON-serializable: %s", event.id, exc)
        return _jsonutil.dumps_line(
            {
                "type": event.event_type,
                "id": event.id,
                "timestamp": event.timestamp,
                "unserializable": repr(event)[:10_000],
            }
        )


def _name_of(strategy: object) -> str:
    name = getattr(strategy, "name", None)
    return name if isinstance(name, str) else type(strategy).__name__


class KnowledgeSession:
    """Knowledge, memory and history management for one conversation stream.

    A loop calls it around each model call and each turn::

        session = KnowledgeSession(config, policies=[WorkingMemoryPolicy(),
                                   ConversationPolicy(), SlidingWindowPolicy(80)],
                                   system_prompt="You are ...")
        async with session:                              # bootstrap; on_end aggregation
            await session.record(UserMessage(text))
            while True:
                a = await session.assemble()             # (prompts, events) via policies
                if a.halt: break                          # AlertPolicy saw a FATAL alert
                reply = client.chat.completions.create(model=..., messages=a.to_openai(),
                                                       tools=session.tools("openai"))
                # or the Responses API: client.responses.create(model=...,
                #     input=a.to_openai_responses(), tools=session.tools("responses"))
                events = from_openai_response(reply)     # either reply type
                await session.record(*events)
                calls = [e for e in events if isinstance(e, ToolCall)]
                if not calls: break
                for call in calls:
                    await session.record(await session.run_tool(call) or my_tool(call))
            await session.end_turn()                     # log, compaction, aggregation

    ``end_turn`` appends the turn's new events to ``/log/<stream_id>.jsonl`` (one line
    each, never a rewrite), runs compaction when its trigger fires, then aggregation.
    A failing strategy or log write never fails the turn: it emits
    ``CompactionFailed`` / ``AggregationFailed`` / ``EventLogFailed`` (with the
    exception) to subscribers and leaves the data as it was. ``end()`` (or leaving
    ``async with``) runs ``on_end`` aggregation and the last log flush.

    Args:
        config: the knowledge bundle; None for assembly only (no store).
        policies: the assembly chain (a warning is issued for a bad order).
        system_prompt: the base prompt part(s) the policies add to.
        stream_id: names the log file and conversation summaries (default: a UTC
            timestamp plus random hex). ``A-Z a-z 0-9 . _ -``, up to 128 characters.
        actor_name: the agent's name (used in the seeded SKILL.md).
        history: events to start from (they are logged on the first flush; use
            :meth:`resume` to continue a logged stream).
        subscribers: callables receiving every event.

    Raises:
        ValueError: an invalid ``stream_id``.
    """

    def __init__(
        self,
        config: KnowledgeConfig | None = None,
        *,
        policies: Sequence[AssemblyPolicy] = (),
        system_prompt: str | Sequence[str] | None = None,
        stream_id: str | None = None,
        actor_name: str = "assistant",
        history: Iterable[Event] = (),
        subscribers: Iterable[Subscriber] = (),
    ) -> None:
        if config is not None and not isinstance(config, KnowledgeConfig):
            raise TypeError("config must be a KnowledgeConfig or None")
        self.config = config
        self.stream_id = check_stream_id(_new_stream_id() if stream_id is None else stream_id)
        self.actor_name = actor_name
        self.policies: list[AssemblyPolicy] = list(policies)
        for message in validate_order(self.policies):
            warnings.warn(message, stacklevel=2)
        if system_prompt is None:
            self.system_prompts: list[str] = []
        elif isinstance(system_prompt, str):
            self.system_prompts = [system_prompt]
        else:
            self.system_prompts = list(system_prompt)
        self._subscribers: list[Subscriber] = list(subscribers)
        self._history: list[Event] = []
        self._chars = 0
        self._pending: list[Event] = []
        self._agg_buffer: list[Event] = []
        self._turns = 0
        self._turns_since_aggregate = 0
        self._bootstrapped = config is None
        self._ended = False
        self._lock = asyncio.Lock()
        self._log_lock = asyncio.Lock()
        self._boot_lock = asyncio.Lock()
        self.halted: HaltEvent | None = None
        self.knowledge_tool: KnowledgeTool | None = (
            KnowledgeTool(config.store) if config is not None and config.expose_tool else None
        )
        for event in history:
            self._add(self._check_recordable(event))

    @classmethod
    async def resume(
        cls,
        config: KnowledgeConfig,
        stream_id: str,
        **kwargs: Any,
    ) -> KnowledgeSession:
        """A session continuing ``stream_id`` from its event log (compactions replayed).

        The events read back are not logged again. Other keyword arguments go to the
        constructor.
        """
        history = await load_history(config.store, stream_id)
        session = cls(config, stream_id=stream_id, **kwargs)
        session._history = history
        session._chars = sum(len(e.text()) for e in history)
        return session

    def __repr__(self) -> str:
        return f"KnowledgeSession(stream_id={self.stream_id!r}, events={len(self._history)})"

    # -- properties ----------------------------------------------------------------------
    @property
    def store(self) -> KnowledgeStore | None:
        """The knowledge store (None without a config)."""
        return None if self.config is None else self.config.store

    @property
    def history(self) -> tuple[Event, ...]:
        """The live history (after compactions), oldest first."""
        return tuple(self._history)

    @property
    def turns(self) -> int:
        """How many turns :meth:`end_turn` completed."""
        return self._turns

    @property
    def log_path(self) -> str:
        """``/log/<stream_id>.jsonl``."""
        return log_path(self.stream_id)

    # -- subscribers ---------------------------------------------------------------------
    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Receive every event from now on; returns a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    async def _notify(self, event: Event) -> None:
        for callback in list(self._subscribers):
            try:
                result = callback(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.exception("subscriber %r failed on %s", callback, event.event_type)

    async def _emit(self, event: Event) -> None:
        """Deliver a lifecycle event (and log it, unless it is about the log)."""
        exc = getattr(event, "exception", None)
        if isinstance(exc, BaseException):
            logger.error("%s: %s", event.event_type, getattr(event, "error", ""), exc_info=exc)
        if (
            self.config is not None
            and self.config.write_event_log
            and not isinstance(event, EventLogFailed)
        ):
            self._pending.append(event)
        await self._notify(event)

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Bootstrap the store once (also done by the first :meth:`assemble`).

        A failing bootstrap is logged and retried on the next call.
        """
        if self._bootstrapped or self.config is None:
            return
        async with self._boot_lock:
            if self._bootstrapped:
                return
            try:
                await self.config.effective_bootstrap.bootstrap(self.config.store, self.actor_name)
            except Exception:
                logger.exception("bootstrapping the knowledge store failed; will retry")
                return
            self._bootstrapped = True

    async def __aenter__(self) -> KnowledgeSession:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.end()

    async def end(self) -> None:
        """End the session: ``on_end`` aggregation, then the final log flush.

        Idempotent. Events recorded after it are still logged by :meth:`flush`.
        """
        async with self._lock:
            if self._ended:
                await self.flush()
                return
            self._ended = True
            trigger = None if self.config is None else self.config.effective_aggregate_trigger
            if trigger is not None and trigger.on_end and self._agg_buffer:
                await self._run_aggregation()
            await self.flush()

    close = end

    # -- recording -----------------------------------------------------------------------
    def _check_recordable(self, event: object) -> Event:
        if not isinstance(event, Event):
            raise TypeError(f"expected an Event, not {type(event).__name__}")
        if event.lifecycle:
            raise ValueError(
                f"{type(event).__name__} is a lifecycle event: the session emits those"
            )
        return event

    def _add(self, event: Event) -> None:
        self._history.append(event)
        self._chars += len(event.text())
        if self.config is None:
            return
        if self.config.write_event_log:
            self._pending.append(event)
        if self.config.aggregate is not None:
            self._agg_buffer.append(event)

    async def record(self, *events: Event) -> None:
        """Append events to the history (and queue them for the log and aggregation).

        Raises:
            TypeError: not an Event.
            ValueError: a lifecycle event (those are emitted by the session).
        """
        checked = [self._check_recordable(e) for e in events]
        for event in checked:
            self._add(event)
        if self._subscribers:
            for event in checked:
                await self._notify(event)

    async def assemble(self) -> Assembly:
        """Run the history through the policies: what to send to the model now.

        Bootstraps the store on first use. When a policy asks to halt (``AlertPolicy``
        on a FATAL alert) the assembly's ``halt`` is set, :attr:`halted` too, and a
        :class:`HaltEvent` is emitted.
        """
        await self.start()
        ctx = AssemblyContext(
            store=self.store, stream_id=self.stream_id, actor_name=self.actor_name
        )
        result = await assemble(self.policies, self.system_prompts, self._history, ctx)
        if result.halt is not None:
            self.halted = result.halt
            await self._emit(result.halt)
        return result

    @asynccontextmanager
    async def turn(
        self, message: str | UserMessage | None = None
    ) -> AsyncIterator[KnowledgeSession]:
        """``async with session.turn("hi"):`` records the message, and ends the turn on
        exit (on an exception only the log is flushed, and the exception propagates)."""
        if message is not None:
            await self.record(UserMessage(message) if isinstance(message, str) else message)
        try:
            yield self
        except BaseException:
            await self.flush()
            raise
        await self.end_turn()

    # -- tools ---------------------------------------------------------------------------
    def tools(self, format: ToolFormat = "openai") -> list[dict[str, Any]]:
        """Tool definitions to pass to the model (the ``knowledge`` tool when exposed).

        Args:
            format: one of :data:`~fsmemory.agent.TOOL_FORMATS`: ``"openai"`` (Chat
                Completions), ``"openai-strict"``, ``"responses"``,
                ``"responses-strict"`` (the Responses API) or ``"anthropic"``.

        Raises:
            ValueError: an unknown format.
        """
        if self.knowledge_tool is None:
            if format not in TOOL_FORMATS:
                raise ValueError(f"format must be one of {', '.join(TOOL_FORMATS)}")
            return []
        return [self.knowledge_tool.schema(format)]

    async def run_tool(self, call: ToolCall) -> ToolResult | ToolError | None:
        """Answer ``call`` when it is for the ``knowledge`` tool (None otherwise).

        The result is returned, not recorded: ``await session.record(result)``.
        """
        tool = self.knowledge_tool
        if tool is None or call.name != tool.name:
            return None
        text = await tool.call(call.arguments)
        if text.startswith("Error: "):
            return ToolError(call.call_id, text.removeprefix("Error: "), name=call.name)
        return ToolResult(call.call_id, text, name=call.name)

    # -- end of turn ---------------------------------------------------------------------
    async def flush(self) -> None:
        """Append the events not yet logged to ``/log/<stream_id>.jsonl`` in one append.

        O(new events): the log is never read or rewritten. On failure the events stay
        queued for the next flush and :class:`EventLogFailed` is emitted.
        """
        if self.config is None or not self._pending:
            return
        async with self._log_lock:
            batch = list(self._pending)
            if not batch:
                return
            path = self.log_path
            try:
                text = b"".join(_encode(e) for e in batch).decode("utf-8")
                await self.config.store.append(path, text)
            except Exception as exc:
                await self._emit(
                    EventLogFailed(
                        path=path,
                        error=describe_exception(exc),
                        pending=len(batch),
                        exception=exc,
                    )
                )
                return
            del self._pending[: len(batch)]

    async def end_turn(self) -> None:
        """Finish a turn: flush the log, then compaction and aggregation when their
        triggers fire, then flush their lifecycle events. Never raises for a failing
        strategy or log write."""
        async with self._lock:
            self._turns += 1
            self._turns_since_aggregate += 1
            await self.flush()
            config = self.config
            if config is not None:
                compact_trigger = config.effective_compact_trigger
                if compact_trigger is not None and compact_trigger.should_fire(
                    len(self._history), self._chars
                ):
                    await self._run_compaction()
                agg_trigger = config.effective_aggregate_trigger
                if agg_trigger is not None and agg_trigger.should_fire(
                    self._turns_since_aggregate, len(self._agg_buffer)
                ):
                    await self._run_aggregation()
            await self.flush()

    async def compact_now(self) -> None:
        """Run the compaction strategy now, whatever its trigger says."""
        async with self._lock:
            await self.flush()
            await self._run_compaction()
            await self.flush()

    async def aggregate_now(self) -> None:
        """Run the aggregation strategy now on the events since its last run."""
        async with self._lock:
            await self._run_aggregation()
            await self.flush()

    def _strategy_context(self) -> StrategyContext:
        return StrategyContext(
            stream_id=self.stream_id, actor_name=self.actor_name, persist=self._persist
        )

    async def _persist(self, events: Sequence[Event]) -> None:
        """Make sure ``events`` are in the event log before they leave the history."""
        config = self.config
        if config is None or not events:
            return
        if config.write_event_log:
            await self.flush()
            pending = {e.id for e in self._pending}
            if any(e.id in pending for e in events):
                raise RuntimeError(
                    "the event log is not writable; not dropping events that are not in it"
                )
            return
        text = b"".join(_encode(e) for e in events).decode("utf-8")
        await config.store.append(self.log_path, text)

    async def _run_compaction(self) -> None:
        config = self.config
        if config is None or config.compact is None:
            return
        strategy = config.compact
        name = _name_of(strategy)
        snapshot = list(self._history)
        await self._emit(CompactionStarted(strategy=name, events_before=len(snapshot)))
        ctx = self._strategy_context()
        try:
            result = await strategy.compact(snapshot, ctx, config.store)
            if not isinstance(result, list):
                raise TypeError(f"compact() must return a list, not {type(result).__name__}")
            new = [self._check_recordable(e) for e in result]
        except Exception as exc:
            await self._emit(
                CompactionFailed(strategy=name, error=describe_exception(exc), exception=exc)
            )
            return
        old_ids = {e.id for e in snapshot}
        # events recorded while the strategy ran stay, after the compacted part
        self._history = new + self._history[len(snapshot) :]
        self._chars = sum(len(e.text()) for e in self._history)
        if config.write_event_log:
            self._pending.extend(e for e in new if e.id not in old_ids)
        await self._emit(
            CompactionCompleted(
                strategy=name,
                events_before=len(snapshot),
                events_after=len(new),
                history_ids=tuple(e.id for e in self._history) if config.write_event_log else (),
                usage=ctx.usage,
            )
        )

    async def _run_aggregation(self) -> None:
        config = self.config
        if config is None or config.aggregate is None:
            return
        batch = list(self._agg_buffer)
        if not batch:
            return
        strategy = config.aggregate
        name = _name_of(strategy)
        await self._emit(AggregationStarted(strategy=name, events=len(batch)))
        ctx = self._strategy_context()
        try:
            await strategy.aggregate(batch, ctx, config.store)
        except Exception as exc:
            await self._emit(
                AggregationFailed(strategy=name, error=describe_exception(exc), exception=exc)
            )
            return
        del self._agg_buffer[: len(batch)]
        self._turns_since_aggregate = 0
        await self._emit(AggregationCompleted(strategy=name, events=len(batch), usage=ctx.usage))
