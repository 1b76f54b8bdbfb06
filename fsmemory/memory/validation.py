"""Validation of what callers hand to ``remember()``: bad input gets a clear error."""

from __future__ import annotations

import math
from typing import Any

from fsmemory import _jsonutil
from fsmemory.errors import ContentTooLargeError, InvalidInputError

__all__ = [
    "DEFAULT_MAX_CONTENT_BYTES",
    "MAX_CATEGORY_CHARS",
    "check_category",
    "check_content",
    "check_importance",
    "check_metadata",
    "check_ttl_days",
]

DEFAULT_MAX_CONTENT_BYTES = 1 << 20
MAX_CATEGORY_CHARS = 64
MAX_METADATA_BYTES = 64 * 1024

# Letters and digits of any script, plus a few separators that cannot form markdown or
# prompt structure. Anything else (brackets, '#', '<', '|', backticks, control
# characters, line breaks) is rejected, because the category is rendered into
# '## <category>' headers, '(<category>)' and '[<category>]' in prompts.
_CATEGORY_PUNCT = set(" _-./:@+&',")


def check_content(content: object, max_bytes: int = DEFAULT_MAX_CONTENT_BYTES) -> str:
    """Return ``content`` if it is storable text.

    Raises:
        InvalidInputError: not a str, empty/whitespace only, or not valid Unicode
            (lone surrogates).
        ContentTooLargeError: larger than ``max_bytes`` in UTF-8.
    """
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be a str, not {type(content).__name__}")
    if not content.strip():
        raise InvalidInputError("content is empty")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            "content is not valid Unicode text (lone surrogate); "
            "clean it with fsmemory.sanitizers.strip_surrogates"
        ) from exc
    if size > max_bytes:
        raise ContentTooLargeError(f"content is {size} bytes; the limit is {max_bytes}")
    return content


def check_category(category: object) -> str:
    """Return the category with surrounding spaces removed and inner runs collapsed.

    Raises:
        InvalidInputError: not a str, empty, multi-line, longer than 64 characters, or
            containing characters other than letters, digits and `` _-./:@+&',``.
    """
    if not isinstance(category, str):
        raise InvalidInputError(f"category must be a str, not {type(category).__name__}")
    if "\n" in category or "\r" in category:
        raise InvalidInputError("category must be a single line")
    cleaned = " ".join(category.split())  # runs of whitespace as one space
    if not cleaned:
        raise InvalidInputError("category is empty")
    if len(cleaned) > MAX_CATEGORY_CHARS:
        raise InvalidInputError(f"category is longer than {MAX_CATEGORY_CHARS} characters")
    for ch in cleaned:
        if not (ch.isalnum() or ch in _CATEGORY_PUNCT):
            raise InvalidInputError(
                f"category {category!r} contains {ch!r}; use letters, digits and ' _-./:@+&',"
            )
    try:
        cleaned.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError("category is not valid Unicode text") from exc
    return cleaned


def check_importance(importance: object) -> float:
    """Return importance as a float in [0, 1].

    Raises:
        InvalidInputError: not a number, NaN, or outside 0.0 - 1.0.
    """
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        raise InvalidInputError("importance must be a number between 0.0 and 1.0")
    value = float(importance)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"importance must be between 0.0 and 1.0, got {importance!r}")
    return value


def check_ttl_days(ttl_days: object) -> float | None:
    """Return ttl_days (None = never expires).

    Raises:
        InvalidInputError: negative, NaN, infinite or not a number.
    """
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, int | float):
        raise InvalidInputError("ttl_days must be a non-negative number or None")
    value = float(ttl_days)
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise InvalidInputError(f"ttl_days must be >= 0, got {ttl_days!r}")
    return value


def check_metadata(metadata: object) -> dict[str, Any]:
    """Return metadata as a JSON-compatible dict (``{}`` for None).

    Raises:
        InvalidInputError: not a dict with string keys, not JSON-serializable, or
            larger than 64 KiB as JSON.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError("metadata must be a dict")
    try:
        encoded = _jsonutil.dumps(metadata)
    except TypeError as exc:
        raise InvalidInputError(f"metadata is not JSON-serializable: {exc}") from exc
    if len(encoded) > MAX_METADATA_BYTES:
        raise InvalidInputError(f"metadata is larger than {MAX_METADATA_BYTES} bytes as JSON")
    result: dict[str, Any] = _jsonutil.loads(encoded)
    return result


def check_positive_int(name: str, value: object) -> None:
    """Raise :class:`InvalidInputError` unless ``value`` is an int >= 1 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be a positive int, got {value!r}")


def check_non_negative_int(name: str, value: object) -> None:
    """Raise :class:`InvalidInputError` unless ``value`` is an int >= 0 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative int, got {value!r}")
