"""Retries serve network roots: a local memory never loads the retry machinery, while
``fsmemory.fs`` still offers its names and every root still checks a ``retry`` option."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import fsmemory.fs
from fsmemory.errors import InvalidInputError
from fsmemory.fs import open_root

SCRIPT = """
import json, sys
from fsmemory import KnowledgeMemory
km = KnowledgeMemory(sys.argv[1])
km.remember("Prefers dark mode", category="preferences", persistent=True)
km.remember("Deploys on Fridays")
assert [e.content for e in km.recall("dark mode")] == ["Prefers dark mode"]
assert "Deploys on Fridays" in km.build_context()
print(json.dumps(sorted(m for m in ("fsmemory.fs.retry", "random") if m in sys.modules)))
"""


def test_a_local_memory_loads_neither_retries_nor_random(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "m")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_retry_names_are_still_exported() -> None:
    from fsmemory.fs import retry

    assert fsmemory.fs.RetryPolicy is retry.RetryPolicy
    assert fsmemory.fs.DEFAULT_RETRY is retry.DEFAULT_RETRY
    assert fsmemory.fs.NO_RETRY is retry.NO_RETRY
    assert {"DEFAULT_RETRY", "NO_RETRY", "RetryPolicy"} <= set(dir(fsmemory.fs))


def test_a_local_root_still_checks_a_retry_option(tmp_path: Path) -> None:
    root = open_root(tmp_path / "ok", {"retry": {"attempts": 3}})
    root.close()
    with pytest.raises(InvalidInputError):
        open_root(tmp_path / "bad", {"retry": {"attempts": "many"}})
