"""One schema vocabulary for every tool: Chat Completions, strict mode, Responses, Anthropic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.agent import (
    AnthropicMemoryTool,
    KnowledgeConfig,
    KnowledgeSession,
    KnowledgeTool,
    knowledge_tools,
)
from fsmemory.agent.tools import TOOL_FORMATS, ToolSchema, strict_parameters
from fsmemory.store import MemoryKnowledgeStore


def every_tool(tmp_path: Path) -> list[ToolSchema]:
    km = KnowledgeMemory(tmp_path / "m")
    store = MemoryKnowledgeStore()
    return [*knowledge_tools(km), KnowledgeTool(store), AnthropicMemoryTool(store)]


def check_strict(schema: dict[str, Any]) -> None:
    """What OpenAI's strict mode demands of an object schema."""
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == list(schema["properties"])
    for prop in schema["properties"].values():
        assert not {"default", "minItems", "maxItems", "minimum", "maximum"} & set(prop)


def test_every_tool_speaks_every_format(tmp_path: Path) -> None:
    for tool in every_tool(tmp_path):
        params = tool.parameters_schema()
        chat = tool.schema("openai")
        assert chat == tool.openai_schema()
        assert chat == {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": params},
        }
        strict = tool.schema("openai-strict")["function"]
        assert strict["strict"] is True and strict["name"] == tool.name
        check_strict(strict["parameters"])
        responses = tool.schema("responses")
        assert responses == {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": params,
            "strict": False,
        }
        strict_responses = tool.schema("responses-strict")
        assert strict_responses["strict"] is True
        assert strict_responses["parameters"] == strict["parameters"]
        with pytest.raises(ValueError, match="format must be one of"):
            tool.schema("gemini")  # type: ignore[arg-type]
    assert set(TOOL_FORMATS) == {
        "openai",
        "openai-strict",
        "responses",
        "responses-strict",
        "anthropic",
    }


def test_anthropic_schemas(tmp_path: Path) -> None:
    remember, recall, knowledge, memory = every_tool(tmp_path)
    for tool in (remember, recall, knowledge):
        assert tool.anthropic_schema() == {
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.parameters_schema(),
        }
    # Claude gets its built-in memory tool; other providers the function form of it.
    assert memory.anthropic_schema() == {"type": "memory_20250818", "name": "memory"}
    assert memory.openai_schema()["function"]["parameters"] == AnthropicMemoryTool.input_schema()


def test_recall_limit_is_an_integer(tmp_path: Path) -> None:
    recall = knowledge_tools(KnowledgeMemory(tmp_path / "m"))[1]
    limit = recall.parameters_schema()["properties"]["limit"]
    assert limit["type"] == "integer" and limit["default"] == 5
    assert recall.openai_schema(strict=True)["function"]["parameters"]["properties"]["limit"][
        "type"
    ] == ["integer", "null"]


def test_strict_form_makes_optionals_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "Query."},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "n": {"type": "integer", "minimum": 1, "default": 5, "description": "How many."},
            "r": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        },
        "required": ["q"],
    }
    before = repr(schema)
    assert strict_parameters(schema) == {
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "Query."},
            "mode": {
                "type": ["string", "null"],
                "enum": ["a", "b", None],
                "description": 'Null for the default ("a").',
            },
            "n": {
                "type": ["integer", "null"],
                "description": "How many. Null for the default (5).",
            },
            "r": {
                "type": ["array", "null"],
                "items": {"type": "integer"},
                "description": "Null for the default.",
            },
        },
        "required": ["q", "mode", "n", "r"],
        "additionalProperties": False,
    }
    assert repr(schema) == before  # the input is untouched


async def test_tools_read_null_as_the_default(tmp_path: Path) -> None:
    """A strict schema makes the model send null for every argument it leaves out."""
    km = KnowledgeMemory(tmp_path / "m")
    remember, recall = knowledge_tools(km)
    assert remember(content="User likes tea", category=None, persistent=None) == (
        "Saved to memory under [general]."
    )
    assert recall(query="tea", limit=None) == "Found 1 memory:\n1. [general] User likes tea"
    assert recall(query="tea", limit=2) == recall(query="tea", limit="2") == recall(query="tea")
    store = MemoryKnowledgeStore()
    knowledge = KnowledgeTool(store)
    assert await knowledge.call({"action": "list", "path": "/", "content": None}) == "/ is empty."
    memory = AnthropicMemoryTool(store)
    nulls = dict.fromkeys(AnthropicMemoryTool.input_schema()["properties"])
    created = await memory.execute(
        {**nulls, "command": "create", "path": "/memories/a.md", "file_text": "x"}
    )
    assert not created.is_error, created.content
    viewed = await memory.execute({**nulls, "command": "view", "path": "/memories/a.md"})
    assert viewed.content.endswith("1\tx")


def test_session_tools_in_every_format() -> None:
    session = KnowledgeSession(KnowledgeConfig(store=MemoryKnowledgeStore()))
    for format in TOOL_FORMATS:
        assert session.tools(format) == [session.knowledge_tool.schema(format)]  # type: ignore[union-attr]
    quiet = KnowledgeSession(KnowledgeConfig(store=MemoryKnowledgeStore(), expose_tool=False))
    assert quiet.tools("responses-strict") == []
    with pytest.raises(ValueError):
        quiet.tools("nope")  # type: ignore[arg-type]
