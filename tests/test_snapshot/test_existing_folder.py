"""Attaching a snapshot backend to a folder that already holds a memory loses nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory, SnapshotError
from fsmemory.snapshot import FsspecBackend, pack_archive, unpack_archive

from .conftest import DictBackend, Spec, folder_files, open_backend

HAND_MEMORY = (
    "# Agent Memory\n\n"
    "Notes kept by hand; please keep this paragraph.\n\n"
    "## preferences\n- Prefers Python\n- Dark mode\n\n"
    "## people\n- Ana leads the atlas project\n"
)
LOG_A = (
    '{"id": "e1", "timestamp": "2026-03-13T10:15:00Z", "category": "context", '
    '"content": "written before any snapshot", "persistent": false}\n'
    '{"id": "e2", "timestamp": "2026-03-13T10:16:00Z", "category": "context", '
    '"content": "second line, \\u00e9t\\u00e9 \\ud83d\\ude00", "persistent": false}\n'
)
LOG_B = (
    '{"id": "e3", "timestamp": "2026-03-14T08:00:00Z", "category": "todo", '
    '"content": "from the other day", "persistent": false}\n'
)


def write_hand_folder(folder: Path) -> dict[str, bytes]:
    """A memory folder as a person would leave it, non-UTF-8 files included."""
    files = {
        "MEMORY.md": HAND_MEMORY.encode(),
        "logs/2026-03-13.jsonl": LOG_A.encode(),
        "logs/2026-03-14.jsonl": LOG_B.encode(),
        "notes/todo.md": b"- call Ana\r\n- no final newline",
        "notes/latin1.txt": "caf\xe9 cr\xe8me".encode("latin-1"),
        "blob.bin": bytes(range(256)) + b"\x00\xff\xfe",
        "logs/2026-03-15.jsonl": b'{"id": "e4", "content": "bad \xff byte"}\n',
    }
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return files


def entry_ids(km: KnowledgeMemory) -> list[str]:
    return sorted(e.id for e in km.entries())


def open_km(folder: Path, backend: Any) -> KnowledgeMemory:
    return KnowledgeMemory(folder, backend=backend, max_log_days=100000)


@pytest.mark.parametrize("snapshot", ["missing", "empty archive"])
def test_an_empty_snapshot_starts_from_the_folder(
    spec: Spec, tmp_path: Path, snapshot: str
) -> None:
    folder = tmp_path / "existing"
    files = write_hand_folder(folder)
    before = entry_ids(open_km(folder, None))
    assert len(before) == 6  # 3 log entries, 3 facts (the non-UTF-8 line is corrupt)
    if snapshot == "empty archive":
        open_backend(spec).save_bytes(pack_archive({}))
    km = open_km(folder, open_backend(spec))
    assert folder_files(folder) == files  # byte for byte
    assert entry_ids(km) == before
    fresh = tmp_path / "fresh"
    assert entry_ids(open_km(fresh, open_backend(spec))) == before
    assert folder_files(fresh) == files
    km.remember("after attaching", persistent=True)
    again = tmp_path / "again"
    open_km(again, open_backend(spec))
    assert folder_files(again) == folder_files(folder)


def test_a_non_empty_snapshot_is_merged_with_the_folder(spec: Spec, tmp_path: Path) -> None:
    writer = open_km(tmp_path / "writer", open_backend(spec))
    remote_fact = writer.remember("from the snapshot", category="preferences", persistent=True)
    remote_note = writer.remember("a snapshot note")
    folder = tmp_path / "existing"
    files = write_hand_folder(folder)
    km = open_km(folder, open_backend(spec))
    after = folder_files(folder)
    for path, data in files.items():
        if (
            path == "MEMORY.md"
            or path.startswith("logs/2026-03-13")
            or path.startswith("logs/2026-03-14")
        ):
            # merged files keep every line the person wrote
            assert not Counter(data.split(b"\n")) - Counter(after[path].split(b"\n")), path
        else:
            assert after[path] == data, path
    ids = set(entry_ids(km))
    assert {remote_fact, remote_note, "e1", "e2", "e3"} <= ids
    assert "from the snapshot" in km.get_persistent_facts()["preferences"]
    assert "Prefers Python" in km.get_persistent_facts()["preferences"]
    fresh = tmp_path / "fresh"
    assert set(entry_ids(open_km(fresh, open_backend(spec)))) == ids
    assert folder_files(fresh) == after


def test_conflicting_files_refuse_and_change_nothing(spec: Spec, tmp_path: Path) -> None:
    writer = tmp_path / "writer"
    km = open_km(writer, open_backend(spec))
    (writer / "notes").mkdir(parents=True)
    (writer / "notes" / "todo.md").write_text("the snapshot's version")
    km.remember("remote")
    before = open_backend(spec).load_state()
    folder = tmp_path / "existing"
    files = write_hand_folder(folder)
    with pytest.raises(SnapshotError, match=r"notes/todo\.md"):
        open_km(folder, open_backend(spec))
    assert folder_files(folder) == files
    after = open_backend(spec).load_state()
    assert (after.base, after.deltas) == (before.base, before.deltas)


def test_prose_conflict_in_memory_md_refuses(spec: Spec, tmp_path: Path) -> None:
    writer = tmp_path / "writer"
    open_km(writer, open_backend(spec)).remember("x", persistent=True)
    text = (writer / "MEMORY.md").read_text()
    (writer / "MEMORY.md").write_text(text + "\nA paragraph only the snapshot has.\n")
    # a warm reopen of the same folder saves the hand edit
    KnowledgeMemory(writer, backend=open_backend(spec))
    assert b"only the snapshot has" in open_km(
        tmp_path / "check", open_backend(spec)
    ).root.read_bytes("MEMORY.md")
    folder = tmp_path / "existing"
    files = write_hand_folder(folder)
    with pytest.raises(SnapshotError, match=r"MEMORY\.md"):
        open_km(folder, open_backend(spec))
    assert folder_files(folder) == files


def test_invalid_utf8_in_memory_md_survives_a_merge(tmp_path: Path) -> None:
    url = f"memory://merge-bytes/{tmp_path.name}.snapshot"
    open_km(tmp_path / "writer", FsspecBackend(url)).remember(
        "remote fact", category="people", persistent=True
    )
    folder = tmp_path / "existing"
    folder.mkdir()
    hand = b"# Agent Memory\n\n## people\n- Jos\xe9 (latin-1 by hand)\n"
    (folder / "MEMORY.md").write_bytes(hand)
    km = open_km(folder, FsspecBackend(url))
    merged = (folder / "MEMORY.md").read_bytes()
    assert b"- Jos\xe9 (latin-1 by hand)\n" in merged and b"remote fact" in merged
    fresh = tmp_path / "fresh"
    open_km(fresh, FsspecBackend(url))
    assert (fresh / "MEMORY.md").read_bytes() == merged
    assert "remote fact" in km.get_persistent_facts()["people"]


def test_plain_two_method_backend_keeps_an_existing_folder(tmp_path: Path) -> None:
    store: dict[str, bytes] = {}
    folder = tmp_path / "existing"
    files = write_hand_folder(folder)
    before = entry_ids(open_km(folder, None))
    km = open_km(folder, DictBackend(store))
    assert folder_files(folder) == files
    assert unpack_archive(store["blob"]) == files
    assert entry_ids(km) == before
    # non-empty on both sides: merged, then saved whole
    other = tmp_path / "other"
    other.mkdir()
    (other / "extra.txt").write_bytes(b"\x80only here")
    open_km(other, DictBackend(store))
    assert (other / "extra.txt").read_bytes() == b"\x80only here"
    assert unpack_archive(store["blob"]) == {**files, "extra.txt": b"\x80only here"}


def forget_process_memory() -> None:
    """What a new process knows about folders it restored: nothing."""
    from fsmemory.memory import _replica

    _replica._MEMOS.clear()


def test_a_stale_scratch_folder_of_a_dead_process_keeps_forgets(spec: Spec, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    km = open_km(scratch, open_backend(spec))
    secret = km.remember("a secret to forget", category="private", persistent=True)
    km.remember("a note")
    forget_process_memory()
    other = open_km(tmp_path / "other", open_backend(spec))
    assert other.forget(secret)
    other.remember("written elsewhere", persistent=True)
    (scratch / "unsaved.txt").write_bytes(b"\x00written after the last save")
    forget_process_memory()
    reopened = open_km(scratch, open_backend(spec))
    facts = reopened.get_persistent_facts()
    assert "a secret to forget" not in facts.get("private", [])
    assert "written elsewhere" in facts["general"]
    assert (scratch / "unsaved.txt").read_bytes() == b"\x00written after the last save"
    fresh = open_km(tmp_path / "fresh", open_backend(spec))
    assert "a secret to forget" not in str(fresh.get_persistent_facts())
    assert {e.content for e in fresh.entries()} == {"a note", "written elsewhere"}


def test_a_vanished_snapshot_never_empties_a_warm_folder(tmp_path: Path) -> None:
    url = f"memory://vanish/{tmp_path.name}.snapshot"
    scratch = tmp_path / "scratch"
    km = open_km(scratch, FsspecBackend(url))
    km.remember("only the folder will have this", persistent=True)
    files = folder_files(scratch)
    backend = FsspecBackend(url)
    backend.root.delete(backend.head)
    backend.root.delete_tree(backend.objects)
    open_km(scratch, FsspecBackend(url))  # warm: this process restored it before
    assert folder_files(scratch) == files
    fresh = tmp_path / "fresh"
    open_km(fresh, FsspecBackend(url))
    assert folder_files(fresh) == files


class RacingBackend(FsspecBackend):
    """Lets another folder become the first snapshot just before this one's first fold."""

    def __init__(self, url: str, rival: Path) -> None:
        super().__init__(url)
        self.rival: Path | None = rival

    def save_base(self, archive: bytes, **kwargs: Any) -> Any:
        rival, self.rival = self.rival, None
        if rival is not None:
            open_km(rival, FsspecBackend(self.url))
        return super().save_base(archive, **kwargs)


def test_two_folders_attached_at_once_are_both_kept(tmp_path: Path) -> None:
    url = f"memory://race/{tmp_path.name}.snapshot"
    first, second = tmp_path / "first", tmp_path / "second"
    open_km(first, None).remember("only in the first folder", persistent=True)
    open_km(second, None).remember("only in the second folder", persistent=True)
    km = open_km(second, RacingBackend(url, rival=first))
    facts = km.get_persistent_facts()["general"]
    assert sorted(facts) == ["only in the first folder", "only in the second folder"]
    fresh = open_km(tmp_path / "fresh", FsspecBackend(url))
    assert sorted(e.content for e in fresh.entries() if not e.id.startswith("md-")) == [
        "only in the first folder",
        "only in the second folder",
    ]
    backend = FsspecBackend(url)
    bases = [i.path for i in backend.root.list(backend.objects) if "base-" in i.path]
    assert len(bases) == 1, bases  # the losing base object was removed
