"""run_pre_save and the composed sanitizer chain."""

from __future__ import annotations

import functools
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsmemory.sanitizers import (
    PreSaveHook,
    dedupe_against,
    defang_delimiters,
    run_pre_save,
    strip_surrogates,
)


def test_no_hooks_returns_text_unchanged() -> None:
    assert run_pre_save(None, "x") == ("x", None)
    assert run_pre_save([], "x") == ("x", None)
    assert run_pre_save((), "") == ("", None)


def test_single_callable() -> None:
    assert run_pre_save(str.upper, "abc") == ("ABC", None)


def test_hooks_run_in_order_on_each_others_output() -> None:
    calls: list[str] = []

    def first(text: str) -> str:
        calls.append(f"first:{text}")
        return text + "1"

    def second(text: str) -> str:
        calls.append(f"second:{text}")
        return text + "2"

    assert run_pre_save([first, second], "x") == ("x12", None)
    assert calls == ["first:x", "second:x1"]
    calls.clear()
    assert run_pre_save((second, first), "x") == ("x21", None)
    assert calls == ["second:x", "first:x2"]


def test_rejection_short_circuits_and_names_the_hook(caplog: pytest.LogCaptureFixture) -> None:
    after: list[str] = []

    def reject_everything(text: str) -> str | None:
        return None

    def never_called(text: str) -> str:
        after.append(text)
        return text

    with caplog.at_level(logging.DEBUG, logger="fsmemory.sanitizers"):
        result = run_pre_save([str.strip, reject_everything, never_called], " x ")
    assert result == (None, "reject_everything")
    assert after == []
    assert any("reject_everything" in record.getMessage() for record in caplog.records)
    assert all(record.levelno == logging.DEBUG for record in caplog.records)


def test_hook_names() -> None:
    seen = ["dup"]
    assert run_pre_save([dedupe_against(lambda: seen)], "dup") == (None, "dedupe_against")
    assert run_pre_save(lambda text: None, "x") == (None, "<lambda>")

    def drop(text: str, *, marker: str) -> str | None:
        return None if marker in text else text

    assert run_pre_save(functools.partial(drop, marker="x"), "x") == (None, "partial(drop)")

    class Rejector:
        def __call__(self, text: str) -> str | None:
            return None

    assert run_pre_save(Rejector(), "x") == (None, "Rejector")


def test_empty_string_result_is_not_a_rejection() -> None:
    assert run_pre_save([lambda text: "", str.upper], "x") == ("", None)


def test_bad_hooks_raise_type_error() -> None:
    with pytest.raises(TypeError, match="not callable"):
        run_pre_save(["not a hook"], "x")  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected str or None"):
        run_pre_save(lambda text: 3, "x")  # type: ignore[arg-type,return-value]


def test_hook_exceptions_propagate() -> None:
    def boom(text: str) -> str:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_pre_save([boom], "x")


def test_generator_of_hooks() -> None:
    hooks: list[PreSaveHook] = [str.lower, str.strip]
    assert run_pre_save((h for h in hooks), "  AB ") == ("ab", None)


chain_text = st.lists(
    st.one_of(
        st.characters(),
        st.integers(min_value=0xD800, max_value=0xDFFF).map(chr),
        st.sampled_from(
            ["\x00", "\r\n", "\r", "\n", "---", " ", "```", "<|im_start|>", "[INST]", "User:"]
        ),
    ),
    max_size=60,
).map("".join)


@pytest.mark.parametrize("examples", [100, pytest.param(400, marks=pytest.mark.slow)])
def test_composed_chain_is_idempotent_and_encodable(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(chain_text)
    def check(text: str) -> None:
        chain = [strip_surrogates, defang_delimiters]
        once, rejected = run_pre_save(chain, text)
        assert rejected is None and once is not None
        once.encode("utf-8")
        twice, _ = run_pre_save(chain, once)
        assert twice == once

    check()


def test_stripping_after_defanging_can_expose_a_marker() -> None:
    # Why the documented order is strip_surrogates first: a lone surrogate in front
    # of a fence hides it from defang_delimiters, and removing it afterwards
    # re-exposes it.
    text = "\ud800```"
    assert run_pre_save([defang_delimiters, strip_surrogates], text)[0] == "```"
    assert run_pre_save([strip_surrogates, defang_delimiters], text)[0] == "\u02cb" * 3
