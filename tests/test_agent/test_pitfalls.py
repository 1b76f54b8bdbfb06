"""The seed's "common pitfalls" and the reference's known defects, one test each."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsmemory.agent import (
    AlertPolicy,
    ConversationPolicy,
    KnowledgeConfig,
    KnowledgeSession,
    KnowledgeTool,
    SlidingWindowPolicy,
    TokenBudgetPolicy,
    WorkingMemoryPolicy,
)
from fsmemory.agent.events import (
    Event,
    ModelResponse,
    ObserverAlert,
    UnknownEvent,
    UserMessage,
    load_history,
    read_event_log,
)
from fsmemory.agent.strategies import CompactTrigger, TailWindowCompact, WorkingMemoryAggregate
from fsmemory.store import DiskKnowledgeStore, MemoryKnowledgeStore
from tests.test_agent.conftest import CountingStore


def test_reduction_before_injection_is_flagged() -> None:
    with pytest.warns(UserWarning, match="not counted against the reduction's budget"):
        KnowledgeSession(policies=[SlidingWindowPolicy(), WorkingMemoryPolicy()])


async def test_memory_policies_get_the_store_from_the_config(store: MemoryKnowledgeStore) -> None:
    await store.write("/memory/working.md", "- fact")
    session = KnowledgeSession(KnowledgeConfig(store=store), policies=[WorkingMemoryPolicy()])
    assert (await session.assemble()).prompts == ["[Working Memory]\n- fact"]
    with pytest.raises(ValueError, match="needs a KnowledgeStore"):
        await KnowledgeSession(policies=[WorkingMemoryPolicy()]).assemble()


async def test_one_llm_call_per_aggregation_fire(store: MemoryKnowledgeStore) -> None:
    calls: list[str] = []

    def summarize(prompt: str) -> str:
        calls.append(prompt)
        return "n"

    cfg = KnowledgeConfig(store=store, aggregate=WorkingMemoryAggregate(summarize))

    async def main() -> None:
        async with KnowledgeSession(cfg) as s:
            for i in range(10):
                async with s.turn(f"m{i}"):
                    await s.record(ModelResponse("r"))

    await main()
    assert len(calls) == 1  # on_end only: not one per turn


async def test_alerts_need_alert_policy(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(KnowledgeConfig(store=store), policies=[ConversationPolicy()])
    await session.record(UserMessage("u"), ObserverAlert("disk almost full"))
    assert "disk almost full" not in str((await session.assemble()).to_openai())
    with_policy = KnowledgeSession(
        KnowledgeConfig(store=store), policies=[AlertPolicy(), ConversationPolicy()]
    )
    await with_policy.record(UserMessage("u"), ObserverAlert("disk almost full"))
    assert "disk almost full" in str((await with_policy.assemble()).to_openai())


async def test_knowledge_config_opt_outs(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(
        KnowledgeConfig(store=store, expose_tool=False, write_event_log=False),
        policies=[WorkingMemoryPolicy()],
        stream_id="s",
    )
    await session.record(UserMessage("u"))
    await session.end_turn()
    assert session.tools() == []
    assert not await store.exists("/log/s.jsonl")
    assert "knowledge` tool" not in (await store.read("/SKILL.md") or "")


async def test_store_root_and_in_store_paths(tmp_path: Path) -> None:
    store = DiskKnowledgeStore(tmp_path / "agent-state", watch="none")
    cfg = KnowledgeConfig(store=store, aggregate=WorkingMemoryAggregate(lambda p: "- note"))

    async def main() -> None:
        async with KnowledgeSession(cfg) as s, s.turn("hi"):
            pass

    await main()
    assert (tmp_path / "agent-state" / "memory" / "working.md").read_text() == "- note\n"


# -- the reference's known defects (ANCHORS.md) ------------------------------------------


async def test_compact_without_trigger_does_not_crash(store: MemoryKnowledgeStore) -> None:
    session = KnowledgeSession(KnowledgeConfig(store=store, compact=TailWindowCompact(target=3)))
    for i in range(7):
        await session.record(UserMessage(str(i)))
        await session.end_turn()
    assert len(session.history) == 3  # default trigger: more than 2 * target events


async def test_token_budget_sees_long_events_and_prompts() -> None:
    events: list[Event] = [UserMessage("w " * 10_000), UserMessage("short")]
    a = await KnowledgeSession(policies=[TokenBudgetPolicy(max_tokens=1000)]).assemble()
    assert a.events == []
    session = KnowledgeSession(
        policies=[TokenBudgetPolicy(max_tokens=1000)], system_prompt="p " * 1500
    )
    await session.record(*events)
    kept = (await session.assemble()).events
    assert kept == events[1:]  # the 5,000-token event is dropped


async def test_knowledge_tool_cannot_delete_the_store(store: MemoryKnowledgeStore) -> None:
    await store.write("/keep.md", "k")
    assert (await KnowledgeTool(store)("delete", "/")).startswith("Error")
    assert await store.read("/keep.md") == "k"


async def test_event_log_is_appended_not_rewritten(store: MemoryKnowledgeStore) -> None:
    counting = CountingStore(store)
    session = KnowledgeSession(KnowledgeConfig(store=counting), stream_id="s")  # type: ignore[arg-type]
    for i in range(20):
        await session.record(UserMessage(str(i)))
        await session.end_turn()
    ops = {op for op, path in counting.paths if path == "/log/s.jsonl"}
    assert ops == {"append"} and counting.calls["append"] == 20


async def test_unknown_events_survive_the_log_and_resume(store: MemoryKnowledgeStore) -> None:
    cfg = KnowledgeConfig(
        store=store,
        compact=TailWindowCompact(target=2),
        compact_trigger=CompactTrigger(max_events=3),
    )
    session = KnowledgeSession(cfg, stream_id="s")
    raw = {
        "type": "reasoning_v2",
        "id": "r1",
        "timestamp": "2030-01-01T00:00:00Z",
        "tokens": [1, 2],
    }
    await session.record(UserMessage("u"), UnknownEvent.wrap(raw))
    await session.end_turn()
    logged = await read_event_log(store, "s")
    assert any(isinstance(e, UnknownEvent) and e.to_dict() == raw for e in logged)
    assert [e.id for e in await load_history(store, "s")] == [e.id for e in session.history]
