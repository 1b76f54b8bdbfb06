"""Store path normalization and matching."""

from __future__ import annotations

import pytest

from fsmemory.errors import InvalidPathError
from fsmemory.store import normalize_path
from fsmemory.store._paths import affects, split
from fsmemory.testing.store_conformance import HOSTILE_PATHS, expected_range


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("a", "/a"),
        ("/a", "/a"),
        ("/a/", "/a"),
        ("//a//b//", "/a/b"),
        ("", "/"),
        ("/", "/"),
        ("///", "/"),
        ("a b/é.md", "/a b/é.md"),
    ],
)
def test_normalize(raw: str, norm: str) -> None:
    assert normalize_path(raw) == norm
    assert split(raw) == (norm, norm[1:])


@pytest.mark.parametrize("bad", HOSTILE_PATHS)
def test_hostile_paths_raise(bad: str) -> None:
    with pytest.raises(InvalidPathError):
        normalize_path(bad)


def test_non_string_raises() -> None:
    with pytest.raises(InvalidPathError):
        normalize_path(b"/a")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("watched", "changed", "expected"),
    [
        ("/", "/x", True),
        ("/a", "/a", True),
        ("/a", "/a/b", True),
        ("/a/b", "/a", True),  # deleting a parent directory
        ("/a", "/ab", False),
        ("/ab", "/a", False),
        ("/a/b", "/a/c", False),
        ("/a/b", "/", True),
    ],
)
def test_affects(watched: str, changed: str, expected: bool) -> None:
    assert affects(watched, changed) is expected


def test_expected_range_oracle() -> None:
    data = "aé€".encode()
    assert expected_range(data, 0, None) == "aé€"
    assert expected_range(data, 2, None) == "€"  # inside é: é starts at 1
    assert expected_range(data, 1, 2) == "é"
    assert expected_range(data, 0, 0) == ""
