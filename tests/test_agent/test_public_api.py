"""fsmemory.agent's public face: the names a loop types, sub-modules for the rest."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import fsmemory.agent as agent

SUBMODULES = ["events", "policies", "strategies", "tools"]

# fsmemory.agent.__all__ before it was cut to the entry points
OLD_ALL = set(
    [
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
)


def test_the_top_level_is_the_entry_points() -> None:
    assert len(agent.__all__) <= 30
    for name in (
        "KnowledgeSession",
        "SyncKnowledgeSession",
        "KnowledgeConfig",
        "Assembly",
        "WorkingMemoryPolicy",
        "knowledge_tools",
        "AnthropicMemoryTool",
        "from_openai_response",
        "to_openai_responses_input",
        "from_anthropic_response",
    ):
        assert name in agent.__all__
    for name in ("ToolCall", "CompactionStarted", "SummarizeCompact", "AssemblyContext"):
        assert name not in agent.__all__


@pytest.mark.parametrize("sub", SUBMODULES)
def test_each_submodule_exports_documented_names(sub: str) -> None:
    module = importlib.import_module(f"fsmemory.agent.{sub}")
    assert module.__doc__
    assert module.__all__ == sorted(
        module.__all__, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    for name in module.__all__:
        getattr(module, name)


def test_every_old_name_has_one_public_home() -> None:
    homes: dict[str, str] = {}
    for sub in SUBMODULES:
        module = importlib.import_module(f"fsmemory.agent.{sub}")
        for name in module.__all__:
            if name not in agent.__all__:
                assert name not in homes, (name, homes.get(name), sub)
                homes[name] = sub
    # the 88 names of the old __all__ each have a public home and still import from here
    assert set(homes) | set(agent.__all__) >= OLD_ALL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in OLD_ALL:
            home = agent.__name__ if name in agent.__all__ else f"fsmemory.agent.{homes[name]}"
            assert getattr(agent, name) is getattr(importlib.import_module(home), name)


def test_moved_names_still_import_with_a_warning() -> None:
    from fsmemory.agent.events import ToolCall
    from fsmemory.agent.strategies import SummarizeCompact

    with pytest.warns(DeprecationWarning, match=r"fsmemory\.agent\.events\.ToolCall"):
        from fsmemory.agent import ToolCall as old_call  # type: ignore[attr-defined]
    assert old_call is ToolCall
    with pytest.warns(DeprecationWarning, match="strategies"):
        assert agent.SummarizeCompact is SummarizeCompact  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning):
        assert agent.Subscriber is importlib.import_module("fsmemory.agent.events").Subscriber  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        agent.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    assert "ToolCall" in dir(agent)


def test_entry_points_import_without_a_warning() -> None:
    """The names a loop types, and star-imports, never warn."""
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from fsmemory.agent import *\n"
        "from fsmemory.agent.events import *\n"
        "from fsmemory.agent.strategies import *\n"
        "from fsmemory.agent.policies import *\n"
        "from fsmemory.agent.tools import *\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from fsmemory.agent import KnowledgeSession, to_openai_responses_input  # noqa: F401


def _private_imports(path: Path) -> list[str]:
    """Modules imported by ``path`` that are private modules of fsmemory.memory or
    fsmemory.agent (``fsmemory.memory._rank``, ``fsmemory.agent._functions``, ...)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] in (["fsmemory", "memory"], ["fsmemory", "agent"]) and any(
                p.startswith("_") for p in parts[2:3]
            ):
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_integrations_import_no_private_module_of_memory_or_agent() -> None:
    """Integrations are users of the library: they go through its public modules."""
    package = Path(importlib.import_module("fsmemory.integrations").__file__ or "").parent
    files = sorted(package.glob("*.py"))
    assert len(files) >= 3
    assert [hit for f in files for hit in _private_imports(f)] == []
