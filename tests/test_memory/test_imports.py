"""``import fsmemory`` loads only what the local path needs (checked in a fresh process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import fsmemory
import fsmemory.memory
import fsmemory.sanitizers

HEAVY = ("fsspec", "s3fs", "gcsfs", "redis", "pyarrow", "aiohttp", "botocore")
OPTIONAL_LAYERS = (
    "fsmemory.agent",
    "fsmemory.export",
    "fsmemory.snapshot",
    "fsmemory.sanitizers",
    "fsmemory.memory.sync",
    "fsmemory.store",
)

SCRIPT = """
import json, sys
import fsmemory
after_import = sorted(sys.modules)
km = fsmemory.KnowledgeMemory(sys.argv[1])
km.remember("Prefers dark mode", category="preferences", persistent=True)
km.remember("Deploys on Fridays", importance=0.9)
assert [e.content for e in km.recall("dark mode")] == ["Prefers dark mode"]
assert "Deploys on Fridays" in km.build_context()
print(json.dumps({"after_import": after_import, "after_use": sorted(sys.modules)}))
"""


def _loaded(tmp_path: Path) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "m")],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(OPTIONAL_LAYERS)]


def test_local_remember_and_recall_import_no_remote_or_optional_module(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path)
    assert _heavy(loaded["after_use"]) == []
    # The bare import loads the error tree and nothing of the memory itself yet.
    assert "fsmemory.memory.knowledge" not in loaded["after_import"]
    assert "fsmemory.memory.knowledge" in loaded["after_use"]


def test_lazy_exports_resolve_every_public_name() -> None:
    for package in (fsmemory, fsmemory.memory, fsmemory.sanitizers):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
        assert set(package.__all__) <= set(dir(package))
    assert fsmemory.KnowledgeMemory.__module__ == "fsmemory.memory.knowledge"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        fsmemory.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
