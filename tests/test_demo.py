"""``fsmemory demo`` (what ``make demo`` runs) can be run again: the second run writes
nothing, and the demo never changes what others wrote in the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.cli import main

DEMO_KEPT = {
    ("preferences", "Preferred language: Python", True),
    ("preferences", "Dark mode: enabled", True),
    ("personal", "Works at Acme Corp", True),
    ("context", "Working on Project Atlas today", False),
    ("technical", "Investigating a timeout in the payment service", False),
}
NOTE = "Note with a newline\n## and a fake header that cannot escape"


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def demo(capsys: pytest.CaptureFixture[str], store: Path) -> str:
    assert main(["--store", str(store), "demo"]) == 0
    return capsys.readouterr().out


def live(store: Path) -> list[tuple[str, str, bool]]:
    return sorted((e.category, e.content, e.persistent) for e in KnowledgeMemory(store).entries())


def test_a_second_run_writes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = tmp_path / "agent_memory"
    first = demo(capsys, store)
    assert "forgot " in first and first.count("remembered [") == 6
    after_first = files_of(store)
    assert "MEMORY.md" in after_first and any(name.startswith("logs/") for name in after_first)
    second = demo(capsys, store)
    assert files_of(store) == after_first  # byte for byte, every file
    assert "remembered [" not in second and "forgot " not in second
    assert second.count("already here [") == 5
    assert "nothing written this time" in second
    assert live(store) == sorted(DEMO_KEPT)
    # the same context and recall either way
    assert (
        first.split("recall('python preferences'):")[1].split("\n\n")[0]
        == (second.split("recall('python preferences'):")[1].split("\n\n")[0])
    )
    assert first.split("build_context():")[1] == second.split("build_context():")[1]


def test_facts_of_others_are_kept_and_not_duplicated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "mem"
    km = KnowledgeMemory(store)
    own = km.remember("Preferred language: Python", "preferences", persistent=True)
    km.remember("Preferred language: Python", "work", persistent=True)  # another category
    km.remember("Deploys on Fridays", "habits", persistent=True)
    demo(capsys, store)
    entries = KnowledgeMemory(store).entries()
    same = [
        e
        for e in entries
        if (e.category, e.content) == ("preferences", "Preferred language: Python")
    ]
    assert [e.id for e in same] == [own]  # the user's fact stands for the demo's
    assert {(e.category, e.content, e.persistent) for e in entries} == DEMO_KEPT | {
        ("work", "Preferred language: Python", True),
        ("habits", "Deploys on Fridays", True),
    }
    memory_md = (store / "MEMORY.md").read_text()
    assert memory_md.count("- Preferred language: Python") == 2  # preferences and work
    assert "- Deploys on Fridays" in memory_md


def test_a_fact_forgotten_since_is_remembered_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "mem"
    demo(capsys, store)
    km = KnowledgeMemory(store)
    atlas = next(e for e in km.entries() if e.content == "Working on Project Atlas today")
    assert km.forget(atlas.id)
    out = demo(capsys, store)
    assert out.count("remembered [") == 2  # the fact, and the note shown being forgotten
    assert "remembered [context] Working on Project Atlas today" in out
    assert "forgot " in out
    assert live(store) == sorted(DEMO_KEPT)


def test_a_note_left_by_a_stopped_run_is_forgotten(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "mem"
    km = KnowledgeMemory(store)
    for category, content, persistent in sorted(DEMO_KEPT):
        km.remember(content, category, persistent)
    note = km.remember(NOTE, "context")  # a run stopped here, before its forget
    out = demo(capsys, store)
    assert "remembered [" not in out and f"forgot {note}" in out
    assert live(store) == sorted(DEMO_KEPT)
    before = files_of(store)
    assert "nothing written this time" in demo(capsys, store)
    assert files_of(store) == before
