"""Serverless snapshots: restore, incremental saves, merge, corruption, crashes."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsmemory import BackendError, KnowledgeMemory, SnapshotError, _jsonutil
from fsmemory.snapshot import FsspecBackend, pack_archive, unpack_archive
from fsmemory.snapshot.backends import RETIRED_GRACE

from .conftest import DictBackend, Spec, folder_files, make_spec, open_backend

NewBackend = Callable[[], Any]


def test_round_trip_of_a_whole_folder(new_backend: NewBackend, tmp_path: Path) -> None:
    a = tmp_path / "a"
    km = KnowledgeMemory(a, backend=new_backend())
    km.remember("Prefers Python", category="preferences", persistent=True)
    km.remember("note with\nnewline")
    (a / "notes").mkdir()
    (a / "notes" / "hand.md").write_text("written by hand\n")
    (a / "blob.bin").write_bytes(b"\x00\xff\xfe binary \x80")
    assert km.flush() > 0
    assert km.flush() == 0  # nothing changed since
    b = tmp_path / "b"
    KnowledgeMemory(b, backend=new_backend())
    assert folder_files(b) == folder_files(a)
    (a / "blob.bin").unlink()
    (a / "notes" / "hand.md").write_text("edited\n")
    km.flush()
    c = tmp_path / "c"
    restored = KnowledgeMemory(c, backend=new_backend())
    assert folder_files(c) == folder_files(a)
    assert restored.get_persistent_facts() == {"preferences": ["Prefers Python"]}


def test_saves_are_incremental(new_backend: NewBackend, tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "w", backend=new_backend())
    replica = km._replica
    assert replica is not None
    sizes = {}
    folds = []
    for n in range(1, 301):
        content = f"fact number {n} about the project and the user's preferences"
        before, folds_before = replica.bytes_uploaded, replica.folds
        km.remember(content, category=f"c{n % 5}", persistent=n % 2 == 0)
        sizes[n] = replica.bytes_uploaded - before
        if replica.folds > folds_before:
            folds.append(n)
        else:
            assert sizes[n] <= 2048 + len(content.encode())
    # a fold is due once compact_after deltas would be waiting, never more often
    step = replica.compact_after
    assert folds == list(range(step, 301, step))
    # independent of memory size: the 300th save costs about what the 10th did
    assert abs(sizes[300] - sizes[10]) < 200 and abs(sizes[299] - sizes[9]) < 200


def test_unsaved_scratch_content_is_kept_and_saved(new_backend: NewBackend, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    km = KnowledgeMemory(scratch, backend=new_backend())
    km.remember("kept")
    (scratch / "stray.txt").write_text("left by an earlier invocation, never saved")
    again = KnowledgeMemory(scratch, backend=new_backend())
    assert (scratch / "stray.txt").read_text() == "left by an earlier invocation, never saved"
    assert [e.content for e in again.recall("")] == ["kept"]
    elsewhere = tmp_path / "elsewhere"
    KnowledgeMemory(elsewhere, backend=new_backend())
    assert folder_files(elsewhere) == folder_files(scratch)


def test_concurrent_functions_merge(new_backend: NewBackend, tmp_path: Path) -> None:
    seed = KnowledgeMemory(tmp_path / "seed", backend=new_backend())
    old = seed.remember("old fact", category="a", persistent=True)
    seed.remember("shared note")
    # Two functions restore the same state, then diverge.
    f1 = KnowledgeMemory(tmp_path / "f1", backend=new_backend())
    f2 = KnowledgeMemory(tmp_path / "f2", backend=new_backend())
    f1.remember("from f1", category="a", persistent=True)
    f2.remember("from f2", category="b", persistent=True)
    assert f2.forget(old)
    f1.remember("f1 note")
    final = KnowledgeMemory(tmp_path / "final", backend=new_backend())
    assert final.get_persistent_facts() == {"a": ["from f1"], "b": ["from f2"]}
    assert Counter(e.content for e in final.entries()) == Counter(
        ["shared note", "from f1", "from f2", "f1 note"]
    )


def test_a_restore_that_found_deltas_saves_a_delta_until_a_fold_is_due(
    spec: Spec, tmp_path: Path
) -> None:
    """Uploads are proportional to the change: a save after a restore that found deltas
    uploads its own delta (not a new base); a fold waits for ``compact_after`` deltas
    (or their bytes past a quarter of the base), counting the ones the restore found."""
    km = KnowledgeMemory(tmp_path / "w", backend=open_backend(spec), snapshot_compact_after=1000)
    for i in range(40):
        km.remember(f"fact {i}", persistent=i % 3 == 0)
    assert len(open_backend(spec).load_state().deltas) == 40
    other = KnowledgeMemory(tmp_path / "r", backend=open_backend(spec), snapshot_compact_after=50)
    assert other._replica is not None and other._replica.folds == 0
    other.remember("a delta, not a fold")
    assert other._replica.folds == 0 and other._replica.bytes_uploaded < 1024
    assert len(open_backend(spec).load_state().deltas) == 41
    # 41 waiting + its own = 42: due
    folder = KnowledgeMemory(tmp_path / "f", backend=open_backend(spec), snapshot_compact_after=42)
    assert folder._replica is not None
    folder.remember("the fold")
    assert folder._replica.folds == 1
    state = open_backend(spec).load_state()
    assert state.deltas == [] and state.base is not None
    restored = KnowledgeMemory(tmp_path / "r2", backend=open_backend(spec))
    assert sorted(e.content for e in restored.entries()) == sorted(
        [f"fact {i}" for i in range(40)] + ["a delta, not a fold", "the fold"]
    )
    if spec[0] != "redis-native":
        _kind, location, options = spec
        backend = FsspecBackend(location, storage_options=options)
        # The fold keeps what it replaced for RETIRED_GRACE seconds (a reader of an
        # earlier head may still be fetching it); the head records every folded delta
        # still there, and when it was retired.
        names = [i.path for i in backend.root.list(backend.objects, recursive=True)]
        state = backend.load_state()
        record = set(state.folded)
        left = [n for n in names if "/delta/" in n]
        assert len(left) == 41 and all(n.rsplit("/", 1)[-1] in record for n in left)
        assert state.retired is not None
        assert {n[len(backend.objects) + 1 :] for n in left} <= set(state.retired)
        third = KnowledgeMemory(tmp_path / "r3", backend=backend, snapshot_compact_after=1)
        third.remember("a fold within the grace keeps them")
        names = [i.path for i in backend.root.list(backend.objects, recursive=True)]
        assert len([n for n in names if "/delta/" in n]) == 41
        backend.clock = lambda: time.time() + RETIRED_GRACE + 1
        third.remember("a fold once they are older than the grace removes them")
        names = [i.path for i in backend.root.list(backend.objects, recursive=True)]
        state = backend.load_state()
        head_base = f"{backend.objects}/{state.base_name}"
        assert head_base in names and len(names) == 2, names  # and the base it replaced
        assert all(n.startswith(f"{backend.objects}/base-") for n in names), names
        assert state.retired is not None and set(state.retired) == {
            n[len(backend.objects) + 1 :] for n in names if n != head_base
        }


def test_corrupt_snapshot_is_never_silently_replaced(spec: Spec, tmp_path: Path) -> None:
    kind, location, options = spec
    if kind == "redis-native":
        backend = open_backend(spec)
        backend.client.set(backend._base, b"\x00 not an archive")
    else:
        FsspecBackend(location, storage_options=options).root.write(
            location.rsplit("/", 1)[1], b"{garbage"
        )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "keep.txt").write_text("untouched")
    with pytest.raises(SnapshotError):
        KnowledgeMemory(scratch, backend=open_backend(spec))
    assert folder_files(scratch) == {"keep.txt": b"untouched"}
    if kind == "redis-native":
        return
    fresh = KnowledgeMemory(scratch, backend=open_backend(spec), on_corrupt_snapshot="reset")
    assert fresh.recall("") == []
    fresh.remember("after reset")
    names = [
        i.path
        for i in FsspecBackend(location, storage_options=options).root.list("", recursive=True)
    ]
    assert any(".corrupt-" in n for n in names), names


@pytest.mark.parametrize(
    "bad_path",
    ["../escape.txt", "/etc/passwd", "a/../../b", "a\x00b", "%2e%2e/x", ".fsmemory.lock", "a\\b"],
)
def test_unsafe_archive_is_rejected_before_writing(tmp_path: Path, bad_path: str) -> None:
    archive = _jsonutil.dumps(
        {
            "version": 1,
            "files": {
                "MEMORY.md": {"encoding": "utf-8", "content": "# x\n"},
                bad_path: {"encoding": "utf-8", "content": "pwned"},
            },
        }
    )
    url = f"memory://unsafe/{abs(hash(bad_path))}.snapshot"
    FsspecBackend(url).root.write(url.rsplit("/", 1)[1], archive)
    scratch = tmp_path / "s"
    with pytest.raises(SnapshotError):
        KnowledgeMemory(scratch, backend=FsspecBackend(url))
    assert folder_files(scratch) == {} if scratch.exists() else True
    assert not (tmp_path / "escape.txt").exists()


def test_unknown_encoding_and_bad_base64_rejected() -> None:
    for spec in (
        {"encoding": "rot13", "content": "x"},
        {"encoding": "base64", "content": "!!"},
        {"content": 5},
        "not an object",
    ):
        with pytest.raises(SnapshotError):
            unpack_archive(_jsonutil.dumps({"version": 1, "files": {"a.txt": spec}}))
    with pytest.raises(SnapshotError):
        unpack_archive(b'{"version": 99, "files": {}}')


def test_seed_archive_migrates(tmp_path: Path) -> None:
    seed_blob = _jsonutil.dumps(
        {
            "version": 1,
            "files": {
                "MEMORY.md": {
                    "encoding": "utf-8",
                    "content": "# Agent Memory\n\n## preferences\n- Python\n",
                },
                "logs/2026-03-13.jsonl": {
                    "encoding": "utf-8",
                    "content": '{"timestamp": "2026-03-13T10:15:00Z", "category": "context", '
                    '"content": "seed note", "persistent": false}\n',
                },
            },
        }
    )
    url = "memory://migrate/u1.snapshot"
    FsspecBackend(url).root.write("u1.snapshot", seed_blob)
    km = KnowledgeMemory(tmp_path / "w", backend=FsspecBackend(url), max_log_days=100000)
    assert km.get_persistent_facts() == {"preferences": ["Python"]}
    assert [e.content for e in km.recall("seed")] == ["seed note"]
    km.remember("new")
    again = KnowledgeMemory(tmp_path / "w2", backend=FsspecBackend(url), max_log_days=100000)
    assert {e.content for e in again.entries()} == {"Python", "seed note", "new"}


def test_plain_two_method_backend(tmp_path: Path) -> None:
    store: dict[str, bytes] = {}
    km = KnowledgeMemory(tmp_path / "a", backend=DictBackend(store))
    km.remember("fact", persistent=True)
    assert set(unpack_archive(store["blob"])) == {
        "MEMORY.md",
        f"logs/{time.strftime('%Y-%m-%d', time.gmtime())}.jsonl",
    }
    b = KnowledgeMemory(tmp_path / "b", backend=DictBackend(store))
    assert b.get_persistent_facts() == {"general": ["fact"]}
    assert pack_archive(unpack_archive(store["blob"]))  # re-packable


def test_backend_none_changes_nothing(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "a")
    km.remember("x")
    assert km.flush() == 0
    assert sorted(folder_files(tmp_path / "a")) == [
        f"logs/{time.strftime('%Y-%m-%d', time.gmtime())}.jsonl"
    ]


@pytest.mark.s3
def test_network_error_on_load_raises(tmp_path: Path) -> None:
    dead = {
        "key": "k",
        "secret": "s",
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"},
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }
    scratch = tmp_path / "s"
    scratch.mkdir()
    (scratch / "keep.txt").write_text("x")
    with pytest.raises((BackendError, OSError)):
        KnowledgeMemory(
            scratch, backend=FsspecBackend("s3://nobucket/u.snapshot", storage_options=dead)
        )
    assert folder_files(scratch) == {"keep.txt": b"x"}


# -- many functions at once, and crashes ---------------------------------------------------


def _invocations(spec: Spec, scratch: str, worker: int, count: int) -> list[str]:
    contents = []
    for i in range(count):
        km = KnowledgeMemory(f"{scratch}/{worker}-{i}", backend=open_backend(spec))
        for j in range(2):
            text = f"w{worker} call{i} fact{j}"
            km.remember(text, category="c", persistent=j == 0)
            contents.append(text)
    return contents


@pytest.mark.parametrize(
    "kind",
    [
        "local",
        pytest.param("redis-fs", marks=pytest.mark.redis),
        pytest.param("redis-native", marks=pytest.mark.redis),
        pytest.param("s3", marks=pytest.mark.s3),
        pytest.param("gcs", marks=pytest.mark.gcs),
    ],
)
@pytest.mark.parametrize(
    "long", [pytest.param(False, id="short"), pytest.param(True, id="long", marks=pytest.mark.slow)]
)
def test_four_processes_of_invocations_lose_nothing(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path, long: bool
) -> None:
    """Each of four processes runs invocations one after another (restore, two
    remembers, save): 20 each on a local folder and Redis and 6 on the object stores by
    default, 50 and 12 under ``-m slow``."""
    spec = make_spec(request, kind, tmp_path)
    if kind in ("local", "redis-fs", "redis-native"):
        count = 50 if long else 20
    else:
        count = 12 if long else 6
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.starmap(
            _invocations, [(spec, str(tmp_path / "scratch"), w, count) for w in range(4)]
        )
    expected = Counter(c for r in results for c in r)
    final = KnowledgeMemory(tmp_path / "final", backend=open_backend(spec))
    got = Counter(e.content for e in final.entries() if not e.id.startswith("md-"))
    assert got == expected and len(got) == 4 * count * 2
    facts = final.get_persistent_facts()["c"]
    assert sorted(facts) == sorted(c for c in expected if c.endswith("fact0"))


SAVER = """
import sys
from fsmemory import KnowledgeMemory
from fsmemory.snapshot import FsspecBackend
url, scratch = sys.argv[1], sys.argv[2]
km = KnowledgeMemory(scratch, backend=FsspecBackend(url))
i = 0
while True:
    km.remember(f"fact {i}", persistent=i % 2 == 0)
    print(i, flush=True)
    i += 1
