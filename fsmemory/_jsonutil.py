"""JSON through orjson, in one place."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["JSONDecodeError", "dumps", "dumps_line", "loads"]

JSONDecodeError = orjson.JSONDecodeError


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """Serialize to UTF-8 JSON bytes (keys kept in insertion order)."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(value, option=option)


def dumps_line(value: Any) -> bytes:
    """Serialize to one JSON line terminated by ``\\n`` (JSON never contains a raw newline)."""
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises :data:`JSONDecodeError` (a ``ValueError``) on bad input."""
    return orjson.loads(data)
