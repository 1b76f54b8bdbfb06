"""The public surface of fsmemory.sanitizers."""

from __future__ import annotations

import inspect

import fsmemory.sanitizers as sanitizers


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(sanitizers).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert set(sanitizers.__all__) == public
    assert sanitizers.__all__ == sorted(sanitizers.__all__)


def test_every_public_name_is_documented() -> None:
    for name in sanitizers.__all__:
        if name == "PreSaveHook":
            continue  # a type alias; documented in the package docstring
        doc = inspect.getdoc(getattr(sanitizers, name))
        assert doc and len(doc) > 40, name


def test_known_limitations_are_documented() -> None:
    assert "Known limitations" in (sanitizers.defang_delimiters.__doc__ or "")
