"""Agent harness: assembly latency vs history size, and event-log cost per turn.

    python benchmarks/bench_harness.py [--quick] [--sizes 1000,10000,100000]

Two tables:

1. ``KnowledgeSession.assemble()`` over a history of N events (user / model / tool
   call / tool result turns, a few observer alerts) through the realistic chain
   WorkingMemoryPolicy, EpisodicMemoryPolicy(3), AlertPolicy, ConversationPolicy,
   SlidingWindowPolicy(80), TokenBudgetPolicy(32k); and through the same chain without
   the window (the token budget then walks back from the newest event). The store is
   in memory and on a local folder. Target: <= 20 ms at 10,000 events.
2. One turn (record 4 events + ``end_turn()``) at history sizes N: the log is appended
   one line per new event, so the cost stays flat; beside it, the seed's approach of
   rewriting the whole ``/log/<stream>.jsonl`` after every turn, on the same store.

Nothing is asserted; machines here are noisy, so compare ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsmemory.agent import (
    AlertPolicy,
    ConversationPolicy,
    EpisodicMemoryPolicy,
    KnowledgeConfig,
    KnowledgeSession,
    SlidingWindowPolicy,
    TokenBudgetPolicy,
    WorkingMemoryPolicy,
)
from fsmemory.agent.events import (
    Event,
    ModelResponse,
    ObserverAlert,
    ToolCall,
    ToolResult,
    UserMessage,
    encode_events,
)
from fsmemory.agent.policies import AssemblyPolicy
from fsmemory.agent.strategies import NoBootstrap
from fsmemory.store import DiskKnowledgeStore, KnowledgeStore, MemoryKnowledgeStore


def history(n: int) -> list[Event]:
    """``n`` events of realistic turns: ~60-400 characters each, a tool call every
    other turn, an observer alert every 500 events."""
    events: list[Event] = []
    turn = 0
    while len(events) < n:
        events.append(
            UserMessage(f"Turn {turn}: please look at ticket #{turn} and summarize it. " * 2)
        )
        if turn % 2 == 0:
            events.append(ModelResponse("", stop_reason="tool_calls"))
            events.append(
                ToolCall(f"call-{turn}", "search", {"query": f"ticket {turn}", "limit": 5})
            )
            events.append(
                ToolResult(
                    f"call-{turn}", f"ticket {turn}: login fails on mobile. " * 6, name="search"
                )
            )
        events.append(
            ModelResponse(
                f"Ticket {turn} is about a login failure on mobile; I suggest a fix. " * 2
            )
        )
        if len(events) % 500 < 5:
            events.append(ObserverAlert(f"latency high at turn {turn}"))
        turn += 1
    return events[:n]


def realistic_chain(window: bool) -> list[AssemblyPolicy]:
    chain: list[AssemblyPolicy] = [
        WorkingMemoryPolicy(),
        EpisodicMemoryPolicy(max_episodes=3),
        AlertPolicy(),
        ConversationPolicy(),
    ]
    if window:
        chain.append(SlidingWindowPolicy(max_events=80))
    chain.append(TokenBudgetPolicy(max_tokens=32_000))
    return chain


async def seed_store(store: KnowledgeStore) -> None:
    await store.write(
        "/memory/working.md", "- The user is Ann, a support lead.\n- Prefers short answers.\n" * 5
    )
    for i in range(6):
        await store.write(
            f"/memory/conversations/2025010{i}T000000000000Z_s.md",
            f"Episode {i}: triaged tickets. " * 10,
        )


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> tuple[float, float, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3, min(samples) * 1e3, max(samples) * 1e3


def open_store(kind: str, tmp: Path, label: str) -> KnowledgeStore:
    if kind == "memory":
        return MemoryKnowledgeStore()
    return DiskKnowledgeStore(tmp / label, watch="none")


async def bench_assembly(sizes: list[int], repeat: int, tmp: Path) -> list[list[str]]:
    rows = []
    for kind in ("memory", "local"):
        for n in sizes:
            events = history(n)
            for window in (True, False):
                store = open_store(kind, tmp, f"asm-{kind}-{n}-{window}")
                await seed_store(store)
                config = KnowledgeConfig(
                    store=store, write_event_log=False, bootstrap=NoBootstrap()
                )
                session = KnowledgeSession(
                    config,
                    policies=realistic_chain(window),
                    system_prompt="You are a support assistant.",
                )
                await session.record(*events)
                result = await session.assemble()
                med, lo, hi = await timed(session.assemble, repeat)
                chain = "realistic (window 80)" if window else "no window (budget walk)"
                rows.append(
                    [
                        kind,
                        f"{n:,}",
                        chain,
                        f"{len(result.events)}",
                        f"{med:.2f}",
                        f"{lo:.2f}-{hi:.2f}",
                        ("yes" if med <= 20 else "NO") if n <= 10_000 else "-",
                    ]
                )
    return rows


def turn_appending(session: KnowledgeSession) -> Callable[[], Awaitable[None]]:
    """One turn through the session: 4 new events, then end_turn (appends 4 lines)."""
    counter = [0]

    async def one_turn() -> None:
        i = counter[0]
        counter[0] += 1
        await session.record(
            UserMessage(f"new question {i}"),
            ToolCall(f"n{i}", "search", {"q": i}),
            ToolResult(f"n{i}", "result " * 20),
            ModelResponse(f"new answer {i} " * 5),
        )
        await session.end_turn()

    return one_turn


def turn_rewriting(store: KnowledgeStore, full: list[Event]) -> Callable[[], Awaitable[None]]:
    """One turn the seed's way: the whole history re-encoded and rewritten."""

    async def one_turn() -> None:
        full.extend(
            [UserMessage("q"), ToolCall("x", "s", {}), ToolResult("x", "r"), ModelResponse("a")]
        )
        await store.write("/log/bench.jsonl", encode_events(full))

    return one_turn


async def bench_log(sizes: list[int], turns: int, tmp: Path) -> list[list[str]]:
    rows = []
    for kind in ("memory", "local"):
        for n in sizes:
            events = history(n)
            store = open_store(kind, tmp, f"log-{kind}-{n}")
            config = KnowledgeConfig(store=store, bootstrap=NoBootstrap())
            session = KnowledgeSession(config, stream_id="bench", history=events)
            await session.flush()  # the existing history is in the log

            ours, _, _ = await timed(turn_appending(session), turns)
            # The seed's way: after every turn, dump the full history to the log file.
            rewrite = turn_rewriting(
                open_store(kind, tmp, f"seed-{kind}-{n}"), list(session.history)
            )
            seed, _, _ = await timed(rewrite, max(3, turns // 5))
            rows.append([kind, f"{n:,}", f"{ours:.3f}", f"{seed:.3f}", f"{seed / ours:.0f}x"])
    return rows


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


async def run(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        rows = await bench_assembly(sizes, args.repeat, t)
        print(
            "assemble(): median ms over", args.repeat, "calls (target <= 20 ms at 10,000 events)\n"
        )
        print(
            table(["store", "history", "chain", "sent", "median ms", "min-max ms", "<=20ms"], rows)
        )
        rows = await bench_log(sizes, args.turns, t)
        print(f"\none turn (4 new events + end_turn), median ms over {args.turns} turns\n")
        print(table(["store", "history", "append (ours)", "rewrite (seed)", "seed/ours"], rows))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1000,10000; fewer repeats")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat, args.turns = "1000,10000", 15, 15
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
