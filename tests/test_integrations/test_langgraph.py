"""FsspecStore: LangGraph's BaseStore as one JSON file per item, on every backend."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)

from fsmemory.errors import InvalidInputError
from fsmemory.fs.base import Versioned
from fsmemory.fs.local import LocalRoot
from fsmemory.integrations.langgraph import FsspecStore, item_path, keyword_score
from tests.test_integrations.conftest import FakeClock


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but fsmemory's own lock files."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if name.startswith(".fsmemory"):
                continue
            full = Path(dirpath) / name
            out[str(full.relative_to(root))] = full.read_bytes()
    return out


# -- on every backend ----------------------------------------------------------------------
def test_put_get_delete_round_trip(location: tuple[str, dict[str, Any]]) -> None:
    url, options = location
    store = FsspecStore(url, storage_options=options)
    store.put(("users", "1"), "prefs", {"theme": "dark", "n": 3, "nested": {"a": [1, 2]}})
    item = store.get(("users", "1"), "prefs")
    assert item is not None
    assert item.value == {"theme": "dark", "n": 3, "nested": {"a": [1, 2]}}
    assert item.namespace == ("users", "1") and item.key == "prefs"
    assert [i.path for i in store.root.list("", recursive=True)] == ["users/1/prefs.json"]
    store.put(("users", "1"), "prefs", {"theme": "light"})
    assert store.get(("users", "1"), "prefs").value == {"theme": "light"}  # type: ignore[union-attr]
    store.delete(("users", "1"), "prefs")
    assert store.get(("users", "1"), "prefs") is None
    assert store.list_namespaces() == []


def test_prefix_is_a_whole_label(location: tuple[str, dict[str, Any]]) -> None:
    url, options = location
    store = FsspecStore(url, storage_options=options)
    store.put(("users", "1"), "a", {"who": 1})
    store.put(("users", "10"), "a", {"who": 10})
    store.put(("users", "1", "x"), "b", {"who": "1/x"})
    found = store.search(("users", "1"))
    assert sorted((i.namespace, i.key) for i in found) == [
        (("users", "1"), "a"),
        (("users", "1", "x"), "b"),
    ]
    assert store.list_namespaces(prefix=("users", "1")) == [("users", "1"), ("users", "1", "x")]
    assert store.list_namespaces(prefix=("users", "10")) == [("users", "10")]


def test_a_second_store_sees_changes(location: tuple[str, dict[str, Any]]) -> None:
    url, options = location
    first = FsspecStore(url, storage_options=options)
    second = FsspecStore(url, storage_options=options)
    first.put(("docs",), "k", {"v": 1})
    assert [i.value for i in second.search(("docs",))] == [{"v": 1}]
    first.put(("docs",), "k", {"v": 2})
    assert [i.value for i in second.search(("docs",))] == [{"v": 2}]
    first.delete(("docs",), "k")
    assert second.search(("docs",)) == []


def test_abatch_runs_every_operation(location: tuple[str, dict[str, Any]]) -> None:
    url, options = location
    store = FsspecStore(url, storage_options=options)

    async def run() -> list[Any]:
        return await store.abatch(
            [
                PutOp(("a",), "k1", {"x": 1}),
                PutOp(("a", "b"), "k2", {"x": 2}),
                GetOp(("a",), "k1"),
                SearchOp(("a",), filter={"x": {"$gte": 2}}),
                ListNamespacesOp(),
                PutOp(("a",), "k1", None),
                GetOp(("a",), "k1"),
            ]
        )

    results = asyncio.run(run())
    assert results[0] is None and results[1] is None
    assert results[2].value == {"x": 1}
    assert [i.key for i in results[3]] == ["k2"]
    assert results[4] == [("a",), ("a", "b")]
    assert results[6] is None


# -- layout and hostile input (local folder: the files are looked at directly) -------------
def test_layout_is_one_readable_json_file_per_item(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path)
    store.put(("users", "42"), "prefs", {"theme": "dark"})
    path = tmp_path / "users" / "42" / "prefs.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["namespace"] == ["users", "42"]
    assert doc["key"] == "prefs"
    assert doc["value"] == {"theme": "dark"}
    assert doc["created_at"] == doc["updated_at"]
    assert "\n  " in path.read_text(encoding="utf-8")  # indented for people
    assert list(_files(tmp_path)) == ["users/42/prefs.json"]


def test_hand_edits_are_seen(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path)
    store.put(("notes",), "todo", {"text": "buy milk"})
    assert [i.value for i in store.search(("notes",))] == [{"text": "buy milk"}]
    path = tmp_path / "notes" / "todo.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["value"]["text"] = "buy oat milk"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    assert [i.value for i in store.search(("notes",))] == [{"text": "buy oat milk"}]
    assert store.get(("notes",), "todo").value == {"text": "buy oat milk"}  # type: ignore[union-attr]


HOSTILE_KEYS = [
    "../../etc/passwd",
    "a/b",
    "..",
    ".",
    "",
    ".hidden",
    ".fsmemory.lock",
    "~~",
    "~41",
    "%2e%2e",
    "line\nbreak",
    "nul\x00byte",
    "back\\slash",
    "C:drive",
    "ünïcødé キー",
    "x" * 1000,
    "y" * 1000,
    "k.json",
]


def test_hostile_keys_round_trip_inside_their_folder(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path / "root")
    for i, key in enumerate(HOSTILE_KEYS):
        store.put(("ns",), key, {"i": i})
    for i, key in enumerate(HOSTILE_KEYS):
        item = store.get(("ns",), key)
        assert item is not None and item.key == key and item.value == {"i": i}, key
    files = _files(tmp_path)
    assert len(files) == len(HOSTILE_KEYS)
    for name in files:
        parts = name.split("/")
        assert parts[:2] == ["root", "ns"] and len(parts) == 3, name
        assert not parts[2].startswith("."), name
    assert sorted(i.key for i in store.search(("ns",), limit=100)) == sorted(HOSTILE_KEYS)


@pytest.mark.parametrize(
    "namespace",
    [
        ("a/b",),
        ("..",),
        ("a", "..", "b"),
        ("nul\x00",),
        ("back\\slash",),
        ("new\nline",),
        ("%2F",),
        ("",),
        ("x" * 300,),
        (),
    ],
)
def test_bad_namespaces_are_rejected_and_nothing_is_written(
    tmp_path: Path, namespace: tuple[str, ...]
) -> None:
    store = FsspecStore(tmp_path)
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(namespace, "k", {"v": 1})])
    assert _files(tmp_path) == {}


def test_values_json_cannot_hold_are_rejected(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path)
    for value in (
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": {1: "int key"}},
        {"x": {1, 2}},
        {"x": "lone \ud800 surrogate"},
        {"x": 2**80},
    ):
        with pytest.raises(InvalidInputError):
            store.put(("ns",), "k", value)
    with pytest.raises(InvalidInputError):
        store.put(("ns",), "bad\ud800key", {"x": 1})
    assert _files(tmp_path) == {}


def test_other_files_in_the_folder_survive_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "MEMORY.md").write_bytes(b"# Agent Memory\n\n## x\n- kept\n")
    (tmp_path / "logs" / "2026-01-01.jsonl").write_bytes(b'{"content": "kept"}\n')
    (tmp_path / "users").mkdir()
    (tmp_path / "users" / "notes.txt").write_bytes(b"mine \xff\n")
    (tmp_path / "users" / "not-an-item.json").write_bytes(b'{"hello": "world"}')
    before = _files(tmp_path)
    clock = FakeClock()
    store = FsspecStore(tmp_path, clock=clock)
    store.put(("users",), "k", {"v": 1}, ttl=1)
    store.put(("users", "deeper"), "k", {"v": 2})
    assert [i.key for i in store.search(("users",), limit=50)] == ["k", "k"]
    assert store.list_namespaces() == [("users",), ("users", "deeper")]
    store.delete(("users", "deeper"), "k")
    clock.advance(minutes=5)
    assert store.sweep_ttl() == 1
    assert _files(tmp_path) == before


def test_put_keeps_created_at_and_moves_updated_at(tmp_path: Path) -> None:
    clock = FakeClock()
    store = FsspecStore(tmp_path, clock=clock)
    store.put(("ns",), "k", {"v": 1})
    first = store.get(("ns",), "k")
    clock.advance(minutes=3)
    store.put(("ns",), "k", {"v": 2})
    second = store.get(("ns",), "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at
    assert second.updated_at == first.updated_at + timedelta(minutes=3)


def test_search_orders_newest_first_and_pages(tmp_path: Path) -> None:
    clock = FakeClock()
    store = FsspecStore(tmp_path, clock=clock)
    for i in range(7):
        store.put(("ns", str(i % 2)), f"k{i}", {"i": i})
        clock.advance(seconds=1)
    everything = [i.key for i in store.search(("ns",), limit=100)]
    assert everything == [f"k{i}" for i in reversed(range(7))]
    pages = [i.key for o in (0, 3, 6) for i in store.search(("ns",), limit=3, offset=o)]
    assert pages == everything


def test_filters_use_langgraph_operators(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path)
    store.put(("ns",), "a", {"n": 1, "tag": "x", "meta": {"lang": "en"}, "list": [1, 2]})
    store.put(("ns",), "b", {"n": 5, "tag": "y", "meta": {"lang": "de"}, "list": [1]})
    store.put(("ns",), "c", {"n": "7", "tag": "x"})

    def keys(**filter_: Any) -> list[str]:
        return sorted(i.key for i in store.search(("ns",), filter=filter_))

    assert keys(tag="x") == ["a", "c"]
    assert keys(n={"$gt": 1}) == ["b", "c"]
    assert keys(n={"$gte": 1, "$lt": 6}) == ["a", "b"]
    assert keys(n={"$ne": 1}) == ["b", "c"]
    assert keys(n={"$eq": 5}) == ["b"]
    assert keys(meta={"lang": "de"}) == ["b"]
    assert keys(list=[1, 2]) == ["a"]
    assert keys(missing={"$lte": 3}) == []
    with pytest.raises(InvalidInputError):
        keys(n={"$regex": "x"})


def test_query_ranks_by_keyword_score(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path, index_fields=["text"])
    store.put(("m",), "tea", {"text": "prefers green tea in the morning"})
    store.put(("m",), "both", {"text": "green tea and morning runs", "other": "x"})
    store.put(("m",), "coffee", {"text": "drinks coffee"})
    store.put(("m",), "hidden", {"text": "green tea morning"}, index=False)
    store.put(("m",), "title", {"text": "nothing", "title": "green tea"}, index=["title"])
    found = store.search(("m",), query="green tea morning")
    keys = [i.key for i in found]
    assert "coffee" not in keys and "hidden" not in keys
    assert keys[:2] == ["both", "tea"] or keys[:2] == ["tea", "both"]
    assert keys[-1] == "title"
    scores = [i.score for i in found]
    assert all(s is not None and 0.0 < s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert keyword_score(["green", "tea"], "green tea") == 1.0
    assert keyword_score(["gre"], "green") == pytest.approx(0.6)
    assert keyword_score(["zzz"], "green") == 0.0


def test_ttl_refresh_omit_and_sweep(tmp_path: Path) -> None:
    clock = FakeClock()
    store = FsspecStore(tmp_path, clock=clock, ttl={"omit_expired": True})
    store.put(("s",), "short", {"v": 1}, ttl=10)
    store.put(("s",), "forever", {"v": 2})
    clock.advance(minutes=8)
    assert store.get(("s",), "short") is not None  # refreshes: expires 10 min from now
    clock.advance(minutes=8)
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    clock.advance(minutes=3)
    assert store.get(("s",), "short") is None
    assert [i.key for i in store.search(("s",))] == ["forever"]
    assert store.sweep_ttl() == 1
    assert not (tmp_path / "s" / "short.json").exists()
    assert store.get(("s",), "forever") is not None

    visible = FsspecStore(tmp_path / "v", clock=clock)  # omit_expired defaults to False
    visible.put(("s",), "k", {"v": 1}, ttl=1)
    clock.advance(minutes=2)
    assert visible.get(("s",), "k", refresh_ttl=False) is not None
    assert visible.sweep_ttl() == 1
    assert visible.get(("s",), "k") is None


def test_default_ttl_and_refresh_on_read_config(tmp_path: Path) -> None:
    clock = FakeClock()
    store = FsspecStore(
        tmp_path,
        clock=clock,
        ttl={"default_ttl": 5, "refresh_on_read": False, "omit_expired": True},
    )
    store.put(("s",), "k", {"v": 1})
    clock.advance(minutes=4)
    assert store.get(("s",), "k") is not None  # no refresh: still expires at minute 5
    clock.advance(minutes=2)
    assert store.get(("s",), "k") is None


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    stores = [FsspecStore(tmp_path) for _ in range(4)]
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(25):
                stores[n].put(("w",), f"own-{n}-{i}", {"n": n, "i": i})
                stores[n].put(("w",), "shared", {"n": n, "i": i})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    found = {i.key: i.value for i in FsspecStore(tmp_path).search(("w",), limit=1000)}
    assert len(found) == 4 * 25 + 1
    for n in range(4):
        for i in range(25):
            assert found[f"own-{n}-{i}"] == {"n": n, "i": i}
    assert found["shared"]["i"] == 24
    for path in (tmp_path / "w").iterdir():
        json.loads(path.read_bytes())  # every file is whole JSON


def test_item_path_is_the_documented_layout() -> None:
    assert item_path(("users", "42"), "prefs") == "users/42/prefs.json"
    assert item_path(("a",), "x/y") == "a/x~2Fy.json"
    assert item_path(("a",), ".env") == "a/~2Eenv.json"
    assert item_path(("a",), "") == "a/~~.json"
    long = item_path(("a",), "k" * 500)
    assert len(long.split("/")[-1].encode()) <= 205 and "~~" in long


def test_compiled_state_graph_uses_the_store(tmp_path: Path) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    class State(TypedDict):
        user: str
        fact: str
        known: list[str]

    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        store.put(
            ("memories", state["user"]), f"fact-{len(state['fact'])}", {"text": state["fact"]}
        )
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        items = store.search(("memories", state["user"]), query="tea")
        return {"known": [i.value["text"] for i in items]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=FsspecStore(tmp_path))
    out = graph.invoke({"user": "u1", "fact": "likes green tea", "known": []})
    assert out["known"] == ["likes green tea"]
    again = builder.compile(store=FsspecStore(tmp_path))  # a new process would see the same
    out = again.invoke({"user": "u1", "fact": "tea at 5pm", "known": []})
    assert sorted(out["known"]) == ["likes green tea", "tea at 5pm"]
    assert (tmp_path / "memories" / "u1" / "fact-15.json").is_file()


def test_changing_a_returned_value_does_not_change_the_store(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path)
    store.put(("ns",), "k", {"tags": ["a"]})
    found = store.search(("ns",))
    found[0].value["tags"].append("mutated")
    assert store.search(("ns",))[0].value == {"tags": ["a"]}
    assert store.get(("ns",), "k").value == {"tags": ["a"]}  # type: ignore[union-attr]


class RacingRoot(LocalRoot):
    """A real local root that lets another writer in right after its next read."""

    def __init__(self, directory: Path) -> None:
        super().__init__(str(directory))
        self.after_next_read: Callable[[], None] | None = None

    def read(self, path: str) -> Versioned:
        current = super().read(path)
        hook, self.after_next_read = self.after_next_read, None
        if hook is not None:
            hook()
        return current


def test_a_ttl_refresh_never_overwrites_a_concurrent_put(tmp_path: Path) -> None:
    clock = FakeClock()
    root = RacingRoot(tmp_path)
    reader = FsspecStore(root, clock=clock)
    writer = FsspecStore(tmp_path, clock=clock)
    writer.put(("s",), "k", {"v": 1}, ttl=10)
    root.after_next_read = lambda: writer.put(("s",), "k", {"v": 2}, ttl=10)
    assert reader.get(("s",), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert writer.get(("s",), "k", refresh_ttl=False).value == {"v": 2}  # type: ignore[union-attr]


def test_a_put_racing_a_replace_keeps_the_replacement_created_at(tmp_path: Path) -> None:
    clock = FakeClock()
    root = RacingRoot(tmp_path)
    mine = FsspecStore(root, clock=clock)
    other = FsspecStore(tmp_path, clock=clock)
    other.put(("s",), "k", {"v": 1})

    def replace_it() -> None:
        clock.advance(minutes=1)
        other.delete(("s",), "k")
        other.put(("s",), "k", {"v": 2})

    root.after_next_read = replace_it
    clock_before = clock.now
    mine.put(("s",), "k", {"v": 3})
    item = other.get(("s",), "k")
    assert item is not None and item.value == {"v": 3}
    assert item.created_at == clock_before + timedelta(minutes=1)  # the replacement's


def test_the_sweeper_thread_deletes_expired_items(tmp_path: Path) -> None:
    clock = FakeClock()
    store = FsspecStore(tmp_path, clock=clock, ttl={"sweep_interval_minutes": 1})
    try:
        store.put(("s",), "gone", {"v": 1}, ttl=1)
        store.put(("s",), "kept", {"v": 2})
        clock.advance(minutes=2)
        store.stop_ttl_sweeper(timeout=5)
        store.start_ttl_sweeper(sweep_interval_minutes=0.0005)  # every 30 ms
        path = tmp_path / "s" / "gone.json"
        deadline = time.monotonic() + 30
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not path.exists()
        assert store.get(("s",), "kept") is not None
    finally:
        assert store.stop_ttl_sweeper(timeout=5)


def test_processes_writing_one_folder_lose_nothing(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from fsmemory.integrations.langgraph import FsspecStore\n"
        "n = int(sys.argv[2]); store = FsspecStore(sys.argv[1])\n"
        "for i in range(20):\n"
        "    store.put(('p',), f'own-{n}-{i}', {'n': n, 'i': i})\n"
        "    store.put(('p',), 'shared', {'n': n, 'i': i})\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(n)]) for n in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    found = {i.key: i.value for i in FsspecStore(tmp_path).search(("p",), limit=1000)}
    assert len(found) == 3 * 20 + 1
    assert all(found[f"own-{n}-{i}"] == {"n": n, "i": i} for n in range(3) for i in range(20))
    assert found["shared"]["i"] == 19
