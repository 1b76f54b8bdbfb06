"""A restore gives what a plain folder holding the same writes gives, and the replica's
diff proves the bytes it believes unchanged before it sends only an append."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory, _jsonutil
from fsmemory.memory._replica import DELTA_FORMAT, fold_state
from fsmemory.snapshot import FsspecBackend, SnapshotState, pack_archive

from .conftest import Spec, folder_files, make_spec

KINDS = ["local", pytest.param("s3", marks=pytest.mark.s3)]


def _backend(spec: Spec, **kwargs: Any) -> FsspecBackend:
    _kind, location, options = spec
    return FsspecBackend(location, storage_options=options, **kwargs)


def _twice(km: KnowledgeMemory) -> tuple[str, str]:
    first = km.remember(
        "Prefers dark mode", category="preferences", persistent=True, metadata={"n": 1}
    )
    second = km.remember(
        "Prefers dark mode",
        category="preferences",
        persistent=True,
        importance=0.9,
        metadata={"n": 2},
    )
    assert first and second and first != second
    return first, second


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("compact_after", [1000, 1])
def test_the_same_fact_remembered_twice_keeps_two_records(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, compact_after: int
) -> None:
    spec = make_spec(request, kind, tmp_path)
    plain = KnowledgeMemory(tmp_path / "plain")
    plain_ids = _twice(plain)
    writer = KnowledgeMemory(
        tmp_path / "w", backend=_backend(spec), snapshot_compact_after=compact_after
    )
    first, second = _twice(writer)
    restored = KnowledgeMemory(tmp_path / "r", backend=_backend(spec))
    got = restored.get(second)
    assert got is not None and got.importance == 0.9 and got.metadata == {"n": 2}
    assert restored.get(first) is not None
    assert restored.stats()["entries"] == plain.stats()["entries"] == 2
    assert len(restored.entries()) == len(plain.entries()) == 2
    assert (tmp_path / "r" / "MEMORY.md").read_bytes() == (
        tmp_path / "plain" / "MEMORY.md"
    ).read_bytes()
    assert (tmp_path / "r" / "MEMORY.md").read_bytes() == (
        tmp_path / "w" / "MEMORY.md"
    ).read_bytes()
    # Another invocation remembers it a third time, from a restored folder.
    third = restored.remember("Prefers dark mode", category="preferences", persistent=True)
    plain.remember("Prefers dark mode", category="preferences", persistent=True)
    again = KnowledgeMemory(tmp_path / "again", backend=_backend(spec))
    assert again.get(third) is not None
    assert len(again.entries()) == len(plain.entries()) == 3
    assert (tmp_path / "again" / "MEMORY.md").read_bytes() == (
        tmp_path / "plain" / "MEMORY.md"
    ).read_bytes()
    assert plain_ids[0] != first  # two memories, the same writes


def test_a_delta_stored_twice_is_applied_once() -> None:
    """A retried save may store one delta twice (a lost reply); it carries one id. Two
    saves with equal content are two changes."""
    base = pack_archive({"MEMORY.md": b"# Agent Memory\n"})
    one = {"format": DELTA_FORMAT, "version": 1, "id": "a" * 32, "md_add": [["x", "- fact"]]}
    other = {**one, "id": "b" * 32}
    data = [_jsonutil.dumps(d) for d in (one, one, other)]
    files = fold_state(SnapshotState(base, [("d1", data[0]), ("d2", data[1]), ("d3", data[2])]))
    assert files["MEMORY.md"].count(b"- fact") == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_same_length_fix_in_memory_md_is_saved_with_a_new_bullet(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    # every save folds: the restore below finds no delta, so its next save is a delta
    writer = KnowledgeMemory(tmp_path / "w", backend=_backend(spec), snapshot_compact_after=1)
    writer.remember("Lives in Lodnon", category="profile", persistent=True)
    for fact in ("Speaks French", "Works night shifts at the hospital", "Cycles to work"):
        writer.remember(fact, category="profile", persistent=True)
    folder = tmp_path / "restored"
    km = KnowledgeMemory(folder, backend=_backend(spec))
    md = folder / "MEMORY.md"
    before = md.read_bytes()
    fixed = before.replace(b"Lodnon", b"London")
    assert len(fixed) == len(before) and fixed != before
    assert len(before) - before.index(b"Lodnon") > 64  # older than any short tail check
    md.write_bytes(fixed + b"- Has a cat\n")  # the fix, and a bullet appended
    assert km._replica is not None and km._replica.folds == 0
    assert km.flush() > 0
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    # the same bullets (an edited bullet travels as a removal and an addition, which
    # merge with other writers' bullets; it may move within its section)
    restored = (tmp_path / "check" / "MEMORY.md").read_bytes().splitlines()
    assert sorted(restored) == sorted(md.read_bytes().splitlines())
    facts = check.get_persistent_facts()["profile"]
    assert "Lives in London" in facts and "Lives in Lodnon" not in facts
    assert "Has a cat" in facts


@pytest.mark.parametrize("kind", KINDS)
def test_a_same_length_fix_of_a_log_line_is_saved_with_an_append(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    folder = tmp_path / "w"
    km = KnowledgeMemory(folder, backend=_backend(spec))
    km.remember("Works at the library", category="profile", persistent=True)
    km.remember("The meeting is on Tuesdya")
    km.remember("The room is 4B")
    (log,) = (folder / "logs").glob("*.jsonl")
    before = log.read_bytes()
    fixed = before.replace(b"Tuesdya", b"Tuesday")
    assert len(fixed) == len(before) and fixed != before
    log.write_bytes(fixed)
    km.remember("Bring the slides")  # appended after the fix, then saved
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    assert folder_files(tmp_path / "check") == folder_files(folder)
    contents = {e.content for e in check.entries()}
    assert "The meeting is on Tuesday" in contents
    assert "The meeting is on Tuesdya" not in contents
    assert {"The room is 4B", "Bring the slides", "Works at the library"} <= contents
    # A warm reopen of the same folder (MEMORY.md as synced) after another such fix
    # saves it too.
    log.write_bytes(log.read_bytes().replace(b"4B", b"5C"))
    again = KnowledgeMemory(folder, backend=_backend(spec))
    again.remember("One more")
    final = KnowledgeMemory(tmp_path / "final", backend=_backend(spec))
    contents = {e.content for e in final.entries()}
    assert "The room is 5C" in contents and "The room is 4B" not in contents
    assert folder_files(tmp_path / "final") == folder_files(folder)


def test_a_bullet_appended_while_a_fold_packs_the_folder_is_saved_once(tmp_path: Path) -> None:
    """Another process appends a bullet between the save's diff and its fold: the base
    holds MEMORY.md as the diff read it, and the next save adds the bullet once."""
    url = f"memory://race/{tmp_path.name}.snapshot"
    folder = tmp_path / "w"
    km = KnowledgeMemory(folder, backend=FsspecBackend(url), snapshot_compact_after=2)
    km.remember("first", category="facts", persistent=True)  # a delta; the next save folds
    plain = KnowledgeMemory(folder)  # another process writing to the same folder
    replica = km._replica
    assert replica is not None
    fold_due = replica._fold_due
    armed = [True]

    def racing(size: int) -> bool:
        due = fold_due(size)
        if due and armed[0]:
            armed[0] = False
            plain.remember("appended meanwhile", category="facts", persistent=True)
        return due

    replica._fold_due = racing  # type: ignore[method-assign]
    km.remember("second", category="facts", persistent=True)
    assert not armed[0] and replica.folds == 1
    km.flush()  # a delta: the bullet appended meanwhile
    check = KnowledgeMemory(tmp_path / "check", backend=FsspecBackend(url))
    assert (tmp_path / "check" / "MEMORY.md").read_bytes() == (folder / "MEMORY.md").read_bytes()
    assert check.get_persistent_facts()["facts"].count("appended meanwhile") == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_warm_folder_whose_every_file_was_edited_by_hand_is_still_recognised(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    """A same-length fix of a log line and a bullet appended to MEMORY.md, both by hand
    before the folder is opened again: the folder is the one this process synced (its
    bytes say so), so the fix replaces the typo instead of being merged beside it."""
    spec = make_spec(request, kind, tmp_path)
    folder = tmp_path / "warm"
    km = KnowledgeMemory(folder, backend=_backend(spec))
    km.remember("Works at the library", category="profile", persistent=True)
    km.remember("The meeting is on Tuesdya")
    (log,) = (folder / "logs").glob("*.jsonl")
    before = log.read_bytes()
    log.write_bytes(before.replace(b"Tuesdya", b"Tuesday"))
    md = folder / "MEMORY.md"
    md.write_bytes(md.read_bytes() + b"- Has a cat\n")
    KnowledgeMemory(folder, backend=_backend(spec))
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    assert folder_files(tmp_path / "check") == folder_files(folder)
    contents = [e.content for e in check.entries()]
    assert "The meeting is on Tuesday" in contents
    assert "The meeting is on Tuesdya" not in contents
    assert "Has a cat" in check.get_persistent_facts()["profile"]
