"""Agent harness (seed 003): knowledge, memory and history for any agent loop.

fsmemory is not an agent framework. Any loop -- a plain OpenAI or Anthropic client
loop, or a framework's -- calls a :class:`KnowledgeSession` around each model call and
each turn, and brings its own LLM as a callable for summaries. On top of the path store
(:mod:`fsmemory.store`) it provides:

* **events** (:mod:`fsmemory.agent.events`) -- typed, JSON-round-tripping records of
  what a loop produces (``UserMessage``, ``ModelResponse``, ``ToolCall``,
  ``ToolResult``, ``ToolError``, ``CompactionSummary``, ``ObserverAlert``, ``Usage``)
  and converters to and from OpenAI Chat Completions, the OpenAI Responses API and
  Anthropic Messages;
* **assembly policies** (:mod:`fsmemory.agent.policies`) shaping
  ``(prompts, events)`` per model call --
  injections (:class:`WorkingMemoryPolicy`, :class:`EpisodicMemoryPolicy`,
  :class:`KnowledgeMemoryPolicy`, :class:`AlertPolicy`) before reductions
  (:class:`ConversationPolicy`, :class:`SlidingWindowPolicy`,
  :class:`TokenBudgetPolicy`); reductions never orphan a tool result;
* **aggregation** into ``/memory/working.md`` and ``/memory/conversations/``,
  **compaction** of the history, and their triggers (:mod:`fsmemory.agent.strategies`);
* **lifecycle events** (``*Started`` / ``*Completed`` / ``*Failed``,
  :class:`EventLogFailed`, :class:`HaltEvent`) for subscribers;
* the **event log** ``/log/<stream_id>.jsonl``, appended one line per event;
* SKILL.md **bootstrap**; the **tools** (:mod:`fsmemory.agent.tools`) -- ``remember``/``recall``
  (:func:`knowledge_tools`), the ``knowledge`` tool and an :class:`AnthropicMemoryTool`
  handler for Anthropic's memory tool on any URL -- all with one schema vocabulary
  (:class:`ToolSchema`: Chat Completions, strict mode, the Responses API, Anthropic).

:class:`SyncKnowledgeSession` offers the same methods, blocking, for synchronous loops.

This module exports what a loop types: the sessions and their config, the policies,
:class:`Assembly`, the tools and the converters. Events, strategies, the policy and
tool building blocks live in the sub-modules above. Their names are still importable
from here, with a ``DeprecationWarning`` naming their new home.

Where this does better than the seed's reference (ag2 1.2.1): the event log is
appended, not rewritten every turn; ``TokenBudgetPolicy`` counts the full text of
events and the injected prompts; ``compact=`` without a trigger gets a documented
default instead of crashing; braces in a custom aggregation prompt are literal; the
``knowledge`` tool cannot delete ``/`` or the log; SKILL.md seeding is create-only,
so concurrent sessions write each file once; working-memory merges are
compare-and-swap writes.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from fsmemory.agent import events, policies, strategies, tools
from fsmemory.agent._config import KnowledgeConfig
from fsmemory.agent._convert import (
    from_anthropic_messages,
    from_anthropic_response,
    from_openai_messages,
    from_openai_response,
    from_openai_responses_input,
    to_anthropic_messages,
    to_openai_messages,
    to_openai_responses_input,
)
from fsmemory.agent._functions import knowledge_tools
from fsmemory.agent._memory_tool import AnthropicMemoryTool
from fsmemory.agent._policies import (
    AlertPolicy,
    Assembly,
    ConversationPolicy,
    EpisodicMemoryPolicy,
    KnowledgeMemoryPolicy,
    SlidingWindowPolicy,
    TokenBudgetPolicy,
    WorkingMemoryPolicy,
    assemble,
)
from fsmemory.agent._session import KnowledgeSession
from fsmemory.agent._sync import SyncKnowledgeSession
from fsmemory.agent._tools import KnowledgeTool

__all__ = [
    "AlertPolicy",
    "AnthropicMemoryTool",
    "Assembly",
    "ConversationPolicy",
    "EpisodicMemoryPolicy",
    "KnowledgeConfig",
    "KnowledgeMemoryPolicy",
    "KnowledgeSession",
    "KnowledgeTool",
    "SlidingWindowPolicy",
    "SyncKnowledgeSession",
    "TokenBudgetPolicy",
    "WorkingMemoryPolicy",
    "assemble",
    "from_anthropic_messages",
    "from_anthropic_response",
    "from_openai_messages",
    "from_openai_response",
    "from_openai_responses_input",
    "knowledge_tools",
    "to_anthropic_messages",
    "to_openai_messages",
    "to_openai_responses_input",
]

# Names this module exported before the sub-modules held them: still importable from
# here (with a DeprecationWarning), each from the public module that holds it now.
_MOVED = {
    name: module.__name__
    for module in (events, strategies, policies, tools)
    for name in module.__all__
    if name not in __all__
}
_MOVED["Subscriber"] = events.__name__


def __getattr__(name: str) -> Any:
    """A name moved to a sub-module: returned from there with a DeprecationWarning."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"fsmemory.agent.{name} moved to {home}.{name}; import it from there "
        f"(the fsmemory.agent name will be removed in a future release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MOVED))
