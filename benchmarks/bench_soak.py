"""Soak: 8 writer and 8 reader processes on one memory for N seconds, then a consistency check.

    python benchmarks/bench_soak.py [--seconds 20] [--max-ops 5000] [--backends local,redis]
                                    [--writers 8] [--readers 8] [--quick]

Each writer process opens its own KnowledgeMemory on the same root and calls
``remember()`` (every 10th persistent) until the time or its operation budget runs out,
recording the id of every call that returned. Each reader process alternates
``recall()`` and ``build_context()``. Both are bounded (time and count). Afterwards a
fresh instance checks that every acknowledged entry is present exactly once.

Prints per backend and operation: count, ops/s (all processes together), p50/p99 latency
and errors, then the consistency line. Redis is a throwaway ``redis-server`` on
127.0.0.1. Nothing is asserted: this measures.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = [
    "atlas",
    "python",
    "memory",
    "agent",
    "deploy",
    "cache",
    "index",
    "ledger",
    "orbit",
    "signal",
]


def _percentile(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def writer(url: str, n: int, start_at: float, stop_at: float, max_ops: int) -> dict[str, Any]:
    """One writer process: remember() until ``stop_at`` or ``max_ops``."""
    from fsmemory import KnowledgeMemory

    km = KnowledgeMemory(url)
    rng = random.Random(n)
    acked: list[str] = []
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    while time.time() < start_at:
        time.sleep(0.001)
    for i in range(max_ops):
        if time.time() >= stop_at:
            break
        text = f"writer {n} note {i}: {rng.choice(WORDS)} {rng.choice(WORDS)}"
        t0 = time.perf_counter()
        try:
            acked.append(km.remember(text, category=f"w{n % 3}", persistent=i % 10 == 0))
        except Exception as exc:  # counted, the soak goes on
            errors[type(exc).__name__] += 1
            continue
        latencies.append(time.perf_counter() - t0)
    return {"acked": acked, "latencies": latencies, "errors": dict(errors), "end": time.time()}


def reader(url: str, n: int, start_at: float, stop_at: float, max_ops: int) -> dict[str, Any]:
    """One reader process: recall() and build_context() until ``stop_at`` or ``max_ops``."""
    from fsmemory import KnowledgeMemory

    km = KnowledgeMemory(url)
    rng = random.Random(1000 + n)
    recall: list[float] = []
    context: list[float] = []
    errors: Counter[str] = Counter()
    while time.time() < start_at:
        time.sleep(0.001)
    for i in range(max_ops):
        if time.time() >= stop_at:
            break
        t0 = time.perf_counter()
        try:
            if i % 2:
                km.build_context()
                context.append(time.perf_counter() - t0)
            else:
                km.recall(rng.choice(WORDS), limit=5)
                recall.append(time.perf_counter() - t0)
        except Exception as exc:
            errors[type(exc).__name__] += 1
    return {"recall": recall, "context": context, "errors": dict(errors), "end": time.time()}


def soak(
    name: str, url: str, writers: int, readers: int, seconds: float, max_ops: int
) -> tuple[list[list[str]], str]:
    """Run one soak on ``url``; the table rows and the consistency line."""
    from fsmemory import KnowledgeMemory

    KnowledgeMemory(url).remember("soak start", persistent=True)
    ctx = multiprocessing.get_context("spawn")
    start_at = time.time() + 3.0  # every process imported and opened before the clock
    stop_at = start_at + seconds
    with ctx.Pool(writers + readers) as pool:
        w_jobs = [
            pool.apply_async(writer, (url, n, start_at, stop_at, max_ops)) for n in range(writers)
        ]
        r_jobs = [
            pool.apply_async(reader, (url, n, start_at, stop_at, max_ops)) for n in range(readers)
        ]
        w_results = [j.get(timeout=seconds + 600) for j in w_jobs]
        r_results = [j.get(timeout=seconds + 600) for j in r_jobs]
    elapsed = max(r["end"] for r in w_results + r_results) - start_at

    def row(op: str, samples: list[float], errors: int) -> list[str]:
        return [
            name,
            op,
            f"{len(samples):,}",
            f"{len(samples) / elapsed:,.0f}",
            f"{_percentile(samples, 0.5) * 1000:.2f}",
            f"{_percentile(samples, 0.99) * 1000:.2f}",
            str(errors),
        ]

    remember = [x for r in w_results for x in r["latencies"]]
    recall = [x for r in r_results for x in r["recall"]]
    context = [x for r in r_results for x in r["context"]]
    w_err = sum(sum(r["errors"].values()) for r in w_results)
    r_err = sum(sum(r["errors"].values()) for r in r_results)
    rows = [
        row(f"remember() x{writers} writers", remember, w_err),
        row(f"recall() x{readers} readers", recall, r_err),
        row(f"build_context() x{readers} readers", context, 0),
    ]
    acked = [i for r in w_results for i in r["acked"]]
    fresh = KnowledgeMemory(url)
    live = Counter(e.id for e in fresh.entries())
    lost = sum(1 for i in acked if live[i] == 0)
    doubled = sum(1 for n in live.values() if n > 1)
    mean = statistics.mean(remember) * 1000 if remember else float("nan")
    line = (
        f"{name}: {len(acked):,} acknowledged entries, {len(acked) - lost:,} present, "
        f"{lost} lost, {doubled} duplicated, {fresh.stats()['corrupt_lines']} corrupt lines "
        f"(mean remember {mean:.2f} ms over {elapsed:.1f} s)"
    )
    return rows, line


def main() -> None:
    """Parse arguments, start Redis when asked, soak each backend, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--max-ops", type=int, default=5000, help="per process")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--backends", default="local,redis")
    parser.add_argument("--quick", action="store_true", help="3 s, 500 ops per process")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.max_ops = 3.0, 500
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    rows: list[list[str]] = []
    lines: list[str] = []
    services: list[Any] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for backend in backends:
                if backend == "local":
                    url = os.path.join(tmp, "soak")
                elif backend == "redis":
                    from fsmemory.testing.services import start_redis

                    service = start_redis()
                    services.append(service)
                    url = f"{service.url}/0/soak-{uuid.uuid4().hex[:8]}"
                else:
                    raise SystemExit(f"unknown backend {backend!r} (local, redis)")
                r, line = soak(backend, url, args.writers, args.readers, args.seconds, args.max_ops)
                rows += r
                lines.append(line)
    finally:
        for service in services:
            service.stop()
    header = ["backend", "operation", "count", "ops/s", "p50 ms", "p99 ms", "errors"]
    print(
        f"\nSoak: {args.writers} writer + {args.readers} reader processes, "
        f"{args.seconds:g} s or {args.max_ops:,} ops per process, {os.cpu_count()} CPUs\n"
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
