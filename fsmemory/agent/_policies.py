"""Assembly policies: shape ``(prompts, events)`` before each model call.

Two kinds, and the order matters -- injections first, then ``AlertPolicy``, then
reductions -- so that everything injected is counted by the reductions' budgets:

=========  ==============================================================================
injection  ``WorkingMemoryPolicy``, ``EpisodicMemoryPolicy``, ``KnowledgeMemoryPolicy``,
           ``AlertPolicy``
reduction  ``ConversationPolicy``, ``SlidingWindowPolicy``, ``TokenBudgetPolicy``
=========  ==============================================================================

A reduction never separates a tool result from its call: when a cut would orphan a
result, the result is dropped too (see :func:`~fsmemory.agent.pair_safe_tail`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from fsmemory.agent._checks import check_count
from fsmemory.agent._events import (
    Event,
    HaltEvent,
    ModelResponse,
    ObserverAlert,
    Severity,
)
from fsmemory.agent._pairs import compaction_cut, pair_safe_tail
from fsmemory.store import KnowledgeStore

if TYPE_CHECKING:
    from fsmemory.memory import KnowledgeMemory


#: ``"injection"`` adds prompts; ``"reduction"`` trims events.
PolicyKind = Literal["injection", "reduction"]

WORKING_MEMORY_PATH = "/memory/working.md"
CONVERSATIONS_DIR = "/memory/conversations"

_SEVERITY_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2, Severity.FATAL: 3}


@dataclass
class AssemblyContext:
    """What policies may use while assembling one model call.

    Attributes:
        store: the knowledge store (from ``KnowledgeConfig``), when there is one.
        stream_id: the conversation's stream id.
        actor_name: the agent's name.
        halt: set by a policy (``AlertPolicy``) to ask the loop to stop.
    """

    store: KnowledgeStore | None = None
    stream_id: str = ""
    actor_name: str = "assistant"
    halt: HaltEvent | None = None

    def require_store(self, policy: str, override: KnowledgeStore | None = None) -> KnowledgeStore:
        """The store for ``policy``: its own ``store=`` if given, else the context's.

        Raises:
            ValueError: neither is set.
        """
        store = override if override is not None else self.store
        if store is None:
            raise ValueError(
                f"{policy} needs a KnowledgeStore: run it through a KnowledgeSession with "
                f"KnowledgeConfig(store=...), pass assemble(..., store=...), or give the "
                f"policy store=..."
            )
        return store


@runtime_checkable
class AssemblyPolicy(Protocol):
    """One step of the assembly chain.

    ``apply`` returns new lists; it must not mutate the ones it is given.
    """

    @property
    def name(self) -> str:
        """Short name used in transparency notes and warnings."""
        ...

    @property
    def kind(self) -> PolicyKind:
        """``"injection"`` or ``"reduction"``."""
        ...

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Transform ``(prompts, events)``."""
        ...


@dataclass(frozen=True, slots=True)
class Assembly:
    """What to send to the model: system prompt parts and the (reduced) events.

    Attributes:
        prompts: system prompt parts, in order.
        events: the history to send.
        halt: set when a policy asked the loop to stop (do not call the model).
    """

    prompts: list[str]
    events: list[Event]
    halt: HaltEvent | None = None

    @property
    def system(self) -> str:
        """The prompts joined by blank lines."""
        return "\n\n".join(p for p in self.prompts if p)

    def to_openai(self) -> list[dict[str, Any]]:
        """OpenAI Chat Completions ``messages`` (system message first)."""
        from fsmemory.agent._convert import to_openai_messages

        return to_openai_messages(self.events, self.prompts)

    def to_openai_responses(self) -> list[dict[str, Any]]:
        """OpenAI Responses API ``input`` items (system message first, tool calls as
        ``function_call`` and results as ``function_call_output`` items):
        ``client.responses.create(model=..., input=a.to_openai_responses())``."""
        from fsmemory.agent._convert import to_openai_responses_input

        return to_openai_responses_input(self.events, self.prompts)

    def to_anthropic(self) -> tuple[str, list[dict[str, Any]]]:
        """Anthropic Messages ``(system, messages)``."""
        from fsmemory.agent._convert import to_anthropic_messages

        return to_anthropic_messages(self.events, self.prompts)


