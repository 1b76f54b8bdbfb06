"""Benchmark: Parquet export throughput and peak memory, beside the raw pyarrow floor.

Generates a memory root of N log lines (daily JSONL logs written the way
``KnowledgeMemory`` writes them: ``KnowledgeEntry.to_dict()``, ~10% with metadata, ~1%
forget records), then measures, interleaved and each in a fresh subprocess:

* **floor**: ``pyarrow.json.read_json`` on every log file + one ``ParquetWriter`` (the
  raw cost of JSONL -> Parquet with pyarrow, no schema normalization, no partitioning,
  no manifest);
* **export --full**: ``fsmemory.export.export_parquet(..., incremental=False)``;
* **export, no-op re-run** and **export after appending 1%** (incremental).

Peak memory: the peak RSS of each subprocess (VmHWM), Arrow's memory-pool peak, and (in
one separate, untimed run) tracemalloc's peak of Python allocations. The last two rows
export ONE daily log of N/4 and of N lines (much larger than a read block or a Parquet
file) to show that peak memory does not grow with the number of lines.

Usage::

    python benchmarks/bench_export.py [--lines N] [--quick] [--repeat R] [--dir PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

DAYS = 30
CATEGORIES = ["preferences", "facts", "projects", "people", "tasks", "general"]
WORDS = [
    "alpha", "beta", "gamma", "delta", "user", "prefers", "dark", "mode", "python", "rust",
    "meeting", "tuesday", "budget", "report", "deploy", "cluster", "coffee", "tea", "invoice",
    "travel", "berlin", "lisbon", "migrate", "postgres", "schema", "review", "notes",
    "deadline", "friday", "quarterly", "roadmap",
]  # fmt: skip


def generate(root: str, lines: int, *, seed: int = 1) -> int:
    """Write ``lines`` log lines into ``root/logs/`` over :data:`DAYS` days; returns bytes."""
    from fsmemory._jsonutil import dumps_line
    from fsmemory.memory.entry import KnowledgeEntry, new_entry_id

    rng = random.Random(seed)
    os.makedirs(os.path.join(root, "logs"), exist_ok=True)
    per_day = max(1, lines // DAYS)
    written = 0
    remaining = lines
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ids: list[str] = []
    day = 0
    while remaining > 0:
        moment = t0 + timedelta(days=day % DAYS)
        count = min(per_day, remaining) if day < DAYS - 1 else remaining
        out = []
        for i in range(count):
            now = moment + timedelta(seconds=i * 86400 / max(count, 1))
            if ids and rng.random() < 0.01:
                record: dict[str, Any] = {
                    "op": "forget",
                    "id": rng.choice(ids),
                    "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    "reason": "forget",
                }
            else:
                ttl = rng.choice([None, None, None, 7.0, 30.0])
                entry = KnowledgeEntry(
                    id=new_entry_id(),
                    content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 40))),
                    category=rng.choice(CATEGORIES),
                    persistent=rng.random() < 0.25,
                    importance=round(rng.random(), 3),
                    ttl_days=ttl,
                    created_at=now,
                    metadata={"source": "chat", "turn": i} if rng.random() < 0.1 else {},
                    expires_at=None if ttl is None else now + timedelta(days=ttl),
                )
                record = entry.to_dict()
                if len(ids) < 10_000:
                    ids.append(entry.id)
            out.append(dumps_line(record))
        path = os.path.join(root, "logs", f"{moment:%Y-%m-%d}.jsonl")
        with open(path, "ab") as f:
            data = b"".join(out)
            f.write(data)
            written += len(data)
        remaining -= count
        day += 1
    return written


# -- the measured tasks (each runs in its own subprocess) --------------------------------
def one_day(src: str, dest: str, count: int) -> None:
    """A memory root whose single daily log holds the first ``count`` lines of ``src``."""
    import glob

    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "logs"))
    left = count
    with open(os.path.join(dest, "logs", "2026-01-01.jsonl"), "wb") as out:
        for path in sorted(glob.glob(os.path.join(src, "logs", "*.jsonl"))):
            with open(path, "rb") as f:
                for line in f:
                    if left <= 0:
                        return
                    out.write(line)
                    left -= 1


def task_floor(src: str, dest: str) -> dict[str, Any]:
    """pyarrow.json on every file, one Parquet file.

    The schema (metadata as an inferred struct) is unified over all files before the
    clock starts, so the timed part is pure parsing and writing.
    """
    import glob

    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    files = sorted(glob.glob(os.path.join(src, "logs", "*.jsonl")))
    os.makedirs(dest, exist_ok=True)
    schema = pa.unify_schemas(
        [pj.read_json(path).schema for path in files], promote_options="permissive"
    )
    options = pj.ParseOptions(explicit_schema=schema)
    cpu = _cpu()
    t = time.perf_counter()
    rows = 0
    with pq.ParquetWriter(os.path.join(dest, "floor.parquet"), schema) as writer:
        for path in files:
            table = pj.read_json(path, parse_options=options)
            writer.write_table(table)
            rows += table.num_rows
    return {"seconds": time.perf_counter() - t, "cpu": _cpu() - cpu, "rows": rows}


def task_export(src: str, dest: str, full: str) -> dict[str, Any]:
    """fsmemory's export."""
    import pyarrow.compute
    import pyarrow.json
    import pyarrow.parquet  # noqa: F401 - imported before the clock starts, as in the floor

    from fsmemory.export import export_parquet

    cpu = _cpu()
    t = time.perf_counter()
    report = export_parquet(src, dest, incremental=full != "full")
    return {
        "seconds": time.perf_counter() - t,
        "cpu": _cpu() - cpu,
        "rows": report.rows,
        "parts": report.parts_written,
    }


