"""Assembly policies, their order rules, and pair safety of reductions."""

from __future__ import annotations

import math
from typing import Any

import pytest

from fsmemory.agent import (
    AlertPolicy,
    ConversationPolicy,
    EpisodicMemoryPolicy,
    KnowledgeMemoryPolicy,
    SlidingWindowPolicy,
    TokenBudgetPolicy,
    WorkingMemoryPolicy,
    assemble,
)
from fsmemory.agent.events import (
    CompactionSummary,
    Event,
    ModelResponse,
    ObserverAlert,
    Severity,
    ToolCall,
    ToolError,
    ToolResult,
    Usage,
    UserMessage,
)
from fsmemory.agent.policies import AssemblyContext, AssemblyPolicy, validate_order
from fsmemory.agent.strategies import compaction_cut, pair_safe_tail, repair_tool_pairs
from fsmemory.memory import KnowledgeMemory
from fsmemory.store import MemoryKnowledgeStore


def _valid_pairs(events: list[Event]) -> bool:
    """Every result has its call earlier in the list."""
    calls: set[str] = set()
    for e in events:
        if isinstance(e, ToolCall):
            calls.add(e.call_id)
        elif isinstance(e, ToolResult | ToolError) and e.call_id not in calls:
            return False
    return True


def _tool_turn(i: int, calls: int = 2) -> list[Event]:
    out: list[Event] = [UserMessage(f"q{i}"), ModelResponse("")]
    out += [ToolCall(f"c{i}-{k}", "t", {"k": k}) for k in range(calls)]
    out += [ToolResult(f"c{i}-{k}", f"r{k}", name="t") for k in range(calls)]
    out.append(ModelResponse(f"a{i}"))
    return out


async def _apply(
    policy: Any, prompts: list[str], events: list[Event], store: Any = None
) -> tuple[list[str], list[Event]]:
    ctx = AssemblyContext(store=store)
    return await policy.apply(prompts, events, ctx)  # type: ignore[no-any-return]


# -- pairs ------------------------------------------------------------------------------


def test_pair_safe_tail_drops_orphaned_results() -> None:
    events = _tool_turn(0, calls=2)  # U MR C0 C1 R0 R1 MR
    kept = pair_safe_tail(events, 3)  # starts at C1: R0 would be orphaned
    assert [type(e).__name__ for e in kept] == ["ToolCall", "ToolResult", "ModelResponse"]
    assert _valid_pairs(kept)


def test_compaction_cut_moves_earlier_to_keep_calls() -> None:
    events = _tool_turn(0, calls=3)  # U MR C0 C1 C2 R0 R1 R2 MR  (9)
    cut = compaction_cut(events, 3)  # naive cut at 6 keeps R1 R2 MR
    assert cut == 2  # back to C0: C1 pulls in R0's neighbourhood, R0 pulls in C0
    assert _valid_pairs(events[cut:])
    assert compaction_cut(events, 100) == 0
    with pytest.raises(ValueError):
        compaction_cut(events, -1)


def test_compaction_cut_chains_back() -> None:
    # a result kept pulls its call in, whose neighbour results pull theirs in
    events: list[Event] = [
        UserMessage("u"),
        ToolCall("a", "t"),
        ToolCall("b", "t"),
        ToolResult("a", "ra"),
        ToolCall("c", "t"),
        ToolResult("b", "rb"),
        ToolResult("c", "rc"),
    ]
    cut = compaction_cut(events, 2)
    assert _valid_pairs(events[cut:])
    assert cut == 1


def test_repair_tool_pairs() -> None:
    events: list[Event] = [
        ToolResult("ghost", "r"),  # no call at all
        UserMessage("u"),
        ToolCall("never", "t"),  # never answered, conversation moved on
        ModelResponse("m"),
        ToolCall("ok", "t"),
        ToolResult("ok", "r"),
        ModelResponse("m2"),
        ToolCall("pending", "t"),  # still waiting at the end: kept
    ]
    fixed = repair_tool_pairs(events)
    ids = [getattr(e, "call_id", None) for e in fixed]
    assert "ghost" not in ids and "never" not in ids
    assert ids.count("ok") == 2 and "pending" in ids


