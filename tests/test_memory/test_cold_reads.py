"""A fresh instance answers exactly as an indexed one, whatever it reads first.

``build_context()`` on a fresh instance reads MEMORY.md and the ends of the newest logs
only; ``recall()`` scans before it tokenizes. These tests compare each cold answer with
the answer of an instance that indexed everything first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from fsmemory import KnowledgeMemory, open_root

from .conftest import FakeClock

Make = Callable[..., KnowledgeMemory]


def _indexed(make: Make, **kwargs: object) -> KnowledgeMemory:
    km = make(**kwargs)
    km.refresh()
    return km


def _same_context(make: Make, **kwargs: object) -> str:
    cold = make(**kwargs).build_context()
    assert cold == _indexed(make, **kwargs).build_context()
    return cold


def test_cold_context_honours_forget_ttl_and_claims(make_km: Make, clock: FakeClock) -> None:
    km = make_km()
    ids = [
        km.remember(f"note {i}", category="work" if i % 2 else "home", importance=i / 40)
        for i in range(30)
    ]
    km.remember("Prefers tea", category="prefs", persistent=True)
    km.remember("Short lived", ttl_days=1)
    doomed = km.remember("Deleted by hand", category="prefs", persistent=True)
    km.forget(ids[-1])
    km.forget(ids[3])
    text = km.root.read_bytes("MEMORY.md").replace(b"- Deleted by hand\n", b"")
    km.root.write("MEMORY.md", text)
    context = _same_context(make_km, max_context_entries=10)
    assert "Prefers tea" in context and "Short lived" in context
    assert "Deleted by hand" not in context and "note 29" not in context
    assert doomed and "note 28" in context
    clock.advance(days=2)
    later = _same_context(make_km, max_context_entries=10)
    assert "Short lived" not in later


def test_cold_context_reads_back_across_blocks_and_files(make_km: Make, clock: FakeClock) -> None:
    km = make_km()
    filler = "x" * 900
    for day in range(3):
        for i in range(120):
            km.remember(f"day {day} entry {i} {filler}")
        clock.advance(days=1)
    km.remember("today's only entry")
    for count in (1, 5, 80, 200, 500):
        context = _same_context(make_km, max_context_entries=count)
        assert context.count("\n- [") == min(count, 361)


def test_cold_context_with_limits_and_corrupt_lines(make_km: Make, clock: FakeClock) -> None:
    km = make_km()
    for i in range(12):
        km.remember(f"entry {i}", persistent=i % 3 == 0, category="c")
    log = km.root.list("logs")[0].path
    km.root.append(log, b"{not json\n\n[1, 2]\n")
    km.remember("after the junk")
    _same_context(make_km, max_context_entries=5, max_context_chars=200)
    _same_context(make_km, max_context_entries=0)
    assert _same_context(make_km, max_context_entries=50).count("entry") == 12 + 4  # + bullets


def test_cold_context_defers_to_the_index_for_duplicates(make_km: Make) -> None:
    km = make_km()
    km.remember("same fact", category="c", persistent=True)
    km.remember("same fact", category="c", persistent=True)
    text = km.root.read_bytes("MEMORY.md")
    km.root.write("MEMORY.md", text.replace(b"- same fact\n", b"", 1))
    context = _same_context(make_km)
    assert context.count("same fact") == 2  # one bullet, one recent entry (the oldest)


def test_cold_context_ignores_a_line_still_being_written(make_km: Make) -> None:
    km = make_km()
    km.remember("complete")
    log = km.root.list("logs")[0].path
    km.root.append(log, b'{"id": "half", "content": "partial')
    assert "partial" not in _same_context(make_km)


def test_cold_context_is_cached_until_a_file_changes(tmp_path: Path, clock: FakeClock) -> None:
    km = KnowledgeMemory(tmp_path / "m", clock=clock)
    km.remember("first")
    cold = KnowledgeMemory(tmp_path / "m", clock=clock)
    assert "first" in cold.build_context()
    km.remember("second")
    assert "second" in cold.build_context()
    assert cold.build_context() == km.build_context()


@pytest.fixture(scope="module")
def written_for_recall() -> dict[str, dict[str, bytes]]:
    """The files :func:`_write_for_recall` wrote, by backend, for the module's next tests."""
    return {}


