"""Several processes and threads writing the same memory lose nothing."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory.markdown import parse_memory_md

WORKERS = 4
PER_WORKER = 100


def _worker(url: str, options: dict[str, Any], worker: int, count: int) -> list[str]:
    km = KnowledgeMemory(url, storage_options=options)
    ids = []
    for i in range(count):
        ids.append(
            km.remember(
                f"worker {worker} fact {i}",
                category=f"cat{(worker + i) % 3}",
                persistent=i % 2 == 0,
                importance=(i % 10) / 10,
            )
        )
    return ids


def _check(url: str, options: dict[str, Any], expected_ids: list[str], per_worker: int) -> None:
    km = KnowledgeMemory(url, storage_options=options)
    entries = km.entries()
    contents = Counter(e.content for e in entries)
    expected = {f"worker {w} fact {i}" for w in range(WORKERS) for i in range(per_worker)}
    assert set(contents) == expected
    assert all(n == 1 for n in contents.values()), "an entry was duplicated"
    assert {e.id for e in entries} == set(expected_ids)
    md = km.root.read_bytes("MEMORY.md").decode()
    doc = parse_memory_md(md)
    bullets = [f.content for facts in doc.sections.values() for f in facts]
    assert sorted(bullets) == sorted(c for c in expected if int(c.rsplit(" ", 1)[1]) % 2 == 0)
    for line in md.splitlines():
        assert line == "" or line.startswith(("# Agent Memory", "## cat", "- worker "))
    assert km.stats()["corrupt_lines"] == 0


@pytest.mark.parametrize(
    "backend",
    [
        "local",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("s3", marks=pytest.mark.s3),
        pytest.param("gcs", marks=pytest.mark.gcs),
    ],
)
def test_processes_lose_nothing(
    request: pytest.FixtureRequest, backend: str, tmp_path: Any
) -> None:
    from .conftest import backend_location

    url, options = backend_location(request, backend, tmp_path)
    per_worker = PER_WORKER if backend in ("local", "redis") else 25
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WORKERS) as pool:
        results = pool.starmap(_worker, [(url, options, w, per_worker) for w in range(WORKERS)])
    ids = [i for r in results for i in r]
    assert len(set(ids)) == WORKERS * per_worker
    _check(url, options, ids, per_worker)


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_threads_lose_nothing(request: pytest.FixtureRequest, backend: str, tmp_path: Any) -> None:
    from .conftest import backend_location

    url, options = backend_location(request, backend, tmp_path)
    results: list[list[str]] = [[] for _ in range(WORKERS)]

    def run(w: int) -> None:
        results[w] = _worker(url, options, w, 50)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check(url, options, [i for r in results for i in r], 50)


def test_large_memory_md_appends_and_tidies(tmp_path: Any) -> None:
    km = KnowledgeMemory(str(tmp_path / "big"))
    filler = "x" * 200
    for i in range(400):  # ~80 KiB: past the rewrite limit
        km.remember(f"{filler} {i}", category=f"c{i % 4}", persistent=True)
    md = km.root.read_bytes("MEMORY.md").decode()
    headers = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert len(headers) <= 4 + max(32, 400 // 8)  # tidied, never unbounded
    facts = km.get_persistent_facts()
    assert sorted(facts) == ["c0", "c1", "c2", "c3"]
    assert facts["c1"] == [f"{filler} {i}" for i in range(400) if i % 4 == 1]
    assert len(KnowledgeMemory(str(tmp_path / "big")).recall("", limit=1000)) == 400
