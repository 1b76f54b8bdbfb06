"""Derived state (index cache, cursors, claims) never answers differently from the files.

Every test ends with the differential check: a fresh instance that loads the index
cache, a fresh instance that never reads it (``index_cache=False``) and a warm
instance that was open before the change all answer the same (``entries()``,
``recall()``, ``get()``, ``get_persistent_facts()``), on a local folder, memory:// and
S3 (moto), and the answer is the one the files hold.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache
from fsmemory.memory.layout import MEMORY_FILE

from .conftest import FakeClock

Make = Callable[..., KnowledgeMemory]

LOCAL_MEMORY_S3 = ["local", "memory", pytest.param("s3", marks=pytest.mark.s3)]
QUERIES = ["pin", "meeting", "tea", "fact", "zzz", "hand", "likes", ""]


@pytest.fixture(autouse=True)
def _cache_every_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small memories write and load the index cache too (the thresholds only decide
    whether a cache pays; the code paths are the same)."""
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 0)
    monkeypatch.setattr(_index_cache, "MIN_NEW_ROWS", 1)


def _answers(km: KnowledgeMemory, ids: list[str]) -> tuple[Any, ...]:
    return (
        [e.to_dict() for e in km.entries()],
        [[e.to_dict() for e in km.recall(q, limit=20)] for q in QUERIES],
        [None if (e := km.get(i)) is None else e.to_dict() for i in ids],
        km.get_persistent_facts(),
    )


def _all_agree(make: Make, warm: KnowledgeMemory, ids: list[str]) -> tuple[Any, ...]:
    """The answers of a cache-loaded fresh instance, asserted equal to those of a fresh
    cache-less instance and of ``warm``; a second cache-loaded instance (after the first
    one's recalls may have saved the cache again) answers the same too."""
    cached = make()
    got = _answers(cached, ids)
    assert cached._cache_loaded, "the cache was not used: the test proves nothing"
    assert got == _answers(make(index_cache=False), ids)
    assert got == _answers(warm, ids)
    assert got == _answers(make(), ids)
    return got


def _edit(km: KnowledgeMemory, path: str, change: Callable[[bytes], bytes]) -> None:
    """A person's edit: in place on a local folder (same inode, as editors that save in
    place do), one whole PUT elsewhere."""
    old = km.root.read_bytes(path)
    new = change(old)
    full = Path(km.directory) / path
    if full.exists():
        with open(full, "r+b") as f:
            f.write(new)
        assert full.stat().st_ino == os.stat(full).st_ino
    else:
        km.root.write(path, new)


def _ballast(km: KnowledgeMemory, clock: FakeClock) -> None:
    """Entries in the previous day's log, which the tests never change: a rewritten
    file then stays a small part of the memory, and a fresh instance keeps its cache
    instead of parsing afresh (which would prove nothing)."""
    clock.advance(days=-1)
    for i in range(8):
        km.remember(f"ballast entry {i} " + "b" * 400, category="misc")
    clock.advance(days=1)


@pytest.mark.parametrize("backend", LOCAL_MEMORY_S3)
def test_a_same_length_fix_of_memory_md_that_also_grew_is_seen(
    make_km: Make, clock: FakeClock
) -> None:
    writer = make_km()
    _ballast(writer, clock)
    ids = [writer.remember("My PIN is 4321", category="prefs", persistent=True)]
    for i in range(4):  # later bullets: the fix is far from the file's last 64 bytes
        ids.append(writer.remember(f"fact number {i} about the garden", "prefs", persistent=True))
    ids.append(writer.remember("meeting at 10am on monday", category="work"))
    writer.recall("pin")  # the cache is written
    warm = make_km()
    warm.recall("pin")
    _edit(
        writer,
        MEMORY_FILE,
        lambda old: old.replace(b"My PIN is 4321", b"My PIN is 1234") + b"- likes green tea\n",
    )
    got = _all_agree(make_km, warm, ids)
    facts = got[3]["prefs"]
    assert "My PIN is 1234" in facts and "My PIN is 4321" not in facts
    assert "likes green tea" in facts
    assert not any("4321" in e["content"] for e in got[0])


@pytest.mark.parametrize("backend", LOCAL_MEMORY_S3)
def test_a_same_length_fix_of_a_log_line_that_also_grew_is_seen(
    make_km: Make, clock: FakeClock
) -> None:
    writer = make_km()
    _ballast(writer, clock)
    ids = [writer.remember("meeting at 10am on monday", category="work")]
    for i in range(4):
        ids.append(writer.remember(f"note number {i} about the garden", category="home"))
    writer.recall("meeting")
    warm = make_km()
    warm.recall("meeting")
    log = max(i.path for i in writer.root.list("logs"))
    _edit(writer, log, lambda old: old.replace(b"at 10am", b"at 11am"))
    ids.append(make_km(index_cache=False).remember("likes green tea", category="home"))
    got = _all_agree(make_km, warm, ids)
    contents = [e["content"] for e in got[0]]
    assert "meeting at 11am on monday" in contents
    assert "meeting at 10am on monday" not in contents
    assert "likes green tea" in contents


