"""KnowledgeSession and KnowledgeConfig: the harness around a loop's turns."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fsmemory.agent import (
    AlertPolicy,
    ConversationPolicy,
    EpisodicMemoryPolicy,
    KnowledgeConfig,
    KnowledgeSession,
    SlidingWindowPolicy,
    WorkingMemoryPolicy,
)
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
    UserMessage,
    load_history,
    read_event_log,
)
from fsmemory.agent.strategies import (
    AggregateTrigger,
    CompactTrigger,
    ConversationSummaryAggregate,
    DefaultBootstrap,
    NoBootstrap,
    StrategyContext,
    SummarizeCompact,
    TailWindowCompact,
    WorkingMemoryAggregate,
    skill_files,
)
from fsmemory.errors import BackendError, ConflictError
from fsmemory.store import DiskKnowledgeStore, KnowledgeStore, MemoryKnowledgeStore
from tests.test_agent.conftest import CountingStore, PlainStore, run

SKILLS = ["/SKILL.md", "/artifacts/SKILL.md", "/memory/SKILL.md", "/log/SKILL.md"]


def echo(prompt: str) -> str:
    """Deterministic summarize: the user lines of the transcript."""
    return "\n".join(line for line in prompt.splitlines() if line.startswith("user: "))


async def _turns(session: KnowledgeSession, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        async with session.turn(f"message {i}"):
            await session.assemble()
            await session.record(ModelResponse(f"reply {i}"))


class Boom:
    """A strategy that always raises."""

    name = "boom"
    target = 3

    async def compact(
        self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
    ) -> list[Event]:
        raise RuntimeError("compaction exploded")

    async def aggregate(
        self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
    ) -> None:
        raise RuntimeError("aggregation exploded")


# -- config -------------------------------------------------------------------------------


def test_trigger_without_strategy_is_a_value_error(store: MemoryKnowledgeStore) -> None:
    with pytest.raises(ValueError, match="compact_trigger was given without compact"):
        KnowledgeConfig(store=store, compact_trigger=CompactTrigger(max_events=5))
    with pytest.raises(ValueError, match="aggregate_trigger was given without aggregate"):
        KnowledgeConfig(store=store, aggregate_trigger=AggregateTrigger(on_end=True))


def test_compact_without_trigger_gets_the_documented_default(store: MemoryKnowledgeStore) -> None:
    # The seed's reference crashed here.
    cfg = KnowledgeConfig(store=store, compact=TailWindowCompact(target=100))
    assert cfg.effective_compact_trigger == CompactTrigger(max_events=200)
    cfg2 = KnowledgeConfig(store=store, compact=Boom())
    assert cfg2.effective_compact_trigger == CompactTrigger(max_events=6)

    class NoTarget:
        async def compact(self, events: Any, ctx: Any, store: Any) -> list[Event]:
            return list(events)

    cfg3 = KnowledgeConfig(store=store, compact=NoTarget())
    assert cfg3.effective_compact_trigger == CompactTrigger(max_events=200)
    assert KnowledgeConfig(store=store).effective_compact_trigger is None


def test_aggregate_without_trigger_runs_on_end(store: MemoryKnowledgeStore) -> None:
    cfg = KnowledgeConfig(store=store, aggregate=WorkingMemoryAggregate(echo))
    assert cfg.effective_aggregate_trigger == AggregateTrigger(on_end=True)


def test_empty_aggregate_trigger_warns(store: MemoryKnowledgeStore) -> None:
    with pytest.warns(UserWarning, match="never runs"):
        KnowledgeConfig(
            store=store,
            aggregate=WorkingMemoryAggregate(echo),
            aggregate_trigger=AggregateTrigger(),
        )


async def test_config_type_checks(store: MemoryKnowledgeStore, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="store must be"):
        KnowledgeConfig(store=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compact must"):
        KnowledgeConfig(store=store, compact="tail")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="aggregate must"):
        KnowledgeConfig(store=store, aggregate=echo)  # type: ignore[arg-type]
    cfg = KnowledgeConfig(store=str(tmp_path / "s"))  # type: ignore[arg-type]
    await cfg.store.write("/x", "y")
    assert (tmp_path / "s" / "x").read_text() == "y"


def test_default_bootstrap_follows_expose_tool(store: MemoryKnowledgeStore) -> None:
    b = KnowledgeConfig(store=store).effective_bootstrap
    assert isinstance(b, DefaultBootstrap) and b.mention_tool
    b2 = KnowledgeConfig(store=store, expose_tool=False).effective_bootstrap
    assert isinstance(b2, DefaultBootstrap) and not b2.mention_tool


def test_stream_id_validation(store: MemoryKnowledgeStore) -> None:
    cfg = KnowledgeConfig(store=store)
    for bad in ("../x", "a/b", "", ".hidden", "x" * 200, "a\x00b", "-x"):
        with pytest.raises(ValueError, match="stream_id"):
            KnowledgeSession(cfg, stream_id=bad)
    assert KnowledgeSession(cfg).stream_id  # generated


def test_bad_order_warns_at_construction() -> None:
    with pytest.warns(UserWarning, match="injection working_memory runs after reduction"):
        KnowledgeSession(policies=[SlidingWindowPolicy(), WorkingMemoryPolicy()])


# -- bootstrap ----------------------------------------------------------------------------


async def test_bootstrap_seeds_skill_files_once(store: MemoryKnowledgeStore) -> None:
    await store.write("/memory/SKILL.md", "my own notes")
    session = KnowledgeSession(KnowledgeConfig(store=store), actor_name="journal")
    await session.assemble()
    for path in SKILLS:
        assert await store.exists(path), path
    assert await store.read("/memory/SKILL.md") == "my own notes"  # never overwritten
    root = await store.read("/SKILL.md") or ""
    assert "journal" in root and "`knowledge` tool" in root


async def test_bootstrap_without_tool_does_not_mention_it(store: MemoryKnowledgeStore) -> None:
    await KnowledgeSession(KnowledgeConfig(store=store, expose_tool=False)).start()
    for path in SKILLS:
        assert "knowledge` tool" not in (await store.read(path) or "")
    assert skill_files(mention_tool=False).keys() == skill_files().keys()


async def test_no_bootstrap(store: MemoryKnowledgeStore) -> None:
    await KnowledgeSession(KnowledgeConfig(store=store, bootstrap=NoBootstrap())).assemble()
    assert await store.list("/") == []


class CreateCounter(CountingStore):
    """Counts create-only writes that succeeded."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.created: list[str] = []

    async def write(self, path: str, content: str, **kw: Any) -> str:
        await asyncio.sleep(0)  # let concurrent sessions interleave
        version = await self.inner.write(path, content, **kw)
        self.created.append(path)
        return str(version)


