"""Aggregation and compaction strategies, their triggers and the summarize callable."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from fsmemory.agent.events import (
    CompactionSummary,
    Event,
    ModelResponse,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from fsmemory.agent.strategies import (
    AggregateTrigger,
    CompactTrigger,
    ConversationSummaryAggregate,
    StrategyContext,
    SummarizeCompact,
    TailWindowCompact,
    WorkingMemoryAggregate,
    fill_template,
    render_transcript,
)
from fsmemory.errors import ConflictError
from fsmemory.store import MemoryKnowledgeStore
from tests.test_agent.conftest import CountingStore, PlainStore


class Recorder:
    """A deterministic summarize stand-in that remembers its prompts."""

    def __init__(self, reply: str = "summary") -> None:
        self.prompts: list[str] = []
        self.reply = reply

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.reply


def _chat(n: int) -> list[Event]:
    out: list[Event] = []
    for i in range(n):
        out += [UserMessage(f"question {i}"), ModelResponse(f"answer {i}")]
    return out


# -- templates and transcripts ------------------------------------------------------------


def test_fill_template_keeps_other_braces() -> None:
    template = (
        'Return JSON like {"facts": [...]} for {name}.\nOld: {existing}\nNew: {events}\n{{x}}'
    )
    out = fill_template(template, {"existing": "E {events}", "events": "V"})
    assert out == 'Return JSON like {"facts": [...]} for {name}.\nOld: E {events}\nNew: V\n{{x}}'


def test_render_transcript() -> None:
    events: list[Event] = [
        CompactionSummary("before"),
        UserMessage("u"),
        ModelResponse(""),
        ToolCall("c", "search", {"q": 1}),
        ToolResult("c", "hit", name="search"),
        ModelResponse("done"),
        Usage(input_tokens=3),
    ]
    text = render_transcript(events)
    assert text.splitlines() == [
        "earlier summary: before",
        "user: u",
        'tool call search {"q":1}',
        "tool result search: hit",
        "assistant: done",
    ]
    assert render_transcript(events, max_chars=25).splitlines() == ["assistant: done"]


# -- working memory -----------------------------------------------------------------------


async def test_working_memory_aggregate_merges(store: MemoryKnowledgeStore) -> None:
    llm = Recorder("- likes tea")
    agg = WorkingMemoryAggregate(llm)
    await agg.aggregate(_chat(1), StrategyContext(), store)
    assert await store.read("/memory/working.md") == "- likes tea\n"
    assert "question 0" in llm.prompts[0]
    llm.reply = "- likes tea\n- lives in Lyon"
    await agg.aggregate([UserMessage("I live in Lyon")], StrategyContext(), store)
    assert "- likes tea" in llm.prompts[1]  # {existing}
    assert "I live in Lyon" in llm.prompts[1]  # {events}
    assert await store.read("/memory/working.md") == "- likes tea\n- lives in Lyon\n"


async def test_custom_prompt_with_literal_braces(store: MemoryKnowledgeStore) -> None:
    # The seed's reference used str.format: these braces raised KeyError.
    llm = Recorder()
    prompt = 'Answer as {"memory": "..."} -- {existing} || {events} || {unknown} }{'
    await WorkingMemoryAggregate(llm, prompt=prompt).aggregate(_chat(1), StrategyContext(), store)
    assert llm.prompts[0].startswith('Answer as {"memory": "..."} --  || user: question 0')
    assert llm.prompts[0].endswith("|| {unknown} }{")


async def test_no_conversation_no_llm_call(store: MemoryKnowledgeStore) -> None:
    llm = Recorder()
    await WorkingMemoryAggregate(llm).aggregate([Usage(input_tokens=1)], StrategyContext(), store)
    await ConversationSummaryAggregate(llm).aggregate([], StrategyContext(), store)
    assert llm.prompts == []


async def test_async_summarize_and_usage(store: MemoryKnowledgeStore) -> None:
    async def llm(prompt: str) -> tuple[str, Usage]:
        await asyncio.sleep(0)
        return "async note", Usage(input_tokens=7, output_tokens=2)

    class CallableObject:
        async def __call__(self, prompt: str) -> str:
            return "object note"

    ctx = StrategyContext()
    await WorkingMemoryAggregate(llm).aggregate(_chat(1), ctx, store)
    assert await store.read("/memory/working.md") == "async note\n"
    assert ctx.usage is not None and ctx.usage.input_tokens == 7
    await WorkingMemoryAggregate(CallableObject()).aggregate(_chat(1), ctx, store)
    assert await store.read("/memory/working.md") == "object note\n"


async def test_summarize_must_return_text(store: MemoryKnowledgeStore) -> None:
    with pytest.raises(TypeError, match="must return str"):
        await WorkingMemoryAggregate(lambda p: 42).aggregate(_chat(1), StrategyContext(), store)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError):
        WorkingMemoryAggregate("not callable")  # type: ignore[arg-type]


async def test_working_memory_merge_is_compare_and_swap(store: MemoryKnowledgeStore) -> None:
    """Another writer changes the note while the LLM runs: the merge is redone on the
    new note instead of overwriting it (no lost update)."""
    calls = {"n": 0}

    async def llm(prompt: str) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            await store.write("/memory/working.md", "- written by another session")
        return f"merged from: {prompt.split('<working_memory>')[1].split('</working_memory>')[0].strip()}"

    await WorkingMemoryAggregate(llm).aggregate(_chat(1), StrategyContext(), store)
    assert calls["n"] == 2
    assert await store.read("/memory/working.md") == "merged from: - written by another session\n"


async def test_working_memory_gives_up_after_max_attempts(store: MemoryKnowledgeStore) -> None:
    async def llm(prompt: str) -> str:
        await store.write("/memory/working.md", f"interference {len(prompt)}")
        return "mine"

    with pytest.raises(ConflictError):
        await WorkingMemoryAggregate(llm, max_attempts=2).aggregate(
            _chat(1), StrategyContext(), store
        )


async def test_working_memory_on_a_plain_store() -> None:
    plain = PlainStore()
    await WorkingMemoryAggregate(Recorder("note")).aggregate(_chat(1), StrategyContext(), plain)  # type: ignore[arg-type]
    assert await plain.read("/memory/working.md") == "note\n"


async def test_concurrent_working_memory_merges_lose_nothing(store: MemoryKnowledgeStore) -> None:
    async def llm(prompt: str) -> str:
        existing = prompt.split("<working_memory>")[1].split("</working_memory>")[0].strip()
        new = prompt.split("user: ")[1].split("\n")[0]
        await asyncio.sleep(0.001)
        return (existing + "\n" if existing else "") + f"- {new}"

    async def main() -> None:
        agg = WorkingMemoryAggregate(llm, max_attempts=50)
        await asyncio.gather(
            *(agg.aggregate([UserMessage(f"fact {i}")], StrategyContext(), store) for i in range(8))
        )

    await main()
    note = await store.read("/memory/working.md") or ""
    assert sorted(note.split()) == sorted(("- fact " + " - fact ".join(map(str, range(8)))).split())


# -- conversation summaries ---------------------------------------------------------------


async def test_conversation_summary_file_name(store: MemoryKnowledgeStore) -> None:
    now = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    ctx = StrategyContext(stream_id="chat-1", now=now)
    llm = Recorder("they planned a trip")
    agg = ConversationSummaryAggregate(llm)
    await agg.aggregate(_chat(2), ctx, store)
    await agg.aggregate(_chat(1), ctx, store)  # same instant: a second, distinct file
    names = await store.list("/memory/conversations")
    assert names == ["20250304T050607890123Z_chat-1-1.md", "20250304T050607890123Z_chat-1.md"]
    assert (
        await store.read("/memory/conversations/20250304T050607890123Z_chat-1.md")
        == "they planned a trip\n"
    )
    assert "question 1" in llm.prompts[0]


async def test_conversation_summary_on_plain_store() -> None:
    plain = PlainStore()
    await ConversationSummaryAggregate(Recorder("s")).aggregate(
        _chat(1), StrategyContext(stream_id="x"), plain
    )  # type: ignore[arg-type]
    assert len(await plain.list("/memory/conversations")) == 1


def test_aggregate_trigger() -> None:
    assert not AggregateTrigger().fires_ever
    assert not AggregateTrigger().should_fire(100, 100)
    t = AggregateTrigger(every_n_turns=3)
    assert not t.should_fire(2, 10) and t.should_fire(3, 1) and not t.should_fire(3, 0)
    e = AggregateTrigger(every_n_events=5)
    assert not e.should_fire(9, 4) and e.should_fire(0, 5)
    assert AggregateTrigger(on_end=True).fires_ever
    with pytest.raises(ValueError):
        AggregateTrigger(every_n_turns=0)


# -- compaction ---------------------------------------------------------------------------


def test_compact_trigger() -> None:
    t = CompactTrigger(max_events=10)
    assert not t.should_fire(10, 10**9) and t.should_fire(11, 0)
    k = CompactTrigger(max_tokens=100, chars_per_token=4)
    assert not k.should_fire(10**6, 400) and k.should_fire(1, 401)
    with pytest.raises(ValueError, match="needs max_events"):
        CompactTrigger()
    with pytest.raises(ValueError):
        CompactTrigger(max_events=0)
    with pytest.raises(ValueError):
        CompactTrigger(max_tokens=5, chars_per_token=0)


async def test_tail_window_compact_persists_dropped(store: MemoryKnowledgeStore) -> None:
    persisted: list[Event] = []

    async def persist(events: Any) -> None:
        persisted.extend(events)

    events = _chat(10)
    kept = await TailWindowCompact(target=4).compact(
        events, StrategyContext(persist=persist), store
    )
    assert kept == events[-4:]
    assert persisted == events[:-4]
    assert (
        await TailWindowCompact(target=40).compact(events, StrategyContext(persist=persist), store)
        == events
    )
    with pytest.raises(ValueError):
        TailWindowCompact(target=0)


async def test_tail_window_never_orphans(store: MemoryKnowledgeStore) -> None:
    events: list[Event] = [
        UserMessage("u"),
        ToolCall("a", "t"),
        ToolCall("b", "t"),
        ToolResult("a", "1"),
        ToolResult("b", "2"),
        ModelResponse("m"),
    ]
    kept = await TailWindowCompact(target=2).compact(events, StrategyContext(), store)
    assert kept == events[1:]  # moved back to keep both calls


async def test_summarize_compact(store: MemoryKnowledgeStore) -> None:
    llm = Recorder("they discussed questions 0-7")
    events = _chat(10)
    out = await SummarizeCompact(target=4, summarize=llm).compact(events, StrategyContext(), store)
    assert isinstance(out[0], CompactionSummary)
    assert out[0].content == "they discussed questions 0-7" and out[0].replaced == 16
    assert out[1:] == events[-4:]
    assert "question 7" in llm.prompts[0] and "question 8" not in llm.prompts[0]
    # rolling: the next compaction folds the summary in
    more = out + _chat(5)
    out2 = await SummarizeCompact(target=4, summarize=llm).compact(more, StrategyContext(), store)
    assert isinstance(out2[0], CompactionSummary) and out2[0].replaced == 16 + 10
    assert "earlier summary: they discussed" in llm.prompts[1]


@pytest.mark.parametrize("prompt", [None, b"{events}", ["{events}"], 42, object()])
def test_summarize_compact_refuses_a_prompt_that_is_not_text(prompt: object) -> None:
    """As the aggregations do, when the strategy is built (not at its first fire)."""
    with pytest.raises(TypeError, match="prompt must be a str"):
        SummarizeCompact(target=4, summarize=Recorder(), prompt=prompt)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "prompt",
    [
        "",  # the user's LLM gets what it is given
        "no placeholder",
        "Sum up:\x00{events}\x00",  # NUL and other control characters are text
        "x" * 2_000_000 + "{events}",  # huge: the user's model decides what fits
        'JSON {"k": 1} {{events}} {name} {events}',
    ],
)
async def test_summarize_compact_takes_any_text_as_prompt(
    prompt: str, store: MemoryKnowledgeStore
) -> None:
    """Any str is a template: its ``{events}`` are filled, the rest is sent as written."""
    llm = Recorder()
    events = _chat(6)
    out = await SummarizeCompact(target=4, summarize=llm, prompt=prompt).compact(
        events, StrategyContext(), store
    )
    assert isinstance(out[0], CompactionSummary) and out[1:] == events[-4:]
    transcript = render_transcript(events[:-4])
    assert llm.prompts == [prompt.replace("{events}", transcript)]


async def test_summarize_compact_nothing_to_do(store: MemoryKnowledgeStore) -> None:
    llm = Recorder()
    events = _chat(2)
    assert (
        await SummarizeCompact(target=10, summarize=llm).compact(events, StrategyContext(), store)
        == events
    )
    assert llm.prompts == []


async def test_strategies_on_counting_store() -> None:
    counting = CountingStore(MemoryKnowledgeStore())
    await WorkingMemoryAggregate(Recorder()).aggregate(_chat(1), StrategyContext(), counting)  # type: ignore[arg-type]
    assert counting.calls["write"] == 1 and counting.calls["stat"] == 1
