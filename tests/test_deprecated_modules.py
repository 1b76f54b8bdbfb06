"""The deprecated shim modules warn on import, name the replacement, and still work."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types

import pytest

import fsmemory.agent.tools
from fsmemory.memory import _replica


def _fresh_import(name: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Import ``name`` as a first import would (a module warns once, when it loads)."""
    monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module(name)


def test_fsmemory_tools_warns_and_its_names_are_the_agent_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.warns(DeprecationWarning, match=r"fsmemory\.tools .*fsmemory\.agent\.tools"):
        tools = _fresh_import("fsmemory.tools", monkeypatch)
    assert tools.MemoryTool is fsmemory.agent.tools.FunctionTool
    for name in tools.__all__:
        if name != "MemoryTool":
            assert getattr(tools, name) is getattr(fsmemory.agent.tools, name), name
    assert sorted(tools.__all__) == [
        "DEFAULT_RECALL_LIMIT",
        "FunctionTool",
        "MemoryTool",
        "knowledge_tools",
        "make_recall_tool",
        "make_remember_tool",
        "parse_bool",
    ]


def test_memory_sync_warns_and_its_names_are_the_replica(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.warns(DeprecationWarning, match=r"fsmemory\.memory\.sync .*backend="):
        sync = _fresh_import("fsmemory.memory.sync", monkeypatch)
    assert sync.SnapshotSync is _replica.SnapshotReplica
    assert sync.apply_delta is _replica.apply_delta
    assert sync.fold_state is _replica.fold_state
    assert sync.DELTA_FORMAT == _replica.DELTA_FORMAT
    assert sorted(sync.__all__) == ["DELTA_FORMAT", "SnapshotSync", "apply_delta", "fold_state"]


@pytest.mark.parametrize("module", ["fsmemory.tools", "fsmemory.memory.sync"])
def test_the_warning_points_at_the_importing_line(module: str) -> None:
    """``stacklevel=2`` blames the user's import (so Python's default filters show it in
    a script's ``__main__``), not the import machinery."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run(
        [sys.executable, "-W", "default::DeprecationWarning", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert done.stderr.startswith("<string>:1: DeprecationWarning:"), done.stderr


def test_nothing_in_the_package_imports_a_deprecated_module() -> None:
    """Importing the package and its layers loads neither shim (no warning in user code)."""
    code = (
        "import sys, warnings\n"
        "warnings.filterwarnings('error', category=DeprecationWarning, module='fsmemory')\n"
        "import fsmemory, fsmemory.agent, fsmemory.memory.knowledge, fsmemory.snapshot, "
        "fsmemory.cli\n"
        "from fsmemory import KnowledgeMemory\n"
        "print(sorted(m for m in ('fsmemory.tools', 'fsmemory.memory.sync') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