async def test_bootstrap_exactly_once_with_concurrent_sessions() -> None:
    counting = CreateCounter(MemoryKnowledgeStore())

    async def main() -> None:
        sessions = [KnowledgeSession(KnowledgeConfig(store=counting)) for _ in range(20)]  # type: ignore[arg-type]
        await asyncio.gather(*(s.start() for s in sessions))
        await asyncio.gather(*(s.start() for s in sessions))  # and again: no-op

    await main()
    assert sorted(counting.created) == sorted(SKILLS)


async def test_bootstrap_on_a_store_without_conditional_writes() -> None:
    plain = PlainStore()
    await KnowledgeSession(KnowledgeConfig(store=plain)).start()  # type: ignore[arg-type]
    assert all([await plain.exists(p) for p in SKILLS])


async def test_failed_bootstrap_is_retried(store: MemoryKnowledgeStore) -> None:
    counting = CountingStore(store)
    counting.fail["write"] = BackendError("down")
    session = KnowledgeSession(KnowledgeConfig(store=counting))  # type: ignore[arg-type]
    await session.assemble()  # does not raise
    assert not await store.exists("/SKILL.md")
    del counting.fail["write"]
    await session.assemble()
    assert await store.exists("/SKILL.md")


# -- event log ----------------------------------------------------------------------------


