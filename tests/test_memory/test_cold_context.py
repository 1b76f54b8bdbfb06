"""A fresh process's first ``build_context()`` (read from MEMORY.md and the newest logs,
without indexing the memory) answers exactly what the index answers (issue 25, items 6
and 7): forgotten entries stay hidden whatever log their forget record sits in, "recent"
means the latest timestamps in both paths however the lines were appended, and no cache
of MEMORY.md's sections can print a header the file does not hold.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory.entry import forget_records
from tests.test_memory.conftest import FakeClock

Make = Callable[..., KnowledgeMemory]

BACKENDS = ["local", "memory"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _contexts(url: str, now: datetime, **options: Any) -> tuple[str, str, str]:
    """(a fresh instance's cold context, the same after indexing, without the cache)."""
    clock = FakeClock(now)
    cold = KnowledgeMemory(url, clock=clock, **options).build_context()
    indexed = KnowledgeMemory(url, clock=clock, **options)
    indexed.refresh()
    no_cache = KnowledgeMemory(url, clock=clock, index_cache=False, **options)
    no_cache.refresh()
    return cold, indexed.build_context(), no_cache.build_context()


def _same_everywhere(url: str, now: datetime, **options: Any) -> str:
    cold, indexed, no_cache = _contexts(url, now, **options)
    assert cold == indexed == no_cache
    return cold


# -- forget records in another day's log ---------------------------------------------------

MIDNIGHT = datetime(2026, 3, 14, tzinfo=UTC)


def test_a_forget_by_a_process_whose_clock_is_behind(make_km: Make) -> None:
    ahead = FakeClock(MIDNIGHT + timedelta(seconds=2))
    right = FakeClock(MIDNIGHT - timedelta(seconds=3))
    writer = make_km(clock=ahead)
    writer.remember("an older note")
    secret = writer.remember("my PIN is 4321")
    assert make_km(clock=right).forget(secret)
    url = writer.root.url
    assert "4321" not in _same_everywhere(url, MIDNIGHT + timedelta(seconds=5))


@pytest.mark.parametrize("days_ahead", [1, 3, 40])
def test_a_forget_of_an_entry_written_days_ahead(make_km: Make, days_ahead: int) -> None:
    """However far the writer's clock ran ahead, the forget record lands in a log no
    older than the entry's, so a fresh process's first context never shows it (the
    forgetting process has written many lines of its own since)."""
    ahead = FakeClock(MIDNIGHT + timedelta(days=days_ahead, seconds=2))
    right = FakeClock(MIDNIGHT - timedelta(seconds=3))
    writer = make_km(clock=ahead)
    writer.remember("an older note")
    secret = writer.remember("my PIN is 4321")
    forgetter = make_km(clock=right)
    assert forgetter.forget(secret)
    for day in range(1, days_ahead + 1):  # whole days of notes after the forget
        right.now = MIDNIGHT + timedelta(days=day - 1, hours=1)
        for n in range(120):
            forgetter.remember(f"later note {day}-{n} " + "y" * 600)
    url = writer.root.url
    later = MIDNIGHT + timedelta(days=days_ahead, seconds=5)
    assert "4321" not in _same_everywhere(url, later)


def test_a_forget_record_left_in_the_older_log_by_an_earlier_version(make_km: Make) -> None:
    """Versions before the rule wrote the record to the log of the forgetting process's
    own (earlier) date: the cold path reads the end of that log too."""
    ahead = FakeClock(MIDNIGHT + timedelta(seconds=2))
    writer = make_km(clock=ahead)
    older = make_km(clock=FakeClock(MIDNIGHT - timedelta(minutes=5)))
    older.remember("yesterday's note")
    writer.remember("an older note")
    secret = writer.remember("my PIN is 4321")
    writer.root.append(
        "logs/2026-03-13.jsonl",
        forget_records([secret], "forget", MIDNIGHT - timedelta(seconds=1)),
        line_safe=True,
    )
    text = _same_everywhere(writer.root.url, MIDNIGHT + timedelta(seconds=5))
    assert "4321" not in text and "an older note" in text


# -- recency when append order differs from timestamp order -------------------------------


@pytest.mark.parametrize("shown", [1, 2, 3, 50])
def test_recent_means_the_latest_timestamps_in_both_paths(make_km: Make, shown: int) -> None:
    base = datetime(2026, 3, 13, 12, tzinfo=UTC)
    late = make_km(clock=FakeClock(base + timedelta(seconds=30)))
    early = make_km(clock=FakeClock(base))
    late.remember("appended first, stamped later")
    early.remember("appended second, stamped earlier")
    early.remember("appended third, stamped earlier too")
    text = _same_everywhere(late.root.url, base + timedelta(minutes=1), max_context_entries=shown)
    assert "appended first, stamped later" in text


def test_equal_timestamps_keep_the_index_order(make_km: Make) -> None:
    clock = FakeClock(datetime(2026, 3, 13, 12, tzinfo=UTC))
    km = make_km(clock=clock)
    for i in range(6):
        km.remember(f"same moment {i}")
    for shown in (1, 2, 5):
        text = _same_everywhere(km.root.url, clock(), max_context_entries=shown)
        assert "same moment 5" in text


# -- the differential check ------------------------------------------------------------------


def _random_memory(url: str, seed: int) -> datetime:
    """Several writers with skewed clocks around midnight (out-of-order appends, forget
    records in another day's log), persistent facts, TTLs, forgets; returns the end."""
    rng = random.Random(seed)
    base = FakeClock(MIDNIGHT - timedelta(seconds=rng.randint(5, 90)))
    skews = [timedelta(seconds=rng.choice([0, 0, 2, -3, 7, -40, 65])) for _ in range(3)]
    clocks = [FakeClock(base() + skew) for skew in skews]
    writers = [KnowledgeMemory(url, clock=clock) for clock in clocks]
    ids: list[str] = []
    serial = 0
    for _ in range(rng.randint(5, 45)):
        step = timedelta(seconds=rng.choice([0, 0, 1, 3, 20]))
        for clock in clocks:
            clock.advance(seconds=step.total_seconds())
        who = rng.randrange(len(writers))
        roll = rng.random()
        if roll < 0.65 or not ids:
            serial += 1
            ids.append(
                writers[who].remember(
                    f"note {serial} {rng.choice(['tea', 'ships', 'garden'])}",
                    category=rng.choice(["general", "work"]),
                    persistent=rng.random() < 0.25,
                    ttl_days=rng.choice([None, None, None, 0.00002, 1.0]),
                )
            )
        elif roll < 0.9:
            writers[who].forget(ids.pop(rng.randrange(len(ids))))
        else:
            # A forget record as versions before the rule wrote it: in the log of the
            # forgetting process's own date, the day before the entry's.
            victim = ids.pop(rng.randrange(len(ids)))
            entry = writers[who].get(victim)
            if entry is None:
                continue
            day_before = entry.created_at - timedelta(days=1)
            name = f"logs/{day_before:%Y-%m-%d}.jsonl"
            if writers[who].root.exists(name):
                writers[who].root.append(
                    name,
                    forget_records([victim], "forget", day_before.replace(hour=23, minute=59)),
                    line_safe=True,
                )
    return max(clock() for clock in clocks) + timedelta(seconds=1)


@pytest.mark.parametrize("seed", range(60))
def test_differential_cold_indexed_and_cacheless_agree(
    tmp_path: Path, backend: str, seed: int
) -> None:
    url = str(tmp_path / "m") if backend == "local" else f"memory://cold-diff-{seed}-{os.getpid()}"
    end = _random_memory(url, seed)
    for shown in (1, 2, 4, 50):
        _same_everywhere(url, end, max_context_entries=shown)
        _same_everywhere(url, end + timedelta(seconds=5), max_context_entries=shown)
    _same_everywhere(url, end, max_context_entries=3, max_context_chars=120)


# -- MEMORY.md: no cache of its sections -------------------------------------------------------


def _big_plain_file() -> bytes:
    lines = ["# Agent Memory", "", "## prefs"]
    lines += [f"- likes tea number {i:05d} caf\u00e9 \u2615" for i in range(1500)]
    lines += ["", "## work"]
    lines += [f"- ships release {i:05d}" for i in range(1500)]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def writer(make_km: Make) -> KnowledgeMemory:
    km = make_km()
    km.remember("a recent note", category="work")
    km.root.write("MEMORY.md", _big_plain_file())
    return km


def _indexed_context(make_km: Make, **options: Any) -> str:
    indexed = make_km(index_cache=False, **options)
    indexed.refresh()  # indexed: the full parser, never the shortcut
    return indexed.build_context()


def test_a_big_plain_file_reads_the_same_cold_and_indexed(
    writer: KnowledgeMemory, make_km: Make
) -> None:
    expected = _indexed_context(make_km)
    assert "ships release 01499" in expected
    for _ in range(2):
        assert make_km().build_context() == expected
    assert make_km(max_context_chars=300).build_context() == _indexed_context(
        make_km, max_context_chars=300
    )
    assert writer.root.read_bytes("MEMORY.md") == _big_plain_file()  # never rewritten
    assert writer.root.read_cache("context") is None  # no cache file is written


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) keeping the inode, size and mtime."""
    assert len(old) == len(new)
    before = path.stat()
    data = path.read_bytes()
    assert data.count(old) == 1
    with path.open("r+b") as f:
        f.seek(data.index(old))
        f.write(new)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("backend", ["local"], indirect=True)
@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"- likes tea number 00007", b"- loves tea number 00007"),
        (b"## work\n", b"## w#rk\n"),
        (b"\n## work\n", b"\n\n- work\n"),
        (b"00100 caf\xc3\xa9 \xe2\x98\x95", b"00100 caf\xc3\xa9 \xe2\x98\x94"),
    ],
)
def test_a_same_size_edit_is_seen(
    writer: KnowledgeMemory, make_km: Make, old: bytes, new: bytes
) -> None:
    first = make_km().build_context()
    _edit_in_place(Path(writer.root.full_path("MEMORY.md")), old, new)  # type: ignore[attr-defined]
    expected = _indexed_context(make_km)
    assert expected != first
    assert make_km().build_context() == expected


def _old_cache_record(data: bytes, token: str, names: tuple[str, str]) -> bytes:
    """The cache file earlier versions kept: right size, token and CRC, the sections'
    spans, and their names (which nothing checked)."""
    spans = [
        [names[0], data.index(b"- likes"), data.index(b"\n\n## work")],
        [names[1], data.index(b"- ships"), len(data) - 1],
    ]
    record = {"size": len(data), "crc32": zlib.crc32(data), "token": token, "spans": spans}
    return b"fsmemory-plain 1\n" + orjson.dumps(record)


@pytest.mark.parametrize("names", [("pqefs", "work"), ("work", "prefs")])
def test_a_leftover_section_cache_changes_no_answer(
    writer: KnowledgeMemory, make_km: Make, names: tuple[str, str]
) -> None:
    """One flipped bit in a section name of the old cache file (or the names swapped)
    printed a wrong header in every fresh build_context(): the file is not read."""
    token = next(i.token for i in writer.root.list("") if i.path == "MEMORY.md")
    writer.root.write_cache("context", _old_cache_record(_big_plain_file(), token, names))
    text = make_km().build_context()
    assert text == _indexed_context(make_km)
    assert "## pqefs" not in text and text.index("## prefs") < text.index("## work")


def test_clear_deletes_a_leftover_section_cache(writer: KnowledgeMemory, make_km: Make) -> None:
    writer.root.write_cache("context", b"fsmemory-plain 1\n{}")
    writer.clear()
    assert writer.root.read_cache("context") is None
    assert make_km().build_context() == ""


@pytest.mark.parametrize("later", [timedelta(0), timedelta(hours=1)])
def test_a_record_without_expiry_never_claims_a_bullet_with_one(
    make_km: Make, later: timedelta
) -> None:
    """The same fact remembered with a TTL and again without; a person deletes the plain
    bullet. The bullet left has an expiry comment: it is the TTL record's, not the other
    one's, in the cold path as in the index (at the expiry moment and after)."""
    start = datetime(2026, 3, 13, 23, 40, tzinfo=UTC)
    writer = make_km(clock=FakeClock(start))
    writer.remember("an ordinary note")
    writer.remember("tok0007x gamma", category="notes", persistent=True, ttl_days=1)
    writer.remember("tok0007x gamma", category="notes", persistent=True)
    data = writer.root.read_bytes("MEMORY.md")
    assert data.count(b"- tok0007x gamma\n") == 1
    writer.root.write("MEMORY.md", data.replace(b"- tok0007x gamma\n", b""))
    text = _same_everywhere(writer.root.url, start + timedelta(days=1) + later)
    assert "tok0007x" not in text and "an ordinary note" in text
