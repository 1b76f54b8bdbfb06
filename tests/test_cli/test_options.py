"""``-o KEY=VALUE`` parsing, shared by every subcommand (``fsmemory._cliopts``)."""

from __future__ import annotations

import argparse

import pytest

from fsmemory._cliopts import parse_option, parse_option_argument, parse_storage_options


def test_values_are_json_when_they_can_be() -> None:
    assert parse_storage_options(["anon=true", "n=3", "region=eu-west-1", "x="]) == {
        "anon": True,
        "n": 3,
        "region": "eu-west-1",
        "x": "",
    }


def test_a_dot_nests_one_level() -> None:
    assert parse_storage_options(
        ["client_kwargs.endpoint_url=http://h:1", "client_kwargs.region_name=us", "k.a.b=1"]
    ) == {"client_kwargs": {"endpoint_url": "http://h:1", "region_name": "us"}, "k": {"a.b": 1}}


def test_value_may_hold_equals_signs_and_pairs_are_accepted() -> None:
    assert parse_option("token=a=b") == ("token", "a=b")
    assert parse_storage_options([("a.b", 1), "c=2"]) == {"a": {"b": 1}, "c": 2}


@pytest.mark.parametrize(
    "items", [["novalue"], ["=1"], ["a=1", "a.b=2"], ["a.b=2", "a=1"], [".b=1"], ["a.=1"]]
)
def test_bad_items_are_value_errors(items: list[str]) -> None:
    with pytest.raises(ValueError, match="storage option"):
        parse_storage_options(items)


def test_argparse_type_is_a_usage_error() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
        parse_option_argument("oops")