async def test_event_log_one_line_per_event_and_append_only(store: MemoryKnowledgeStore) -> None:
    counting = CountingStore(store)
    session = KnowledgeSession(
        KnowledgeConfig(store=counting, bootstrap=NoBootstrap()), stream_id="s1"
    )  # type: ignore[arg-type]
    await _turns(session, 5)
    log_ops = [(op, p) for op, p in counting.paths if p == "/log/s1.jsonl"]
    assert log_ops == [("append", "/log/s1.jsonl")] * 5  # never written, read or rewritten
    text = await store.read("/log/s1.jsonl") or ""
    assert len(text.splitlines()) == 10
    events = await read_event_log(store, "s1")
    assert [e.text() for e in events] == [
        t for i in range(5) for t in (f"message {i}", f"reply {i}")
    ]


async def test_event_log_cost_is_o_new_events(store: MemoryKnowledgeStore) -> None:
    sizes: list[int] = []

    class Sizer(CountingStore):
        async def append(self, path: str, content: str) -> int:
            sizes.append(len(content))
            return int(await self.inner.append(path, content))

    session = KnowledgeSession(
        KnowledgeConfig(store=Sizer(store), bootstrap=NoBootstrap()), stream_id="s"
    )  # type: ignore[arg-type]
    await _turns(session, 300)
    assert max(sizes[-10:]) < 2 * max(sizes[:10])


