"""The public surface of fsmemory.agent and its place in the layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import fsmemory.agent as agent_pkg

AGENT_DIR = Path(agent_pkg.__file__).parent


def _ruff_order(name: str) -> tuple[int, str]:
    if name.isupper() or re.fullmatch(r"[A-Z0-9_]+", name):
        return (0, name)
    if name[0].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_and_complete() -> None:
    names = agent_pkg.__all__
    assert names == sorted(names, key=_ruff_order)
    assert len(set(names)) == len(names)
    public = {n for n in vars(agent_pkg) if not n.startswith("_") and n not in {"annotations"}}
    # submodules are private (_events, ...): everything public is exported
    assert set(names) == {
        n for n in public if not isinstance(getattr(agent_pkg, n), type(agent_pkg))
    }


def test_every_public_name_is_documented() -> None:
    for name in agent_pkg.__all__:
        obj = getattr(agent_pkg, name)
        if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__code__")):
            assert obj.__doc__, name
            for attr, value in vars(obj).items() if isinstance(obj, type) else ():
                if not attr.startswith("_") and callable(value) and hasattr(value, "__code__"):
                    assert value.__doc__, f"{name}.{attr}"


def test_agent_imports_only_lower_layers() -> None:
    allowed = (
        "fsmemory.agent",
        "fsmemory.store",
        "fsmemory.memory",
        "fsmemory.errors",
        "fsmemory._jsonutil",
    )
    for path in AGENT_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("fsmemory")
            ):
                module = node.module
                if module == "fsmemory":
                    names = {a.name for a in node.names}
                    assert names <= {"_jsonutil"}, (path.name, names)
                    continue
                assert module.startswith(allowed), (path.name, module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("fsmemory") or alias.name.startswith(allowed)


def test_no_provider_sdk_is_imported() -> None:
    for path in AGENT_DIR.glob("*.py"):
        text = path.read_text()
        assert "import openai" not in text and "import anthropic" not in text
