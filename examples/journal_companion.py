"""Journal companion: working memory that carries over between two runs.

Run: python examples/journal_companion.py [--state DIR]

Run 1 talks about the user's day; when the session ends, ``WorkingMemoryAggregate``
merges the conversation into ``/memory/working.md`` in a local folder. Run 2 -- a new
session, as if the program started again -- gets that note injected by
``WorkingMemoryPolicy`` and "remembers" without replaying the chat.

It runs offline: ``summarize`` and ``chat_model`` below are deterministic stand-ins.
To use a real model, replace them -- nothing else changes:

OpenAI::

    from openai import OpenAI
    client = OpenAI()

    def summarize(prompt: str) -> str:                       # a cheap model is fine
        r = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}])
        return r.choices[0].message.content or ""

    async def chat_model(session, assembly):                 # inside the turn
        r = client.chat.completions.create(
            model="gpt-4o", messages=assembly.to_openai(), tools=session.tools("openai"))
        return from_openai_response(r)                       # ModelResponse, ToolCall, Usage

OpenAI, Responses API (the same ``from_openai_response`` reads its reply)::

    async def chat_model(session, assembly):
        r = client.responses.create(
            model="gpt-4.1", input=assembly.to_openai_responses(),
            tools=session.tools("responses"))
        return from_openai_response(r)                       # ModelResponse, ToolCall, Usage

Anthropic::

    from anthropic import Anthropic
    client = Anthropic()

    async def chat_model(session, assembly):
        system, messages = assembly.to_anthropic()
        m = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024,
                                   system=system, messages=messages,
                                   tools=session.tools("anthropic"))
        return from_anthropic_response(m)

(Use the ``AsyncOpenAI`` / ``AsyncAnthropic`` clients with ``await`` in real async
code; a plain ``summarize`` runs in a worker thread, an ``async def`` one on the loop.)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path

from fsmemory.agent import (
    Assembly,
    ConversationPolicy,
    KnowledgeConfig,
    KnowledgeSession,
    WorkingMemoryPolicy,
)
from fsmemory.agent.events import Event, ModelResponse, ToolCall
from fsmemory.agent.strategies import AggregateTrigger, WorkingMemoryAggregate
from fsmemory.store import DiskKnowledgeStore

SYSTEM = "You are a warm, concise daily journal companion."


def summarize(prompt: str) -> str:
    """Stand-in for an LLM merging the working memory: keep the existing bullets and
    add one bullet per first-person sentence the user said."""
    existing = prompt.split("<working_memory>")[1].split("</working_memory>")[0]
    conversation = prompt.split("<conversation>")[1].split("</conversation>")[0]
    bullets = [line.strip() for line in existing.splitlines() if line.strip().startswith("- ")]
    for line in conversation.splitlines():
        if line.startswith("user: "):
            for sentence in re.split(r"(?<=[.!?])\s+", line.removeprefix("user: ")):
                if sentence.startswith(("I ", "I'm ", "My ")):
                    bullet = "- " + sentence.rstrip(".!?")
                    if bullet not in bullets:
                        bullets.append(bullet)
    return "\n".join(bullets[-20:])


async def chat_model(session: KnowledgeSession, assembly: Assembly) -> list[Event]:
    """Stand-in for the chat model: answers from the prompts it was given."""
    memory = next((p for p in assembly.prompts if p.startswith("[Working Memory]")), "")
    last = assembly.events[-1].text()
    if memory and "remember" in last.lower():
        facts = [line[2:] for line in memory.splitlines() if line.startswith("- ")]
        return [ModelResponse("Of course. You told me: " + "; ".join(facts) + ".")]
    return [ModelResponse(f"Thanks for sharing. ({len(assembly.events)} messages so far.)")]


def reply_text(events: list[Event]) -> str:
    """The model's answer among its events. The converters also return a ``Usage``
    record (last), so ``events[-1]`` is not the answer once a real client is used."""
    return "".join(e.text() for e in events if isinstance(e, ModelResponse))


async def conversation(state: Path, messages: list[str]) -> KnowledgeSession:
    """One run of the program: a session over the folder, one turn per message."""
    store = DiskKnowledgeStore(state, watch="none")
    config = KnowledgeConfig(
        store=store,
        aggregate=WorkingMemoryAggregate(summarize),
        aggregate_trigger=AggregateTrigger(on_end=True),
    )
    session = KnowledgeSession(
        config,
        policies=[WorkingMemoryPolicy(), ConversationPolicy()],
        system_prompt=SYSTEM,
        actor_name="journal",
    )
    async with session:  # bootstraps SKILL.md files; on exit: aggregation, log flush
        for text in messages:
            async with session.turn(text):
                while True:
                    assembly = await session.assemble()
                    events = await chat_model(session, assembly)
                    await session.record(*events)
                    calls = [e for e in events if isinstance(e, ToolCall)]
                    if not calls:
                        print(f"  user: {text}\n  bot:  {reply_text(events)}")
                        break
                    for call in calls:  # this stand-in never calls tools; a real model may
                        result = await session.run_tool(call)
                        if result is not None:
                            await session.record(result)
    return session


async def run(state: Path) -> None:
    print("run 1")
    await conversation(
        state,
        [
            "Hi! I'm training for a half marathon in May. Today I ran 8 km.",
            "My knee hurt a bit after the run. I think I need new shoes.",
        ],
    )
    note = (state / "memory" / "working.md").read_text()
    print(f"\n/memory/working.md after run 1:\n{note}")

    print("run 2 (a new session on the same folder)")
    session = await conversation(state, ["Good morning! Do you remember what I'm working towards?"])
    files = sorted(
        str(p.relative_to(state))
        for p in state.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )
    print("\nfiles:", ", ".join(files))
    assert "half marathon" in note and "knee" in note
    assert session.turns == 1


def main() -> None:
    parser = argparse.ArgumentParser(description="journal companion demo")
    parser.add_argument("--state", type=Path, help="keep the state in this folder")
    args = parser.parse_args()
    if args.state is not None:
        asyncio.run(run(args.state))
        return
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp) / "journal-state"))


if __name__ == "__main__":
    main()
