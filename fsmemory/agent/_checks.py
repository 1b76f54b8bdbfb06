"""The argument check the harness's settings share: a count of at least one."""

from __future__ import annotations

__all__ = ["check_count", "check_optional_count"]


def check_count(name: str, value: object) -> int:
    """``value`` when it is an int >= 1 (not a bool).

    Raises:
        ValueError: naming ``name``, for anything else.
    """
    return _checked(name, value, "")


def check_optional_count(name: str, value: object) -> int | None:
    """``value`` when it is None or an int >= 1 (not a bool).

    Raises:
        ValueError: naming ``name``, for anything else.
    """
    return None if value is None else _checked(name, value, " or None")


def _checked(name: str, value: object, alternative: str) -> int:
    # a bool is an int to Python, never a count to a caller
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1{alternative}")
    return value