async def assemble(
    policies: Sequence[AssemblyPolicy],
    prompts: Sequence[str] = (),
    events: Sequence[Event] = (),
    ctx: AssemblyContext | None = None,
    *,
    store: KnowledgeStore | None = None,
) -> Assembly:
    """Run ``(prompts, events)`` through ``policies`` in order.

    Args:
        policies: the chain (see :func:`validate_order`).
        prompts: the base system prompt parts.
        events: the full history.
        ctx: the context; built from ``store`` when omitted.
        store: the store memory policies read from (when no ``ctx``).
    """
    context = ctx if ctx is not None else AssemblyContext(store=store)
    cur_prompts = list(prompts)
    cur_events = list(events)
    for policy in policies:
        cur_prompts, cur_events = await policy.apply(cur_prompts, cur_events, context)
    return Assembly(cur_prompts, cur_events, context.halt)


def validate_order(policies: Sequence[AssemblyPolicy]) -> list[str]:
    """Warnings for known bad orderings (empty when the chain is fine).

    * an injection after a reduction: what it injects is not counted by the earlier
      reduction's budget -- put injections first, then ``AlertPolicy``, then reductions;
    * ``AlertPolicy`` after ``ConversationPolicy``: the alerts were already dropped.
    """
    warnings: list[str] = []
    first_reduction: AssemblyPolicy | None = None
    conversation_seen: AssemblyPolicy | None = None
    for policy in policies:
        kind = getattr(policy, "kind", None)
        name = getattr(policy, "name", type(policy).__name__)
        if isinstance(policy, AlertPolicy) and conversation_seen is not None:
            warnings.append(
                f"{name} runs after {conversation_seen.name}, which already dropped the "
                f"observer alerts: put AlertPolicy before the reductions"
            )
        if kind == "injection" and first_reduction is not None:
            warnings.append(
                f"injection {name} runs after reduction {first_reduction.name}: what it "
                f"injects is not counted against the reduction's budget; order the chain "
                f"injections first, then AlertPolicy, then reductions"
            )
        if kind == "reduction" and first_reduction is None:
            first_reduction = policy
        if isinstance(policy, ConversationPolicy) and conversation_seen is None:
            conversation_seen = policy
    return warnings


def _note(name: str, shown: int, total: int, unit: str = "events") -> str:
    return f"[{name}] Showing {shown} of {total} {unit}."


# -- injections --------------------------------------------------------------------------


class WorkingMemoryPolicy:
    """Inject ``/memory/working.md`` (written by ``WorkingMemoryAggregate``).

    Nothing is added while the file is missing or empty.

    Args:
        path: the file to inject.
        header: the line put above its content.
        store: read from this store instead of the session's.
    """

    name = "working_memory"
    kind: PolicyKind = "injection"

    def __init__(
        self,
        path: str = WORKING_MEMORY_PATH,
        *,
        header: str = "[Working Memory]",
        store: KnowledgeStore | None = None,
    ) -> None:
        self.path = path
        self.header = header
        self.store = store

    def __repr__(self) -> str:
        return f"WorkingMemoryPolicy(path={self.path!r})"

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Add the working memory as one prompt part."""
        store = ctx.require_store(type(self).__name__, self.store)
        text = await store.read(self.path)
        if not text or not text.strip():
            return prompts, events
        return [*prompts, f"{self.header}\n{text.strip()}"], events


class EpisodicMemoryPolicy:
    """Inject the most recent conversation summaries from ``/memory/conversations/``
    (written by ``ConversationSummaryAggregate``), oldest first.

    Args:
        max_episodes: how many of the newest summaries to inject.
        transparent: add ``[episodic_memory] Showing X of Y episodes.`` when some were
            left out.
        directory: where the summaries live.
        header: the line put above them.
        store: read from this store instead of the session's.
    """

    name = "episodic_memory"
    kind: PolicyKind = "injection"

    def __init__(
        self,
        max_episodes: int = 5,
        transparent: bool = True,
        *,
        directory: str = CONVERSATIONS_DIR,
        header: str = "[Past Conversations]",
        store: KnowledgeStore | None = None,
    ) -> None:
        self.max_episodes = check_count("max_episodes", max_episodes)
        self.transparent = transparent
        self.directory = directory.rstrip("/") or "/"
        self.header = header
        self.store = store

    def __repr__(self) -> str:
        return f"EpisodicMemoryPolicy(max_episodes={self.max_episodes})"

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Add the newest summaries as one prompt part."""
        store = ctx.require_store(type(self).__name__, self.store)
        names = [n for n in await store.list(self.directory) if n.endswith(".md")]
        if not names:
            return prompts, events
        chosen = names[-self.max_episodes :]  # names start with a UTC timestamp
        texts = await asyncio.gather(*(store.read(f"{self.directory}/{n}") for n in chosen))
        blocks = [
            f"## {n.removesuffix('.md')}\n{t.strip()}"
            for n, t in zip(chosen, texts, strict=True)
            if t and t.strip()
        ]
        if not blocks:
            return prompts, events
        out = [*prompts, self.header + "\n" + "\n\n".join(blocks)]
        if self.transparent and len(chosen) < len(names):
            out.append(_note(self.name, len(chosen), len(names), "episodes"))
        return out, events


