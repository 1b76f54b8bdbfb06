"""Long history: assembly and compaction over a conversation of a thousand turns.

Run: python examples/long_history.py [--turns 1000]

A simulated support conversation with tool calls runs through a ``KnowledgeSession``:

* every model call sees the working memory, the alerts raised since the model last
  spoke, and at most the last 80 events within a 6,000-token budget (prompts
  included) -- ``AlertPolicy``, ``ConversationPolicy``, ``SlidingWindowPolicy``,
  ``TokenBudgetPolicy``, in the order ``validate_order`` accepts;
* the stream's own history is compacted by ``SummarizeCompact`` whenever it holds
  more than 200 events or ~20,000 tokens: all but the last 60 events become one
  ``CompactionSummary``;
* every event -- also the compacted ones -- is appended to ``/log/<stream>.jsonl``,
  and the log replays into exactly the live history (``load_history``).

It runs offline with deterministic stand-ins for the model and for ``summarize``; see
``examples/journal_companion.py`` for how to plug in an OpenAI or Anthropic client.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time

from fsmemory.agent import (
    AlertPolicy,
    Assembly,
    ConversationPolicy,
    KnowledgeConfig,
    KnowledgeSession,
    SlidingWindowPolicy,
    TokenBudgetPolicy,
    WorkingMemoryPolicy,
)
from fsmemory.agent.events import (
    CompactionCompleted,
    CompactionSummary,
    Event,
    ModelResponse,
    ObserverAlert,
    ToolCall,
    ToolResult,
    load_history,
    read_event_log,
)
from fsmemory.agent.strategies import CompactTrigger, SummarizeCompact
from fsmemory.store import MemoryKnowledgeStore


def summarize(prompt: str) -> str:
    """Stand-in summarizer: rolls the earlier summary's ticket count forward and adds
    the tickets mentioned in the dropped part."""
    earlier = 0
    tickets: set[str] = set()
    for line in prompt.splitlines():
        if line.startswith("earlier summary:"):
            found = re.search(r"so far: (\d+)", line)
            earlier = int(found.group(1)) if found else 0
        elif line.startswith("user: "):
            tickets.update(re.findall(r"#(\d+)", line))
    last = max((int(t) for t in tickets), default=0)
    return f"Tickets discussed so far: {earlier + len(tickets)} (last #{last})."


def model(turn: int, assembly: Assembly) -> list[Event]:
    """Stand-in chat model: on even turns it first calls the lookup tool."""
    last = assembly.events[-1]
    if turn % 2 == 0 and not isinstance(last, ToolResult):
        return [
            ModelResponse("", stop_reason="tool_calls"),
            ToolCall(f"call-{turn}", "lookup_ticket", {"ticket": turn}),
        ]
    return [ModelResponse(f"Ticket #{turn} is a login failure on mobile; a fix is queued.")]


def lookup_ticket(call: ToolCall) -> ToolResult:
    """Stand-in tool."""
    number = call.arguments["ticket"]
    return ToolResult(call.call_id, f"#{number}: login fails on Android 14. " * 4, name=call.name)


async def run(turns: int) -> None:
    store = MemoryKnowledgeStore()
    await store.write("/memory/working.md", "- The user is a support lead triaging tickets.")
    config = KnowledgeConfig(
        store=store,
        compact=SummarizeCompact(target=60, summarize=summarize),
        compact_trigger=CompactTrigger(max_events=200, max_tokens=20_000),
    )
    session = KnowledgeSession(
        config,
        policies=[
            WorkingMemoryPolicy(),
            AlertPolicy(),
            ConversationPolicy(),
            SlidingWindowPolicy(max_events=80),
            TokenBudgetPolicy(max_tokens=6_000),
        ],
        system_prompt="You are a support assistant.",
        stream_id="support-long",
    )
    compactions: list[CompactionCompleted] = []
    session.subscribe(
        lambda e: compactions.append(e) if isinstance(e, CompactionCompleted) else None
    )
    timings: list[float] = []
    sent: list[int] = []
    async with session:
        for turn in range(turns):
            async with session.turn(f"Please look at ticket #{turn}."):
                if turn % 250 == 249:
                    await session.record(
                        ObserverAlert("response latency above 2 s", source="monitor")
                    )
                while True:
                    t0 = time.perf_counter()
                    assembly = await session.assemble()
                    timings.append(time.perf_counter() - t0)
                    sent.append(len(assembly.events))
                    events = model(turn, assembly)
                    await session.record(*events)
                    calls = [e for e in events if isinstance(e, ToolCall)]
                    if not calls:
                        break
                    await session.record(*(lookup_ticket(c) for c in calls))

    logged = await read_event_log(store, session.stream_id)
    recorded = [e for e in logged if not e.lifecycle]
    replayed = await load_history(store, session.stream_id)
    head = session.history[0]
    print(f"turns:                 {turns}")
    print(f"events recorded:       {sum(not isinstance(e, CompactionSummary) for e in recorded)}")
    print(f"compactions:           {len(compactions)}")
    print(f"live history:          {len(session.history)} events")
    print(f"head of history:       {head.text() if isinstance(head, CompactionSummary) else '-'}")
    print(f"events per model call: max {max(sent)}, median {statistics.median(sent):.0f}")
    print(f"assemble():            median {statistics.median(timings) * 1e3:.2f} ms")
    print(f"log lines:             {len(logged)} (lifecycle events included)")
    assert [e.id for e in replayed] == [e.id for e in session.history]
    assert max(sent) <= 80 and compactions
    print("the log replays into the live history: ok")


def main() -> None:
    parser = argparse.ArgumentParser(description="long history demo")
    parser.add_argument("--turns", type=int, default=1000)
    asyncio.run(run(parser.parse_args().turns))


if __name__ == "__main__":
    main()
