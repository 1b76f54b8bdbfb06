"""The package keeps its architecture: the layer table, curated ``__all__``, no provider SDK.

``LAYERS`` below is the layer table of the design notes ("Layers (imports point downward
only)"), arrow for arrow, plus the two arrows it leaves undrawn: every layer may use the
error tree and the JSON helper, and Storage uses Plugins (``fs/redis.py`` registers the
``redis://`` filesystem). A new folder under ``fsmemory/`` must be added here, which is
the moment to decide where it sits.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import sys
import types
from pathlib import Path

import pytest

import fsmemory

PACKAGE = Path(fsmemory.__file__).parent

BASE = frozenset({"errors", "_jsonutil", "_lazy", "_log", "_records", "_speedups"})  # every layer

#: layer -> the layers it may import (besides itself and BASE).
LAYERS: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "_jsonutil": frozenset(),
    "_lazy": frozenset(),  # lazy package exports
    "_log": frozenset(),  # loggers that import logging on first use
    "_records": frozenset(),  # NamedTuple records defined without compiling annotations
    "_speedups": frozenset(),  # the one home of private dependency APIs
    "implementations": frozenset(),  # Plugins: our fsspec filesystems
    "sanitizers": frozenset(),  # pre-save hooks, run by memory/
    "fs": frozenset({"implementations"}),  # Storage
    "store": frozenset({"fs"}),
    "snapshot": frozenset({"fs"}),
    "memory": frozenset({"fs", "snapshot", "sanitizers"}),
    "agent": frozenset({"store", "memory"}),
    "export": frozenset({"fs", "memory"}),
    # adapters (MCP, LangGraph); the LangGraph store writes through storage roots and
    # the MCP server's --defang runs the pre-save sanitizers
    "integrations": frozenset({"fs", "memory", "store", "agent", "sanitizers"}),
    # shipped test support (conformance suites, services, fault injection)
    "testing": frozenset({"fs", "store", "memory", "snapshot", "implementations", "sanitizers"}),
}

#: The Face: the top-level package, the command line, the tool re-exports and private
#: face-level helpers (``_cli*`` modules, e.g. option parsing). They may import anything
#: below; nothing below imports them.
FACE = frozenset({"__init__", "__main__", "cli", "tools"})


def is_face(layer: str) -> bool:
    return layer in FACE or layer.startswith("_cli")


def layer_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_layers(path: Path, root: Path = PACKAGE) -> set[str]:
    """The fsmemory layers a module imports, lazy imports inside functions included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    package = ".".join(("fsmemory", *path.relative_to(root).parent.parts))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names = [".".join([*base, *([node.module] if node.module else [])])]
            elif node.module == "fsmemory":
                names = [f"fsmemory.{alias.name}" for alias in node.names]
            elif node.module:
                names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "fsmemory" and len(parts) > 1:
                found.add(parts[1])
    return found


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_layer_is_in_the_table() -> None:
    layers = {layer_of(p) for p in modules()}
    unknown = {layer for layer in layers if layer not in LAYERS and not is_face(layer)}
    assert unknown == set(), "add these to LAYERS (or make them face-level)"


def test_imports_point_downward() -> None:
    problems = []
    for path in modules():
        layer = layer_of(path)
        if is_face(layer):
            continue
        allowed = LAYERS[layer] | BASE | {layer}
        for target in sorted(imported_layers(path) - allowed):
            problems.append(f"{path.relative_to(PACKAGE)} imports fsmemory.{target}")
    assert problems == []


def test_nothing_below_imports_the_face() -> None:
    for path in modules():
        if not is_face(layer_of(path)):
            face = {t for t in imported_layers(path) if is_face(t)}
            assert face == set(), path


def test_the_table_has_no_cycles() -> None:
    def reach(layer: str, seen: frozenset[str]) -> None:
        for target in LAYERS[layer]:
            assert target not in seen, f"cycle through {target}"
            reach(target, seen | {target})

    for layer in LAYERS:
        reach(layer, frozenset({layer}))


def test_the_checker_sees_every_import_form(tmp_path: Path) -> None:
    """The AST walk finds the import forms a module may use (so the test can fail)."""
    module = tmp_path / "fsmemory" / "store" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from fsmemory import memory\n"
        "def f():\n    import fsmemory.agent._tools\n    from ..export import x\n"
    )
    assert imported_layers(module, tmp_path / "fsmemory") == {"memory", "agent", "export"}


def test_no_provider_sdk_is_imported() -> None:
    """Tools and converters build plain dicts: no openai/anthropic import anywhere."""
    for path in modules():
        text = path.read_text()
        assert not re.search(r"^\s*(import|from) (openai|anthropic)\b", text, re.M), path


# -- __all__: exactly the public names, each documented (httpx's test_exported_members) -----


def public_packages() -> list[str]:
    # fsmemory.tools is deprecated (tests/test_deprecated_modules.py checks its names)
    names = ["fsmemory", "fsmemory.errors"]
    for info in pkgutil.iter_modules(fsmemory.__path__):
        if info.ispkg and not info.name.startswith("_"):
            names.append(f"fsmemory.{info.name}")
    return names


# Names that are public today without being API; each is to move to a private module.
NOT_YET_PRIVATE = {"fsmemory.errors": {"require"}}


def _ruff_order(name: str) -> tuple[int, str]:
    if re.fullmatch(r"[A-Z0-9_]+", name):
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def _members(module: types.ModuleType) -> set[str]:
    """Public names defined by fsmemory (imports of typing helpers and submodules aside)."""
    members = set()
    for name, value in vars(module).items():
        if name.startswith("_") or name in ("annotations", "TYPE_CHECKING"):
            continue
        if isinstance(value, types.ModuleType):
            continue  # a submodule; private ones start with "_"
        origin = sys.modules.get(str(getattr(value, "__module__", "")))
        foreign = origin is not None and not origin.__name__.startswith("fsmemory")
        if foreign and getattr(origin, name, None) is value:
            continue  # imported from elsewhere (typing.Any, datetime.UTC, ...)
        members.add(name)
    return members


@pytest.mark.parametrize("name", public_packages())
def test_all_is_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_ruff_order), "keep __all__ sorted (ruff RUF022)"
    assert len(exported) == len(set(exported))
    for item in exported:
        getattr(module, item)  # lazy names (module __getattr__) count
    lazy = {item for item in exported if item not in vars(module)}
    missing = _members(module) - set(exported) - NOT_YET_PRIVATE.get(name, set())
    assert missing == set(), f"public in {name} but not in __all__"
    assert set(exported) - _members(module) - lazy <= {"__version__"}


@pytest.mark.parametrize("name", public_packages())
def test_every_exported_name_is_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, name
    for item in module.__all__:
        obj = getattr(module, item)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        assert obj.__doc__, f"{name}.{item}"
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if not attr.startswith("_") and inspect.isfunction(value):
                    assert value.__doc__, f"{name}.{item}.{attr}"
