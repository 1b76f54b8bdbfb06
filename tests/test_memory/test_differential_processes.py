"""The differential check across processes: several writer processes remember, forget
and recall (writing the index cache) on one memory while one of them is killed with
SIGKILL mid-way. Afterwards a fresh default instance and a cache-less one answer the
same, every acknowledged and unforgotten entry is there, nothing forgotten is back, and
nothing is there that no writer was about to write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory

WORKER = r"""
import json, random, sys
from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache

_index_cache.MIN_NEW_ROWS = 1
_index_cache.MIN_BYTES = 0
url, options, seed, count, out = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(seed)
mine = []
with open(out, "a", buffering=1) as log:
    km = KnowledgeMemory(url, storage_options=options, max_log_days=3650)
    for n in range(count):
        op = rng.random()
        if op < 0.2 and mine:
            entry_id = mine.pop(rng.randrange(len(mine)))
            log.write(json.dumps(["forgetting", entry_id]) + "\n")
            assert km.forget(entry_id)
            log.write(json.dumps(["forgot", entry_id]) + "\n")
        elif op < 0.3:
            km.recall(rng.choice(["note", "fact shared", "worker"]), limit=5)
        elif op < 0.35:
            km = KnowledgeMemory(url, storage_options=options, max_log_days=3650)
        else:
            text = f"worker {seed} note {n} fact shared ending for every writer's entries"
            persistent = rng.random() < 0.3
            log.write(json.dumps(["remembering", text]) + "\n")
            entry_id = km.remember(text, category="notes", persistent=persistent)
            mine.append(entry_id)
            log.write(json.dumps(["remembered", entry_id, text]) + "\n")
"""


def _run_writers(
    tmp_path: Path, url: str, options: dict[str, Any], writers: int, count: int, seed: int
) -> tuple[dict[str, str], set[str], set[str], set[str]]:
    """Run the writers, kill one mid-way; (acknowledged id -> text, forgotten ids,
    texts a killed writer may or may not have stored, ids it may or may not have
    forgotten)."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    outs = [tmp_path / f"w{seed}-{i}.jsonl" for i in range(writers)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, str(script), url, json.dumps(options)),
                *(str(seed * 10 + i), str(count), str(out)),
            ],
            env=env,
        )
        for i, out in enumerate(outs)
    ]
    victim = procs[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and victim.poll() is None:
        if outs[0].exists() and outs[0].read_text().count("\n") >= count // 2:
            break
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    for proc in procs[1:]:
        assert proc.wait(timeout=240) == 0
    victim.wait(timeout=30)
    acknowledged: dict[str, str] = {}
    forgotten: set[str] = set()
    in_flight: set[str] = set()
    unjudged: set[str] = set()
    for out in outs:
        pending: list[Any] = []
        for line in out.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:  # the killed writer's last line may be torn
                continue
            if event[0] == "remembered":
                acknowledged[event[1]] = event[2]
                pending = []
            elif event[0] == "forgot":
                forgotten.add(event[1])
                pending = []
            else:
                pending = event
        if pending and pending[0] == "remembering":
            in_flight.add(pending[1])
        elif pending and pending[0] == "forgetting":
            # a forget in flight may or may not have landed: that entry is not judged
            acknowledged.pop(pending[1], None)
            unjudged.add(pending[1])
    for entry_id in forgotten:
        acknowledged.pop(entry_id, None)
    return acknowledged, forgotten, in_flight, unjudged


def _check(
    url: str,
    options: dict[str, Any],
    acknowledged: dict[str, str],
    forgotten: set[str],
    in_flight: set[str],
    unjudged: set[str],
) -> None:
    fresh = KnowledgeMemory(url, storage_options=options, max_log_days=3650)
    cold_context = fresh.build_context()
    held = {e.id: (e.content, e.persistent, e.created_at) for e in fresh.entries()}
    cacheless = KnowledgeMemory(url, storage_options=options, index_cache=False)
    assert {e.id: (e.content, e.persistent, e.created_at) for e in cacheless.entries()} == held
    assert cacheless.get_persistent_facts() == fresh.get_persistent_facts()
    for query in ("note", "fact shared", "worker 3"):
        assert [e.id for e in fresh.recall(query, limit=10)] == [
            e.id for e in cacheless.recall(query, limit=10)
        ]
    assert cacheless.build_context() == cold_context == fresh.build_context()
    for entry_id, text in acknowledged.items():
        assert held.get(entry_id, (None,))[0] == text, f"acknowledged {entry_id} lost"
    assert not forgotten & set(held), "a forgotten entry is back"
    extra = {c for i, (c, _, _) in held.items() if i not in acknowledged and i not in unjudged}
    assert extra <= in_flight, f"entries nobody was writing: {extra - in_flight}"


def _location(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> tuple[str, dict[str, Any]]:
    if backend == "local":
        return str(tmp_path / f"m-{uuid.uuid4().hex[:8]}"), {}
    return request.getfixturevalue("s3_root_url"), request.getfixturevalue("s3_storage_options")


@pytest.mark.parametrize("backend", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_writer_processes_one_killed_short(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    url, options = _location(request, backend, tmp_path)
    _check(url, options, *_run_writers(tmp_path, url, options, writers=3, count=40, seed=1))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 8))
@pytest.mark.parametrize("backend", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_writer_processes_one_killed_long(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str, seed: int
) -> None:
    url, options = _location(request, backend, tmp_path)
    _check(url, options, *_run_writers(tmp_path, url, options, writers=6, count=150, seed=seed))
