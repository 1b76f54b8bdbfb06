"""Crash tests: a child process writes in a loop and is killed with SIGKILL at random.

The child prints the id of every write that returned. After each kill a fresh reader
checks, against the service itself:

* every acknowledged write is present (0 lost), exactly once;
* reads do not raise (recall, build_context, stats; the path store's read/list);
* at most the in-flight write per kill is extra: present although never acknowledged.

Default run: 15 kills of ``remember()`` on a local folder and on Redis, 10 of path-store
appends+writes on a local folder, 10 of serverless snapshot saves to a local folder.
``-m slow``: 120 kills per mode on local and Redis, 20 on S3 and GCS.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.fs import open_root
from fsmemory.snapshot import FsspecBackend
from tests.test_reliability._support import read_stored

WORKER = Path(__file__).resolve().parent / "_crash_worker.py"


@dataclass
class CrashLog:
    """What the killed children acknowledged."""

    acked: list[str] = field(default_factory=list)
    kills: int = 0
    torn_lines: int = 0


def _run_and_kill(spec: dict[str, Any], delay: float, *, from_start: bool = False) -> list[str]:
    """Start a worker, SIGKILL it ``delay`` s after it is ready (or after it started),
    and return the keys it acknowledged."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=errors,
            env=env,
        )
        assert proc.stdout is not None
        try:
            if not from_start:
                ready = proc.stdout.readline()
                if ready != b"ready\n":
                    proc.kill()
                    proc.wait(timeout=30)
                    errors.seek(0)
                    message = errors.read().decode(errors="replace")[-2000:]
                    raise AssertionError(f"worker did not start: {ready!r} {message}")
            time.sleep(delay)
            if proc.poll() is not None:
                errors.seek(0)
                raise AssertionError(f"worker died by itself: {errors.read().decode()[-2000:]}")
            os.kill(proc.pid, signal.SIGKILL)
            # Read through the same buffered reader as readline() did: keys it buffered
            # already must not be lost.
            out = proc.stdout.read()
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    if from_start:
        # The ready line may or may not have been printed before the kill.
        out = out.removeprefix(b"ready\n")
    lines = out.split(b"\n")
    return [line.decode() for line in lines[:-1]]  # the last piece is an unfinished line


def _check_memory(url: str, options: dict[str, Any], log: CrashLog) -> None:
    """Every acknowledged entry is there once; reads work; at most one extra per kill."""
    fresh = KnowledgeMemory(url, storage_options=options)
    live = {e.id for e in fresh.entries()}
    lost = [i for i in log.acked if i not in live]
    assert lost == [], f"{len(lost)} acknowledged entries lost after {log.kills} kills"
    assert len(live) <= len(log.acked) + log.kills
    fresh.recall("entry", limit=5)
    fresh.build_context()
    stats = fresh.stats()
    log.torn_lines = stats["corrupt_lines"]
    assert log.torn_lines <= log.kills
    stored = read_stored(fresh.root)
    duplicated = [i for i, n in Counter(stored.ids).items() if n > 1]
    assert duplicated == []


def _crash_remember(url: str, options: dict[str, Any], kills: int, max_delay: float) -> CrashLog:
    log = CrashLog()
    rng = random.Random(kills)
    for n in range(kills):
        spec = {"mode": "remember", "url": url, "options": options, "tag": f"k{n}"}
        log.acked += _run_and_kill(spec, rng.uniform(0.0, max_delay))
        log.kills += 1
        _check_memory(url, options, log)
    assert len(log.acked) > kills, "the children hardly wrote anything"
    return log


def _crash_store(root_url: str, kills: int, max_delay: float) -> CrashLog:
    log = CrashLog()
    rng = random.Random(kills)
    root = open_root(root_url)
    for n in range(kills):
        spec = {"mode": "store", "url": root_url, "tag": f"k{n}"}
        log.acked += _run_and_kill(spec, rng.uniform(0.0, max_delay))
        log.kills += 1
        events: list[str] = []
        torn = 0
        try:
            data = root.read_bytes("events.jsonl")
        except FileNotFoundError:
            data = b""
        for line in data.split(b"\n"):
            if line.strip():
                try:
                    events.append(json.loads(line)["key"])
                except ValueError:
                    torn += 1
        counts = Counter(events)
        assert [k for k in log.acked if counts[k] != 1] == []
        assert len(events) <= len(log.acked) + log.kills
        assert torn <= log.kills
        for key in log.acked:
            i = int(key.rsplit("-", 1)[1])
            assert root.read_bytes(f"notes/{key}.md") == f"note {key}\n".encode() * (1 + i % 7)
        root.list("notes")
    assert len(log.acked) > kills
    return log


