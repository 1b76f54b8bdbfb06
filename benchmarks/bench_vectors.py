"""Cold hybrid recall: a fresh process opens a memory with an embedder and recalls once.

At each size (entries x 384 dimensions), on a local folder whose files are in the page
cache, the median over ``--runs`` fresh processes of: the open + first
``recall(limit=5)`` (wall time, and the process's CPU time beside it: on a busy
machine the CPU time says what the work costs, the wall time what waiting added) with
a deterministic fake embedder (vectors drawn from a generator seeded by a hash of the
text; the query's own embedding is excluded), the same without
an embedder, and the raw floor: NumPy reading the same vector bytes from the same file
and taking one product with a query (``np.fromfile`` + ``astype(float32) @ q``); and
the highest peak resident memory of each (``VmHWM``, MB, after the first recall); and
the median warm ``recall(limit=5)`` of the same process over 20 more queries (the
query's embedding excluded), wall and CPU time, with the peak resident memory after
them. NumPy is imported before the clock starts, in every mode (an embedder's model
has it loaded anyway): the time the import took in the hybrid processes is its own
column (the first hybrid recall of a process that has not imported NumPy yet pays
it). Each code version runs from its own source tree (``--code NAME=PATH``, put first
on ``PYTHONPATH``), so the rows before and after a change are taken side by side in one
run.

The memories are built once (``--cache``, reused by later runs): the entries are
written without an embedder, then each code version embeds them all in one warm-up
``recall()`` of its own copy (which writes its vector file and the index cache).

Usage::

    python benchmarks/bench_vectors.py --sizes 1000,10000,100000 \\
        --code before=../base-checkout --code after=.

Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DIMENSION = 384
QUERY = "garden python"
# Warm recalls after the first (the median is reported): the same memory, other words.
WARM_QUERIES = [
    f"{word} {other}"
    for word in ("garden", "python", "deadline", "coffee", "meeting")
    for other in ("notes", "project", "friday", "travel")
]


class HashVectors:
    """Deterministic fake embedder: each text's vector is drawn from a generator seeded
    by a hash of the text (dense, like a model's); time spent is counted."""

    name = "hashvec"
    dimension = DIMENSION

    def __init__(self) -> None:
        self.spent_ms = 0.0
        self.spent_cpu_ms = 0.0

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        t0 = time.perf_counter_ns()
        c0 = time.process_time_ns()
        out = []
        for text in texts:
            seed = int.from_bytes(
                hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                "little",
            )
            out.append(np.random.default_rng(seed).standard_normal(DIMENSION).tolist())
        self.spent_ms += (time.perf_counter_ns() - t0) / 1e6
        self.spent_cpu_ms += (time.process_time_ns() - c0) / 1e6
        return out


def _rss_mb() -> float:
    """Peak resident memory of this process (MB), from ``VmHWM``."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def probe(folder: Path, mode: str) -> dict[str, float]:
    """In this (fresh) process: ``mode`` "hybrid" opens the memory with the embedder
    and recalls once; "plain" without an embedder; "floor" reads the vector bytes of
    the folder's vector file and takes one product. Returns ms and peak RSS."""
    t0 = time.perf_counter()
    import numpy as np

    numpy_ms = (time.perf_counter() - t0) * 1000
    from fsmemory import KnowledgeMemory

    if mode == "floor":
        path, blocks = _vector_blocks(folder)
        query = np.random.default_rng(1).standard_normal(DIMENSION).astype(np.float32)
        t0 = time.perf_counter()
        data = np.fromfile(path, dtype=np.uint8)
        if path.suffix == ".f16v":
            scores = [
                data[at : at + 2 * rows * DIMENSION]
                .view("<f2")
                .reshape(rows, DIMENSION)
                .astype(np.float32)
                @ query
                for at, rows in blocks
            ]
        else:  # int8 codes, an exponent and a sum of squares per row: the codes' product
            from fsmemory.memory._vecfile import row_bytes

            width = row_bytes(DIMENSION)
            scores = []
            for at, rows in blocks:
                stored = data[at : at + rows * width].view(np.int8).reshape(rows, width)
                scale = np.ldexp(np.float32(1), stored[:, DIMENSION].astype(np.int32))
                scores.append((stored[:, :DIMENSION].astype(np.float32) @ query) * scale)
        ms = (time.perf_counter() - t0) * 1000
        assert sum(len(s) for s in scores) == sum(rows for _, rows in blocks)
        return {"ms": ms, "rss_mb": _rss_mb(), "numpy_ms": numpy_ms}
    embedder = HashVectors() if mode == "hybrid" else None
    c0 = time.process_time()
    t0 = time.perf_counter()
    km = KnowledgeMemory(folder, embedder=embedder)
    found = km.recall(QUERY, limit=5)
    ms = (time.perf_counter() - t0) * 1000 - (embedder.spent_ms if embedder else 0.0)
    cpu_ms = (time.process_time() - c0) * 1000 - (embedder.spent_cpu_ms if embedder else 0.0)
    assert found
    rss = _rss_mb()
    warm: list[float] = []
    warm_cpu: list[float] = []
    for text in WARM_QUERIES:
        before = embedder.spent_ms if embedder else 0.0
        before_cpu = embedder.spent_cpu_ms if embedder else 0.0
        c0 = time.process_time()
        t0 = time.perf_counter()
        km.recall(text, limit=5)
        warm.append(
            (time.perf_counter() - t0) * 1000 - (embedder.spent_ms - before if embedder else 0.0)
        )
        warm_cpu.append(
            (time.process_time() - c0) * 1000
            - (embedder.spent_cpu_ms - before_cpu if embedder else 0.0)
        )
    return {
        "ms": ms,
        "cpu_ms": cpu_ms,
        "rss_mb": rss,
        "warm_ms": statistics.median(warm),
        "warm_cpu_ms": statistics.median(warm_cpu),
        "warm_rss_mb": _rss_mb(),
        "numpy_ms": numpy_ms,
    }


def _vector_blocks(folder: Path) -> tuple[Path, list[tuple[int, int]]]:
    """The binary vector file of ``folder`` (int8 rows, or the float16 rows of
    format 1 that earlier versions wrote) and where each block's vectors start, with
    its row count."""
    from fsmemory.memory import _vecfile

    # the file the code of the folder reads (a float16 file converted is left beside it)
    path = [*sorted((folder / "vectors").glob("*.i8v")), *(folder / "vectors").glob("*.f16v")][0]
    data = path.read_bytes()
    if path.suffix == ".f16v":
        try:
            scan = _vecfile.scan_blocks(
                data, _vecfile.HEADER_SIZE, len(data), DIMENSION, float16=True
            )
        except TypeError:  # the code of format 1 reads its own blocks by default
            scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), DIMENSION)
    else:
        scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), DIMENSION)
    return path, [(block.vectors_at, len(block.ids)) for block in scan.blocks]