async def test_write_event_log_false(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(KnowledgeConfig(store=store, write_event_log=False), stream_id="s")
    await _turns(session, 3)
    assert not await store.exists("/log/s.jsonl")


async def test_log_failure_emits_event_and_retries(store: MemoryKnowledgeStore) -> None:
    counting = CountingStore(store)
    seen: list[Event] = []
    session = KnowledgeSession(
        KnowledgeConfig(store=counting, bootstrap=NoBootstrap()),
        stream_id="s",
        subscribers=[seen.append],  # type: ignore[arg-type]
    )
    counting.fail["append"] = BackendError("network down")
    await _turns(session, 2)  # the turns do not fail
    failures = [e for e in seen if isinstance(e, EventLogFailed)]
    assert failures and failures[0].path == "/log/s.jsonl"
    assert isinstance(failures[0].exception, BackendError) and "network down" in failures[0].error
    del counting.fail["append"]
    await _turns(session, 1, start=2)
    logged = await read_event_log(store, "s")
    assert [e.text() for e in logged if e.conversational] == [
        "message 0",
        "reply 0",
        "message 1",
        "reply 1",
        "message 2",
        "reply 2",
    ]
    assert not any(isinstance(e, EventLogFailed) for e in logged)


async def test_unserializable_event_does_not_block_the_log(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(KnowledgeConfig(store=store, bootstrap=NoBootstrap()), stream_id="s")
    await session.record(ToolCall("c", "t", {"bad": {1, 2}}))
    await session.record(UserMessage("after"))
    await session.flush()
    logged = await read_event_log(store, "s")
    assert isinstance(logged[0], UnknownEvent) and "unserializable" in logged[0].data
    assert logged[1].text() == "after"


async def test_corrupt_and_torn_log_lines(store: MemoryKnowledgeStore) -> None:
    good = UserMessage("ok").to_json_line().decode()
    await store.write("/log/s.jsonl", good + "not json\n[1,2]\n" + good + '{"type": "user_mes')
    with pytest.warns(UserWarning, match="skipping line"):
        events = await read_event_log(store, "s")
    assert [e.text() for e in events] == ["ok", "ok"]
    assert await read_event_log(store, "missing") == []


# -- compaction ---------------------------------------------------------------------------


async def test_compaction_in_session_and_log_keeps_everything(store: MemoryKnowledgeStore) -> None:
    seen: list[Event] = []
    cfg = KnowledgeConfig(
        store=store,
        compact=TailWindowCompact(target=4),
        compact_trigger=CompactTrigger(max_events=8),
    )
    session = KnowledgeSession(cfg, stream_id="s", subscribers=[seen.append])
    await _turns(session, 10)
    assert len(session.history) <= 8
    kinds = [type(e) for e in seen if e.lifecycle]
    assert CompactionStarted in kinds and CompactionCompleted in kinds
    done = next(e for e in seen if isinstance(e, CompactionCompleted))
    assert done.strategy == "tail_window" and done.events_before == 10 and done.events_after == 4
    logged = [e for e in await read_event_log(store, "s") if e.conversational]
    assert len(logged) == 20  # nothing lost
    assert [e.id for e in await load_history(store, "s")] == [e.id for e in session.history]


async def test_compaction_with_log_off_persists_dropped_events(store: MemoryKnowledgeStore) -> None:
    cfg = KnowledgeConfig(
        store=store,
        write_event_log=False,
        compact=TailWindowCompact(target=4),
        compact_trigger=CompactTrigger(max_events=6),
    )
    session = KnowledgeSession(cfg, stream_id="s")
    await _turns(session, 10)
    dropped = await read_event_log(store, "s")
    kept = list(session.history)
    assert sorted(e.text() for e in dropped + kept) == sorted(
        t for i in range(10) for t in (f"message {i}", f"reply {i}")
    )


async def test_summarize_compaction_resume(store: MemoryKnowledgeStore) -> None:
    cfg = KnowledgeConfig(store=store, compact=SummarizeCompact(target=4, summarize=echo))
    session = KnowledgeSession(cfg, stream_id="s")
    await _turns(session, 12)  # default trigger: > 8 events
    history = session.history
    assert isinstance(history[0], CompactionSummary)
    resumed = await KnowledgeSession.resume(cfg, "s")
    assert [e.id for e in resumed.history] == [e.id for e in history]
    await _turns(resumed, 1, start=12)
    counts = [e for e in await read_event_log(store, "s") if isinstance(e, UserMessage)]
    assert len(counts) == 13  # the resumed history was not logged twice


async def test_failing_compaction_emits_failed_and_keeps_history(
    store: MemoryKnowledgeStore,
) -> None:
    seen: list[Event] = []
    session = KnowledgeSession(
        KnowledgeConfig(store=store, compact=Boom()), stream_id="s", subscribers=[seen.append]
    )
    await _turns(session, 5)
    failed = [e for e in seen if isinstance(e, CompactionFailed)]
    assert failed and isinstance(failed[0].exception, RuntimeError)
    assert failed[0].error == "RuntimeError: compaction exploded"
    assert len(session.history) == 10


async def test_compaction_does_not_drop_unlogged_events(store: MemoryKnowledgeStore) -> None:
    counting = CountingStore(store)
    seen: list[Event] = []
    cfg = KnowledgeConfig(
        store=counting, bootstrap=NoBootstrap(), compact=TailWindowCompact(target=2)
    )  # type: ignore[arg-type]
    session = KnowledgeSession(cfg, stream_id="s", subscribers=[seen.append])
    counting.fail["append"] = BackendError("down")
    await _turns(session, 4)
    assert len(session.history) == 8  # compaction refused to drop what the log lacks
    assert any(isinstance(e, CompactionFailed) for e in seen)
    del counting.fail["append"]
    await _turns(session, 1, start=4)
    assert len([e for e in await read_event_log(store, "s") if isinstance(e, UserMessage)]) == 5


async def test_events_recorded_during_compaction_are_kept(store: MemoryKnowledgeStore) -> None:
    holder: dict[str, KnowledgeSession] = {}

    class Slow:
        name = "slow"

        async def compact(
            self, events: Sequence[Event], ctx: StrategyContext, store: KnowledgeStore
        ) -> list[Event]:
            await holder["s"].record(UserMessage("arrived meanwhile"))
            return list(events[-2:])

    session = KnowledgeSession(KnowledgeConfig(store=store, compact=Slow()), stream_id="s")
    holder["s"] = session
    await _turns(session, 3)
    await session.compact_now()
    assert [e.text() for e in session.history][-1] == "arrived meanwhile"


async def test_compaction_result_is_validated(store: MemoryKnowledgeStore) -> None:
    class Bad:
        name = "bad"

        async def compact(self, events: Any, ctx: Any, store: Any) -> Any:
            return [HaltEvent(reason="nope")]

    seen: list[Event] = []
    session = KnowledgeSession(
        KnowledgeConfig(store=store, compact=Bad()), subscribers=[seen.append]
    )
    await _turns(session, 1)
    await session.compact_now()
    assert any(isinstance(e, CompactionFailed) for e in seen)
    assert len(session.history) == 2


# -- aggregation --------------------------------------------------------------------------


async def test_aggregation_every_n_turns_and_on_end(store: MemoryKnowledgeStore) -> None:
    seen: list[Event] = []
    cfg = KnowledgeConfig(
        store=store,
        aggregate=ConversationSummaryAggregate(echo),
        aggregate_trigger=AggregateTrigger(every_n_turns=2, on_end=True),
    )

    async def main() -> None:
        async with KnowledgeSession(cfg, stream_id="s", subscribers=[seen.append]) as session:
            await _turns(session, 5)

    await main()
    done = [e for e in seen if isinstance(e, AggregationCompleted)]
    assert [e.events for e in done] == [4, 4, 2]  # turns 2, 4, then on_end
    assert len(await store.list("/memory/conversations")) == 3
    assert sum(isinstance(e, AggregationStarted) for e in seen) == 3


async def test_aggregation_every_n_events(store: MemoryKnowledgeStore) -> None:
    seen: list[Event] = []
    cfg = KnowledgeConfig(
        store=store,
        aggregate=WorkingMemoryAggregate(echo),
        aggregate_trigger=AggregateTrigger(every_n_events=6),
    )
    session = KnowledgeSession(cfg, subscribers=[seen.append])
    await _turns(session, 4)
    assert [e.events for e in seen if isinstance(e, AggregationCompleted)] == [6]


async def test_failing_aggregation_keeps_events_for_next_fire(store: MemoryKnowledgeStore) -> None:
    seen: list[Event] = []
    strategy = WorkingMemoryAggregate(echo)
    cfg = KnowledgeConfig(
        store=store, aggregate=strategy, aggregate_trigger=AggregateTrigger(every_n_turns=1)
    )
    session = KnowledgeSession(cfg, stream_id="s", subscribers=[seen.append])
    strategy.summarize = lambda p: 1 / 0  # type: ignore[assignment,return-value]
    await _turns(session, 2)
    failed = [e for e in seen if isinstance(e, AggregationFailed)]
    assert len(failed) == 2 and isinstance(failed[0].exception, ZeroDivisionError)
    strategy.summarize = echo
    await _turns(session, 1, start=2)
    note = await store.read("/memory/working.md") or ""
    assert note.splitlines() == [f"user: message {i}" for i in range(3)]
    logged_kinds = {type(e) for e in await read_event_log(store, "s")}
    assert AggregationFailed in logged_kinds and AggregationCompleted in logged_kinds


async def test_working_memory_round_trip_between_sessions(disk_store: DiskKnowledgeStore) -> None:
    cfg = KnowledgeConfig(store=disk_store, aggregate=WorkingMemoryAggregate(echo))

    async def first() -> None:
        async with KnowledgeSession(cfg) as s:
            await _turns(s, 2)

    async def second() -> list[str]:
        async with KnowledgeSession(
            cfg, policies=[WorkingMemoryPolicy(), EpisodicMemoryPolicy(), ConversationPolicy()]
        ) as s:
            await s.record(UserMessage("hello again"))
            return (await s.assemble()).prompts

    await first()
    prompts = await second()
    assert prompts == ["[Working Memory]\nuser: message 0\nuser: message 1"]


# -- halt, subscribers, records, tools ----------------------------------------------------


async def test_fatal_alert_halts(store: MemoryKnowledgeStore) -> None:
    seen: list[Event] = []
    session = KnowledgeSession(
        KnowledgeConfig(store=store),
        policies=[AlertPolicy(), ConversationPolicy()],
        subscribers=[seen.append],
    )
    await session.record(
        UserMessage("u"), ObserverAlert("leak", severity=Severity.FATAL, source="dlp")
    )
    a = await session.assemble()
    assert a.halt is not None and session.halted is a.halt
    assert a.halt.reason == "leak" and a.halt.source == "dlp"
    assert any(isinstance(e, HaltEvent) for e in seen)
    assert a.prompts == ["[Observer Alert: fatal (dlp)] leak"]


async def test_subscribers_sync_async_failing_and_unsubscribe(store: MemoryKnowledgeStore) -> None:
    got: list[str] = []

    async def async_sub(e: Event) -> None:
        got.append("async:" + e.event_type)

    def broken(e: Event) -> None:
        raise RuntimeError("subscriber bug")

    session = KnowledgeSession(KnowledgeConfig(store=store), subscribers=[broken, async_sub])
    unsubscribe = session.subscribe(lambda e: got.append("sync:" + e.event_type))
    await session.record(UserMessage("x"))
    assert got == ["async:user_message", "sync:user_message"]
    unsubscribe()
    unsubscribe()
    await session.record(UserMessage("y"))
    assert got[-1] == "async:user_message" and len(got) == 3


async def test_record_rejects_lifecycle_and_non_events() -> None:
    session = KnowledgeSession()
    with pytest.raises(ValueError, match="lifecycle"):
        await session.record(HaltEvent(reason="x"))
    with pytest.raises(TypeError):
        await session.record("text")  # type: ignore[arg-type]


async def test_session_without_config() -> None:
    session = KnowledgeSession(policies=[ConversationPolicy()], system_prompt=["a", "b"])
    await _turns(session, 2)
    await session.end()
    assert session.store is None and session.tools() == [] and session.turns == 2
    assert (await session.assemble()).prompts == ["a", "b"]


async def test_knowledge_tool_through_session(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(KnowledgeConfig(store=store))
    [openai] = session.tools("openai")
    assert openai["function"]["name"] == "knowledge"
    [anthropic] = session.tools("anthropic")
    assert anthropic["input_schema"]["required"] == ["action", "path"]
    with pytest.raises(ValueError):
        session.tools("gemini")  # type: ignore[arg-type]
    ok = await session.run_tool(
        ToolCall("c", "knowledge", {"action": "write", "path": "/artifacts/a.md", "content": "A"})
    )
    assert isinstance(ok, ToolResult) and ok.content == "Wrote 1 characters to /artifacts/a.md."
    err = await session.run_tool(ToolCall("d", "knowledge", {"action": "delete", "path": "/"}))
    assert isinstance(err, ToolError) and "refusing" in err.error
    assert await session.run_tool(ToolCall("e", "other", {})) is None
    hidden = KnowledgeSession(KnowledgeConfig(store=store, expose_tool=False))
    assert hidden.tools() == [] and await hidden.run_tool(ToolCall("c", "knowledge", {})) is None


async def test_turn_context_manager_error_path(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(KnowledgeConfig(store=store, bootstrap=NoBootstrap()), stream_id="s")

    async def main() -> None:
        async with session.turn(UserMessage("boom")):
            raise KeyError("loop bug")

    with pytest.raises(KeyError):
        await main()
    assert session.turns == 0
    assert [e.text() for e in await read_event_log(store, "s")] == ["boom"]


async def test_end_is_idempotent(store: MemoryKnowledgeStore) -> None:
    seen: list[Event] = []
    cfg = KnowledgeConfig(store=store, aggregate=WorkingMemoryAggregate(echo))
    session = KnowledgeSession(cfg, subscribers=[seen.append])
    await _turns(session, 1)
    await session.end()
    await session.close()
    assert sum(isinstance(e, AggregationCompleted) for e in seen) == 1


def test_no_warning_for_the_realistic_chain() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        KnowledgeSession(
            policies=[
                WorkingMemoryPolicy(),
                EpisodicMemoryPolicy(3),
                AlertPolicy(),
                SlidingWindowPolicy(80),
            ]
        )


async def test_conflict_error_is_reported_as_aggregation_failed(
    store: MemoryKnowledgeStore,
) -> None:
    class Conflicting:
        name = "c"

        async def aggregate(self, events: Any, ctx: Any, store: Any) -> None:
            raise ConflictError("lost the race")

    seen: list[Event] = []
    session = KnowledgeSession(
        KnowledgeConfig(store=store, aggregate=Conflicting()), subscribers=[seen.append]
    )
    await _turns(session, 1)
    await session.end()
    assert any(isinstance(e, AggregationFailed) and "lost the race" in e.error for e in seen)


def test_repr_and_properties(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(KnowledgeConfig(store=store), stream_id="abc")
    assert "abc" in repr(session) and session.log_path == "/log/abc.jsonl"
    assert session.store is store


async def test_tail_event_log_uses_byte_offsets(store: MemoryKnowledgeStore) -> None:
    from fsmemory.agent.events import tail_event_log

    session = KnowledgeSession(KnowledgeConfig(store=store, bootstrap=NoBootstrap()), stream_id="s")
    await session.record(UserMessage("héllo wörld — ünïcode ✓"))
    await session.flush()
    events, offset = await tail_event_log(store, "s")
    assert [e.text() for e in events] == ["héllo wörld — ünïcode ✓"]
    assert offset == len((await store.read("/log/s.jsonl") or "").encode())
    assert await tail_event_log(store, "s", offset) == ([], offset)
    await store.append("/log/s.jsonl", '{"type": "user_message", "content": "tor')  # torn tail
    await session.record(UserMessage("ß"))
    assert await tail_event_log(store, "s", offset) == ([], offset)


def test_sync_session(tmp_path: Path) -> None:
    from fsmemory.agent import SyncKnowledgeSession

    store = DiskKnowledgeStore(tmp_path / "state", watch="none")
    config = KnowledgeConfig(
        store=store, aggregate=WorkingMemoryAggregate(echo), compact=TailWindowCompact(target=2)
    )
    seen: list[Event] = []
    with SyncKnowledgeSession(
        config, policies=[WorkingMemoryPolicy(), ConversationPolicy()], stream_id="sync"
    ) as s:
        s.subscribe(seen.append)
        for i in range(3):
            with s.turn(f"message {i}"):
                a = s.assemble()
                s.record(ModelResponse(f"reply {i}"))
        result = s.run_tool(ToolCall("c", "knowledge", {"action": "list", "path": "/"}))
        assert isinstance(result, ToolResult) and "SKILL.md" in result.content
        assert s.turns == 3 and s.stream_id == "sync" and s.store is store and s.halted is None
        assert s.tools() and s.knowledge_tool is not None and len(s.history) <= 4
        assert a.prompts == [] and "Sync" in repr(s)
    assert any(isinstance(e, AggregationCompleted) for e in seen)
    assert (
        run(store.read("/memory/working.md"))
        == "user: message 0\nuser: message 1\nuser: message 2\n"
    )
    with pytest.raises(RuntimeError, match="closed"):
        s.assemble()
    s.end()  # idempotent
    resumed = SyncKnowledgeSession.resume(config, "sync")
    assert [e.id for e in resumed.history] == [e.id for e in s.history]

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="running event loop"):
            resumed.assemble()

    run(inside())
    resumed.close()
