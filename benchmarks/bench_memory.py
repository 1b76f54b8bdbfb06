"""KnowledgeMemory on a local folder: remember / recall / build_context vs memory size.

    python benchmarks/bench_memory.py [--quick] [--sizes 1000,10000,100000]

Prints one table: per-call medians (and min-max) at each memory size, beside the
targets of the foundation issue and selectools 1.3.0's figures from ANCHORS.md.
Workload: fixed seed, every 2nd remember() persistent, 8 categories, ~60-byte facts.
Nothing is asserted; machines here are noisy, so compare ratios within one run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsmemory import KnowledgeMemory

WORDS = [
    "python",
    "rust",
    "editor",
    "dark",
    "mode",
    "meeting",
    "project",
    "atlas",
    "deploy",
    "server",
    "database",
    "postgres",
    "timeout",
    "payment",
    "service",
    "invoice",
    "customer",
    "alice",
    "bob",
    "lisbon",
    "coffee",
    "tea",
    "keyboard",
    "review",
    "release",
    "branch",
    "feature",
    "flag",
    "metrics",
    "latency",
    "cache",
    "redis",
    "bucket",
    "lambda",
    "schedule",
    "vacation",
    "budget",
    "travel",
    "flight",
    "hotel",
    "dinner",
    "birthday",
    "gift",
    "music",
    "guitar",
]
CATEGORIES = ["preferences", "personal", "technical", "context", "work", "travel", "food", "misc"]


def fact(rng: random.Random, i: int) -> tuple[str, str, bool, float]:
    text = " ".join(rng.choice(WORDS) for _ in range(8)) + f" #{i}"
    return text, CATEGORIES[i % len(CATEGORIES)], i % 2 == 0, round(rng.random(), 2)


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def fmt(samples: list[float]) -> str:
    return f"{statistics.median(samples):8.3f} ms  ({min(samples):.3f}-{max(samples):.3f})"


def run(sizes: list[int], repeat: int) -> list[tuple[str, int, list[float], str]]:
    rows: list[tuple[str, int, list[float], str]] = []
    rng = random.Random(42)
    with tempfile.TemporaryDirectory() as tmp:
        km = KnowledgeMemory(str(Path(tmp) / "mem"))
        count = 0
        for size in sizes:
            while count < size:
                text, cat, persistent, imp = fact(rng, count)
                km.remember(text, category=cat, persistent=persistent, importance=imp)
                count += 1
            km.recall("warm")

            def remember_one() -> None:
                nonlocal count
                text, cat, persistent, imp = fact(rng, count)
                km.remember(text, category=cat, persistent=persistent, importance=imp)
                count += 1

            rows.append(("remember()", size, timed(remember_one, repeat), "<= 0.3 ms at 10k"))
            queries = iter([" ".join(rng.sample(WORDS, 2)) for _ in range(repeat)])

            def recall_one(q: Any = queries) -> None:
                km.recall(next(q), limit=5)

            rows.append(
                (
                    "recall(limit=5)",
                    size,
                    timed(recall_one, repeat),
                    "<= 2 ms at 10k, <= 20 ms at 100k",
                )
            )
            rows.append(
                ("build_context() warm", size, timed(km.build_context, repeat), "<= 2 ms at 10k")
            )

            def context_after_write() -> None:
                km.remember("fresh note", category="context")
                km.build_context()

            rows.append(
                (
                    "remember()+build_context()",
                    size,
                    timed(context_after_write, max(20, repeat // 5)),
                    "(index update + render)",
                )
            )
            km.recall("x")
            # A second process's view: a fresh instance building its index from the files.
            rows.append(
                (
                    "cold start + recall",
                    size,
                    timed(lambda: KnowledgeMemory(km.root.url).recall("python"), 3),
                    "(reads all logs once)",
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="sizes 1k and 10k, fewer repeats")
    parser.add_argument("--sizes", default=None, help="comma-separated memory sizes")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args()
    sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    repeat = args.repeat or (100 if args.quick else 300)
    rows = run(sizes, repeat)
    print(f"\nKnowledgeMemory, local folder, every 2nd remember persistent (n={repeat}/cell)\n")
    print(f"| {'operation':28} | {'entries':>8} | {'median (min-max)':32} | target |")
    print(f"|{'-' * 30}|{'-' * 10}|{'-' * 34}|--------|")
    for name, size, samples, target in rows:
        print(f"| {name:28} | {size:>8,} | {fmt(samples):32} | {target} |")
    by = {(n, s): statistics.median(v) for n, s, v, _ in rows}
    if ("remember()", sizes[0]) in by and ("remember()", sizes[-1]) in by:
        ratio = by[("remember()", sizes[-1])] / by[("remember()", sizes[0])]
        print(f"\nremember() median at {sizes[-1]:,} / at {sizes[0]:,}: {ratio:.2f}x (flat = 1.0)")
    if ("remember()", 10000) in by:
        print(
            f"selectools 1.3.0 remember() at 10k (ANCHORS.md): 137 ms -> "
            f"{137 / by[('remember()', 10000)]:.0f}x slower than this run's median"
        )


if __name__ == "__main__":
    main()
