"""Fault injection on every backend: timeouts, resets, 500/503, slow and ambiguous replies.

Network backends run behind a fault-injecting proxy (the client libraries' real error
paths run); local folders and ``memory://`` behind a FaultyRoot. What must hold:

* every ``remember()`` that returned an id is stored, exactly once, and readable by a
  later process;
* a call that raised raised :class:`BackendError` and left its entry either absent or
  complete -- never torn, never twice;
* no log line is torn, no id and no MEMORY.md bullet is duplicated by a retry;
* a long-lived instance that saw the faults agrees with a fresh one afterwards;
* retries end within the policy's deadline with a clear BackendError.

The default run injects 20 % faults into ~25 calls per backend; ``-m slow`` runs 30 %
into 150 calls, and concurrent writers.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fsmemory.errors import BackendError
from fsmemory.fs.retry import NO_RETRY
from fsmemory.snapshot import FsspecBackend
from fsmemory.testing.faults import FaultPlan
from tests.test_reliability._support import (
    HOLD,
    NETWORK,
    FaultyBackend,
    bullet_count,
    make_faulty_backend,
    read_stored,
)

ALL_KINDS = ("delay", "error", "reset", "timeout", "ambiguous", "truncate")


@dataclass
class Outcome:
    """What the callers were told."""

    acked: dict[str, tuple[str, bool]] = field(default_factory=dict)
    failed: list[tuple[str, bool]] = field(default_factory=list)
    read_failures: int = 0
    half_applied: int = 0
    hidden: int = 0
    other_errors: list[BaseException] = field(default_factory=list)
    errors: list[BackendError] = field(default_factory=list)


def _plan(rate: float, seed: int, kinds: tuple[str, ...] = ALL_KINDS) -> FaultPlan:
    return FaultPlan.only(*kinds, rate=rate, hold=HOLD, delay=0.05, seed=seed)


def _remember_under_faults(
    backend: FaultyBackend, plan: FaultPlan, count: int, tag: str, out: Outcome
) -> None:
    km = backend.memory()
    backend.injector.set_plan(plan)
    try:
        for i in range(count):
            content = f"{tag} fact {i}: ünïcode\nsecond line"
            persistent = i % 3 == 0
            try:
                entry_id = km.remember(content, category=f"cat{i % 2}", persistent=persistent)
            except BackendError as exc:
                out.failed.append((content, persistent))
                out.errors.append(exc)
                with backend.injector.paused():
                    _check_failed_call(backend, content, persistent, out)
            except Exception as exc:  # pragma: no cover - reported below
                out.other_errors.append(exc)
            else:
                out.acked[entry_id] = (content, persistent)
            if i % 5 == 4:
                try:
                    km.recall("fact", limit=3)
                    km.build_context()
                except BackendError:
                    out.read_failures += 1
    finally:
        backend.injector.set_plan(FaultPlan(rate=0.0))
    # The instance that lived through the faults converges with a fresh one.
    km.refresh()
    assert sorted(e.id for e in km.entries()) == sorted(e.id for e in backend.fresh().entries())


def _check_failed_call(
    backend: FaultyBackend, content: str, persistent: bool, out: Outcome
) -> None:
    """A failed remember left no visible trace or its complete entry -- never a torn
    line, never two records or two bullets."""
    stored = read_stored(backend.clean)
    assert stored.torn_lines == 0
    records = sum(1 for r in stored.records if r.get("content") == content)
    bullets = bullet_count(stored.memory_md, content.replace("\n", "\\n"))
    assert records <= 1, f"failed call stored {records} records"
    assert bullets <= 1, f"failed call stored {bullets} bullets"
    if not persistent:
        assert bullets == 0
    elif records == 1 and bullets == 0:
        # The log append landed but its reply was lost, and remember() removed the
        # bullet it had written first: the persistent record is hidden (not live).
        out.hidden += 1
        assert [e for e in backend.fresh().entries() if e.content == content] == []
    elif records == 0 and bullets == 1:
        # The log append failed and removing the bullet failed too (best effort): the
        # fact stays as a MEMORY.md-only fact.
        out.half_applied += 1
    else:
        assert records == bullets


def _verify(backend: FaultyBackend, out: Outcome) -> None:
    """Nothing acknowledged is lost; nothing is duplicated; reads work."""
    assert not out.other_errors, out.other_errors
    fresh = backend.fresh()
    lost = [i for i in out.acked if fresh.get(i) is None]
    assert lost == [], f"{len(lost)} acknowledged entries lost"
    for entry_id, (content, _) in out.acked.items():
        entry = fresh.get(entry_id)
        assert entry is not None and entry.content == content
    stored = read_stored(backend.clean)
    assert stored.torn_lines == 0
    duplicated = [i for i, n in Counter(stored.ids).items() if n > 1]
    assert duplicated == [], f"ids stored twice: {duplicated}"
    for content, persistent in out.acked.values():
        escaped = content.replace("\n", "\\n")
        assert bullet_count(stored.memory_md, escaped) == (1 if persistent else 0)
    assert fresh.stats()["corrupt_lines"] == 0
    fresh.recall("fact")
    fresh.build_context()


def test_remember_under_faults(faulty_backend: FaultyBackend) -> None:
    """20 % mixed faults: acknowledged entries survive exactly once, failures are clean."""
    out = Outcome()
    _remember_under_faults(faulty_backend, _plan(0.2, seed=7), 24, "mixed", out)
    _verify(faulty_backend, out)
    assert faulty_backend.injector.faults > 0
    if faulty_backend.name in NETWORK:
        # With retries nearly every call succeeds.
        assert len(out.acked) >= 20


def test_failures_without_retries_leave_no_partial_entry(faulty_backend: FaultyBackend) -> None:
    """No retries and faults on every 4th call: each failed call left nothing or a whole
    entry; acknowledged ones are all there."""
    backend = faulty_backend
    if backend.name in NETWORK:
        backend.faulty.retry = NO_RETRY  # type: ignore[attr-defined]
    out = Outcome()
    _remember_under_faults(backend, _plan(0.25, seed=11), 24, "noretry", out)
    _verify(backend, out)
    assert out.failed, "the plan should have made some calls fail"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("s3", marks=pytest.mark.s3),
        pytest.param("gcs", marks=pytest.mark.gcs),
        pytest.param("gcs-obstore", marks=pytest.mark.gcs),
        pytest.param("redis", marks=pytest.mark.redis),
    ],
)
def test_ambiguous_successes_never_duplicate(
    request: pytest.FixtureRequest, tmp_path: Path, name: str
) -> None:
    """30 % of writes (20 % of Redis commands) land and then lose their reply: retries
    recognise their own write."""
    backend = make_faulty_backend(request, name, tmp_path)
    try:
        # Redis: every chunk a client sends counts, connection set-up included.
        methods = None if name == "redis" else frozenset({"PUT", "POST"})
        rate = 0.2 if name == "redis" else 0.3
        plan = FaultPlan.only("ambiguous", rate=rate, seed=3, methods=methods)
        out = Outcome()
        _remember_under_faults(backend, plan, 20, "ambiguous", out)
        assert backend.injector.faults >= 3
        import traceback

        assert not out.failed, ["".join(traceback.format_exception(e)) for e in out.errors]
        _verify(backend, out)
    finally:
        for proxy in backend.stops:
            proxy.stop()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("s3", marks=pytest.mark.s3),
        pytest.param("gcs", marks=pytest.mark.gcs),
        pytest.param("gcs-obstore", marks=pytest.mark.gcs),
        pytest.param("redis", marks=pytest.mark.redis),
    ],
)
def test_retries_stop_at_the_deadline(
    request: pytest.FixtureRequest, tmp_path: Path, name: str
) -> None:
    """A dead service: remember() gives up after the deadline with a BackendError saying
    so, and the memory is as before."""
    retry = {"attempts": 1000, "base_delay": 0.01, "max_delay": 0.1, "deadline": 1.0}
    backend = make_faulty_backend(request, name, tmp_path, retry=retry)
    try:
        km = backend.memory()
        km.remember("before the outage", persistent=True)
        before = read_stored(backend.clean).files
        backend.injector.set_plan(FaultPlan.only("reset", "error", rate=1.0, seed=1))
        started = time.monotonic()
        with pytest.raises(BackendError, match="gave up") as info:
            km.remember("during the outage", persistent=True)
        elapsed = time.monotonic() - started
        assert info.value.__cause__ is not None
        assert elapsed < 1.0 + 1.0, f"gave up after {elapsed:.1f} s"
        backend.injector.set_plan(FaultPlan(rate=0.0))
        assert read_stored(backend.clean).files == before
    finally:
        for proxy in backend.stops:
            proxy.stop()


@pytest.mark.s3
def test_snapshot_deltas_saved_once_under_ambiguous_faults(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Serverless saves through a faulty S3: every delta lands once, the restore has
    every acknowledged entry once."""
    from fsmemory import KnowledgeMemory

    backend = make_faulty_backend(request, "s3", tmp_path)
    try:
        root: Any = backend.faulty
        bucket = root.bucket
        proxy_url = root.fs.client_kwargs["endpoint_url"]
        options = dict(request.getfixturevalue("s3_storage_options"))
        faulty_options = {
            **options,
            "client_kwargs": {"endpoint_url": proxy_url},
            "config_kwargs": root.fs.config_kwargs,
            "retry": {"attempts": 12, "base_delay": 0.005, "max_delay": 0.1},
        }
        url = f"s3://{bucket}/snap/u1.snapshot"
        backend.injector.set_plan(_plan(0.2, seed=5, kinds=("ambiguous", "reset", "error")))
        acked: dict[str, str] = {}
        for call in range(4):
            km = KnowledgeMemory(
                tmp_path / f"scratch-{call}",
                backend=FsspecBackend(url, storage_options=faulty_options),
            )
            for j in range(3):
                text = f"call {call} fact {j}"
                acked[km.remember(text, persistent=j == 0)] = text
        backend.injector.set_plan(FaultPlan(rate=0.0))
        assert backend.injector.faults > 0
        restored = KnowledgeMemory(
            tmp_path / "check", backend=FsspecBackend(url, storage_options=options)
        )
        assert {i: restored.get(i).content for i in acked if restored.get(i)} == acked  # type: ignore[union-attr]
        stored = read_stored(restored.root)
        assert sorted(stored.ids) == sorted(set(stored.ids))
    finally:
        for proxy in backend.stops:
            proxy.stop()