"""


@pytest.mark.parametrize("kills", [15])
def test_killed_saver_leaves_a_restorable_snapshot(tmp_path: Path, kills: int) -> None:
    url = str(tmp_path / "snap" / "u.snapshot")
    acknowledged: set[int] = set()
    for k in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", SAVER, url, str(tmp_path / f"scratch{k}")],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + 5 + (k % 4) * 0.05
        for seen, line in enumerate(proc.stdout, 1):
            acknowledged.add(int(line))
            if seen > 3 + k % 5 or time.monotonic() > deadline:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        restored = KnowledgeMemory(tmp_path / f"check{k}", backend=FsspecBackend(url))
        present = {int(e.content.split()[1]) for e in restored.entries()}
        assert {f"fact {i}" for i in acknowledged} <= {e.content for e in restored.entries()}
        assert acknowledged <= present


@pytest.mark.redis
def test_redis_backend_sets_a_server_side_ttl(redis_url: str, tmp_path: Path) -> None:
    from fsmemory.snapshot import RedisKnowledgeBackend

    backend = RedisKnowledgeBackend("ttl-user", url=f"{redis_url}/0", prefix="ttltest:", ttl=300)
    km = KnowledgeMemory(tmp_path / "w", backend=backend)
    km.remember("expires with its snapshot", persistent=True)
    assert 0 < backend.client.ttl(backend._deltas) <= 300
    # base and version exist once a compaction ran: they get the same expiry
    state = backend.load_state()
    assert backend.save_base(b'{"version": 1, "files": {}}', folded=[], expected=state)
    for key in (backend._base, backend._deltas, backend._version):
        assert 0 < backend.client.ttl(key) <= 300
    no_ttl = RedisKnowledgeBackend("ttl-user-2", url=f"{redis_url}/0", prefix="ttltest:")
    KnowledgeMemory(tmp_path / "n", backend=no_ttl).remember("kept")
    assert no_ttl.client.ttl(no_ttl._deltas) == -1
    with pytest.raises(ValueError):
        RedisKnowledgeBackend("x", url=f"{redis_url}/0", ttl=0)


@pytest.mark.redis
def test_redis_fold_never_trims_a_delta_it_did_not_fold(redis_url: str, tmp_path: Path) -> None:
    from fsmemory.snapshot import RedisKnowledgeBackend

    def backend() -> RedisKnowledgeBackend:
        return RedisKnowledgeBackend("trim-user", url=f"{redis_url}/0", prefix="trimtest:")

    mine = KnowledgeMemory(tmp_path / "mine", backend=backend(), snapshot_compact_after=3)
    other = KnowledgeMemory(tmp_path / "other", backend=backend(), snapshot_compact_after=100)
    mine.remember("mine 1")  # delta 00000000
    other.remember("pushed between")  # delta 00000001: not in mine's folder
    mine.remember("mine 2")  # delta 00000002
    mine.remember("mine 3")  # 3 waiting: a fold of 0 and 2 would trim 1 away
    assert mine._replica is not None and mine._replica.folds == 0
    final = KnowledgeMemory(tmp_path / "final", backend=backend())
    assert {e.content for e in final.entries()} == {
        "mine 1",
        "pushed between",
        "mine 2",
        "mine 3",
    }
