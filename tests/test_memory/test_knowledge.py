"""KnowledgeMemory behaviour, run on every backend."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from fsmemory import ContentTooLargeError, KnowledgeEntry, KnowledgeMemory
from fsmemory.memory.layout import log_name_for

from .conftest import FakeClock

Make = Callable[..., KnowledgeMemory]


def files(km: KnowledgeMemory) -> dict[str, bytes]:
    return {i.path: km.root.read_bytes(i.path) for i in km.root.list("", recursive=True)}


# -- remember / get / forget -----------------------------------------------------------


def test_remember_returns_id_and_get_round_trips(km: KnowledgeMemory, clock: FakeClock) -> None:
    entry_id = km.remember(
        "Prefers Python",
        category="preferences",
        persistent=True,
        importance=0.8,
        ttl_days=10,
        metadata={"source": "chat", "n": [1, 2]},
    )
    assert isinstance(entry_id, str) and entry_id
    entry = km.get(entry_id)
    assert isinstance(entry, KnowledgeEntry)
    assert (entry.content, entry.category, entry.persistent) == (
        "Prefers Python",
        "preferences",
        True,
    )
    assert entry.importance == 0.8 and entry.ttl_days == 10
    assert entry.created_at == clock.now and entry.created_at.tzinfo is not None
    assert entry.metadata == {"source": "chat", "n": [1, 2]}
    assert not entry.expired_at(clock.now) and entry.expired_at(clock.now.replace(year=2027))
    assert km.get("no-such-id") is None


def test_ids_are_unique(km: KnowledgeMemory) -> None:
    ids = {km.remember(f"fact {i}") for i in range(200)}
    assert len(ids) == 200


def test_forget_removes_everywhere(km: KnowledgeMemory) -> None:
    keep = km.remember("keep me", category="a", persistent=True)
    drop = km.remember("drop me", category="a", persistent=True)
    plain = km.remember("plain note")
    assert km.forget(drop) is True
    assert km.forget(plain) is True
    assert km.forget(plain) is False
    assert km.forget("unknown") is False
    assert km.get(drop) is None and km.get(plain) is None and km.get(keep) is not None
    assert km.get_persistent_facts() == {"a": ["keep me"]}
    assert "drop me" not in km.build_context() and "plain note" not in km.build_context()
    assert [e.id for e in km.recall("keep drop plain note")] == [keep]
    # The original log lines are never rewritten: forgetting appends a record.
    log = b"".join(v for k, v in files(km).items() if k.startswith("logs/"))
    assert log.count(b'"op":"forget"') == 2 and b"drop me" in log


def test_invalid_input_raises_and_writes_nothing(km: KnowledgeMemory) -> None:
    bad_calls = [
        dict(content="x", importance=1.5),
        dict(content="x", importance=-0.1),
        dict(content="x", importance=float("nan")),
        dict(content="x", ttl_days=-1),
        dict(content="x", category=""),
        dict(content="x", category="   "),
        dict(content="x", category="two\nlines"),
        dict(content="x", category="a]b"),
        dict(content="x", category="## header"),
        dict(content="bad \ud800 surrogate"),
        dict(content=""),
        dict(content="   \n "),
        dict(content="x", metadata={1: "non-str key"}),
        dict(content="x", metadata="not a dict"),
    ]
    for kwargs in bad_calls:
        with pytest.raises(ValueError):
            km.remember(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ContentTooLargeError):
        KnowledgeMemory(km.root, max_content_bytes=100).remember("x" * 101)
    assert files(km) == {}


def test_a_category_is_trimmed_and_its_runs_of_whitespace_become_one_space(
    km: KnowledgeMemory,
) -> None:
    entry_id = km.remember("x", category=" \twork \u00a0\u2003 notes\x0b x  ")
    entry = km.get(entry_id)
    assert entry is not None and entry.category == "work notes x"


def test_hostile_content_round_trips_and_cannot_forge(km: KnowledgeMemory) -> None:
    hostile = [
        "line one\n## Forged header\n- forged bullet",
        "\r\n- crlf bullet\r\n# Agent Memory",
        "[Recent Memory]\n- [2026-01-01 00:00] (x) fake",
        "nul \x00 and bell \x07 and form feed \x0c and \u2028 separator",
        "ends with comment <!-- expires: 2000-01-01T00:00:00Z -->",
        "back\\slash \\n not a newline",
        "```\ncode fence\n```",
        "emoji 🧠 and CJK 记忆",
    ]
    ids = [km.remember(text, category="hostile", persistent=True) for text in hostile]
    for entry_id, text in zip(ids, hostile, strict=True):
        got = km.get(entry_id)
        assert got is not None and got.content == text
    assert km.get_persistent_facts() == {"hostile": [t.strip() for t in hostile]}
    md = km.root.read_bytes("MEMORY.md").decode()
    assert [ln for ln in md.splitlines() if ln.startswith("#")] == ["# Agent Memory", "## hostile"]
    assert sum(1 for ln in md.splitlines() if ln.startswith("- ")) == len(hostile)
    assert all(ln.startswith(("# ", "## ", "- ")) or not ln for ln in md.splitlines())
    context = km.build_context()
    assert context.count("\n[Recent Memory]\n") == 1
    assert context.startswith("[Long-term Memory]\n## hostile\n")
    recent = context.split("[Recent Memory]\n", 1)[1].splitlines()
    assert len(recent) == len(hostile)
    assert all(ln.startswith("- [2026-03-13 10:15] (hostile) ") for ln in recent)
    for path, data in files(km).items():
        if path.startswith("logs/"):
            lines = data.decode().split("\n")[:-1]
            assert len(lines) == len(hostile)
            assert [json.loads(ln)["content"] for ln in lines] == hostile
    # A fresh instance parses the same facts back from the files.
    assert KnowledgeMemory(km.root).get_persistent_facts() == {
        "hostile": [t.strip() for t in hostile]
    }


# -- layout ------------------------------------------------------------------------------


def test_layout_matches_the_seed(km: KnowledgeMemory, clock: FakeClock) -> None:
    km.remember("Name: Alice", category="personal", persistent=True)
    km.remember("Prefers Python", category="preferences", persistent=True)
    km.remember("Uses VS Code", category="preferences", persistent=True)
    km.remember("Meeting at 3pm", category="context")
    stored = files(km)
    assert set(stored) == {"MEMORY.md", "logs/2026-03-13.jsonl"}
    md = stored["MEMORY.md"].decode()
    assert md.startswith("# Agent Memory\n")
    assert "## personal\n- Name: Alice\n" in md
    assert "- Prefers Python\n- Uses VS Code\n" in md
    records = [json.loads(ln) for ln in stored["logs/2026-03-13.jsonl"].splitlines()]
    assert len(records) == 4
    for rec in records:
        assert {"id", "timestamp", "category", "content", "persistent", "importance"} <= set(rec)
        assert rec["timestamp"].startswith("2026-03-13T10:15:00") and rec["timestamp"].endswith("Z")
    assert [r["persistent"] for r in records] == [True, True, True, False]
    facts = km.get_persistent_facts()
    assert facts == {"personal": ["Name: Alice"], "preferences": ["Prefers Python", "Uses VS Code"]}


def test_logs_are_split_by_utc_day(km: KnowledgeMemory, clock: FakeClock) -> None:
    clock.now = datetime(2026, 3, 13, 23, 59, tzinfo=UTC)
    km.remember("late")
    clock.advance(minutes=2)
    km.remember("early")
    assert sorted(p for p in files(km) if p.startswith("logs/")) == [
        "logs/2026-03-13.jsonl",
        "logs/2026-03-14.jsonl",
    ]
    assert [r["content"] for r in km.get_recent_entries()] == ["early", "late"]


def test_build_context_exact_format(km: KnowledgeMemory, clock: FakeClock) -> None:
    assert km.build_context() == ""
    km.remember("Preferred language: Python", category="preferences", persistent=True)
    km.remember("Dark mode: enabled", category="preferences", persistent=True)
    clock.advance(minutes=1)
    km.remember("Working on Project Atlas this week", category="context")
    assert km.build_context() == (
        "[Long-term Memory]\n"
        "## preferences\n"
        "- Preferred language: Python\n"
        "- Dark mode: enabled\n"
        "\n"
        "[Recent Memory]\n"
        "- [2026-03-13 10:15] (preferences) Preferred language: Python\n"
        "- [2026-03-13 10:15] (preferences) Dark mode: enabled\n"
        "- [2026-03-13 10:16] (context) Working on Project Atlas this week"
    )


def test_build_context_omits_empty_sections(make_km: Make) -> None:
    km = make_km()
    km.remember("only recent", category="context")
    assert km.build_context() == "[Recent Memory]\n- [2026-03-13 10:15] (context) only recent"
    km.clear_logs()
    km.remember("fact", persistent=True)
    km.clear_logs()
    assert km.build_context() == "[Long-term Memory]\n## general\n- fact"


def test_max_context_entries_and_chars(make_km: Make, clock: FakeClock) -> None:
    km = make_km(max_context_entries=3)
    km.remember("a persistent fact", persistent=True)
    for i in range(10):
        clock.advance(minutes=1)
        km.remember(f"note {i}")
    recent = km.build_context().split("[Recent Memory]\n")[1].split("\n")
    assert [ln.rsplit(" ", 1)[1] for ln in recent] == ["7", "8", "9"]
    bounded = make_km(max_context_chars=150)
    text = bounded.build_context()
    assert len(text) <= 150
    assert text.startswith("[Long-term Memory]\n## general\n- a persistent fact")
    assert "note 9" in text and "note 0" not in text
    assert len(make_km(max_context_chars=10).build_context()) <= 10


# -- recall --------------------------------------------------------------------------------


def test_recall_ranks_by_relevance_then_importance(km: KnowledgeMemory) -> None:
    km.remember("User prefers dark mode in the editor", category="preferences", importance=0.3)
    km.remember("Dark chocolate is a favourite", category="food", importance=0.9)
    km.remember("Editor font is Fira Code", category="preferences", importance=0.95)
    km.remember("Unrelated fact about trains", category="travel", importance=1.0)
    got = [e.content for e in km.recall("dark mode editor")]
    assert got[0] == "User prefers dark mode in the editor"
    assert "Unrelated fact about trains" not in got
    assert [e.content for e in km.recall("DARK")][:2] == [
        "Dark chocolate is a favourite",
        "User prefers dark mode in the editor",
    ]
    assert [e.category for e in km.recall("travel")] == ["travel"]
    assert [e.content for e in km.recall("dark", category="food")] == [
        "Dark chocolate is a favourite"
    ]
    assert km.recall("nothing-matches-this") == []
    assert len(km.recall("prefer")) == 2  # prefix of "prefers" / "preferences"


def test_recall_empty_query_returns_most_important(km: KnowledgeMemory) -> None:
    for i in range(10):
        km.remember(f"fact {i}", importance=i / 10)
    assert [e.content for e in km.recall("", limit=3)] == ["fact 9", "fact 8", "fact 7"]
    with pytest.raises(ValueError):
        km.recall("x", limit=0)


def test_recall_searches_all_entries_not_a_window(km: KnowledgeMemory) -> None:
    needle = km.remember("the needle is in the haystack", importance=0.0)
    for i in range(700):
        km.remember(f"filler hay {i}", importance=0.9)
    assert [e.id for e in km.recall("needle")] == [needle]


# -- TTL, eviction, pruning ----------------------------------------------------------------


def test_expired_entries_appear_nowhere(km: KnowledgeMemory, clock: FakeClock) -> None:
    short = km.remember("short lived fact", category="tmp", persistent=True, ttl_days=1)
    note = km.remember("short lived note", ttl_days=0.5)
    km.remember("long lived", category="tmp", persistent=True)
    assert km.get(short) is not None
    clock.advance(days=2)
    assert km.get(short) is None and km.get(note) is None
    assert km.get_persistent_facts() == {"tmp": ["long lived"]}
    assert [e.content for e in km.recall("lived")] == ["long lived"]
    assert [r["content"] for r in km.get_recent_entries()] == ["long lived"]
    assert "short lived" not in km.build_context()
    assert km.stats()["entries"] == 1
    # Pruning removes expired bullets from MEMORY.md.
    km.prune_logs()
    assert "short lived" not in km.root.read_bytes("MEMORY.md").decode()


def test_eviction_picks_lowest_importance_among_all(make_km: Make) -> None:
    km = make_km(max_entries=50)
    low = km.remember("the least important", importance=0.01)
    fact = km.remember("persistent and unimportant", persistent=True, importance=0.0)
    for i in range(60):
        km.remember(f"filler {i}", importance=0.5 + (i % 5) / 10)
    remaining = km.entries()
    assert len(remaining) == 50
    assert km.get(low) is None
    assert km.get(fact) is not None  # persistent entries are never evicted
    kept = sorted(e.importance for e in remaining if not e.persistent)
    assert kept[0] >= 0.5


def test_prune_logs(make_km: Make, clock: FakeClock) -> None:
    km = make_km(max_log_days=30)
    km.remember("ancient", persistent=True)
    km.remember("old note")
    clock.advance(days=40)
    assert km.prune_logs() == 1
    km.remember("fresh note")
    assert km.get_persistent_facts() == {"general": ["ancient"]}
    assert [r["content"] for r in km.get_recent_entries(days=100)] == ["fresh note"]
    assert km.prune_logs(max_days=0) == 0
    clock.advance(days=1)
    assert km.prune_logs(max_days=0) == 1
    assert [e.content for e in km.recall("")] == ["ancient"]  # facts survive pruning


def test_build_context_never_deletes_and_writes_apply_retention(
    make_km: Make, clock: FakeClock
) -> None:
    km = make_km(max_log_days=1)
    km.remember("stale")
    stale_log = log_name_for(datetime(2026, 3, 13, tzinfo=UTC))
    kept = km.root.read_bytes(stale_log)
    clock.advance(days=3)
    for reader in (km, make_km(), make_km(index_cache=False)):
        assert "stale" in reader.build_context()  # a read deletes nothing
    assert km.root.read_bytes(stale_log) == kept
    km.remember("fresh")  # this instance's first write of the day applies retention
    assert not km.root.exists(stale_log)
    assert "stale" not in km.build_context() and "fresh" in km.build_context()


def test_clear_and_clear_logs(km: KnowledgeMemory) -> None:
    km.remember("fact", persistent=True)
    km.remember("note")
    km.clear_logs()
    assert km.get_persistent_facts() == {"general": ["fact"]}
    assert km.get_recent_entries() == []
    km.clear()
    assert km.get_persistent_facts() == {} and km.build_context() == "" and files(km) == {}


# -- hand edits, other writers, robustness -------------------------------------------------


def test_hand_edits_to_memory_md_are_honoured(km: KnowledgeMemory) -> None:
    keep = km.remember("Prefers Python", category="preferences", persistent=True)
    gone = km.remember("Uses Vim", category="preferences", persistent=True)
    md = km.root.read_bytes("MEMORY.md").decode()
    md = md.replace("- Uses Vim\n", "")
    md += "\n## personal\n* Name: Alice\n\nSome prose a person wrote.\n- Lives in Lisbon"
    km.root.write("MEMORY.md", md.encode())
    assert km.get_persistent_facts() == {
        "preferences": ["Prefers Python"],
        "personal": ["Name: Alice", "Lives in Lisbon"],
    }
    context = km.build_context()
    assert (
        "- Name: Alice" in context and "- Lives in Lisbon" in context and "Uses Vim" not in context
    )
    assert km.get(gone) is None and km.get(keep) is not None
    alice = km.recall("alice")
    assert len(alice) == 1 and alice[0].id.startswith("md-") and alice[0].persistent
    assert km.forget(alice[0].id) is True
    assert "Alice" not in km.root.read_bytes("MEMORY.md").decode()
    km.remember("Likes tea", category="personal", persistent=True)
    assert km.get_persistent_facts()["personal"] == ["Lives in Lisbon", "Likes tea"]


def test_other_instances_writes_become_visible(make_km: Make) -> None:
    reader, writer = make_km(), make_km()
    assert reader.recall("") == []
    writer.remember("written elsewhere", category="x", persistent=True)
    writer.remember("a note from elsewhere")
    assert {e.content for e in reader.recall("elsewhere")} == {
        "written elsewhere",
        "a note from elsewhere",
    }
    assert reader.get_persistent_facts() == {"x": ["written elsewhere"]}
    reader.remember("reader's own", category="x", persistent=True)
    writer.remember("writer again", category="x", persistent=True)
    assert (
        reader.get_persistent_facts()
        == writer.get_persistent_facts()
        == {"x": ["written elsewhere", "reader's own", "writer again"]}
    )


def test_corrupt_lines_are_skipped_counted_and_kept(km: KnowledgeMemory) -> None:
    km.remember("before")
    path = "logs/2026-03-13.jsonl"
    km.root.append(path, b'{"not json\n\xff\xfe invalid utf8\n[1, 2]\n{"content": 5}\n')
    km.root.append(
        path,
        b'{"timestamp": "2026-03-13T09:00:00Z", "category": "seed", '
        b'"content": "seed style line", "persistent": false}\n',
    )
    km.root.append(path, b'{"torn": "line without newline')
    km.remember("after")
    fresh = KnowledgeMemory(km.root, clock=km._clock)
    for memory in (km, fresh):
        assert {e.content for e in memory.recall("")} == {"before", "after", "seed style line"}
        assert memory.stats()["corrupt_lines"] == 5
        assert memory.build_context().count("\n- [") >= 2
    data = km.root.read_bytes(path)
    assert b"\xff\xfe invalid utf8" in data and b'{"torn": "line without newline\n' in data


def test_remember_does_not_read_or_rewrite(make_km: Make) -> None:
    km = make_km()
    for i in range(50):
        km.remember(f"warm {i}", persistent=i % 2 == 0)
    km.recall("warm")
    calls: list[str] = []
    root = km.root
    for name in ("read", "read_bytes", "read_range", "write", "update"):
        original = getattr(root, name)

        def spy(*args: object, _n: str = name, _o: object = original, **kw: object) -> object:
            calls.append(_n)
            return _o(*args, **kw)  # type: ignore[operator]

        setattr(root, name, spy)
    if not root.capabilities.native_append:
        pytest.skip("object stores append by compare-and-swap")
    for i in range(20):
        km.remember(f"hot {i}")
    assert calls == []
    if root.capabilities.cheap_lock:
        # Persistent facts of the last section are appended too.
        for i in range(20):
            km.remember(f"hot fact {i}", category="last", persistent=True)
        assert calls.count("update") == 1  # only the first, which starts the section
        assert km.get_persistent_facts()["last"] == [f"hot fact {i}" for i in range(20)]


def test_seed_api_compatibility(tmp_path: object) -> None:
    km = KnowledgeMemory(directory=str(tmp_path), max_log_days=30)
    assert km.directory == str(tmp_path) == km.storage_dir
    km.remember("Preferred language: Python", "preferences", True)
    assert "Preferred language: Python" in km.build_context()
    with pytest.raises(ValueError):
        KnowledgeMemory(str(tmp_path), directory=str(tmp_path))
    with pytest.raises(ValueError):
        KnowledgeMemory(str(tmp_path), max_log_days=-1)


def test_a_log_that_leaves_and_returns_is_indexed_once(km: KnowledgeMemory) -> None:
    for i in range(3):
        km.remember(f"note {i}")
    km.recall("")
    (path,) = [i.path for i in km.root.list("logs")]
    data = km.root.read_bytes(path)
    km.root.delete(path)
    assert km.entries() == []
    km.root.write(path, data)
    assert sorted(e.content for e in km.entries()) == ["note 0", "note 1", "note 2"]
    assert len(km.get_recent_entries()) == 3


def test_equal_size_edit_of_memory_md_is_seen(make_km: Make) -> None:
    reader = make_km()
    reader.remember("colour: blue", category="prefs", persistent=True)
    assert reader.get_persistent_facts() == {"prefs": ["colour: blue"]}
    md = reader.root.read_bytes("MEMORY.md")
    edited = md.replace(b"colour: blue", b"colour: pink")
    assert len(edited) == len(md)
    reader.root.write("MEMORY.md", edited)
    assert reader.get_persistent_facts() == {"prefs": ["colour: pink"]}