def _write_for_recall(
    make_km: Make,
    location: tuple[str, dict[str, object]],
    backend: str,
    written: dict[str, dict[str, bytes]],
) -> None:
    """Sixty entries, a persistent fact and a forget, written by remember() and forget()
    on the backend the first time; on later calls with the same backend the files they
    wrote then are copied in byte for byte (the writes are most of a test's time on an
    object store, and the tests only read)."""
    root = open_root(*location)
    kept = written.get(backend)
    if kept is not None:
        for path, data in kept.items():
            root.write(path, data)
        return
    km = make_km()
    words = ["python", "pythonic", "rust", "editor", "dark", "mode", "élan", "a", "b_c"]
    for i in range(60):
        text = " ".join(words[(i * k) % len(words)] for k in range(1, 5))
        km.remember(f"{text} #{i}", category="work" if i % 4 else "Élan", importance=(i % 7) / 7)
    km.remember("İstanbul python trip", persistent=True)
    km.forget(km.recall("python", limit=1)[0].id)
    written[backend] = {i.path: root.read_bytes(i.path) for i in root.list("", recursive=True)}


@pytest.mark.parametrize(
    "query", ["python", "pyth", "rust editor", "dark mode", "é", "ÉLAN", "a", "zzz", "work"]
)
def test_first_recall_equals_an_indexed_recall(
    make_km: Make,
    location: tuple[str, dict[str, object]],
    backend: str,
    written_for_recall: dict[str, dict[str, bytes]],
    query: str,
) -> None:
    _write_for_recall(make_km, location, backend, written_for_recall)
    first = [e.id for e in make_km().recall(query, limit=7)]
    indexed = _indexed(make_km)
    indexed.recall("warm-up")
    assert first == [e.id for e in indexed.recall(query, limit=7)]


def test_whole_file_ranges_read_what_read_bytes_reads(
    location: tuple[str, dict[str, object]],
) -> None:
    url, options = location
    root = open_root(url, options)
    files = {
        "MEMORY.md": b"# Agent Memory\n",
        "logs/2026-01-01.jsonl": b"{}\n",
        "x/y": b"\xff",
        "e": b"",
    }
    for path, data in files.items():
        root.write(path, data)
    requests = [(path, 0, None) for path in [*files, "logs/missing.jsonl"]]
    assert root.read_ranges(requests) == [*files.values(), None]
    assert root.read_ranges([]) == []


def test_a_cold_open_fetches_its_files_together(make_km: Make, clock: FakeClock) -> None:
    km = make_km()
    for day in range(4):
        km.remember(f"fact of day {day}", persistent=day % 2 == 0)
        clock.advance(days=1)
    fresh = make_km()
    fetched: list[list[str]] = []
    read_ranges = fresh.root.read_ranges

    def spy(requests: Sequence[tuple[str, int, int | None]]) -> list[bytes | None]:
        assert all(start == 0 and end is None for _, start, end in requests)
        fetched.append(sorted(path for path, _, _ in requests))
        return read_ranges(requests)

    fresh.root.read_ranges = spy  # type: ignore[method-assign]
    assert fresh.recall("day 3")[0].content == "fact of day 3"
    if fresh.root.capabilities.local_io:
        assert fetched == []  # local roots read file by file: no batch to gain
    else:
        assert fetched == [sorted(["MEMORY.md", *(i.path for i in km.root.list("logs"))])]


def test_the_bulk_parse_equals_the_line_by_line_parse(
    make_km: Make, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fsmemory.memory._index import MemoryIndex

    km = make_km()
    for i in range(40):
        km.remember(f"entry {i} python", category=f"c{i % 3}", persistent=i % 4 == 0)
        clock.advance(minutes=7)
    clock.advance(days=1)
    for i in range(20):  # the same facts again and again: this log takes the line path
        km.remember(f"dup {i % 5} python", persistent=True)
    km.forget(km.recall("entry 7")[0].id)
    used: list[bool] = []
    bulk_feed = MemoryIndex._bulk_feed

    def spy(self: MemoryIndex, path: str, lines: list[bytes]) -> bool:
        used.append(bulk_feed(self, path, lines))
        return used[-1]

    monkeypatch.setattr(MemoryIndex, "_bulk_feed", spy)
    bulk = make_km()
    bulk_view = (
        [e.id for e in bulk.entries()],
        [e.id for e in bulk.recall("python", limit=20)],
        bulk.build_context(),
        bulk.stats(),
    )
    assert True in used and False in used
    monkeypatch.setattr(MemoryIndex, "_bulk_feed", lambda self, path, lines: False)
    lines = make_km()
    assert bulk_view == (
        [e.id for e in lines.entries()],
        [e.id for e in lines.recall("python", limit=20)],
        lines.build_context(),
        lines.stats(),
    )