class KnowledgeMemoryPolicy:
    """Inject ``km.build_context()`` of a :class:`~fsmemory.KnowledgeMemory` (seed 000's
    ``[Long-term Memory]`` / ``[Recent Memory]`` block).

    Args:
        km: the memory.
        in_thread: call ``build_context`` in a worker thread (for remote memories whose
            refresh may wait on the network); local ones are fast enough inline.
    """

    name = "knowledge_memory"
    kind: PolicyKind = "injection"

    def __init__(self, km: KnowledgeMemory, *, in_thread: bool = False) -> None:
        self.km = km
        self.in_thread = in_thread

    def __repr__(self) -> str:
        return f"KnowledgeMemoryPolicy({self.km!r})"

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Add the memory's context block (nothing when it is empty)."""
        if self.in_thread:
            text = await asyncio.to_thread(self.km.build_context)
        else:
            text = self.km.build_context()
        if not text:
            return prompts, events
        return [*prompts, text], events


class AlertPolicy:
    """Deliver observer alerts to the model as prompts, and halt on ``FATAL``.

    The alerts raised since the model last answered become prompt lines
    ``[Observer Alert: <severity>] <message>``; every :class:`ObserverAlert` is then
    removed from the events (earlier ones were delivered on earlier calls). When one of
    the new alerts is at least ``halt_on``, a :class:`HaltEvent` is set on the context:
    the loop should stop instead of calling the model.

    Args:
        halt_on: the severity that halts (default ``FATAL``; None never halts).
    """

    name = "alerts"
    kind: PolicyKind = "injection"

    def __init__(self, halt_on: Severity | str | None = Severity.FATAL) -> None:
        self.halt_on = None if halt_on is None else Severity(str(halt_on).lower())

    def __repr__(self) -> str:
        return f"AlertPolicy(halt_on={self.halt_on!r})"

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Move the new alerts into the prompts; set ``ctx.halt`` on a fatal one."""
        fresh: list[ObserverAlert] = []
        for e in reversed(events):
            if type(e) is ModelResponse:
                break
            if isinstance(e, ObserverAlert):
                fresh.append(e)
        fresh.reverse()
        out = list(prompts)
        for alert in fresh:
            source = f" ({alert.source})" if alert.source else ""
            out.append(f"[Observer Alert: {alert.severity.value}{source}] {alert.message}")
            if (
                self.halt_on is not None
                and ctx.halt is None
                and _SEVERITY_RANK[alert.severity] >= _SEVERITY_RANK[self.halt_on]
            ):
                ctx.halt = HaltEvent(reason=alert.message, alert_id=alert.id, source=alert.source)
        kept = [e for e in events if not isinstance(e, ObserverAlert)]
        return out, kept


# -- reductions --------------------------------------------------------------------------


class ConversationPolicy:
    """Keep only conversation events (user, model, tool calls/results/errors,
    compaction summaries); drop observer alerts, usage and anything else."""

    name = "conversation"
    kind: PolicyKind = "reduction"

    def __repr__(self) -> str:
        return "ConversationPolicy()"

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Filter the events."""
        return prompts, [e for e in events if e.conversational]


