"""Strategies a :class:`~fsmemory.agent.KnowledgeSession` runs, and what writing one
takes.

* **aggregation** into ``/memory/working.md`` and ``/memory/conversations/``:
  :class:`WorkingMemoryAggregate`, :class:`ConversationSummaryAggregate` (the
  :class:`AggregateStrategy` protocol) and when they run, :class:`AggregateTrigger`;
* **compaction** of the history: :class:`SummarizeCompact`, :class:`TailWindowCompact`
  (the :class:`CompactStrategy` protocol) and :class:`CompactTrigger`;
* **bootstrap** of the store's ``SKILL.md`` files: :class:`DefaultBootstrap`,
  :class:`NoBootstrap`, :class:`StoreBootstrap`, :func:`skill_files`;
* for strategies of your own: the :class:`StrategyContext` they receive, the
  :class:`Summarizer` wrapping your ``summarize`` callable, :func:`fill_template`,
  :func:`render_transcript`, and the tool-pair helpers that keep a cut history valid
  (:func:`compaction_cut`, :func:`pair_safe_tail`, :func:`repair_tool_pairs`);
* the default prompts (``DEFAULT_*``).
"""

from __future__ import annotations

from fsmemory.agent._aggregate import (
    DEFAULT_CONVERSATION_SUMMARY_PROMPT,
    DEFAULT_WORKING_MEMORY_PROMPT,
    AggregateStrategy,
    AggregateTrigger,
    ConversationSummaryAggregate,
    WorkingMemoryAggregate,
)
from fsmemory.agent._bootstrap import DefaultBootstrap, NoBootstrap, StoreBootstrap, skill_files
from fsmemory.agent._compact import (
    DEFAULT_COMPACT_PROMPT,
    DEFAULT_COMPACT_TRIGGER_EVENTS,
    CompactStrategy,
    CompactTrigger,
    SummarizeCompact,
    TailWindowCompact,
)
from fsmemory.agent._context import StrategyContext
from fsmemory.agent._pairs import compaction_cut, pair_safe_tail, repair_tool_pairs
from fsmemory.agent._summarize import Summarizer, fill_template, render_transcript

__all__ = [
    "DEFAULT_COMPACT_PROMPT",
    "DEFAULT_COMPACT_TRIGGER_EVENTS",
    "DEFAULT_CONVERSATION_SUMMARY_PROMPT",
    "DEFAULT_WORKING_MEMORY_PROMPT",
    "AggregateStrategy",
    "AggregateTrigger",
    "CompactStrategy",
    "CompactTrigger",
    "ConversationSummaryAggregate",
    "DefaultBootstrap",
    "NoBootstrap",
    "StoreBootstrap",
    "StrategyContext",
    "SummarizeCompact",
    "Summarizer",
    "TailWindowCompact",
    "WorkingMemoryAggregate",
    "compaction_cut",
    "fill_template",
    "pair_safe_tail",
    "render_transcript",
    "repair_tool_pairs",
    "skill_files",
]
