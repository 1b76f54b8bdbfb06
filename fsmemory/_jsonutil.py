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


# Characters JSON allows raw inside strings but that line splitters such as Python's
# str.splitlines() treat as line breaks: escape them so one record is one line for every
# reader. Their UTF-8 lead bytes never occur inside other characters' encodings.
_LINE_BREAKERS = (
    (b"\xc2\x85", b"\\u0085"),
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
)


def dumps_line(value: Any) -> bytes:
    """Serialize to one JSON line terminated by ``\\n``.

    No character in the result splits a line for any common reader: JSON escapes
    control characters, and U+0085, U+2028 and U+2029 are escaped here as well.
    """
    data = orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    if b"\xc2\x85" in data or b"\xe2\x80" in data:
        for raw, escaped in _LINE_BREAKERS:
            data = data.replace(raw, escaped)
    return data


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises :data:`JSONDecodeError` (a ``ValueError``) on bad input."""
    return orjson.loads(data)
