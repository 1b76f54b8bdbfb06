"""One tool-schema vocabulary for every tool fsmemory offers a model.

Each tool (``remember``/``recall``, ``knowledge``, the memory-tool handler) has a name,
a description and a JSON schema of its arguments, :meth:`ToolSchema.parameters_schema`.
From those three, :class:`ToolSchema` builds the ``tools=[...]`` entry of every API:

======================================  =================================================
``openai_schema()``                     OpenAI Chat Completions (``{"type": "function",
                                        "function": {...}}``)
``openai_schema(strict=True)``          the same with ``"strict": true``: every property
                                        required, optional ones nullable, no extra keys
``responses_schema(strict=...)``        OpenAI Responses API (``{"type": "function",
                                        "name": ..., "parameters": ..., "strict": ...}``)
``anthropic_schema()``                  Anthropic Messages (``input_schema``)
``schema(format)``                      any of the above by name (:data:`TOOL_FORMATS`)
======================================  =================================================

With a strict schema the model sends ``null`` for an optional argument it does not
want to set; every fsmemory tool reads ``null`` as "use the default".
"""

from __future__ import annotations

import copy
from typing import Any, Literal, get_args

from fsmemory import _jsonutil

__all__ = ["TOOL_FORMATS", "ToolFormat", "ToolSchema", "strict_parameters"]

ToolFormat = Literal["openai", "openai-strict", "responses", "responses-strict", "anthropic"]

#: The names :meth:`ToolSchema.schema` accepts.
TOOL_FORMATS: tuple[ToolFormat, ...] = get_args(ToolFormat)

# Keywords outside the subset every strict-mode provider accepts; their meaning moves
# into the description (a default) or is checked by the tool itself (bounds).
_UNSUPPORTED_IN_STRICT = ("default", "minItems", "maxItems", "minimum", "maximum")


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    kind = prop.get("type")
    if isinstance(kind, str):
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        prop["type"] = [*kind, "null"]
    if "enum" in prop and None not in prop["enum"]:
        prop["enum"] = [*prop["enum"], None]
    return prop


def strict_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """The strict-mode form of an object schema (OpenAI ``strict: true``).

    Every property becomes required; one that was optional becomes nullable (``null``
    means "use the default", and the default is named in its description);
    ``additionalProperties`` is false; ``default`` and numeric/length bounds are left
    out. The input is not changed.

    Args:
        schema: a JSON schema of ``"type": "object"`` with ``properties``.

    Returns:
        A new schema.
    """
    required = set(schema.get("required", ()))
    properties: dict[str, Any] = {}
    for name, original in schema.get("properties", {}).items():
        prop = copy.deepcopy(original)
        default = prop.get("default", None)
        for keyword in _UNSUPPORTED_IN_STRICT:
            prop.pop(keyword, None)
        if name not in required:
            prop = _nullable(prop)
            note = "Null for the default"
            if default is not None:
                note += f" ({_jsonutil.dumps(default).decode()})"
            text = prop.get("description", "").rstrip()
            prop["description"] = f"{text} {note}." if text else f"{note}."
        properties[name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


class ToolSchema:
    """Mixin: the ``tools=[...]`` entries of one tool for each provider API.

    A subclass sets ``name`` and ``description`` and implements
    :meth:`parameters_schema`.
    """

    name: str
    description: str

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments (an object schema)."""
        raise NotImplementedError

    def _parameters(self, strict: bool) -> dict[str, Any]:
        schema = self.parameters_schema()
        return strict_parameters(schema) if strict else schema

    def openai_schema(self, *, strict: bool = False) -> dict[str, Any]:
        """The tool definition for OpenAI Chat Completions ``tools=[...]``.

        Args:
            strict: add ``"strict": true`` and the strict form of the parameters
                (:func:`strict_parameters`).
        """
        function: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self._parameters(strict),
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def responses_schema(self, *, strict: bool = False) -> dict[str, Any]:
        """The tool definition for the OpenAI Responses API ``tools=[...]``.

        ``strict`` is always written out, since the Responses API treats a missing one
        as true.
        """
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self._parameters(strict),
            "strict": strict,
        }

    def anthropic_schema(self) -> dict[str, Any]:
        """The tool definition for Anthropic Messages ``tools=[...]``."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters_schema(),
        }

    def schema(self, format: ToolFormat = "openai") -> dict[str, Any]:
        """The tool definition in ``format``, one of :data:`TOOL_FORMATS`.

        Raises:
            ValueError: an unknown format.
        """
        if format == "openai":
            return self.openai_schema()
        if format == "openai-strict":
            return self.openai_schema(strict=True)
        if format == "responses":
            return self.responses_schema()
        if format == "responses-strict":
            return self.responses_schema(strict=True)
        if format == "anthropic":
            return self.anthropic_schema()
        raise ValueError(f"format must be one of {', '.join(TOOL_FORMATS)}, not {format!r}")
