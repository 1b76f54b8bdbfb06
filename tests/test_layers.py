"""The package keeps its layers: imports point downward only (see the design notes)."""

from __future__ import annotations

import ast
from pathlib import Path

import fsmemory

PACKAGE = Path(fsmemory.__file__).parent

BASE = {"errors", "_jsonutil"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_jsonutil": set(),
    "implementations": BASE,
    "sanitizers": BASE,
    "fs": BASE | {"implementations"},
    "store": BASE | {"fs", "implementations"},
    "snapshot": BASE | {"fs"},
    "memory": BASE | {"fs", "snapshot", "sanitizers"},
    "agent": BASE | {"fs", "store", "memory", "sanitizers", "snapshot"},
    "export": BASE | {"fs", "memory"},
    "tools": BASE | {"memory", "sanitizers"},
    "testing": BASE | {"fs", "store", "memory", "snapshot", "implementations", "sanitizers"},
}


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def imported_layers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "fsmemory" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_imports_point_downward() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = layer_of(path)
        if layer in ("__init__", "cli", "__main__"):
            continue
        allowed = ALLOWED[layer] | {layer}
        for target in imported_layers(path) - allowed:
            problems.append(f"{path.relative_to(PACKAGE)} imports fsmemory.{target}")
    assert problems == []


def test_nothing_imports_the_cli() -> None:
    for path in PACKAGE.rglob("*.py"):
        if layer_of(path) != "cli":
            assert "cli" not in imported_layers(path), path


def test_every_layer_is_known() -> None:
    layers = {layer_of(p) for p in PACKAGE.rglob("*.py")} - {"__init__", "cli", "__main__"}
    assert layers <= set(ALLOWED), layers - set(ALLOWED)


def test_public_modules_export_documented_names() -> None:
    import importlib
    import inspect

    for name in (
        "fsmemory",
        "fsmemory.fs",
        "fsmemory.memory",
        "fsmemory.snapshot",
        "fsmemory.store",
        "fsmemory.sanitizers",
        "fsmemory.agent",
        "fsmemory.tools",
        "fsmemory.errors",
    ):
        module = importlib.import_module(name)
        exported = list(module.__all__)
        assert len(exported) == len(set(exported)), name  # ruff's RUF022 keeps it sorted
        for item in exported:
            assert item in vars(module), f"{name}.{item} is in __all__ but missing"
            obj = getattr(module, item)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                assert getattr(obj, "__doc__", None), f"{name}.{item} has no docstring"