def test_failed_persistent_remember_leaves_no_trace() -> None:
    """On an object-store-like root (MEMORY.md by compare-and-swap), the log append of a
    persistent remember() fails: the memory should be as before."""
    import fsspec

    from fsmemory import KnowledgeMemory
    from fsmemory.fs.generic import FsspecRoot
    from fsmemory.testing.faults import FaultyRoot

    inner = FsspecRoot(fsspec.filesystem("memory"), f"/half-{time.time_ns()}")
    root = FaultyRoot(inner, FaultPlan.only("reset", rate=1.0, methods=frozenset({"append"})))
    km = KnowledgeMemory(root)
    with pytest.raises(BackendError):
        km.remember("a persistent fact", persistent=True)
    assert KnowledgeMemory(inner).get_persistent_facts() == {}


# -- slow: more calls, more faults, concurrent writers ---------------------------------------


@pytest.mark.slow
def test_remember_under_heavy_faults(faulty_backend: FaultyBackend) -> None:
    """30 % mixed faults into 150 calls."""
    out = Outcome()
    _remember_under_faults(faulty_backend, _plan(0.3, seed=17), 150, "heavy", out)
    _verify(faulty_backend, out)
    print(
        f"\n{faulty_backend.name}: {faulty_backend.injector.faults} faults injected, "
        f"{len(out.acked)} acknowledged, {len(out.failed)} failed "
        f"({out.half_applied} left a MEMORY.md-only fact, {out.hidden} a hidden record), "
        "0 lost"
    )


@pytest.mark.slow
def test_concurrent_writers_under_faults(faulty_backend: FaultyBackend) -> None:
    """4 threads, each with its own instance, remember through 20 % faults."""
    outs = [Outcome() for _ in range(4)]
    backend = faulty_backend
    backend.injector.set_plan(_plan(0.2, seed=23))

    def writer(n: int) -> None:
        km = backend.memory()
        for i in range(25):
            content = f"writer {n} fact {i}"
            try:
                outs[n].acked[km.remember(content, persistent=i % 4 == 0)] = (content, i % 4 == 0)
            except BackendError:
                outs[n].failed.append((content, i % 4 == 0))
            except Exception as exc:  # pragma: no cover - reported below
                outs[n].other_errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    backend.injector.set_plan(FaultPlan(rate=0.0))
    merged = Outcome()
    for out in outs:
        merged.acked.update(out.acked)
        merged.failed += out.failed
        merged.other_errors += out.other_errors
    _verify(backend, merged)
