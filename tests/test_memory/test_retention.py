"""Retention is a property of the memory: stored in its ``fsmemory.json``, changed on
purpose, honoured by every process. A read never deletes anything (issue 25, item 0)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import InvalidInputError
from fsmemory.memory.layout import log_name_for
from tests.test_memory._history import log_files, snapshot_files, write_history
from tests.test_memory.conftest import FakeClock

Make = Callable[..., KnowledgeMemory]


def _all_kept(before: dict[str, bytes], after: dict[str, bytes]) -> None:
    """Every log of ``before`` is still there, its bytes unchanged (appends allowed)."""
    for path, data in log_files(before).items():
        assert after[path].startswith(data), path


def _read_everything(km: KnowledgeMemory) -> None:
    """Every read a process may start with."""
    km.build_context()
    km.recall("garden")
    km.get_persistent_facts()
    km.get_recent_entries(days=400)
    km.entries()
    km.stats()
    km.get("no-such-id")


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "written-before-storing"])
def test_a_default_reader_deletes_nothing(tmp_path: Path, stored: bool) -> None:
    """A 60-day memory written with max_log_days=365: default readers (cold, indexed,
    without the index cache, with a short max_log_days of their own) change no byte."""
    folder = tmp_path / "mem"
    before = write_history(folder, stored=stored)
    assert len(log_files(before)) == 60
    for reader in (
        KnowledgeMemory(str(folder)),
        KnowledgeMemory(str(folder), index_cache=False),
        KnowledgeMemory(str(folder), max_log_days=1),
        KnowledgeMemory(str(folder), max_log_days=0, max_context_entries=500),
    ):
        assert "day 59 note" in reader.build_context()
        _read_everything(reader)
        reader.build_context()
        after = snapshot_files(folder)
        assert log_files(after) == log_files(before)
        assert after.get("fsmemory.json") == before.get("fsmemory.json")
        assert after["MEMORY.md"] == before["MEMORY.md"]
    everything = KnowledgeMemory(str(folder), max_context_entries=1000).build_context()
    assert "day 0 note about the garden" in everything  # old logs stay readable


def test_the_writers_retention_is_stored_and_honoured_by_a_default_writer(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "mem"
    before = write_history(folder)
    settings = json.loads((folder / "fsmemory.json").read_text())
    assert settings == {"fsmemory": 1, "retention_days": 365}
    default = KnowledgeMemory(str(folder))
    assert default.max_log_days == 365
    default.remember("a note from another process")
    assert default.prune_logs() == 0
    _all_kept(before, snapshot_files(folder))
    # A writer asking for less does not change the memory's retention (warned).
    short = KnowledgeMemory(str(folder), max_log_days=7)
    short.remember("another note")
    assert short.max_log_days == 365 and short.prune_logs() == 0
    _all_kept(before, snapshot_files(folder))


def test_set_retention_is_deliberate_and_prune_then_uses_it(
    make_km: Make, clock: FakeClock
) -> None:
    km = make_km()
    km.remember("first")
    clock.advance(days=10)
    km.remember("second")
    assert km.max_log_days == 30  # nothing stored: the default
    km.set_retention(5)
    other = make_km()
    assert other.max_log_days == 5
    assert "first" in other.build_context()  # reading still deletes nothing
    assert other.prune_logs() == 1
    assert "first" not in make_km().build_context()
    km.set_retention(None)
    assert make_km().max_log_days is None
    clock.advance(days=100)
    km.remember("third")  # keeps everything: no deletion
    assert make_km().prune_logs() == 0
    assert "second" in make_km().build_context()
    assert make_km().prune_logs(max_days=0) == 1  # an explicit number still prunes


def test_a_writer_prunes_with_the_stored_retention_once_a_day(
    make_km: Make, clock: FakeClock
) -> None:
    km = make_km(max_log_days=2)
    km.remember("old")
    old_log = log_name_for(clock())
    clock.advance(days=3)
    reader = make_km()
    assert "old" in reader.build_context()
    assert km.root.exists(old_log)
    make_km().remember("new")  # a default writer: the memory's 2 days apply
    assert not km.root.exists(old_log)
    assert "old" not in make_km().build_context()


def test_a_default_writer_of_a_memory_without_a_retention_uses_30_days(
    make_km: Make, clock: FakeClock
) -> None:
    km = make_km()
    km.remember("old")
    old_log = log_name_for(clock())
    assert not km.root.exists("fsmemory.json")  # a default writer stores nothing
    clock.advance(days=31)
    make_km().build_context()
    assert km.root.exists(old_log)
    make_km().remember("new")
    assert not km.root.exists(old_log)


@pytest.mark.parametrize(
    "value", [-1, True, False, "30", 1.5, 10**9, 100_001, None.__class__, [30]]
)
def test_hostile_retention_values_are_refused(make_km: Make, value: object) -> None:
    with pytest.raises(InvalidInputError):
        make_km(max_log_days=value)
    km = make_km()
    with pytest.raises(InvalidInputError):
        km.set_retention(value)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        km.prune_logs(value)  # type: ignore[arg-type]


def test_the_largest_retention_deletes_nothing(make_km: Make) -> None:
    km = make_km(max_log_days=100_000)
    km.remember("kept")
    assert km.prune_logs() == 0 and km.max_log_days == 100_000


_DAMAGED = [
    b"",
    b"not json",
    b"\xff\xfe",
    b"[1, 2]",
    b'"fsmemory"',
    b'{"retention_days": 1}',  # no marker: someone else's file
    b'{"fsmemory": true, "retention_days": 1}',
    b'{"fsmemory": 2, "retention_days": 1}',
    b'{"fsmemory": 1, "retention_days": -5}',
    b'{"fsmemory": 1, "retention_days": true}',
    b'{"fsmemory": 1, "retention_days": "1"}',
    b'{"fsmemory": 1, "retention_days": 1.0}',
    b'{"fsmemory": 1, "retention_days": 1000000000000000000000}',
    b'{"fsmemory": 1, "retention_days": 1, "pad": "' + b"x" * 70_000 + b'"}',
]


@pytest.mark.parametrize("blob", range(len(_DAMAGED)))
def test_a_damaged_or_foreign_settings_file_never_deletes(
    make_km: Make, clock: FakeClock, blob: int
) -> None:
    km = make_km()
    km.remember("old")
    old_log = log_name_for(clock())
    old = km.root.read_bytes(old_log)
    km.root.write("fsmemory.json", _DAMAGED[blob])
    clock.advance(days=400)
    writer = make_km(max_log_days=1)
    writer.remember("new")  # automatic retention stops (logged), the write goes on
    assert km.root.read_bytes(old_log) == old
    with pytest.raises(InvalidInputError, match=r"fsmemory\.json"):
        make_km().prune_logs()
    with pytest.raises(InvalidInputError, match=r"fsmemory\.json"):
        _ = make_km().max_log_days
    assert km.root.read_bytes(old_log) == old
    assert km.root.read_bytes("fsmemory.json") == _DAMAGED[blob]  # never overwritten
    assert make_km().prune_logs(max_days=1) == 1  # an explicit number of days still works


def test_set_retention_never_overwrites_a_foreign_file_but_fixes_a_bad_value(
    make_km: Make,
) -> None:
    km = make_km()
    km.root.write("fsmemory.json", b'{"name": "my app settings"}')
    with pytest.raises(InvalidInputError, match="not fsmemory's"):
        km.set_retention(10)
    assert km.root.read_bytes("fsmemory.json") == b'{"name": "my app settings"}'
    km.root.write("fsmemory.json", b'{"fsmemory": 1, "retention_days": "a year", "note": "hi"}')
    km.set_retention(365)
    stored = json.loads(km.root.read_bytes("fsmemory.json"))
    assert stored == {"fsmemory": 1, "retention_days": 365, "note": "hi"}
    assert make_km().max_log_days == 365


def test_a_stored_retention_is_not_replaced_by_a_constructor_value(make_km: Make) -> None:
    make_km(max_log_days=90).remember("x")
    make_km(max_log_days=3).remember("y")
    make_km(max_log_days=3).prune_logs()
    assert make_km().max_log_days == 90


def test_snapshots_carry_the_retention(tmp_path: Path) -> None:
    from fsmemory.snapshot import FsspecBackend

    url = f"memory://snap-{tmp_path.name}/memory.snapshot"
    km = KnowledgeMemory(tmp_path / "a", backend=FsspecBackend(url))
    km.remember("fact")
    km.set_retention(365)
    restored = KnowledgeMemory(tmp_path / "b", backend=FsspecBackend(url))
    assert restored.max_log_days == 365
    assert (tmp_path / "b" / "fsmemory.json").read_bytes() == (
        tmp_path / "a" / "fsmemory.json"
    ).read_bytes()


def test_forget_records_never_sit_in_an_older_log_than_their_entry(tmp_path: Path) -> None:
    """A writer's clock a few seconds ahead across midnight: the forget record of a
    process with the right time goes to the entry's log, so pruning the older log
    cannot bring the entry back."""
    midnight = datetime(2026, 3, 14, tzinfo=UTC)
    ahead = FakeClock(midnight + timedelta(seconds=2))
    right = FakeClock(midnight - timedelta(seconds=3))
    writer = KnowledgeMemory(str(tmp_path / "m"), clock=ahead)
    secret = writer.remember("my PIN is 4321")
    forgetter = KnowledgeMemory(str(tmp_path / "m"), clock=right)
    assert forgetter.forget(secret)
    assert not forgetter.root.exists("logs/2026-03-13.jsonl")
    assert b"forget" in forgetter.root.read_bytes("logs/2026-03-14.jsonl")
    right.advance(days=1)
    assert forgetter.prune_logs(max_days=0) == 0
    assert "4321" not in KnowledgeMemory(str(tmp_path / "m"), clock=right).build_context()


def test_a_root_that_refuses_deletes_still_takes_writes(tmp_path: Path) -> None:
    """Retention on a write is best effort: a role without delete permission logs a
    warning, and the remembered fact is stored."""
    from fsmemory.errors import BackendError
    from fsmemory.fs.local import LocalRoot

    class NoDeletes(LocalRoot):
        def delete(self, path: str) -> bool:
            raise BackendError(f"AccessDenied: delete {path}")

    clock = FakeClock()
    root = NoDeletes(str(tmp_path / "m"))
    KnowledgeMemory(root, max_log_days=1, clock=clock).remember("old")
    clock.advance(days=5)
    km = KnowledgeMemory(root, clock=clock)
    new = km.remember("new")
    assert km.get(new) is not None
    assert root.exists(log_name_for(clock() - timedelta(days=5)))
    with pytest.raises(BackendError):
        km.prune_logs()  # an explicit prune says it failed
