"""Agent harness (seed 003): knowledge, memory and history for any agent loop.

fsmemory is not an agent framework. Any loop -- a plain OpenAI or Anthropic client
loop, or a framework's -- calls a :class:`KnowledgeSession` around each model call and
each turn, and brings its own LLM as a callable for summaries. On top of the path store
(:mod:`fsmemory.store`) it provides:

* **events** -- typed, JSON-round-tripping records of what a loop produces
  (:class:`UserMessage`, :class:`ModelResponse`, :class:`ToolCall`,
  :class:`ToolResult`, :class:`ToolError`, :class:`CompactionSummary`,
  :class:`ObserverAlert`, :class:`Usage`) and converters to and from OpenAI and
  Anthropic messages;
* **assembly policies** shaping ``(prompts, events)`` per model call --
  injections (:class:`WorkingMemoryPolicy`, :class:`EpisodicMemoryPolicy`,
  :class:`KnowledgeMemoryPolicy`, :class:`AlertPolicy`) before reductions
  (:class:`ConversationPolicy`, :class:`SlidingWindowPolicy`,
  :class:`TokenBudgetPolicy`); reductions never orphan a tool result;
* **aggregation** into ``/memory/working.md`` and ``/memory/conversations/``,
  **compaction** of the history, and their triggers;
* **lifecycle events** (``*Started`` / ``*Completed`` / ``*Failed``,
  :class:`EventLogFailed`, :class:`HaltEvent`) for subscribers;
* the **event log** ``/log/<stream_id>.jsonl``, appended one line per event;
* SKILL.md **bootstrap**; the **tools** -- ``remember``/``recall``
  (:func:`knowledge_tools`), the ``knowledge`` tool and an :class:`AnthropicMemoryTool`
  handler for Anthropic's memory tool on any URL -- all with one schema vocabulary
  (:class:`ToolSchema`: Chat Completions, strict mode, the Responses API, Anthropic).

:class:`SyncKnowledgeSession` offers the same methods, blocking, for synchronous loops.

Where this does better than the seed's reference (ag2 1.2.1): the event log is
appended, not rewritten every turn; ``TokenBudgetPolicy`` counts the full text of
events and the injected prompts; ``compact=`` without a trigger gets a documented
default instead of crashing; braces in a custom aggregation prompt are literal; the
``knowledge`` tool cannot delete ``/`` or the log; SKILL.md seeding is create-only,
so concurrent sessions write each file once; working-memory merges are
compare-and-swap writes.
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
from fsmemory.agent._config import KnowledgeConfig
from fsmemory.agent._context import StrategyContext
from fsmemory.agent._convert import (
    from_anthropic_messages,
    from_anthropic_response,
    from_openai_messages,
    from_openai_response,
    to_anthropic_messages,
    to_openai_messages,
)
from fsmemory.agent._events import (
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
    Usage,
    UserMessage,
)
from fsmemory.agent._functions import (
    DEFAULT_RECALL_LIMIT,
    FunctionTool,
    knowledge_tools,
    make_recall_tool,
    make_remember_tool,
    parse_bool,
)
from fsmemory.agent._log import (
    check_stream_id,
    encode_events,
    load_history,
    log_path,
    parse_event_lines,
    read_event_log,
    replay_history,
    tail_event_log,
)
from fsmemory.agent._memory_tool import MEMORY_COMMANDS, AnthropicMemoryTool, MemoryToolResult
from fsmemory.agent._pairs import compaction_cut, pair_safe_tail, repair_tool_pairs
from fsmemory.agent._policies import (
    AlertPolicy,
    Assembly,
    AssemblyContext,
    AssemblyPolicy,
    ConversationPolicy,
    EpisodicMemoryPolicy,
    KnowledgeMemoryPolicy,
    PolicyKind,
    SlidingWindowPolicy,
    TokenBudgetPolicy,
    WorkingMemoryPolicy,
    assemble,
    validate_order,
)
from fsmemory.agent._schema import TOOL_FORMATS, ToolFormat, ToolSchema, strict_parameters
from fsmemory.agent._session import KnowledgeSession, Subscriber
from fsmemory.agent._summarize import Summarizer, fill_template, render_transcript
from fsmemory.agent._sync import SyncKnowledgeSession
from fsmemory.agent._tools import KNOWLEDGE_ACTIONS, KnowledgeTool

__all__ = [
    "DEFAULT_COMPACT_PROMPT",
    "DEFAULT_COMPACT_TRIGGER_EVENTS",
    "DEFAULT_CONVERSATION_SUMMARY_PROMPT",
    "DEFAULT_RECALL_LIMIT",
    "DEFAULT_WORKING_MEMORY_PROMPT",
    "KNOWLEDGE_ACTIONS",
    "MEMORY_COMMANDS",
    "TOOL_FORMATS",
    "AggregateStrategy",
    "AggregateTrigger",
    "AggregationCompleted",
    "AggregationFailed",
    "AggregationStarted",
    "AlertPolicy",
    "AnthropicMemoryTool",
    "Assembly",
    "AssemblyContext",
    "AssemblyPolicy",
    "CompactStrategy",
    "CompactTrigger",
    "CompactionCompleted",
    "CompactionFailed",
    "CompactionStarted",
    "CompactionSummary",
    "ConversationPolicy",
    "ConversationSummaryAggregate",
    "DefaultBootstrap",
    "EpisodicMemoryPolicy",
    "Event",
    "EventLogFailed",
    "FunctionTool",
    "HaltEvent",
    "KnowledgeConfig",
    "KnowledgeMemoryPolicy",
    "KnowledgeSession",
    "KnowledgeTool",
    "MemoryToolResult",
    "ModelResponse",
    "NoBootstrap",
    "ObserverAlert",
    "PolicyKind",
    "Severity",
    "SlidingWindowPolicy",
    "StoreBootstrap",
    "StrategyContext",
    "Subscriber",
    "SummarizeCompact",
    "Summarizer",
    "SyncKnowledgeSession",
    "TailWindowCompact",
    "TokenBudgetPolicy",
    "ToolCall",
    "ToolError",
    "ToolFormat",
    "ToolResult",
    "ToolSchema",
    "UnknownEvent",
    "Usage",
    "UserMessage",
    "WorkingMemoryAggregate",
    "WorkingMemoryPolicy",
    "assemble",
    "check_stream_id",
    "compaction_cut",
    "encode_events",
    "fill_template",
    "from_anthropic_messages",
    "from_anthropic_response",
    "from_openai_messages",
    "from_openai_response",
    "knowledge_tools",
    "load_history",
    "log_path",
    "make_recall_tool",
    "make_remember_tool",
    "pair_safe_tail",
    "parse_bool",
    "parse_event_lines",
    "read_event_log",
    "render_transcript",
    "repair_tool_pairs",
    "replay_history",
    "skill_files",
    "strict_parameters",
    "tail_event_log",
    "to_anthropic_messages",
    "to_openai_messages",
    "validate_order",
]
