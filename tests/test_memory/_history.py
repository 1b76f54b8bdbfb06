"""A memory with a long history, written as an application writes it, for the tests of
retention (a read never deletes; the writer's retention is the memory's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from fsmemory import KnowledgeMemory
from tests.test_memory.conftest import FakeClock


def write_history(
    folder: Path, *, days: int = 60, stored: bool = True, now: datetime | None = None
) -> dict[str, bytes]:
    """Write ``days`` days of entries (one log per day, up to ``now``, default the real
    time) with ``max_log_days=365`` and return every file's bytes, by path relative to
    ``folder``. ``stored=False``: without the stored retention, as versions before it
    was stored left a memory."""
    end = now or datetime.now(UTC)
    clock = FakeClock(end - timedelta(days=days - 1, minutes=5))
    km = KnowledgeMemory(str(folder), max_log_days=365, clock=clock)
    for day in range(days):
        km.remember(f"day {day} note about the garden", category="diary")
        km.remember(f"day {day} fact number {day}", category="facts", persistent=day % 7 == 0)
        clock.advance(days=1)
    assert len(list((folder / "logs").iterdir())) == days
    if not stored:
        (folder / "fsmemory.json").unlink(missing_ok=True)
    return snapshot_files(folder)


def snapshot_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (cache files too), by relative path."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def log_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """The daily logs among ``files``."""
    return {k: v for k, v in files.items() if k.startswith("logs/")}
