"""A library call changes no process-wide state: reading a memory never pauses the host's
garbage collector (a bulk parse and a cache load measured no faster with it paused)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache


def _refuse() -> None:
    raise AssertionError("fsmemory paused the host's garbage collector")


def test_reads_never_pause_the_garbage_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_index_cache, "MIN_NEW_ROWS", 1)
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 0)
    writer = KnowledgeMemory(tmp_path / "m")
    for n in range(600):  # a log well over the 64 KiB of a bulk parse
        writer.remember(f"note {n} " + "words " * 30, persistent=n % 7 == 0)
    monkeypatch.setattr(gc, "disable", _refuse)
    monkeypatch.setattr(gc, "freeze", _refuse)
    fresh = KnowledgeMemory(tmp_path / "m", index_cache=False)
    assert fresh.recall("note 5")
    writer.recall("note 7")  # writes the index cache
    cached = KnowledgeMemory(tmp_path / "m")
    assert [e.id for e in cached.recall("note 5")] == [e.id for e in fresh.recall("note 5")]
    assert cached.get(fresh.entries()[3].id) is not None
    assert cached.get_persistent_facts() == fresh.get_persistent_facts()
    assert gc.isenabled()