def build(cache: Path, size: int) -> Path:
    """The entries of a ``size`` memory (no vectors), built once under ``cache``."""
    sys.path.insert(0, str(HERE))
    from bench_memory import fact

    from fsmemory import KnowledgeMemory

    folder = cache / f"plain-{size}"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    rng = random.Random(42)
    km = KnowledgeMemory(folder)
    t0 = time.perf_counter()
    for i in range(size):
        text, cat, persistent, imp = fact(rng, i)
        km.remember(text, category=cat, persistent=persistent, importance=imp)
    (folder / ".complete").write_text("")
    print(f"(built {size} entries in {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return folder


def prepare(cache: Path, plain: Path, name: str, code: Path, size: int) -> Path:
    """A copy of ``plain`` whose vectors (and index cache) the code at ``code`` wrote."""
    folder = cache / f"{name}-{size}"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(plain, folder, ignore=shutil.ignore_patterns(".complete"))
    _run(code, ["--warm", str(folder)])
    (folder / ".complete").write_text("")
    return folder


def warm(folder: Path) -> None:
    """Embed every entry (one recall), then open again and recall (a vector file of
    many blocks is written again whole then) and write the index cache."""
    from fsmemory import KnowledgeMemory

    for _ in range(2):
        km = KnowledgeMemory(folder, embedder=HashVectors())
        km.recall("warm up", limit=5)


def _run(code: Path, args: list[str]) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(code), str(HERE)])
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=1800,
    )
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (or, with ``--probe``/``--warm``, one step of it)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per cell")
    parser.add_argument(
        "--code",
        action="append",
        default=[],
        help="NAME=PATH of a source tree to run (default: this one, as 'this')",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "fsmemory-bench-vectors",
        help="where the memories are built once and reused",
    )
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="hybrid", help=argparse.SUPPRESS)
    parser.add_argument("--warm", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe is not None:
        print(json.dumps(probe(args.probe, args.mode)))
        return 0
    if args.warm is not None:
        warm(args.warm)
        return 0
    codes = [tuple(c.split("=", 1)) for c in args.code] or [("this", str(HERE.parent))]
    last = codes[-1][1]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    args.cache.mkdir(parents=True, exist_ok=True)
    print("## Cold hybrid recall: fresh process, local folder, open + first recall(limit=5)\n")
    from _bytecode import stale_bytecode_note

    for name, code in codes:
        note = stale_bytecode_note(str(Path(code) / "fsmemory"))
        if note:
            print(f"{name}: {note}\n")
    print(
        f"{DIMENSION} dimensions, fake embedder (query embedding excluded), median of "
        f"{args.runs} fresh processes; peak RSS is the highest of them. Floor: NumPy "
        "reads the vector file the last code version wrote (np.fromfile) and takes one "
        "product of its vectors (astype(float32) @ q, scaled per row for int8 rows), in "
        "the same run.\n"
    )
    print(
        "| entries | code | hybrid ms | hybrid CPU ms | x floor | peak RSS MB | "
        "no embedder ms | no embedder RSS MB | floor ms | floor RSS MB | warm hybrid ms | "
        "warm hybrid CPU ms | peak RSS MB after warm | warm no embedder ms | "
        "numpy import ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in sizes:
        plain = build(args.cache, size)
        folders = {name: prepare(args.cache, plain, name, Path(code), size) for name, code in codes}
        cells: dict[tuple[str, str], list[dict[str, float]]] = {}
        floor_folder = folders[codes[-1][0]]
        for _ in range(args.runs):  # interleaved: a busy moment hits every cell alike
            cells.setdefault(("floor", ""), []).append(
                _run(Path(last), ["--probe", str(floor_folder), "--mode", "floor"])
            )
            for name, code in codes:
                for mode in ("hybrid", "plain"):
                    cells.setdefault((name, mode), []).append(
                        _run(Path(code), ["--probe", str(folders[name]), "--mode", mode])
                    )

        def med(key: tuple[str, str], cells: dict[Any, list[dict[str, float]]] = cells) -> float:
            return statistics.median(r["ms"] for r in cells[key])

        def rss(key: tuple[str, str], cells: dict[Any, list[dict[str, float]]] = cells) -> float:
            return max(r["rss_mb"] for r in cells[key])

        def warm_med(
            key: tuple[str, str], cells: dict[Any, list[dict[str, float]]] = cells
        ) -> float:
            return statistics.median(r["warm_ms"] for r in cells[key])

        floor = med(("floor", ""))
        for name, _code in codes:
            hybrid = med((name, "hybrid"))
            cpu = statistics.median(r["cpu_ms"] for r in cells[(name, "hybrid")])
            print(
                f"| {size:,} | {name} | {hybrid:.1f} | {cpu:.1f} | {hybrid / floor:.1f}x | "
                f"{rss((name, 'hybrid')):.0f} | {med((name, 'plain')):.1f} | "
                f"{rss((name, 'plain')):.0f} | {floor:.1f} | {rss(('floor', '')):.0f} | "
                f"{warm_med((name, 'hybrid')):.1f} | "
                f"{statistics.median(r['warm_cpu_ms'] for r in cells[(name, 'hybrid')]):.1f} | "
                f"{max(r['warm_rss_mb'] for r in cells[(name, 'hybrid')]):.0f} | "
                f"{warm_med((name, 'plain')):.1f} | "
                f"{statistics.median(r['numpy_ms'] for r in cells[(name, 'hybrid')]):.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