# -- injections -------------------------------------------------------------------------


async def test_working_memory_policy(store: MemoryKnowledgeStore) -> None:
    events: list[Event] = [UserMessage("hi")]
    prompts, out = await _apply(WorkingMemoryPolicy(), ["base"], events, store)
    assert prompts == ["base"] and out == events  # missing file: nothing
    await store.write("/memory/working.md", "  \n")
    assert (await _apply(WorkingMemoryPolicy(), ["base"], events, store))[0] == ["base"]
    await store.write("/memory/working.md", "- likes tea\n")
    prompts, out = await _apply(WorkingMemoryPolicy(), ["base"], events, store)
    assert prompts == ["base", "[Working Memory]\n- likes tea"]
    assert out is events


async def test_memory_policy_without_store_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs a KnowledgeStore"):
        await _apply(WorkingMemoryPolicy(), [], [])
    with pytest.raises(ValueError, match="needs a KnowledgeStore"):
        await _apply(EpisodicMemoryPolicy(), [], [])


async def test_policy_store_override(store: MemoryKnowledgeStore) -> None:
    await store.write("/memory/working.md", "own")
    prompts, _ = await _apply(WorkingMemoryPolicy(store=store), [], [], MemoryKnowledgeStore())
    assert prompts == ["[Working Memory]\nown"]


async def test_episodic_memory_policy(store: MemoryKnowledgeStore) -> None:
    for i in range(7):
        await store.write(f"/memory/conversations/2025010{i}T000000000000Z_s.md", f"episode {i}")
    await store.write("/memory/conversations/notes.txt", "ignored")
    prompts, _ = await _apply(EpisodicMemoryPolicy(max_episodes=3), [], [], store)
    assert len(prompts) == 2
    body = prompts[0]
    assert body.startswith("[Past Conversations]")
    assert body.index("episode 4") < body.index("episode 5") < body.index("episode 6")
    assert "episode 3" not in body
    assert prompts[1] == "[episodic_memory] Showing 3 of 7 episodes."
    quiet, _ = await _apply(EpisodicMemoryPolicy(max_episodes=3, transparent=False), [], [], store)
    assert len(quiet) == 1
    empty, _ = await _apply(EpisodicMemoryPolicy(), ["p"], [], MemoryKnowledgeStore())
    assert empty == ["p"]
    with pytest.raises(ValueError):
        EpisodicMemoryPolicy(max_episodes=0)


async def test_knowledge_memory_policy(tmp_path: Any) -> None:
    km = KnowledgeMemory(tmp_path / "km")
    assert (await _apply(KnowledgeMemoryPolicy(km), ["p"], []))[0] == ["p"]
    km.remember("Prefers dark mode", category="preferences", persistent=True)
    prompts, _ = await _apply(KnowledgeMemoryPolicy(km), ["p"], [])
    assert prompts[0] == "p" and "Prefers dark mode" in prompts[1]
    threaded, _ = await _apply(KnowledgeMemoryPolicy(km, in_thread=True), [], [])
    assert threaded == [km.build_context()]


async def test_alert_policy_delivers_new_alerts_and_drops_all() -> None:
    old = ObserverAlert("old news")
    new1 = ObserverAlert("watch out", severity=Severity.ERROR, source="cost")
    events: list[Event] = [UserMessage("u"), old, ModelResponse("m"), UserMessage("u2"), new1]
    ctx = AssemblyContext()
    prompts, out = await AlertPolicy().apply([], events, ctx)
    assert prompts == ["[Observer Alert: error (cost)] watch out"]
    assert not any(isinstance(e, ObserverAlert) for e in out)
    assert ctx.halt is None


