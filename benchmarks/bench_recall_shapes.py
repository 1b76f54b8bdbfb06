"""Warm recall latency over realistic query shapes, at one memory size.

    python benchmarks/bench_recall_shapes.py [--size N] [--queries N] [--base PATH]

One local-folder memory of ``--size`` entries (default 100,000) whose texts are made
so that every query shape an agent sends occurs: each entry reads like
``"project-17 deadline: alice moved the postgres review to friday, ..."`` -- one of
100 project names, the word ``deadline`` in every entry, 8 words from a vocabulary of
46 (each word in ~16% of entries), and a name that occurs in ~5 entries.

Queries (``--queries`` in all, an equal share per shape, interleaved, after one warm-up
round): a rare name, one common word, a word in every entry (``"project-7
deadline"``: the project name is in 1% of entries, ``deadline`` in all), ten words, the
empty query (the MCP tool's default), and words that match nothing. Each query is
``recall(query, limit=5)`` on one warm instance, in a process that opened the memory
after its index cache was written (as a process reopening its memory does; the table
says whether it was loaded). Prints per shape and over all: median, p99 and max in ms,
and the median and p99 of the process's CPU time (steadier on a loaded machine).
``--base PATH`` runs the same queries against another checkout (e.g. ``git worktree
add /tmp/base HEAD~5``) in a separate process, for before/after in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))
# The checkout measured is the one on PYTHONPATH (a child for --base gets the other
# checkout's path there); the parent falls back to this checkout.
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(1, str(HERE.parent))

SHAPES = ("rare name", "common word", "word in every entry", "ten words", "empty", "no match")
RESULT = "RESULT "


def _facts(size: int, now: float) -> list[Any]:
    import workloads

    rng = random.Random(5)
    span = workloads.SPREAD_DAYS * 86400.0
    step = span / max(size, 1)
    start = now - span - 60.0
    names = [f"zorbel{i}" for i in range(max(1, size // 5))]
    out = []
    for i in range(size):
        words = " ".join(rng.choice(workloads.WORDS) for _ in range(8))
        text = f"project-{i % 100} deadline: {words}, {rng.choice(names)} #{i}"
        out.append(
            workloads.Fact(
                text,
                workloads.CATEGORIES[i % len(workloads.CATEGORIES)],
                i % 50 == 0,
                round(rng.random(), 2),
                start + i * step,
            )
        )
    return out


def queries(count: int, size: int) -> list[tuple[str, str]]:
    """``count`` ``(shape, query)`` pairs, shapes interleaved."""
    import workloads

    rng = random.Random(13)
    names = max(1, size // 5)
    made: list[tuple[str, str]] = []
    while len(made) < count:
        for shape in SHAPES:
            if shape == "rare name":
                query = f"zorbel{rng.randrange(names)}"
            elif shape == "common word":
                query = rng.choice(workloads.WORDS)
            elif shape == "word in every entry":
                query = f"project-{rng.randrange(100)} deadline"
            elif shape == "ten words":
                query = " ".join(rng.sample(workloads.WORDS, 10))
            elif shape == "empty":
                query = ""
            else:
                query = f"qwxz{rng.randrange(10**6)} vvbnq"
            made.append((shape, query))
    return made[:count]


def _gen(folder: str, size: int) -> None:
    from fsmemory_worker import fill, memory_files

    from fsmemory import open_root

    fill(open_root(folder), memory_files(_facts(size, time.time())))


def _prepare(folder: str) -> None:
    """Open the memory and recall once, so its index cache is written: every measured
    process then starts as one reopening its memory does (index loaded, not built)."""
    from fsmemory import KnowledgeMemory

    KnowledgeMemory(folder).recall("deadline", limit=5)


def _measure(
    folder: str, count: int, size: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], bool]:
    from fsmemory import KnowledgeMemory

    memory = KnowledgeMemory(folder)
    plan = queries(count, size)
    for _, query in plan[: len(SHAPES)]:  # warm-up: one of each shape
        memory.recall(query, limit=5)
    loaded = bool(getattr(memory, "_cache_loaded", False))
    times: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    cpu: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    for shape, query in plan:
        t0, c0 = time.perf_counter(), time.process_time()
        memory.recall(query, limit=5)
        times[shape].append((time.perf_counter() - t0) * 1000)
        cpu[shape].append((time.process_time() - c0) * 1000)
    return times, cpu, loaded


def _child(argv: list[str]) -> None:
    folder, count, size = argv[0], int(argv[1]), int(argv[2])
    import fsmemory

    times, cpu, loaded = _measure(folder, count, size)
    code = str(Path(fsmemory.__file__).parent.parent)
    print(RESULT + json.dumps({"code": code, "loaded": loaded, "times": times, "cpu": cpu}))


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def _table(title: str, times: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    print(f"\n{title}\n")
    print("| query shape | n | median ms | p99 ms | max ms | CPU median ms | CPU p99 ms |")
    print("|---|---|---|---|---|---|---|")
    every = [t for values in times.values() for t in values]
    every_cpu = [t for values in cpu.values() for t in values]
    rows = [*((shape, times[shape], cpu[shape]) for shape in times)]
    for shape, values, used in [*rows, ("all shapes", every, every_cpu)]:
        print(
            f"| {shape} | {len(values)} | {statistics.median(values):.2f} "
            f"| {_p99(values):.2f} | {max(values):.2f} "
            f"| {statistics.median(used):.2f} | {_p99(used):.2f} |"
        )


def main() -> None:
    """Build the memory, run the queries (here and at ``--base``), print the tables."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--base", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = str(Path(tmp) / "mem")
        t0 = time.perf_counter()
        _gen(folder, args.size)
        print(f"memory of {args.size:,} entries written in {time.perf_counter() - t0:.1f} s")
        _prepare(folder)
        runs = {"fsmemory (this checkout)": HERE.parent}
        if args.base is not None:
            runs[f"fsmemory at {args.base.name} (before)"] = args.base
        for name, checkout in runs.items():
            done = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--child",
                    folder,
                    str(args.queries),
                    str(args.size),
                ],
                capture_output=True,
                text=True,
                timeout=1800,
                env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
                cwd=str(checkout),
            )
            line = [x for x in done.stdout.splitlines() if x.startswith(RESULT)]
            if not line:
                raise RuntimeError(f"{name} failed: {done.stderr[-2000:]}")
            result = json.loads(line[-1][len(RESULT) :])
            code = result["code"]
            if Path(code).resolve() != Path(checkout).resolve():
                raise RuntimeError(f"{name} ran the code at {code}, not {checkout}")
            index = "loaded from the index cache" if result["loaded"] else "built"
            title = f"{name}: warm recall(limit=5) at {args.size:,} entries ({index})"
            _table(title, result["times"], result["cpu"])


if __name__ == "__main__":
    main()