@pytest.mark.parametrize("backend", LOCAL_MEMORY_S3)
def test_forget_then_two_remembers_with_a_shared_ending_are_seen(
    make_km: Make, clock: FakeClock
) -> None:
    """Facts sharing their last 64 bytes: after a forget and two remember()s the end
    of the old MEMORY.md is found at the same offset again."""
    ending = " and that is what the fact says, in more than sixty-four bytes of text"
    assert len(ending) > 64
    writer = make_km()
    _ballast(writer, clock)
    ids = [writer.remember(f"fact {c}{ending}", category="notes", persistent=True) for c in "ab"]
    writer.recall("fact")  # the cache is written
    warm = make_km()
    warm.recall("fact")
    assert writer.forget(ids[1])
    ids += [writer.remember(f"fact {c}{ending}", category="notes", persistent=True) for c in "cd"]
    got = _all_agree(make_km, warm, ids)
    assert got[3] == {"notes": [f"fact {c}{ending}" for c in "acd"]}
    assert [e is not None for e in got[2]] == [True, False, True, True]


def _remember_again(
    make_km: Make,
    clock: FakeClock,
    remove: Callable[[KnowledgeMemory], None],
    ttl_days: int | None = None,
) -> tuple[Any, ...]:
    """Remember a fact, let ``remove`` take its bullet away, remember it again: the
    second record is the live one everywhere."""
    writer = make_km()
    _ballast(writer, clock)
    writer.remember("warm up entry about tea", category="misc")
    warm = make_km()
    warm.recall("tea")
    first = writer.remember("My PIN is 4321", category="prefs", persistent=True, ttl_days=ttl_days)
    writer.recall("pin")  # the cache is written
    warm.recall("pin")
    assert [e.id for e in warm.recall("pin")] == [first]  # its bullet claims it
    remove(writer)
    clock.advance(minutes=1)
    second = writer.remember("My PIN is 4321", category="prefs", persistent=True)
    got = _all_agree(make_km, warm, [first, second])
    assert got[2][1] is not None and got[2][1]["id"] == second
    assert got[2][0] is None
    assert second in [e["id"] for e in got[0]]
    assert [e["id"] for e in got[1][QUERIES.index("pin")]] == [second]
    assert got[3]["prefs"] == ["My PIN is 4321"]
    return got


@pytest.mark.parametrize("backend", LOCAL_MEMORY_S3)
def test_an_expired_record_never_claims_the_bullet_of_the_fact_remembered_again(
    make_km: Make, clock: FakeClock
) -> None:
    def expire_and_tidy(km: KnowledgeMemory) -> None:
        clock.advance(days=2)
        km.prune_logs()
        assert b"4321" not in km.root.read_bytes(MEMORY_FILE)

    _remember_again(make_km, clock, expire_and_tidy, ttl_days=1)


@pytest.mark.parametrize("ttl_days", [None, 1])
@pytest.mark.parametrize("backend", LOCAL_MEMORY_S3)
def test_a_record_whose_bullet_was_deleted_never_claims_the_new_bullet(
    make_km: Make, clock: FakeClock, ttl_days: int | None
) -> None:
    def delete_bullet(km: KnowledgeMemory) -> None:
        data = km.root.read_bytes(MEMORY_FILE)
        (line,) = [x for x in data.split(b"\n") if b"4321" in x]
        km.root.write(MEMORY_FILE, data.replace(line + b"\n", b""))

    _remember_again(make_km, clock, delete_bullet, ttl_days)


@pytest.mark.parametrize("backend", LOCAL_MEMORY_S3)
def test_a_bullet_kept_without_its_expiry_outlives_its_record(
    make_km: Make, clock: FakeClock
) -> None:
    """A person removes a TTL bullet's expiry: the fact stays (as a MEMORY.md fact)
    and every instance says so, before and after the record's expiry."""
    writer = make_km()
    _ballast(writer, clock)
    first = writer.remember("My PIN is 4321", category="prefs", persistent=True, ttl_days=1)
    writer.recall("pin")
    warm = make_km()
    warm.recall("pin")
    data = writer.root.read_bytes(MEMORY_FILE)
    writer.root.write(MEMORY_FILE, data.split(b" <!--")[0] + b"\n")
    for _ in range(2):
        got = _all_agree(make_km, warm, [first])
        assert got[3] == {"prefs": ["My PIN is 4321"]}
        assert [e["content"] for e in got[0] if e["category"] == "prefs"] == ["My PIN is 4321"]
        clock.advance(days=2)


@pytest.mark.parametrize("backend", LOCAL_MEMORY_S3)
def test_memory_md_facts_have_a_created_at_derived_from_the_files(
    make_km: Make, clock: FakeClock
) -> None:
    writer = make_km()
    _ballast(writer, clock)
    writer.remember("some logged entry about tea", category="misc")
    data = writer.root.read_bytes(MEMORY_FILE) if writer.root.exists(MEMORY_FILE) else b""
    writer.root.write(MEMORY_FILE, data + b"# Agent Memory\n\n## prefs\n- hand written fact\n")
    warm = make_km()
    warm.recall("hand")
    writer.recall("hand")  # the cache is written
    (hand,) = [e for e in writer.entries() if e.content == "hand written fact"]
    # MEMORY.md changes later (its mtime with it): the hand fact's time does not.
    writer.remember("a fact remembered later", category="prefs", persistent=True)
    full = Path(writer.directory) / MEMORY_FILE
    if full.exists():
        os.utime(full, (1e9, 2e9))
    got = _all_agree(make_km, warm, [hand.id])
    assert got[2][0]["timestamp"] == hand.to_dict()["timestamp"]
    assert hand.created_at == datetime(1970, 1, 1, tzinfo=UTC)  # documented
