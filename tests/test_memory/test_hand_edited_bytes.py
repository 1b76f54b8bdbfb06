"""A person's bytes in MEMORY.md are never changed: invalid UTF-8 survives every rewrite
(insert, forget, tidy, prune) byte for byte and is counted in ``stats()``."""

from __future__ import annotations

from pathlib import Path

from fsmemory import KnowledgeMemory

from .conftest import FakeClock

# Latin-1 "café" in a bullet, a lone 0xff in a prose line, a bad byte in a header.
HAND_WRITTEN = (
    b"# Agent Memory\n"
    b"\n"
    b"Notes typed in an old editor: \xff\xfe end\n"
    b"\n"
    b"## preferences\n"
    b"- Likes caf\xe9 au lait\n"
    b"- Dark mode\n"
    b"\n"
    b"## caf\xe9s\n"
    b"- Lisbon on Fridays\n"
)
HAND_LINES = [ln for ln in HAND_WRITTEN.split(b"\n") if ln]


def _make(tmp_path: Path, clock: FakeClock, data: bytes = HAND_WRITTEN) -> KnowledgeMemory:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "MEMORY.md").write_bytes(data)
    return KnowledgeMemory(folder, clock=clock)


def _md(km: KnowledgeMemory) -> bytes:
    return km.root.read_bytes("MEMORY.md")


def _assert_hand_lines_kept(data: bytes, *, except_line: bytes | None = None) -> None:
    lines = data.split(b"\n")
    for line in HAND_LINES:
        if line != except_line:
            assert line in lines, line


def test_invalid_utf8_lines_are_counted_in_stats(tmp_path: Path, clock: FakeClock) -> None:
    km = _make(tmp_path, clock)
    stats = km.stats()
    assert stats["memory_md_invalid_lines"] == 3
    assert stats["corrupt_lines"] == 3
    facts = km.get_persistent_facts()
    assert facts["preferences"] == ["Likes caf\ufffd au lait", "Dark mode"]
    assert facts["caf\ufffds"] == ["Lisbon on Fridays"]


def test_an_insert_rewrite_keeps_every_hand_written_byte(tmp_path: Path, clock: FakeClock) -> None:
    km = _make(tmp_path, clock)
    km.remember("Uses vim", category="preferences", persistent=True)
    after = _md(km)
    assert after == HAND_WRITTEN.replace(b"- Dark mode\n", b"- Dark mode\n- Uses vim\n")
    km.remember("Met Bob", category="people", persistent=True)
    _assert_hand_lines_kept(_md(km))
    assert KnowledgeMemory(km.root.url).stats()["memory_md_invalid_lines"] == 3


def test_forget_removes_only_its_line(tmp_path: Path, clock: FakeClock) -> None:
    km = _make(tmp_path, clock)
    kept = km.remember("Uses vim", category="preferences", persistent=True)
    dark = next(e for e in km.entries() if e.content == "Dark mode")
    assert km.forget(dark.id)
    data = _md(km)
    assert b"- Dark mode\n" not in data
    _assert_hand_lines_kept(data, except_line=b"- Dark mode")
    assert km.get(kept) is not None


def test_forgetting_a_fact_with_invalid_bytes_removes_exactly_that_line(
    tmp_path: Path, clock: FakeClock
) -> None:
    km = _make(tmp_path, clock)
    cafe = next(e for e in km.entries() if e.content == "Likes caf\ufffd au lait")
    assert km.forget(cafe.id)
    assert _md(km) == HAND_WRITTEN.replace(b"- Likes caf\xe9 au lait\n", b"")
    assert km.stats()["memory_md_invalid_lines"] == 2


def test_tidy_and_prune_rewrites_keep_the_bytes(tmp_path: Path, clock: FakeClock) -> None:
    expiring = HAND_WRITTEN + b"- Short lived <!-- expires: 2026-03-14T00:00:00.000000Z -->\n"
    km = _make(tmp_path, clock, expiring)
    assert "Short lived" in km.get_persistent_facts()["caf\ufffds"]
    clock.advance(days=2)
    km.prune_logs()
    data = _md(km)
    assert b"Short lived" not in data
    _assert_hand_lines_kept(data)
    # The tidy rewrite (repeated headers merged) keeps them too.
    km.root.write("MEMORY.md", HAND_WRITTEN + b"\n## preferences\n- Tea\n")
    from fsmemory.memory._facts_file import _tidy

    tidied = _tidy(_md(km))
    assert tidied is not None
    _assert_hand_lines_kept(tidied)
    assert tidied.count(b"## preferences") == 1
