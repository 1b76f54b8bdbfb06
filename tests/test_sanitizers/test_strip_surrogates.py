"""strip_surrogates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsmemory.sanitizers import strip_surrogates


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\ud800b", "ab"),
        ("a\udc00b", "ab"),
        ("\ud83d", ""),
        ("\ude00\ud83d", ""),
        ("x\ud83d\ud83d\ude00y", "x\U0001f600y"),  # lone high, then a valid pair
        ("\ud83d\ude00", "\U0001f600"),  # an unjoined pair is recombined
        ("\udbff\udfff", "\U0010ffff"),
    ],
)
def test_drops_lone_surrogates_and_joins_pairs(text: str, expected: str) -> None:
    assert strip_surrogates(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain ascii",
        "caf\u00e9 \u4e2d\u6587",
        "\U0001f600",
        "\U0001f44d\U0001f3fd",  # emoji with skin tone modifier
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # ZWJ family sequence
        "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag (VS16 + ZWJ)
        "\U0001f1fa\U0001f1f8",  # regional indicator flag
        "nul\x00 and controls \x01\x7f",
        "line\r\nbreaks\u2028",
    ],
)
def test_well_formed_text_is_unchanged(text: str) -> None:
    assert strip_surrogates(text) is text or strip_surrogates(text) == text


def test_rejects_non_str() -> None:
    with pytest.raises(TypeError):
        strip_surrogates(b"bytes")  # type: ignore[arg-type]


with_surrogates = st.lists(
    st.one_of(
        st.characters(),
        st.integers(min_value=0xD800, max_value=0xDFFF).map(chr),
        st.sampled_from(["\x00", "\r\n", "\u200d", "\U0001f600"]),
    )
).map("".join)


@settings(max_examples=500, deadline=None)
@given(with_surrogates)
def test_output_always_encodes_and_is_idempotent(text: str) -> None:
    out = strip_surrogates(text)
    out.encode("utf-8")
    assert strip_surrogates(out) == out


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_encodable_text_is_untouched(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return
    assert strip_surrogates(text) == text


@pytest.mark.parametrize("examples", [100, pytest.param(300, marks=pytest.mark.slow)])
def test_only_surrogates_are_removed(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(with_surrogates)
    def check(text: str) -> None:
        out = strip_surrogates(text)
        kept = [ch for ch in text if not 0xD800 <= ord(ch) <= 0xDFFF]
        # Every non-surrogate character survives, in order.
        it = iter(out)
        assert all(any(ch == o for o in it) for ch in kept)

    check()
