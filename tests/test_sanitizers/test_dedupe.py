"""dedupe_against."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsmemory.errors import InvalidInputError
from fsmemory.sanitizers import dedupe_against


def test_rejects_exact_and_near_duplicates() -> None:
    existing = ["User prefers dark mode", "Timezone is PST"]
    hook = dedupe_against(lambda: existing)
    assert hook("User prefers dark mode") is None
    assert hook("User prefers dark mode.") is None
    assert hook("Favourite language is Python") == "Favourite language is Python"


def test_returns_the_same_text_object_when_accepted() -> None:
    text = "something new entirely"
    assert dedupe_against(lambda: ["old"])(text) is text


def test_fetcher_is_called_on_every_invocation() -> None:
    store: list[str] = []
    calls = 0

    def fetch() -> list[str]:
        nonlocal calls
        calls += 1
        return list(store)

    hook = dedupe_against(fetch, threshold=0.9)
    assert hook("first fact") == "first fact"
    store.append("first fact")
    assert hook("first fact") is None
    store.clear()
    assert hook("first fact") == "first fact"
    assert calls == 3


def test_fetcher_may_return_any_iterable() -> None:
    hook = dedupe_against(lambda: (t for t in ["a fact", "a fact"]))
    assert hook("a fact") is None
    assert hook("unrelated") == "unrelated"


def test_threshold_edges() -> None:
    assert dedupe_against(lambda: ["zzz"], threshold=0.0)("abc") is None
    assert dedupe_against(lambda: [], threshold=0.0)("abc") == "abc"
    only_exact = dedupe_against(lambda: ["abc", "abcd"], threshold=1.0)
    assert only_exact("abc") is None
    assert only_exact("abce") == "abce"
    assert dedupe_against(lambda: [""], threshold=1.0)("") is None


@pytest.mark.parametrize("bad", [-1, 1.01, float("nan")])
def test_invalid_threshold_fails_at_construction(bad: float) -> None:
    with pytest.raises(InvalidInputError):
        dedupe_against(lambda: [], threshold=bad)


def test_hook_is_named() -> None:
    assert dedupe_against(lambda: []).__name__ == "dedupe_against"


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="ab c", max_size=25),
    st.lists(st.text(alphabet="ab c", max_size=25), max_size=4),
    st.sampled_from([0.5, 0.8, 0.9, 1.0]),
)
def test_rejects_whatever_a_difflib_check_rejects(
    text: str, existing: list[str], threshold: float
) -> None:
    difflib_rejects = any(
        difflib.SequenceMatcher(None, text, other, autojunk=False).ratio() >= threshold
        for other in existing
    )
    result = dedupe_against(lambda: existing, threshold)(text)
    if difflib_rejects:
        assert result is None
    else:
        assert result is None or result == text
