"""``SyncKnowledgeSession``: the same harness for synchronous agent loops."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from fsmemory.agent._config import KnowledgeConfig
from fsmemory.agent._events import Event, HaltEvent, ToolCall, ToolError, ToolResult, UserMessage
from fsmemory.agent._policies import Assembly
from fsmemory.agent._schema import ToolFormat
from fsmemory.agent._session import KnowledgeSession, Subscriber
from fsmemory.agent._tools import KnowledgeTool
from fsmemory.store import KnowledgeStore

__all__ = ["SyncKnowledgeSession"]

T = TypeVar("T")


class SyncKnowledgeSession:
    """:class:`KnowledgeSession` with blocking methods, for a plain synchronous loop
    (e.g. the ``OpenAI()`` / ``Anthropic()`` clients)::

        with SyncKnowledgeSession(config, policies=[...]) as session:
            with session.turn("hello"):
                a = session.assemble()
                reply = client.chat.completions.create(model=..., messages=a.to_openai())
                # or: reply = client.responses.create(model=..., input=a.to_openai_responses())
                session.record(*from_openai_response(reply))

    The coroutines run on an event loop private to this object, in the calling
    thread; subscribers are called there too. Do not use it from inside a running
    event loop (use :class:`KnowledgeSession` there). Arguments are those of
    :class:`KnowledgeSession`.
    """

    def __init__(self, config: KnowledgeConfig | None = None, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self.session = KnowledgeSession(config, **kwargs)

    @classmethod
    def resume(cls, config: KnowledgeConfig, stream_id: str, **kwargs: Any) -> SyncKnowledgeSession:
        """A session continuing ``stream_id`` from its event log (see
        :meth:`KnowledgeSession.resume`)."""
        sync = cls.__new__(cls)
        sync._loop = asyncio.new_event_loop()
        sync.session = sync._run(KnowledgeSession.resume(config, stream_id, **kwargs))
        return sync

    def __repr__(self) -> str:
        return f"Sync{self.session!r}"

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError(
                "SyncKnowledgeSession was called inside a running event loop: "
                "use KnowledgeSession and await its methods"
            )
        if self._loop.is_closed():
            coro.close()
            raise RuntimeError("this SyncKnowledgeSession is closed")
        return self._loop.run_until_complete(coro)

    # -- pass-through properties ---------------------------------------------------------
    @property
    def stream_id(self) -> str:
        """The conversation's stream id."""
        return self.session.stream_id

    @property
    def store(self) -> KnowledgeStore | None:
        """The knowledge store (None without a config)."""
        return self.session.store

    @property
    def history(self) -> tuple[Event, ...]:
        """The live history, oldest first."""
        return self.session.history

    @property
    def turns(self) -> int:
        """How many turns :meth:`end_turn` completed."""
        return self.session.turns

    @property
    def halted(self) -> HaltEvent | None:
        """Set once a policy asked the loop to stop."""
        return self.session.halted

    @property
    def knowledge_tool(self) -> KnowledgeTool | None:
        """The ``knowledge`` tool, when exposed."""
        return self.session.knowledge_tool

    # -- methods -------------------------------------------------------------------------
    def subscribe(self, callback: Subscriber) -> Any:
        """Receive every event; returns a function that unsubscribes."""
        return self.session.subscribe(callback)

    def start(self) -> None:
        """Bootstrap the store once."""
        self._run(self.session.start())

    def record(self, *events: Event) -> None:
        """Append events to the history."""
        self._run(self.session.record(*events))

    def assemble(self) -> Assembly:
        """What to send to the model now (see :meth:`KnowledgeSession.assemble`)."""
        return self._run(self.session.assemble())

    def tools(self, format: ToolFormat = "openai") -> list[dict[str, Any]]:
        """Tool definitions for the model."""
        return self.session.tools(format)

    def run_tool(self, call: ToolCall) -> ToolResult | ToolError | None:
        """Answer a ``knowledge`` tool call (None for other tools)."""
        return self._run(self.session.run_tool(call))

    def flush(self) -> None:
        """Append the events not yet logged."""
        self._run(self.session.flush())

    def end_turn(self) -> None:
        """Finish a turn: log, compaction, aggregation."""
        self._run(self.session.end_turn())

    def compact_now(self) -> None:
        """Run the compaction strategy now."""
        self._run(self.session.compact_now())

    def aggregate_now(self) -> None:
        """Run the aggregation strategy now."""
        self._run(self.session.aggregate_now())

    @contextmanager
    def turn(self, message: str | UserMessage | None = None) -> Iterator[SyncKnowledgeSession]:
        """``with session.turn("hi"):`` records the message and ends the turn on exit
        (on an exception only the log is flushed)."""
        if message is not None:
            self.record(UserMessage(message) if isinstance(message, str) else message)
        try:
            yield self
        except BaseException:
            self.flush()
            raise
        self.end_turn()

    def end(self) -> None:
        """End the session (``on_end`` aggregation, final flush) and close its loop."""
        if self._loop.is_closed():
            return
        try:
            self._run(self.session.end())
        finally:
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    close = end

    def __enter__(self) -> SyncKnowledgeSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()
