"""The count settings of the harness (episodes, events, tokens, a compaction's target,
a CAS loop's attempts) share one check: an int of at least one, never a bool."""

from __future__ import annotations

import pytest

from fsmemory.agent._checks import check_count, check_optional_count


@pytest.mark.parametrize("value", [0, -1, True, False, 2.0, "3", None])
def test_a_count_is_an_int_of_at_least_one(value: object) -> None:
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        check_count("n", value)


@pytest.mark.parametrize("value", [0, True, 1.5])
def test_an_optional_count_is_none_or_a_count(value: object) -> None:
    with pytest.raises(ValueError, match="n must be an int >= 1 or None"):
        check_optional_count("n", value)


def test_counts_pass_through() -> None:
    assert check_count("n", 1) == 1
    assert check_count("n", 10**9) == 10**9
    assert check_optional_count("n", None) is None
    assert check_optional_count("n", 3) == 3