class SlidingWindowPolicy:
    """Keep the last ``max_events`` events (fewer when a cut would orphan a result).

    Args:
        max_events: the window.
        transparent: add ``[sliding_window] Showing X of Y events.`` when events were
            dropped.
    """

    name = "sliding_window"
    kind: PolicyKind = "reduction"

    def __init__(self, max_events: int = 50, transparent: bool = True) -> None:
        self.max_events = check_count("max_events", max_events)
        self.transparent = transparent

    def __repr__(self) -> str:
        return f"SlidingWindowPolicy(max_events={self.max_events})"

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Cut the head of the history."""
        if len(events) <= self.max_events:
            return prompts, events
        kept = pair_safe_tail(events, len(events) - self.max_events)
        if self.transparent:
            prompts = [*prompts, _note(self.name, len(kept), len(events))]
        return prompts, kept


@dataclass(frozen=True, slots=True)
class _Counter:
    chars_per_token: float
    tokenizer: Callable[[str], int] | None = field(default=None)

    def __call__(self, text: str) -> int:
        if self.tokenizer is not None:
            return int(self.tokenizer(text))
        return math.ceil(len(text) / self.chars_per_token)


class TokenBudgetPolicy:
    """Keep the newest events that fit in ``max_tokens`` together with the prompts.

    The prompts injected so far are counted first, then events from the newest back,
    each by its full text (tool arguments as JSON included). A token is
    ``chars_per_token`` characters unless a ``tokenizer`` (``text -> token count``,
    e.g. a tiktoken encoder's ``lambda s: len(enc.encode(s))``) is given. The newest
    event (with its tool call, if it is a result) is always kept so the model has
    something to answer, even when it alone is over budget.

    Args:
        max_tokens: the budget for prompts + events.
        chars_per_token: characters per token for the estimate.
        transparent: add ``[token_budget] Showing X of Y events.`` when events were
            dropped.
        tokenizer: an exact counter replacing the estimate.
    """

    name = "token_budget"
    kind: PolicyKind = "reduction"

    def __init__(
        self,
        max_tokens: int = 32_000,
        chars_per_token: float = 4,
        transparent: bool = True,
        *,
        tokenizer: Callable[[str], int] | None = None,
    ) -> None:
        max_tokens = check_count("max_tokens", max_tokens)
        if not chars_per_token > 0:
            raise ValueError("chars_per_token must be > 0")
        self.max_tokens = max_tokens
        self.chars_per_token = chars_per_token
        self.transparent = transparent
        self.tokenizer = tokenizer
        self._count = _Counter(float(chars_per_token), tokenizer)

    def __repr__(self) -> str:
        return f"TokenBudgetPolicy(max_tokens={self.max_tokens})"

    def count(self, text: str) -> int:
        """Tokens of ``text`` by this policy's measure."""
        return self._count(text)

    async def apply(
        self, prompts: list[str], events: list[Event], ctx: AssemblyContext
    ) -> tuple[list[str], list[Event]]:
        """Cut the head of the history to fit the budget."""
        count = self._count
        budget = self.max_tokens - sum(count(p) for p in prompts)
        used = 0
        start = len(events)
        for i in range(len(events) - 1, -1, -1):
            used += count(events[i].text())
            if used > budget:
                break
            start = i
        if start == 0:
            return prompts, events
        kept = pair_safe_tail(events, start)
        if not kept and events:
            kept = list(events[compaction_cut(events, 1) :])  # the newest event and its call
        if self.transparent:
            prompts = [*prompts, _note(self.name, len(kept), len(events))]
        return prompts, kept
