"""The search index's cache travels in a fold's base, as a verified cache: a restore
installs it, the first recall parses only what deltas appended, and a stale, damaged,
foreign or hand-edited base never changes an answer."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache
from fsmemory.memory._feed import Feeding
from fsmemory.snapshot import FsspecBackend, pack_archive
from fsmemory.snapshot.archive import unpack_archive_parts, unpack_derived

QUERIES = ["", "python", "project atlas", "deadline", "fact 7", "cat3 preferences", "zzz"]


@pytest.fixture(autouse=True)
def _small_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    # a cache for a memory of a few hundred entries, rewritten after every 50 new rows
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 1024)
    monkeypatch.setattr(_index_cache, "MIN_NEW_ROWS", 50)


def _answers(km: KnowledgeMemory) -> list[Any]:
    found = [[(e.id, e.content, e.category) for e in km.recall(q, limit=7)] for q in QUERIES]
    facts = km.get_persistent_facts()
    return [found, facts, sorted(e.id for e in km.entries())]


def _fresh_answers(folder: Path) -> list[Any]:
    return _answers(KnowledgeMemory(folder, index_cache=False))


def _seed(tmp_path: Path, url: str, n: int = 300) -> KnowledgeMemory:
    """A memory of ``n`` entries whose cache file is written, then folded into a base."""
    km = KnowledgeMemory(tmp_path / "w", backend=FsspecBackend(url), snapshot_compact_after=1000)
    for i in range(n):
        km.remember(
            f"fact {i}: the user mentioned project atlas and prefers python",
            category=f"cat{i % 5}",
            persistent=i % 2 == 0,
        )
    km.recall("python")  # writes the cache file
    assert km.root.read_cache(_index_cache.CACHE_NAME)
    # a fold (the same folder again, warm): its base carries the folder's cache
    folder = KnowledgeMemory(tmp_path / "w", backend=FsspecBackend(url), snapshot_compact_after=1)
    folder.remember("the fold", category="cat1", persistent=True)
    assert folder._replica is not None and folder._replica.folds == 1
    return folder


def _base_cache(url: str) -> bytes | None:
    state = FsspecBackend(url).load_state()
    assert state.base is not None
    _, derived = unpack_archive_parts(state.base)
    return unpack_derived(derived.get(_index_cache.CACHE_NAME))


def _parsed_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    parsed: list[int] = []
    feed = Feeding.feed_log

    def counting(self: Any, path: str, chunk: bytes, base_offset: int) -> None:
        parsed.append(len(chunk))
        feed(self, path, chunk, base_offset)

    monkeypatch.setattr(Feeding, "feed_log", counting)
    return parsed


def test_a_restored_memory_recalls_from_the_base_cache_and_parses_only_the_deltas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"memory://travel/{uuid.uuid4().hex}.snapshot"
    seeded = _seed(tmp_path, url)
    assert _base_cache(url) is not None
    # deltas after the fold: lines appended, a forget, a persistent fact
    other = KnowledgeMemory(tmp_path / "o", backend=FsspecBackend(url))
    first = other.entries()[0].id
    other.remember("a deadline on friday", category="cat2", persistent=True)
    other.remember("python 3.13 next week")
    assert other.forget(first)
    assert FsspecBackend(url).load_state().deltas  # waiting, not folded
    parsed = _parsed_bytes(monkeypatch)
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url))
    assert restored.root.read_cache(_index_cache.CACHE_NAME)  # installed
    answers = _answers(restored)
    assert restored._cache_loaded
    log_bytes = sum(p.stat().st_size for p in (tmp_path / "r" / "logs").glob("*.jsonl"))
    # only the lines appended after the cache was written: never the whole log again
    assert 0 < sum(parsed) < log_bytes / 10, (parsed, log_bytes)
    assert answers == _fresh_answers(tmp_path / "r")
    assert first not in answers[2]
    assert seeded.recall("the fold")[0].content == "the fold"


def test_a_hand_edit_in_the_base_is_seen_through_the_cache(tmp_path: Path) -> None:
    url = f"memory://travel/{uuid.uuid4().hex}.snapshot"
    seeded = _seed(tmp_path, url)
    folder = tmp_path / "w"
    # MEMORY.md and a log line fixed by hand in place (same lengths), after the folder's
    # cache was written; the next fold packs the edited files with that cache
    md = folder / "MEMORY.md"
    md.write_bytes(md.read_bytes().replace(b"fact 4:", b"fact X:"))
    (log,) = (folder / "logs").glob("*.jsonl")
    log.write_bytes(log.read_bytes().replace(b"fact 7:", b"fact Y:"))
    assert seeded.flush() > 0
    assert seeded._replica is not None and seeded._replica.folds == 2
    assert _base_cache(url) is not None
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url))
    answers = _answers(restored)
    assert answers == _fresh_answers(tmp_path / "r")
    contents = {e.content for e in restored.entries()}
    assert any(c.startswith("fact Y:") for c in contents)
    assert not any(c.startswith("fact 7:") for c in contents)
    assert any(f.startswith("fact X:") for fs in answers[1].values() for f in fs)


def _with_base_cache(url: str, cache: object) -> None:
    """Replace the snapshot's base by one with the same files and ``cache`` as its
    stored derived entry (None: none)."""
    backend = FsspecBackend(url)
    state = backend.load_state()
    assert state.base is not None and not state.deltas
    files, _ = unpack_archive_parts(state.base)
    document = orjson.loads(pack_archive(files))
    if cache is not None:
        document["derived"] = {_index_cache.CACHE_NAME: cache}
    assert backend.save_base(orjson.dumps(document), folded=(), expected=state)


@pytest.mark.parametrize(
    "damage", ["flipped byte", "truncated", "not zlib", "bad base64", "foreign", "other format"]
)
def test_a_damaged_or_foreign_cache_in_the_base_changes_no_answer(
    tmp_path: Path, damage: str
) -> None:
    url = f"memory://travel/{uuid.uuid4().hex}.snapshot"
    _seed(tmp_path, url)
    good = _base_cache(url)
    assert good is not None
    entry: dict[str, Any] = orjson.loads(pack_archive({}, {"index": good}))["derived"]["index"]
    if damage == "flipped byte":
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0xFF
        entry = orjson.loads(pack_archive({}, {"index": bytes(bad)}))["derived"]["index"]
    elif damage == "truncated":
        entry = orjson.loads(pack_archive({}, {"index": good[:-100]}))["derived"]["index"]
    elif damage == "not zlib":
        entry["content"] = "AAAA" + entry["content"][4:]
    elif damage == "bad base64":
        entry["content"] = entry["content"][:-3] + "!!!"
    elif damage == "foreign":
        # a valid cache of another memory (its cursors prove nothing here)
        other = KnowledgeMemory(tmp_path / "foreign")
        for i in range(200):
            other.remember(f"something else entirely {i}", persistent=i % 3 == 0)
        other.recall("else")
        foreign = bytes(other.root.read_cache(_index_cache.CACHE_NAME) or b"")
        assert foreign
        entry = orjson.loads(pack_archive({}, {"index": foreign}))["derived"]["index"]
    else:
        entry["encoding"] = "brotli-base64"
    _with_base_cache(url, entry)
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url))
    assert _answers(restored) == _fresh_answers(tmp_path / "r")
    assert len(restored.entries()) == 301


def test_index_cache_false_neither_installs_nor_packs_the_cache(tmp_path: Path) -> None:
    url = f"memory://travel/{uuid.uuid4().hex}.snapshot"
    _seed(tmp_path, url)
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url), index_cache=False)
    assert restored.root.read_cache(_index_cache.CACHE_NAME) is None
    restored.recall("python")
    plain = KnowledgeMemory(
        tmp_path / "w", backend=FsspecBackend(url), snapshot_compact_after=1, index_cache=False
    )
    plain.remember("folded without the cache")
    assert plain._replica is not None and plain._replica.folds == 1
    assert _base_cache(url) is None
    # a base without a cache restores as before
    again = KnowledgeMemory(tmp_path / "r2", backend=FsspecBackend(url))
    assert again.root.read_cache(_index_cache.CACHE_NAME) is None
    assert _answers(again) == _fresh_answers(tmp_path / "r2")


def test_a_first_persistent_remember_after_a_restore_starts_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler's first call is often a persistent remember(): it loads the cache the
    base carried instead of matching every MEMORY.md bullet without the logs' records
    (which made an md- entry per bullet, then threw them away)."""
    from fsmemory.memory._claims import Claims

    url = f"memory://travel/{uuid.uuid4().hex}.snapshot"
    _seed(tmp_path, url)
    made: list[object] = []
    add = Claims._add_md_entry

    def counting(self: Any, key: Any, occurrence: int) -> None:
        made.append(key)
        add(self, key, occurrence)

    monkeypatch.setattr(Claims, "_add_md_entry", counting)
    restored = KnowledgeMemory(tmp_path / "r", backend=FsspecBackend(url))
    restored.remember("a new fact", category="cat3", persistent=True)
    assert restored._cache_loaded
    # (only bullets whose records came after the cache was written wait for them)
    assert len(made) <= 4, made
    answers = _answers(restored)
    assert answers == _fresh_answers(tmp_path / "r")
    assert "a new fact" in answers[1]["cat3"]