def _crash_snapshot(
    snapshot_url: str, options: dict[str, Any], scratch: Path, kills: int, max_delay: float
) -> CrashLog:
    """Each child is a serverless invocation: restore into fresh scratch space, remember,
    save a delta per call -- killed at random, also while restoring or compacting."""
    log = CrashLog()
    rng = random.Random(kills)
    for n in range(kills):
        spec = {
            "mode": "snapshot",
            "url": snapshot_url,
            "options": options,
            "tag": f"k{n}",
            "scratch": str(scratch / f"run-{n}"),
        }
        log.acked += _run_and_kill(spec, rng.uniform(0.25, 0.25 + max_delay), from_start=True)
        log.kills += 1
        check = KnowledgeMemory(
            scratch / f"check-{n}", backend=FsspecBackend(snapshot_url, storage_options=options)
        )
        live = {e.id for e in check.entries()}
        lost = [i for i in log.acked if i not in live]
        assert lost == [], f"{len(lost)} acknowledged entries lost after {log.kills} kills"
        check.build_context()
    return log


def _report(name: str, log: CrashLog) -> None:
    print(
        f"\n{name}: {log.kills} kills, {len(log.acked)} acknowledged, 0 lost, "
        f"{log.torn_lines} torn lines skipped"
    )


# -- default run ------------------------------------------------------------------------------


def test_killed_remember_loses_nothing_local(tmp_path: Path) -> None:
    """15 SIGKILLs of a remember() loop on a local folder (120 under ``-m slow``)."""
    _report("local remember", _crash_remember(str(tmp_path / "mem"), {}, 15, 0.12))


@pytest.mark.redis
def test_killed_remember_loses_nothing_redis(redis_url: str) -> None:
    """15 SIGKILLs of a remember() loop on Redis (120 under ``-m slow``)."""
    url = f"{redis_url}/0/crash-{uuid.uuid4().hex[:10]}"
    _report("redis remember", _crash_remember(url, {}, 15, 0.12))


def test_killed_path_store_loses_nothing_local(tmp_path: Path) -> None:
    """10 SIGKILLs of a path-store append + write loop on a local folder."""
    _report("local store", _crash_store(str(tmp_path / "store"), 10, 0.1))


def test_killed_snapshot_saves_lose_nothing_local(tmp_path: Path) -> None:
    """10 SIGKILLs of serverless invocations saving snapshot deltas to a local folder."""
    url = str(tmp_path / "snapshots" / "user.snapshot")
    _report("local snapshot", _crash_snapshot(url, {}, tmp_path, 10, 0.3))


# -- slow ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_many_kills_remember_local(tmp_path: Path) -> None:
    """120 SIGKILLs of remember() on a local folder."""
    _report("local remember", _crash_remember(str(tmp_path / "mem"), {}, 120, 0.2))


@pytest.mark.slow
@pytest.mark.redis
def test_many_kills_remember_redis(redis_url: str) -> None:
    """120 SIGKILLs of remember() on Redis."""
    url = f"{redis_url}/0/crash-{uuid.uuid4().hex[:10]}"
    _report("redis remember", _crash_remember(url, {}, 120, 0.2))


@pytest.mark.slow
def test_many_kills_path_store_local(tmp_path: Path) -> None:
    """120 SIGKILLs of path-store appends + writes on a local folder."""
    _report("local store", _crash_store(str(tmp_path / "store"), 120, 0.15))


@pytest.mark.slow
@pytest.mark.redis
def test_many_kills_path_store_redis(redis_url: str) -> None:
    """120 SIGKILLs of path-store appends + writes on Redis."""
    url = f"{redis_url}/0/store-{uuid.uuid4().hex[:10]}"
    _report("redis store", _crash_store(url, 120, 0.15))


@pytest.mark.slow
def test_many_kills_snapshot_local(tmp_path: Path) -> None:
    """60 SIGKILLs of serverless snapshot saves to a local folder (compactions included)."""
    url = str(tmp_path / "snapshots" / "user.snapshot")
    _report("local snapshot", _crash_snapshot(url, {}, tmp_path, 60, 0.5))


@pytest.mark.slow
@pytest.mark.s3
def test_kills_remember_s3(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    """20 SIGKILLs of remember() on S3 (moto)."""
    _report("s3 remember", _crash_remember(s3_root_url, s3_storage_options, 20, 0.5))


@pytest.mark.slow
@pytest.mark.gcs
def test_kills_remember_gcs(gcs_root_url: str, gcs_storage_options: dict[str, Any]) -> None:
    """20 SIGKILLs of remember() on GCS (fake-gcs-server)."""
    _report("gcs remember", _crash_remember(gcs_root_url, gcs_storage_options, 20, 0.5))


@pytest.mark.slow
@pytest.mark.s3
def test_kills_snapshot_s3(
    s3_root_url: str, s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    """20 SIGKILLs of serverless snapshot saves to S3 (moto)."""
    url = f"{s3_root_url}/user.snapshot"
    _report("s3 snapshot", _crash_snapshot(url, s3_storage_options, tmp_path, 20, 0.8))