async def test_alert_policy_halts_on_fatal() -> None:
    fatal = ObserverAlert("data leak", severity=Severity.FATAL, source="guard")
    ctx = AssemblyContext()
    await AlertPolicy().apply([], [UserMessage("u"), fatal], ctx)
    assert ctx.halt is not None
    assert ctx.halt.reason == "data leak" and ctx.halt.alert_id == fatal.id
    ctx2 = AssemblyContext()
    await AlertPolicy(halt_on=None).apply([], [fatal], ctx2)
    assert ctx2.halt is None
    ctx3 = AssemblyContext()
    await AlertPolicy(halt_on="error").apply(
        [], [ObserverAlert("e", severity=Severity.ERROR)], ctx3
    )
    assert ctx3.halt is not None


async def test_alerts_never_reach_the_model_without_alert_policy() -> None:
    events: list[Event] = [UserMessage("u"), ObserverAlert("secret alert")]
    a = await assemble([ConversationPolicy()], [], events)
    assert "secret alert" not in str(a.to_openai())


# -- reductions -------------------------------------------------------------------------


async def test_conversation_policy() -> None:
    events: list[Event] = [
        UserMessage("u"),
        Usage(input_tokens=1),
        ObserverAlert("a"),
        ModelResponse("m"),
        ToolCall("c", "t"),
        ToolResult("c", "r"),
        ToolError("d", "e"),
        CompactionSummary("s"),
    ]
    _, out = await _apply(ConversationPolicy(), [], events)
    assert [type(e).__name__ for e in out] == [
        "UserMessage",
        "ModelResponse",
        "ToolCall",
        "ToolResult",
        "ToolError",
        "CompactionSummary",
    ]


async def test_sliding_window_keeps_last_n() -> None:
    events: list[Event] = [UserMessage(str(i)) for i in range(10)]
    prompts, out = await _apply(SlidingWindowPolicy(max_events=4), ["p"], events)
    assert [e.text() for e in out] == ["6", "7", "8", "9"]
    assert prompts == ["p", "[sliding_window] Showing 4 of 10 events."]
    prompts, out = await _apply(SlidingWindowPolicy(max_events=4, transparent=False), ["p"], events)
    assert prompts == ["p"] and len(out) == 4
    prompts, out = await _apply(SlidingWindowPolicy(max_events=40), ["p"], events)
    assert prompts == ["p"] and out == events
    with pytest.raises(ValueError):
        SlidingWindowPolicy(max_events=0)


@pytest.mark.parametrize("window", range(1, 20))
async def test_sliding_window_never_orphans(window: int) -> None:
    events = _tool_turn(0, 3) + _tool_turn(1, 2)
    _, out = await _apply(SlidingWindowPolicy(max_events=window), [], events)
    assert len(out) <= window
    assert _valid_pairs(out)
    assert out == events[len(events) - len(out) :] or all(e in events for e in out)


@pytest.mark.parametrize("budget", [5, 9, 13, 20, 31, 50, 80, 200])
async def test_token_budget_never_orphans(budget: int) -> None:
    events = _tool_turn(0, 3) + _tool_turn(1, 2)
    _, out = await _apply(TokenBudgetPolicy(max_tokens=budget, chars_per_token=1), [], events)
    assert out and _valid_pairs(out)


async def test_token_budget_counts_full_text_not_a_truncated_repr() -> None:
    # The seed's reference counted len(str(event)): a dataclass repr that does not grow
    # with... here each event is 4,000 chars = 1,000 tokens.
    events: list[Event] = [UserMessage("x" * 4000) for _ in range(10)]
    _, out = await _apply(TokenBudgetPolicy(max_tokens=3500, chars_per_token=4), [], events)
    assert len(out) == 3


async def test_token_budget_counts_tool_arguments() -> None:
    events: list[Event] = [
        UserMessage("u"),
        ToolCall("c", "t", {"blob": "y" * 4000}),
        ToolResult("c", "ok"),
    ]
    _, out = await _apply(TokenBudgetPolicy(max_tokens=500, chars_per_token=4), [], events)
    assert [type(e) for e in out] == [ToolCall, ToolResult]  # the newest, with its call


async def test_token_budget_counts_injected_prompts() -> None:
    events: list[Event] = [UserMessage("x" * 400) for _ in range(10)]  # 100 tokens each
    _, no_prompt = await _apply(TokenBudgetPolicy(max_tokens=1000), [], events)
    assert len(no_prompt) == 10
    prompts = ["p" * 2000]  # 500 tokens
    new_prompts, out = await _apply(TokenBudgetPolicy(max_tokens=1000), prompts, events)
    assert len(out) == 5
    assert new_prompts[-1] == "[token_budget] Showing 5 of 10 events."