def _cpu() -> float:
    """CPU seconds of this process so far (all threads)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def task_tracemalloc(src: str, dest: str) -> dict[str, Any]:
    """Python-allocation peak of a full export (slow: not timed)."""
    import tracemalloc

    from fsmemory.export import export_parquet

    tracemalloc.start()
    report = export_parquet(src, dest, incremental=False)
    _, peak = tracemalloc.get_traced_memory()
    return {"seconds": 0.0, "cpu": 0.0, "rows": report.rows, "tracemalloc": peak}


def _child(task: str, args: list[str]) -> None:
    import resource

    import pyarrow as pa

    tasks: dict[str, Callable[..., dict[str, Any]]] = {
        "floor": task_floor,
        "export": task_export,
        "tracemalloc": task_tracemalloc,
    }
    result = tasks[task](*args)
    result["maxrss"] = _peak_rss(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    result["arrow_peak"] = pa.default_memory_pool().max_memory()
    print(json.dumps(result))


def _peak_rss(fallback: int) -> int:
    """This process's peak RSS: VmHWM on Linux (ru_maxrss of a forked child starts at
    its parent's peak, which would hide ours), else ``fallback``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return fallback


def run(task: str, *args: str) -> dict[str, Any]:
    """Run ``task`` in a fresh interpreter and return its measurements."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", task, *args],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- the report -----------------------------------------------------------------------
def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100k lines, 2 repeats")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None, help="work folder (default: a temp dir)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1:])
        return
    lines = 100_000 if args.quick else args.lines
    repeat = 2 if args.quick else args.repeat
    work = args.dir or tempfile.mkdtemp(prefix="bench_export_")
    src = os.path.join(work, "memory")
    try:
        shutil.rmtree(src, ignore_errors=True)
        t = time.perf_counter()
        size = generate(src, lines)
        print(
            f"generated {lines:,} log lines ({size / 2**20:,.1f} MiB) in "
            f"{time.perf_counter() - t:.1f} s under {work}"
        )
        samples: dict[str, list[dict[str, Any]]] = {"floor": [], "full": []}
        for i in range(repeat):
            for name in ("floor", "full"):
                dest = os.path.join(work, f"out-{name}-{i}")
                shutil.rmtree(dest, ignore_errors=True)
                if name == "floor":
                    samples[name].append(run("floor", src, dest))
                else:
                    samples[name].append(run("export", src, dest, "full"))
                shutil.rmtree(dest, ignore_errors=True)
        # Incremental: a no-op re-run, then 1% more lines.
        dest = os.path.join(work, "out-incremental")
        shutil.rmtree(dest, ignore_errors=True)
        run("export", src, dest, "full")
        samples["noop"] = [run("export", src, dest, "incremental") for _ in range(repeat)]
        generate(src, max(1, lines // 100), seed=2)
        samples["append"] = [run("export", src, dest, "incremental")]
        # Memory does not grow with the number of lines: one daily log of N/4 lines,
        # then one of N lines (both far larger than a read block and a Parquet file).
        single: dict[str, dict[str, Any]] = {}
        for label, count in (("N/4", lines // 4), ("N", lines)):
            one = os.path.join(work, f"one-day-{count}")
            one_day(src, one, count)
            dest_1 = os.path.join(work, f"out-one-day-{count}")
            shutil.rmtree(dest_1, ignore_errors=True)
            single[label] = run("export", one, dest_1, "full")
            shutil.rmtree(dest_1, ignore_errors=True)
            shutil.rmtree(one, ignore_errors=True)
        dest_t = os.path.join(work, "out-tracemalloc")
        shutil.rmtree(dest_t, ignore_errors=True)
        traced = run("tracemalloc", src, dest_t)
        _print(lines, samples, single, traced)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


def _print(
    lines: int,
    samples: dict[str, list[dict[str, Any]]],
    single: dict[str, dict[str, Any]],
    traced: dict[str, Any],
) -> None:
    def med(key: str, field: str) -> float:
        return float(statistics.median(r[field] for r in samples[key]))

    floor_rate = samples["floor"][0]["rows"] / med("floor", "seconds")
    floor_cpu_rate = samples["floor"][0]["rows"] / med("floor", "cpu")
    rows = [
        ("raw floor: pyarrow.json + 1 Parquet file", "floor"),
        ("fsmemory export --full", "full"),
        ("fsmemory export, no-op re-run", "noop"),
        ("fsmemory export, +1% lines (incremental)", "append"),
    ]
    samples["one-N/4"] = [single["N/4"]]
    samples["one-N"] = [single["N"]]
    header = (
        f"{'workload':<42} {'rows':>9} {'wall s':>7} {'rows/s':>9} {'vs floor':>8} "
        f"{'CPU s':>6} {'vs floor':>8} {'RSS MiB':>8} {'Arrow MiB':>9}"
    )
    print(header)
    print("-" * len(header))
    extra = [
        ("export, one daily log of N/4 lines", "one-N/4"),
        ("export, one daily log of N lines", "one-N"),
    ]
    for label, key in [*rows, *extra]:
        runs = samples[key]
        seconds, cpu = med(key, "seconds"), med(key, "cpu")
        n = runs[0]["rows"]
        rate = n / seconds if seconds and n else 0.0
        measured = key in ("floor", "full") and n
        ratio = f"{rate / floor_rate:.2f}x" if measured else "-"
        cpu_ratio = f"{n / cpu / floor_cpu_rate:.2f}x" if measured and cpu else "-"
        print(
            f"{label:<42} {n:>9,} {seconds:>7.3f} {(f'{rate:,.0f}' if n else '-'):>9} "
            f"{ratio:>8} {cpu:>6.2f} {cpu_ratio:>8} "
            f"{_mib(max(r['maxrss'] for r in runs)):>8} "
            f"{_mib(max(r['arrow_peak'] for r in runs)):>9}"
        )
    wall_ratio = samples["full"][0]["rows"] / med("full", "seconds") / floor_rate
    print(
        f"\n{lines:,} lines; medians of {len(samples['full'])} interleaved runs, each in a "
        "fresh process; 'vs floor' = throughput / floor throughput (wall, then CPU time)."
        f"\nPeak Python allocations (tracemalloc) of a full export: "
        f"{_mib(traced['tracemalloc'])} MiB. RSS includes the interpreter and pyarrow "
        f"(the no-op row). Load average during the run: {os.getloadavg()[0]:.1f}."
        f"\nTarget >= 0.50x the floor's throughput: "
        f"{'met' if wall_ratio >= 0.5 else 'NOT met'} ({wall_ratio:.2f}x)."
    )


if __name__ == "__main__":
    main()
