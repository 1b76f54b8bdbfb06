"""Returns users index are typed: ``stats()`` is a TypedDict whose keys and value types
match what it returns, ``knowledge_tools()`` a list of FunctionTool (and the user tools'
type). The ``assert_type`` lines are checked by mypy in ``make lint``."""

from __future__ import annotations

import typing
from typing import Any, assert_type

from fsmemory import KnowledgeMemory
from fsmemory.agent import knowledge_tools
from fsmemory.agent.tools import FunctionTool
from fsmemory.memory import MemoryStats


def test_stats_is_the_typed_dict_it_declares() -> None:
    km = KnowledgeMemory("memory://typed-stats")
    km.remember("Prefers dark mode", "preferences", persistent=True)
    km.remember("Lunch at noon", "context")
    stats = km.stats()
    assert_type(stats, MemoryStats)
    hints = typing.get_type_hints(MemoryStats)
    assert set(stats) == set(hints) == MemoryStats.__required_keys__
    for key, hint in hints.items():
        assert isinstance(stats[key], typing.get_origin(hint) or hint), key  # type: ignore[literal-required]
    assert stats["entries"] == 2 and stats["persistent_facts"] == 1
    assert stats["categories"] == ["context", "preferences"]
    entries: int = stats["entries"]
    assert entries == 2


def test_knowledge_tools_are_typed() -> None:
    km = KnowledgeMemory("memory://typed-tools")
    tools = knowledge_tools(km)
    assert_type(tools, list[FunctionTool])
    assert [t.name for t in tools] == ["remember", "recall"]
    assert all(isinstance(t, FunctionTool) for t in tools)
    mine: dict[str, Any] = {"name": "lookup", "parameters": {}}
    mixed = knowledge_tools(km, [mine])
    assert_type(mixed, list[FunctionTool | dict[str, Any]])
    assert mixed[-1] is mine and len(mixed) == 3
    replaced = knowledge_tools(km, [{"name": "recall"}])
    assert [getattr(t, "name", None) for t in replaced] == ["remember", None]