async def test_token_budget_tokenizer_replaces_chars_per_token() -> None:
    events: list[Event] = [UserMessage("one two three") for _ in range(10)]  # 3 words
    policy = TokenBudgetPolicy(max_tokens=12, tokenizer=lambda s: len(s.split()))
    _, out = await _apply(policy, [], events)
    assert len(out) == 4
    assert policy.count("a b") == 2
    assert TokenBudgetPolicy(chars_per_token=3).count("abcd") == math.ceil(4 / 3)


async def test_token_budget_keeps_newest_even_over_budget() -> None:
    events: list[Event] = [UserMessage("a"), UserMessage("z" * 10_000)]
    _, out = await _apply(TokenBudgetPolicy(max_tokens=10), ["prompt " * 100], events)
    assert out == events[1:]
    _, none = await _apply(TokenBudgetPolicy(max_tokens=10), [], [])
    assert none == []


def test_token_budget_validation() -> None:
    with pytest.raises(ValueError):
        TokenBudgetPolicy(max_tokens=0)
    with pytest.raises(ValueError):
        TokenBudgetPolicy(chars_per_token=0)


async def test_policies_do_not_mutate_inputs(store: MemoryKnowledgeStore) -> None:
    await store.write("/memory/working.md", "wm")
    events = [*_tool_turn(0), ObserverAlert("a"), *_tool_turn(1)]
    prompts = ["base"]
    before_events, before_prompts = list(events), list(prompts)
    chain: list[AssemblyPolicy] = [
        WorkingMemoryPolicy(),
        AlertPolicy(),
        ConversationPolicy(),
        SlidingWindowPolicy(5),
        TokenBudgetPolicy(20, chars_per_token=1),
    ]
    await assemble(chain, prompts, events, store=store)
    assert events == before_events and prompts == before_prompts


# -- order ------------------------------------------------------------------------------


def test_validate_order_good_chain_is_quiet() -> None:
    chain: list[AssemblyPolicy] = [
        WorkingMemoryPolicy(),
        EpisodicMemoryPolicy(max_episodes=3),
        AlertPolicy(),
        ConversationPolicy(),
        SlidingWindowPolicy(max_events=80),
        TokenBudgetPolicy(),
    ]
    assert validate_order(chain) == []


def test_validate_order_reduction_before_injection() -> None:
    warnings = validate_order([SlidingWindowPolicy(), WorkingMemoryPolicy()])
    assert len(warnings) == 1
    assert "working_memory" in warnings[0] and "sliding_window" in warnings[0]
    assert "injections first" in warnings[0]


def test_validate_order_alert_after_conversation() -> None:
    warnings = validate_order([ConversationPolicy(), AlertPolicy()])
    assert any("already dropped the observer alerts" in w for w in warnings)
    assert any("injection alerts runs after reduction conversation" in w for w in warnings)


async def test_assemble_chain_end_to_end(store: MemoryKnowledgeStore) -> None:
    await store.write("/memory/working.md", "- user is Ann")
    events: list[Event] = []
    for i in range(50):
        events += _tool_turn(i)
    events.append(ObserverAlert("slow down"))
    events.append(UserMessage("final"))
    chain: list[AssemblyPolicy] = [
        WorkingMemoryPolicy(),
        AlertPolicy(),
        ConversationPolicy(),
        SlidingWindowPolicy(12),
        TokenBudgetPolicy(10_000),
    ]
    a = await assemble(chain, ["sys"], events, store=store)
    assert a.prompts[:3] == [
        "sys",
        "[Working Memory]\n- user is Ann",
        "[Observer Alert: warning] slow down",
    ]
    assert len(a.events) <= 12 and _valid_pairs(a.events)
    assert a.events[-1] == events[-1]
    assert a.halt is None
    assert a.system.startswith("sys\n\n[Working Memory]")
