"""fsmemory beside its peers (selectools 1.3.0, ag2 1.2.1) on identical workloads.

    python benchmarks/run.py            # full run (< 30 min on 2 cores), writes RESULTS.md
    python benchmarks/run.py --quick    # < 5 min, writes RESULTS.md
    python benchmarks/run.py --smoke    # tiny sizes, no peers, < 60 s, writes to a temp dir
    python benchmarks/run.py --no-peers # fsmemory's own numbers only

The peers live in a separate virtualenv, ``benchmarks/.venv-peers``, created and filled
from PyPI on first use (``selectools==1.3.0 ag2==1.2.1 watchdog redis matplotlib``);
fsmemory runs in the interpreter running this script (re-launched in the repository's
``.venv`` when fsmemory's dependencies are missing). Every measurement runs in a fresh
worker process (``benchmarks/peers/*_worker.py``) that prints JSON; the systems of one
workload alternate over several rounds so that machine noise hits both. All inputs come
from ``benchmarks/peers/workloads.py`` with fixed seeds.

Workloads: memory (remember / recall / build_context / cold start at 1k..100k entries,
memories pre-generated in each system's own file format), dedupe (unique,
near-duplicate, adversarial word shuffles), concurrency (4 processes x 100 remember()),
snapshot (bytes per save, restore time at 10k), path store (write / read / append /
read_range / list at 10k on memory, local, sqlite, redis), remote (the memory workload
on moto S3, fake-gcs-server and Redis, beside each backend's raw round trip) and export
(rows/s beside the raw pyarrow floor).

Prints Markdown tables (median, min-max, ratio peer/fsmemory: above 1 means fsmemory
is faster) and writes ``benchmarks/RESULTS.md`` and ``benchmarks/plots/*.png``.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PEERS = BENCH / "peers"
PEERS_VENV = BENCH / ".venv-peers"
#: What the peers venv needs: distribution -> pinned version (None: any).
PEER_REQUIREMENTS: dict[str, str | None] = {
    "selectools": "1.3.0",
    "ag2": "1.2.1",
    "watchdog": None,
    "redis": None,
    "matplotlib": None,
}
SELECTOOLS = "selectools 1.3.0"
AG2 = "ag2 1.2.1"
FS = "fsmemory"


def _ensure_fsmemory_interpreter() -> None:
    """Re-launch in the repository's .venv when this interpreter lacks fsmemory's deps."""
    try:
        import fsspec  # noqa: F401
        import orjson  # noqa: F401
    except ImportError:
        venv_python = REPO / ".venv" / "bin" / "python"
        if venv_python.exists() and Path(sys.executable).resolve() != venv_python.resolve():
            os.execv(str(venv_python), [str(venv_python), *sys.argv])
        raise


# -- configuration -----------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """Sizes, repeats and time budgets of one kind of run."""

    name: str
    rounds: int
    memory_sizes: tuple[int, ...]
    memory_repeat: int  # per op, per round
    op_budget_s: float  # per op, per worker: a slow system stops sampling after this
    dedupe_existing: int
    dedupe_probes: int  # per round
    conc_procs: int
    conc_per: int
    snapshot_size: int
    snapshot_saves: int
    store_n: int
    store_list_repeat: int
    store_rounds: int
    store_budget_s: float
    remote_size: int
    remote_repeat: int
    export_rows: int
    export_rounds: int
    cold_sizes: tuple[int, ...] = (1000, 10_000, 100_000)
    cold_repeat: int = 3  # fresh processes per system, op and size, per round
    import_rounds: int = 15  # fresh processes per import line (the lines alternate)


CONFIGS = {
    "smoke": Config(
        "smoke",
        rounds=1,
        memory_sizes=(200,),
        memory_repeat=5,
        op_budget_s=5.0,
        dedupe_existing=30,
        dedupe_probes=2,
        conc_procs=2,
        conc_per=10,
        snapshot_size=200,
        snapshot_saves=3,
        store_n=200,
        store_list_repeat=3,
        store_rounds=1,
        store_budget_s=10.0,
        remote_size=100,
        remote_repeat=3,
        export_rows=2000,
        export_rounds=1,
        cold_sizes=(200,),
        cold_repeat=1,
        import_rounds=3,
    ),
    "quick": Config(
        "quick",
        rounds=2,
        memory_sizes=(1000, 10_000),
        memory_repeat=40,
        op_budget_s=6.0,
        dedupe_existing=1000,
        dedupe_probes=3,
        conc_procs=4,
        conc_per=100,
        snapshot_size=10_000,
        snapshot_saves=10,
        store_n=10_000,
        store_list_repeat=10,
        store_rounds=1,
        store_budget_s=12.0,
        remote_size=1000,
        remote_repeat=20,
        export_rows=100_000,
        export_rounds=2,
    ),
    "full": Config(
        "full",
        rounds=3,
        memory_sizes=(1000, 3000, 10_000, 30_000, 100_000),
        memory_repeat=100,
        op_budget_s=15.0,
        dedupe_existing=1000,
        dedupe_probes=4,
        conc_procs=4,
        conc_per=100,
        snapshot_size=10_000,
        snapshot_saves=20,
        store_n=10_000,
        store_list_repeat=20,
        store_rounds=2,
        store_budget_s=90.0,
        remote_size=10_000,
        remote_repeat=40,
        export_rows=500_000,
        export_rounds=3,
        cold_sizes=(1000, 3000, 10_000, 30_000, 100_000),
        cold_repeat=5,
    ),
}


# -- formatting --------------------------------------------------------------------------
def num(value: float) -> str:
    """3 significant digits-ish, no exponent."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def ms(samples: Sequence[float]) -> str:
    """``median (min-max)`` in milliseconds, with the sample count when few."""
    if not samples:
        return "-"
    text = f"{num(statistics.median(samples))} ({num(min(samples))}–{num(max(samples))})"
    return text if len(samples) >= 5 else f"{text} n={len(samples)}"


def spread(samples: Sequence[float]) -> tuple[float, float]:
    """The 10th and 90th percentiles (min and max for fewer than 10 samples)."""
    if len(samples) < 10:
        return min(samples), max(samples)
    deciles = statistics.quantiles(samples, n=10)
    return deciles[0], deciles[-1]


def ratio(peer: Sequence[float] | None, ours: Sequence[float] | None) -> str:
    """Peer median / fsmemory median (> 1: fsmemory faster)."""
    if not peer or not ours:
        return "-"
    return f"{statistics.median(peer) / statistics.median(ours):,.1f}x"


def median_ratio(peer: Sequence[float] | None, ours: Sequence[float] | None) -> float | None:
    """The ratio as a number (None when either side is missing)."""
    if not peer or not ours:
        return None
    return statistics.median(peer) / statistics.median(ours)


@dataclass
class Table:
    """One Markdown table with a title and notes."""

    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    image: str | None = None

    def render(self, with_image: bool = True) -> str:
        """The table as Markdown."""
        out = [f"## {self.title}", ""]
        if self.image and with_image:
            out += [f"![{self.title}]({self.image})", ""]
        out.append("| " + " | ".join(self.headers) + " |")
        out.append("|" + "|".join("---" for _ in self.headers) + "|")
        out += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.notes:
            out.append("")
            out += self.notes
        return "\n".join(out) + "\n"


# -- workers -----------------------------------------------------------------------------
@dataclass(frozen=True)
class System:
    """A system under test: the interpreter and worker script that measure it."""

    name: str
    python: str
    worker: Path


def call(system: System, mode: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one worker process; its JSON result, ``{"error": ...}`` or ``{"timeout": s}``."""
    command = [system.python, str(system.worker), mode, json.dumps(params)]
    env = {**os.environ, "PYTHONHASHSEED": "0", "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            if "error" in result:
                log(f"    {system.name} {mode} failed: {result['error']}")
            return result
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    log(f"    {system.name} {mode} failed: {' / '.join(tail)}")
    return {"error": tail[-1] if tail else f"exit status {done.returncode}"}


#: what the import-cost table's fresh processes run: (key, statement); ``memory`` is a
#: user's first line, ``floor`` what it is held to (the two libraries fsmemory needs)
IMPORT_LINES: tuple[tuple[str, str], ...] = (
    ("memory", "from fsmemory import KnowledgeMemory"),
    ("floor", "import orjson, snowballstemmer"),
    ("package", "import fsmemory"),
    ("python", "pass"),
)
#: ``from fsmemory import KnowledgeMemory`` within this many times the floor
IMPORT_GOAL = 1.5


def times(samples: Sequence[float], floor: Sequence[float]) -> str:
    """Median of ``samples`` / median of ``floor`` (above 1: slower than the floor)."""
    return f"{statistics.median(samples) / statistics.median(floor):.2f}x"


def timed_import(
    python: str, statement: str, cwd: str, path: Sequence[str] | None
) -> tuple[float, float]:
    """One fresh process running ``statement``: (the whole process's wall time, the
    statement's own time), in ms. ``path``: run as an installed package runs (``-S``:
    no ``.pth`` files, so no editable finder; these folders on ``PYTHONPATH``); None: as
    the interpreter's environment runs it."""
    code = f"import time\nt0 = time.perf_counter()\n{statement}\nprint(time.perf_counter() - t0)"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = [python, "-c", code]
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(path)
        command.insert(1, "-S")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
    whole = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"python -c {statement!r} failed: {done.stderr.strip()[-500:]}")
    return whole, float(done.stdout.split()[-1]) * 1000


def installed_path(python: str) -> list[str]:
    """What an installed fsmemory finds on ``python``'s path: the checkout's package
    folder and the environment's site-packages (its dependencies)."""
    code = "import json, site; print(json.dumps(site.getsitepackages()))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return [str(REPO), *json.loads(done.stdout)]


def alternate(
    jobs: Sequence[tuple[System, str, dict[str, Any], float]], rounds: int
) -> dict[str, list[dict[str, Any]]]:
    """Run the jobs ``rounds`` times, reversing their order every other round."""
    results: dict[str, list[dict[str, Any]]] = {job[0].name: [] for job in jobs}
    for r in range(rounds):
        order = list(jobs) if r % 2 == 0 else list(reversed(jobs))
        for system, mode, params, timeout in order:
            started = time.perf_counter()
            result = call(system, mode, params, timeout)
            log(
                f"    {system.name:<17} {mode} round {r + 1}/{rounds}: "
                f"{time.perf_counter() - started:.1f} s"
            )
            results[system.name].append(result)
    return results


def merged(results: list[dict[str, Any]], key: str) -> list[float]:
    """The samples of ``key`` over all rounds that produced it."""
    out: list[float] = []
    for result in results:
        out += result.get(key) or []
    return out


def failure(results: list[dict[str, Any]]) -> str | None:
    """``did not finish`` / ``error: ...`` when no round produced a result."""
    if any("timeout" not in r and "error" not in r for r in results):
        return None
    if any("timeout" in r for r in results):
        return "did not finish"
    return "error: " + next((str(r["error"]) for r in results if "error" in r), "?")[:80]


def log(message: str) -> None:
    """Progress on stderr (stdout carries the tables)."""
    print(message, file=sys.stderr, flush=True)


# -- the suite ---------------------------------------------------------------------------
@dataclass
class Suite:
    """One run: configuration, systems, services, and the tables produced so far."""

    config: Config
    fs: System
    selectools: System | None
    ag2: System | None
    now: float = field(default_factory=time.time)
    tables: list[Table] = field(default_factory=list)
    targets: list[tuple[str, str, str]] = field(default_factory=list)
    series: dict[str, Any] = field(default_factory=dict)
    redis_url: str | None = None
    remotes: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def emit(self, table: Table) -> None:
        """Keep a table and print it right away."""
        self.tables.append(table)
        print(table.render(with_image=False), flush=True)

    def target(self, name: str, value: float | None, goal: float, unit: str = "x") -> None:
        """Record a ratio target: met when ``value >= goal``."""
        if value is None:
            self.targets.append((name, "not measured", "-"))
            return
        text = f"{value:,.1f}{unit}" if unit == "x" else f"{value:.0f}{unit}"
        self.targets.append((name, text, "met" if value >= goal else "**missed**"))

    def absolute(self, name: str, samples: Sequence[float] | None, limit_ms: float) -> None:
        """Record an absolute latency target of the earlier issues (median <= limit)."""
        if not samples:
            self.targets.append((name, "not measured", "-"))
            return
        value = statistics.median(samples)
        self.targets.append(
            (name, f"{num(value)} ms", "met" if value <= limit_ms else "**missed**")
        )

    # -- memory ----------------------------------------------------------------------
    def memory(self) -> None:
        """remember / recall / build_context / cold start vs memory size."""
        cfg = self.config
        log("== memory (local folder)")
        table = Table(
            "Memory on a local folder: per-call latency vs memory size",
            [
                "operation",
                "entries",
                f"{FS} ms",
                f"{SELECTOOLS} ms",
                "selectools / fsmemory",
                "target",
            ],
            image="plots/remember_latency.png",
        )
        rows: dict[str, list[list[str]]] = {
            k: [] for k in ("remember", "recall", "context", "cold")
        }
        points: dict[str, dict[str, list[list[float]]]] = {
            op: {FS: [], SELECTOOLS: []} for op in ("remember", "recall", "context")
        }
        peer_gave_up: str | None = None
        found: dict[tuple[str, int], dict[str, list[dict[str, Any]]]] = {}
        for size in cfg.memory_sizes:
            log(f"  {size:,} entries")
            params = {
                "size": size,
                "now": self.now,
                "budget_s": cfg.op_budget_s,
                "repeat": dict.fromkeys(("remember", "recall", "context"), cfg.memory_repeat),
            }
            timeout = 4 * cfg.op_budget_s + 120 + size / 500
            jobs = [(self.fs, "memory", params, timeout)]
            if self.selectools is not None and peer_gave_up is None:
                jobs.append((self.selectools, "memory", params, timeout))
            results = alternate(jobs, cfg.rounds)
            found[("all", size)] = results
            ours = results[FS]
            theirs = results.get(SELECTOOLS)
            if theirs is not None and failure(theirs):
                peer_gave_up = failure(theirs)
            for result in ours + (theirs or []):
                if "entries" in result and result["entries"] < size:
                    self.notes.append(
                        f"- warning: a worker saw {result['entries']:,} entries "
                        f"in a memory of {size:,}."
                    )
            targets = {
                "remember": {10_000: "<= 0.3 ms; >= 100x selectools"},
                "recall": {10_000: "<= 2 ms; >= 20x selectools", 100_000: "<= 20 ms"},
                "context": {10_000: "<= 2 ms"},
            }
            labels = {
                "remember": "remember()",
                "recall": "recall(limit=5)",
                "context": "build_context()",
                "cold": "open + first recall",
            }
            for op in rows:
                mine = merged(ours, op)
                if theirs is None:
                    peer_text = (
                        "not run (--no-peers)" if self.selectools is None else (peer_gave_up or "-")
                    )
                    peer: list[float] = []
                else:
                    peer = merged(theirs, op)
                    peer_text = failure(theirs) or ms(peer)
                rows[op].append(
                    [
                        labels[op],
                        f"{size:,}",
                        failure(ours) or ms(mine),
                        peer_text,
                        ratio(peer, mine),
                        targets.get(op, {}).get(size, ""),
                    ]
                )
                if op in points:
                    for name, samples in ((FS, mine), (SELECTOOLS, peer)):
                        if samples:
                            points[op][name].append(
                                [size, statistics.median(samples), *spread(samples)]
                            )
        for op_rows in rows.values():
            table.rows += op_rows
        table.notes = [
            "Each system's memory of N entries is written directly in its own file format "
            "(fsmemory: `logs/*.jsonl` + MEMORY.md; selectools: `entries.jsonl` + `*.log` + "
            "MEMORY.md) from the same facts (every 2nd persistent, 8 categories, ~60-byte "
            "texts over 20 days), then one worker process opens it and times each call. "
            "selectools runs with `max_entries=10_000_000` (its default of 50 would evict "
            "the memory down to 50 entries); its recall is the `recall` tool "
            "(`selectools.toolbox.memory_tools`), which ranks the 500 most important "
            "entries only. `open + first recall` is a new instance's first read.",
            f"Samples: up to {cfg.memory_repeat} calls per op per round x {cfg.rounds} rounds; "
            f"a system stops sampling an op after {cfg.op_budget_s:.0f} s per round.",
        ]
        if peer_gave_up:
            table.notes.append(
                f"selectools: {peer_gave_up} at the larger sizes within the time budget."
            )
        self.emit(table)
        self.series["remember_latency"] = {
            "title": "remember() latency vs memory size (local folder)",
            "series": points["remember"],
        }
        self.series["recall_latency"] = {
            "title": "recall (limit 5) latency vs memory size (local folder)",
            "series": points["recall"],
        }
        at10k = found.get(("all", 10_000))
        if at10k is not None:
            self.target(
                "remember() at 10k: selectools / fsmemory >= 100x",
                median_ratio(
                    merged(at10k.get(SELECTOOLS, []), "remember"), merged(at10k[FS], "remember")
                ),
                100,
            )
            self.target(
                "recall at 10k: selectools / fsmemory >= 20x",
                median_ratio(
                    merged(at10k.get(SELECTOOLS, []), "recall"), merged(at10k[FS], "recall")
                ),
                20,
            )
            self.absolute(
                "fsmemory remember() at 10k <= 0.3 ms", merged(at10k[FS], "remember"), 0.3
            )
            self.absolute("fsmemory recall at 10k <= 2 ms", merged(at10k[FS], "recall"), 2)
            self.absolute(
                "fsmemory build_context() at 10k <= 2 ms", merged(at10k[FS], "context"), 2
            )
        at100k = found.get(("all", 100_000))
        if at100k is not None:
            self.absolute("fsmemory recall at 100k <= 20 ms", merged(at100k[FS], "recall"), 20)

    # -- cold start ------------------------------------------------------------------
    def cold(self) -> None:
        """A fresh process's first call: import, open + first recall / build_context,
        resident memory; local beside selectools, and remote cold opens beside a floor."""
        cfg = self.config
        log("== cold start (fresh processes)")
        # An installed package has its bytecode; a checkout run with
        # PYTHONDONTWRITEBYTECODE would otherwise compile every lazily imported module
        # inside the timed first call of each fresh process.
        compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "fsmemory"), quiet=1)
        self._import_cost()
        worker = PEERS / "cold_worker.py"
        fs = System(FS, self.fs.python, worker)
        peer = (
            None if self.selectools is None else System(SELECTOOLS, self.selectools.python, worker)
        )
        table = Table(
            "Cold start: a fresh process's first call (local folder)",
            ["measure", "entries", f"{FS}", f"{SELECTOOLS}", "selectools / fsmemory", "target"],
            image="plots/cold_open.png",
        )
        series: dict[str, list[list[float]]] = {
            f"{FS}: open + first recall": [],
            f"{FS}: open + first build_context": [],
            f"{SELECTOOLS}: open + first recall": [],
            f"{SELECTOOLS}: open + first build_context": [],
        }
        for size in cfg.cold_sizes:
            log(f"  {size:,} entries")
            with tempfile.TemporaryDirectory(prefix="fsmemory-cold-") as tmp:
                ours_dir, peer_dir = str(Path(tmp) / "fs"), str(Path(tmp) / "peer")
                gen = {"size": size, "now": self.now}
                call(self.fs, "cold-gen", {**gen, "url": ours_dir}, 600)
                if peer is not None and self.selectools is not None:
                    call(self.selectools, "cold-gen", {**gen, "url": peer_dir}, 600)
                got: dict[tuple[str, str], list[dict[str, Any]]] = {}
                for r in range(cfg.rounds):
                    order = [(fs, ours_dir), (peer, peer_dir)]
                    for system, folder in order if r % 2 == 0 else order[::-1]:
                        if system is None:
                            continue
                        ops = ("recall", "recall-nocache", "context")
                        for op in ops if system is fs else ("recall", "context"):
                            params = {"system": system.name, "url": folder, "op": op}
                            got.setdefault((system.name, op), []).extend(
                                self._fresh(system, "cold", params, cfg.cold_repeat)
                            )
                floor = self._fresh(fs, "cold-floor", {"url": ours_dir}, cfg.cold_repeat)
            parse_floor = [f["fetch"] + f["parse"] for f in floor]
            rows = {
                "recall": "open + first recall(limit=5)",
                "recall-nocache": "same, index cache file deleted first",
                "context": "open + first build_context()",
            }
            goals = {
                ("recall", 10_000): "<= 20 ms; >= 3x selectools",
                ("recall", 100_000): "<= 150 ms (<= 2.5x floor); >= 3x selectools",
                ("context", 100_000): "<= 10 ms",
            }
            for op, label in rows.items():
                mine = [x["first"] for x in got.get((FS, op), [])]
                peer_op = op.removesuffix("-nocache")
                theirs = [x["first"] for x in got.get((SELECTOOLS, peer_op), [])]
                table.rows.append(
                    [
                        label,
                        f"{size:,}",
                        ms(mine),
                        ms(theirs) if theirs else "not run",
                        ratio(theirs, mine),
                        goals.get((op, size), ">= 3x selectools" if op == "recall" else ""),
                    ]
                )
                if op == "recall-nocache":
                    series.setdefault(f"{FS}: open + first recall, no cache file", []).append(
                        [size, statistics.median(mine), *spread(mine)]
                    )
                    continue
                kind = "recall" if op == "recall" else "build_context"
                for name, samples in ((FS, mine), (SELECTOOLS, theirs)):
                    if samples:
                        series[f"{name}: open + first {kind}"].append(
                            [size, statistics.median(samples), *spread(samples)]
                        )
                if op == "recall" and theirs:
                    self.target(
                        f"open + first recall at {size:,}: selectools / fsmemory >= 3x",
                        median_ratio(theirs, mine),
                        3,
                    )
            first_recall = [x["first"] for x in got.get((FS, "recall"), [])]
            table.rows.append(
                [
                    "floor: read + orjson.loads every log line",
                    f"{size:,}",
                    ms(parse_floor),
                    "-",
                    "first recall / floor: "
                    + (
                        f"{statistics.median(first_recall) / statistics.median(parse_floor):.1f}x"
                        if first_recall and parse_floor
                        else "-"
                    ),
                    "<= 2.5x" if size == 100_000 else "",
                ]
            )
            rss = {
                name: [x["rss_mb"] for op in ("recall", "context") for x in got.get((name, op), [])]
                for name in (FS, SELECTOOLS)
            }
            table.rows.append(
                [
                    "RSS after open + recall + build_context (MB)",
                    f"{size:,}",
                    f"{statistics.median(rss[FS]):.0f}" if rss[FS] else "-",
                    f"{statistics.median(rss[SELECTOOLS]):.0f}" if rss[SELECTOOLS] else "-",
                    "-",
                    {10_000: "<= 40 MB", 100_000: "<= 100 MB"}.get(size, ""),
                ]
            )
            if size in (10_000, 100_000):
                limit = {10_000: (20, 40), 100_000: (150, 100)}[size]
                self.absolute(
                    f"fresh open + first recall at {size:,} <= {limit[0]} ms",
                    first_recall,
                    limit[0],
                )
                if rss[FS]:
                    value = statistics.median(rss[FS])
                    self.targets.append(
                        (
                            f"RSS at {size:,} <= {limit[1]} MB",
                            f"{value:.0f} MB",
                            "met" if value <= limit[1] else "**missed**",
                        )
                    )
            if size == 100_000:
                self.absolute(
                    "fresh open + first build_context at 100,000 <= 10 ms",
                    [x["first"] for x in got.get((FS, "context"), [])],
                    10,
                )
        table.notes = [
            "Every cell is a new process (`benchmarks/peers/cold_worker.py`) opening a memory "
            "pre-generated in the system's own format (same facts as the memory workload: "
            "every 2nd persistent, 8 categories, ~60-byte texts over 20 days). `open + first "
            "op` is the construction plus the first call, import excluded; the other op runs "
            "next, then the peak RSS of the whole process is read (import included). The "
            "floor reads every log file and `orjson.loads` every line in a fresh process. "
            "fsmemory's first `recall` writes the index cache file (`.fsmemory-cache.index`) "
            "that later fresh processes load; the `index cache file deleted first` row is "
            "the first process ever (the file is deleted before each sample).",
            f"Samples: {cfg.cold_repeat} processes per system, op and size, per round, "
            f"x {cfg.rounds} rounds (systems alternate).",
        ]
        self.emit(table)
        self.series["cold_open"] = {
            "title": "A fresh process: open + first call vs memory size (local folder)",
            "ylabel": "ms: median of fresh processes, 10th-90th pct shaded",
            "series": series,
        }
        self._cold_remote()

    def _import_cost(self) -> None:
        """A user's first line, ``from fsmemory import KnowledgeMemory``, in fresh
        processes beside ``import orjson, snowballstemmer`` (the floor: the two libraries
        fsmemory cannot do without), the lines alternating round by round; laid out as
        an installed package and as this checkout's editable install."""
        rounds = self.config.import_rounds
        layouts = {"installed": installed_path(self.fs.python), "checkout": None}
        jobs = [(layout, key, statement) for layout in layouts for key, statement in IMPORT_LINES]
        wall: dict[tuple[str, str], list[float]] = {(j[0], j[1]): [] for j in jobs}
        alone: dict[tuple[str, str], list[float]] = {(j[0], j[1]): [] for j in jobs}
        with tempfile.TemporaryDirectory(prefix="fsmemory-import-") as cwd:
            for r in range(rounds):
                for layout, key, statement in jobs if r % 2 == 0 else jobs[::-1]:
                    whole, own = timed_import(self.fs.python, statement, cwd, layouts[layout])
                    wall[layout, key].append(whole)
                    alone[layout, key].append(own)
        table = Table(
            "Import cost: a fresh process's first line",
            [
                "a fresh process runs",
                "laid out as",
                "whole process (ms)",
                "the line alone (ms)",
                "whole / floor",
                "line alone / floor",
                "target",
            ],
        )
        for layout, key, statement in jobs:
            floor, is_python = (layout, "floor"), key == "python"
            table.rows.append(
                [
                    f"`{statement}`" + (" (the floor)" if key == "floor" else ""),
                    layout,
                    ms(wall[layout, key]),
                    "-" if is_python else ms(alone[layout, key]),
                    times(wall[layout, key], wall[floor]),
                    "-" if is_python else times(alone[layout, key], alone[floor]),
                    f"<= {IMPORT_GOAL}x" if (layout, key) == ("installed", "memory") else "",
                ]
            )
        value = median_ratio(wall["installed", "memory"], wall["installed", "floor"])
        self.targets.append(
            (
                f"`from fsmemory import KnowledgeMemory` <= {IMPORT_GOAL}x "
                "`import orjson, snowballstemmer` (fresh processes, installed)",
                "not measured" if value is None else f"{value:.2f}x",
                "-" if value is None else ("met" if value <= IMPORT_GOAL else "**missed**"),
            )
        )
        self.absolute("import fsmemory <= 20 ms", alone["installed", "package"], 20)
        table.notes = [
            "Each cell is a new interpreter of fsmemory's environment (`python -c`, run from an "
            "empty folder, bytecode compiled beforehand): `whole process` is the wall time "
            "from start to exit, as a shell sees it (`pass` is the interpreter alone), `the "
            "line alone` the statement's own time inside it (`time.perf_counter()` around "
            "it). `installed`: `python -S` with the checkout and site-packages on "
            "`PYTHONPATH`, as a pip-installed fsmemory runs (no `.pth` files); `checkout`: "
            "the editable install as it is, whose finder imports `pathlib`, `re`, "
            "`urllib.parse` and more into every process at start-up, the floor's included, "
            "which flatters the ratio. The target is on the installed whole process.",
            f"Samples: {rounds} processes per line and layout (the lines alternate).",
        ]
        self.emit(table)

    def _cold_remote(self) -> None:
        """Fresh-process cold opens on S3 / GCS / Redis beside fetching the same bytes."""
        cfg = self.config
        if not self.remotes:
            return
        n = min(10_000, max(cfg.cold_sizes))
        worker = System(FS, self.fs.python, PEERS / "cold_worker.py")
        table = Table(
            f"Remote cold open (fresh process): memory of {n:,} entries over 20 daily logs",
            [
                "backend",
                "open + first recall ms",
                "import ms",
                "floor: list + one GET of every file ms",
                "one GET ms",
                "open+recall / GET",
                "open+recall / fetch floor",
                "target",
            ],
        )
        remotes = list(self.remotes.items())
        for name, (url, options) in self.remotes.items():
            if name.startswith("s3"):  # the same store through s3fs, for comparison
                remotes.append((f"{name}, s3fs forced", (url, {**options, "client": "s3fs"})))
        for name, (url, options) in remotes:
            log(f"  cold open on {name}")
            where = url.replace("{uid}", f"cold-{int(self.now)}")
            gen = call(
                self.fs,
                "cold-gen",
                {"size": n, "now": self.now, "url": where, "storage_options": options},
                900,
            )
            if "error" in gen or "timeout" in gen:
                table.rows.append([name, failure([gen]) or "-", "-", "-", "-", "-", "-", ""])
                continue
            params = {"system": FS, "url": where, "storage_options": options, "op": "recall"}
            runs = self._fresh(worker, "cold", params, cfg.cold_repeat * cfg.rounds)
            # The floor's root takes the default route (obstore on S3); an emulator that
            # answers only GCS's JSON API keeps its client="gcsfs".
            floor_options = options
            if name.startswith("s3"):
                floor_options = {k: v for k, v in options.items() if k != "client"}
            floors = self._fresh(
                worker, "cold-floor", {**params, "storage_options": floor_options}, cfg.cold_repeat
            )
            first = [r["first"] for r in runs]
            fetch = [f["fetch"] for f in floors]
            get = [f["get"] for f in floors]
            builtin_s3 = name.startswith("s3") and "s3fs forced" not in name
            goal = "<= 4x one GET" if builtin_s3 else ""
            table.rows.append(
                [
                    name,
                    ms(first),
                    ms([r["import"] for r in runs]),
                    ms(fetch),
                    ms(get),
                    ratio(first, get),
                    ratio(first, fetch),
                    goal,
                ]
            )
            if builtin_s3:
                value = median_ratio(first, get)
                self.targets.append(
                    (
                        "S3 fresh open + first recall at 10k <= 4x one GET",
                        "not measured" if value is None else f"{value:.1f}x",
                        "-" if value is None else "met" if value <= 4 else "**missed**",
                    )
                )
        table.notes = [
            "Each cell is a new process. `open + first recall` excludes `import fsmemory` "
            "(shown apart) but includes importing the backend's client library (S3: "
            "obstore, or s3fs where forced with the storage option "
            "`client='s3fs'`; gcsfs, redis), which fsmemory loads on first use. The floor "
            "(s3fs, gcsfs, redis), in its own fresh "
            "process, lists the memory and fetches every file with one fsspec `cat_ranges` "
            "from offset 0 (one GET per object, concurrent on s3fs/gcsfs); `one GET` is "
            "the round trip of a 1 KiB read on a warm connection (median of 9), through "
            "whichever client is faster: fsspec's (`cat_ranges` from 0, no HEAD first) or "
            "fsmemory's root (on S3 through obstore)."
        ]
        self.emit(table)

    def _fresh(
        self, system: System, mode: str, params: dict[str, Any], n: int
    ) -> list[dict[str, Any]]:
        """``n`` fresh worker processes; the results that did not fail."""
        out = []
        for _ in range(n):
            result = call(system, mode, params, 600)
            if "error" not in result and "timeout" not in result:
                out.append(result)
        return out

    # -- dedupe ----------------------------------------------------------------------
    def dedupe(self) -> None:
        """remember() with near-duplicate rejection against 1k existing entries."""
        cfg = self.config
        log("== dedupe")
        table = Table(
            f"Dedupe: remember() with near-duplicate rejection, {cfg.dedupe_existing:,} "
            "entries existing, ~1,080-character texts",
            [
                "corpus",
                f"{FS} ms/call",
                "rejected",
                f"{SELECTOOLS} ms/call",
                "rejected",
                "selectools / fsmemory",
            ],
        )
        how = ""
        for kind in ("unique", "near-duplicate", "adversarial"):
            log(f"  {kind}")
            params = {
                "kind": kind,
                "existing": cfg.dedupe_existing,
                "probes": cfg.dedupe_probes,
                "now": self.now,
                "budget_s": cfg.op_budget_s,
            }
            timeout = 4 * cfg.op_budget_s + 180
            jobs = [(self.fs, "dedupe", params, timeout)]
            if self.selectools is not None:
                jobs.append((self.selectools, "dedupe", params, timeout))
            results = alternate(jobs, cfg.rounds)
            ours = results[FS]
            if any("unavailable" in r for r in ours):
                table.rows.append([kind, "not available", "-", "-", "-", "-"])
                continue
            how = next((r["how"] for r in ours if "how" in r), how)
            mine = merged(ours, "samples")
            row = [kind, failure(ours) or ms(mine), _rejected(ours)]
            peer: list[float] = []
            if self.selectools is None:
                row += ["not run (--no-peers)", "-"]
            else:
                theirs = results[SELECTOOLS]
                peer = merged(theirs, "samples")
                row += [failure(theirs) or ms(peer), _rejected(theirs)]
            row.append(ratio(peer, mine))
            table.rows.append(row)
            if kind == "adversarial":
                self.target(
                    "adversarial dedupe: selectools / fsmemory >= 100x",
                    median_ratio(peer, mine),
                    100,
                )
        table.notes = [
            f"fsmemory: `{how or 'n/a'}` (similarity = exact LCS ratio, threshold 0.9, window "
            "= the 200 most recent entries). selectools: `KnowledgeMemory(dedupe=True)` "
            "(difflib `SequenceMatcher`, threshold 0.9, window 200). `unique`: unrelated "
            "texts; `near-duplicate`: ~2 % character edits of a recent entry; `adversarial`: "
            "word shuffles of one text (same characters, same counts, so no cheap bound "
            "prunes a comparison). Each probe is remembered when accepted. Every worker "
            "process starts cold: fsmemory's first call also prepares its comparison window "
            "(~40 ms here), later calls reuse it; selectools has no such state.",
        ]
        if how and "hook" in how:
            table.notes.append(
                "`KnowledgeMemory(dedupe=...)` is not wired in this fsmemory yet, so the "
                "`fsmemory.sanitizers.dedupe_against` hook runs in front of `remember()` "
                "(fetcher: `get_recent_entries(limit=200)`)."
            )
        self.emit(table)

    # -- concurrency -----------------------------------------------------------------
    def concurrency(self) -> None:
        """N processes x M remember() on one local folder."""
        cfg = self.config
        log("== concurrency")
        total = cfg.conc_procs * cfg.conc_per
        table = Table(
            f"Concurrency: {cfg.conc_procs} processes x {cfg.conc_per} remember() on one "
            "local folder",
            ["system", "entries kept (each round)", "kept", "exceptions", "wall time s"],
        )
        params = {"procs": cfg.conc_procs, "per": cfg.conc_per}
        jobs = [(self.fs, "concurrency", params, 600.0)]
        if self.selectools is not None:
            jobs.append((self.selectools, "concurrency", params, 600.0))
        results = alternate(jobs, cfg.rounds)
        kept_share: dict[str, float] = {}
        for name, runs in results.items():
            if failure(runs):
                table.rows.append([name, failure(runs) or "", "-", "-", "-"])
                continue
            ok = [r for r in runs if "kept" in r]
            kept = [r["kept"] for r in ok]
            kept_share[name] = 100 * min(kept) / total
            kinds = sorted({k for r in ok for k in r["error_kinds"]})
            errors = "/".join(str(r["errors"]) for r in ok)
            table.rows.append(
                [
                    name,
                    " / ".join(f"{k}/{total}" for k in kept),
                    f"{kept_share[name]:.0f}% (worst round)",
                    errors + (f" ({', '.join(kinds)})" if kinds else ""),
                    num(statistics.median(r["wall_s"] for r in ok)),
                ]
            )
        table.notes = [
            "Every 2nd remember() persistent; the processes are released together "
            "once all are ready; entries are counted by a fresh instance."
        ]
        self.emit(table)
        self.target("concurrency: fsmemory keeps 100% of entries", kept_share.get(FS), 100, "%")
        if SELECTOOLS in kept_share:
            self.targets.append(
                (
                    "concurrency: selectools keeps (for reference)",
                    f"{kept_share[SELECTOOLS]:.0f}%",
                    "-",
                )
            )

    # -- snapshot --------------------------------------------------------------------
    def snapshot(self) -> None:
        """Bytes uploaded per save and restore time."""
        cfg = self.config
        log("== snapshot")
        n = cfg.snapshot_size
        table = Table(
            f"Snapshot (serverless): {n:,} entries, snapshot on a local file",
            [
                "system",
                "bytes uploaded per remember() (median)",
                "remember() + save ms",
                "restore ms",
                "selectools / fsmemory (bytes; restore)",
            ],
        )
        params = {"size": n, "now": self.now, "saves": cfg.snapshot_saves, "restores": 5}
        jobs = [(self.fs, "snapshot", params, 900.0)]
        if self.selectools is not None:
            jobs.append((self.selectools, "snapshot", params, 900.0))
        results = alternate(jobs, cfg.rounds)
        ours = results[FS]
        theirs = results.get(SELECTOOLS)
        for name, runs in results.items():
            if failure(runs):
                table.rows.append([name, failure(runs) or "", "-", "-", "-"])
                continue
            up = merged(runs, "uploaded")
            extra = "-"
            if name == SELECTOOLS and not failure(ours):
                extra = (
                    f"{ratio(up, merged(ours, 'uploaded'))}; "
                    f"{ratio(merged(runs, 'restore'), merged(ours, 'restore'))}"
                )
            table.rows.append(
                [
                    name,
                    f"{statistics.median(up):,.0f} (whole blob {runs[0]['blob']:,})",
                    ms(merged(runs, "save")),
                    ms(merged(runs, "restore")),
                    extra,
                ]
            )
        table.notes = [
            "Serverless pattern: restore the memory from the snapshot into an empty folder, "
            "remember, save. Bytes uploaded = size of the snapshot objects written by one "
            "remember(). selectools re-packs the whole folder into one blob on every save; "
            "fsmemory uploads a small delta (base + deltas, compacted later)."
        ]
        self.emit(table)
        if theirs is not None and not failure(theirs) and not failure(ours):
            self.targets.append(
                (
                    f"snapshot bytes per save at {n // 1000}k: selectools / fsmemory (no target)",
                    ratio(merged(theirs, "uploaded"), merged(ours, "uploaded")),
                    "-",
                )
            )

    # -- path store ------------------------------------------------------------------
    def store(self) -> None:
        """write / read / append / read_range / list on each backend vs ag2's stores."""
        cfg = self.config
        log("== path store")
        n = cfg.store_n
        table = Table(
            f"Path store (seed 003 API): {n:,} ops awaited one after another",
            ["op", "backend", f"{FS} ms", f"{AG2} ms", "ag2 / fsmemory"],
        )
        backends = ["memory", "local", "sqlite"] + (["redis"] if self.redis_url else [])
        per_backend: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for backend in backends:
            log(f"  {backend}")
            params = {
                "backend": backend,
                "n": n,
                "list_repeat": cfg.store_list_repeat,
                "redis_url": self.redis_url,
                "budget_s": cfg.store_budget_s,
            }
            timeout = 6 * cfg.store_budget_s + 300
            jobs = [(self.fs, "store", params, timeout)]
            if self.ag2 is not None:
                jobs.append((self.ag2, "store", params, timeout))
            per_backend[backend] = alternate(jobs, cfg.store_rounds)
        cut: list[str] = []
        for op in ("write", "read", "append", "read_range", "list"):
            for backend in backends:
                results = per_backend[backend]
                ours = results[FS]
                mine = merged([r.get("samples", {}) for r in ours], op)
                row = [op, backend, failure(ours) or ms(mine)]
                if self.ag2 is None:
                    row += ["not run (--no-peers)", "-"]
                else:
                    theirs = results[AG2]
                    peer = merged([r.get("samples", {}) for r in theirs], op)
                    text = failure(theirs) or ms(peer)
                    done = [r["done"][op] for r in theirs if "done" in r]
                    full = n if op != "list" else cfg.store_list_repeat
                    if done and min(done) < full:
                        text += f" (first {min(done):,} of {full:,}: budget)"
                        cut.append(f"{backend} {op}")
                    row += [text, ratio(peer, mine)]
                table.rows.append(row)
        for backend in backends:
            growth = []
            for name in (FS, AG2):
                runs = per_backend[backend].get(name, [])
                values = [f"{r['append_growth']:.2f}x" for r in runs if "append_growth" in r]
                growth.append(" / ".join(values) or "-")
            table.rows.append(["append: last 10 % / first 10 %", backend, *growth, "-"])
        table.notes = [
            "Same workload code for both (`benchmarks/peers/workloads.py`): write ~200 B to "
            f"{n:,} files, read each, append ~100 B to one file {n:,} times, read_range of the "
            f"tail {n:,} times, list the {n:,}-file folder {cfg.store_list_repeat} times. "
            "Backends: memory, local folder (ag2: `DiskKnowledgeStore`), SQLite, Redis. "
            "`append last/first` near 1 means O(1) appends.",
        ]
        if cut:
            table.notes.append(
                f"ag2 ran out of the {cfg.store_budget_s:.0f} s budget per op in: "
                + ", ".join(cut)
                + " (its median covers the smaller sizes only, which "
                "favours ag2 when its cost grows with size)."
            )
        self.emit(table)
        if self.ag2 is not None:
            sqlite = per_backend["sqlite"]
            self.target(
                f"path store append at {n // 1000}k: ag2 sqlite / fsmemory sqlite >= 10x",
                median_ratio(
                    merged([r.get("samples", {}) for r in sqlite[AG2]], "append"),
                    merged([r.get("samples", {}) for r in sqlite[FS]], "append"),
                ),
                10,
            )
            local = per_backend["local"]
            self.target(
                f"local list of {n // 1000}k: ag2 disk / fsmemory local >= 2x",
                median_ratio(
                    merged([r.get("samples", {}) for r in local[AG2]], "list"),
                    merged([r.get("samples", {}) for r in local[FS]], "list"),
                ),
                2,
            )

    # -- remote ----------------------------------------------------------------------
    def remote(self) -> None:
        """The memory workload on S3 / GCS / Redis beside the raw round trip."""
        cfg = self.config
        log("== remote backends")
        n = cfg.remote_size
        table = Table(
            f"Remote backends (fsmemory only, loopback servers): memory of {n:,} entries",
            [
                "backend",
                "operation",
                "median ms (min–max)",
                "raw floor ms: pipe+cat 1 KiB",
                "op / floor",
            ],
        )
        if not self.remotes:
            table.rows.append(["-", "no service could be started", "-", "-", "-"])
        for name, (url, options) in self.remotes.items():
            log(f"  {name}")
            params = {
                "size": n,
                "now": self.now,
                "url": url,
                "storage_options": options,
                "floor": True,
                "budget_s": 4 * cfg.op_budget_s,
                "repeat": dict.fromkeys(("remember", "recall", "context"), cfg.remote_repeat),
            }
            results = alternate([(self.fs, "memory", params, 900.0)], max(1, cfg.rounds - 1))
            runs = results[FS]
            if failure(runs):
                table.rows.append([name, failure(runs) or "", "-", "-", "-"])
                continue
            floor = merged(runs, "floor")
            for op, label in (
                ("remember", "remember()"),
                ("recall", "recall(limit=5)"),
                ("context", "build_context()"),
                ("cold", "open + first recall"),
            ):
                samples = merged(runs, op)
                table.rows.append([name, label, ms(samples), ms(floor), ratio(samples, floor)])
        table.notes = [
            "Servers on 127.0.0.1 started by the run: moto (S3), fake-gcs-server (GCS), "
            "redis-server. The memory is pre-generated in fsmemory's format and uploaded. "
            "The floor is one `pipe_file` + `cat_file` of 1 KiB through the same fsspec "
            "filesystem, measured in the same worker. `op / floor` is the op's median over "
            "the floor's median: a remember() on S3/GCS is a compare-and-swap append "
            "(read + conditional write) of today's log."
        ]
        self.emit(table)

    # -- export ----------------------------------------------------------------------
    def export(self) -> None:
        """Parquet export rows/s beside the raw pyarrow floor."""
        cfg = self.config
        log("== export")
        rows_n = cfg.export_rows
        table = Table(
            f"Export to Parquet: {rows_n:,} log lines",
            ["workload", "median s (min–max)", "rows", "rows/s", "vs floor"],
        )
        with tempfile.TemporaryDirectory(prefix="fsmemory-bench-export-") as tmp:
            src = str(Path(tmp) / "memory")
            gen = call(self.fs, "export-gen", {"rows": rows_n, "now": self.now, "dir": src}, 900)
            if "error" in gen or "timeout" in gen:
                table.rows.append(["generate", failure([gen]) or "", "-", "-", "-"])
                self.emit(table)
                return
            params_floor = {"src": src, "dest": str(Path(tmp) / "floor")}
            params_run = {"src": src, "dest": str(Path(tmp) / "export")}
            floor_sys = System("floor", self.fs.python, self.fs.worker)
            results = alternate(
                [
                    (floor_sys, "export-floor", params_floor, 900.0),
                    (self.fs, "export-run", params_run, 900.0),
                ],
                cfg.export_rounds,
            )
        floor = results["floor"]
        ours = results[FS]
        floor_rate: float | None = None
        for label, runs in (
            ("raw floor: pyarrow.json.read_json + one ParquetWriter", floor),
            ("fsmemory export_parquet(incremental=False)", ours),
        ):
            if any("unavailable" in r for r in runs):
                table.rows.append([label, "not available", "-", "-", "-"])
                continue
            if failure(runs):
                table.rows.append([label, failure(runs) or "", "-", "-", "-"])
                continue
            secs = merged([{"s": [r["seconds"]]} for r in runs], "s")
            rows_done = runs[0]["rows"]
            rate = rows_done / statistics.median(secs)
            if floor_rate is None:
                floor_rate = rate
            table.rows.append(
                [
                    label,
                    f"{num(statistics.median(secs))} ({num(min(secs))}–{num(max(secs))})",
                    f"{rows_done:,}",
                    f"{rate:,.0f}",
                    f"{rate / floor_rate:.2f}x",
                ]
            )
        table.notes = [
            f"{rows_n:,} log lines ({gen.get('files', '?')} daily files, "
            f"{gen.get('bytes', 0) / 2**20:.1f} MiB) in fsmemory's format. The floor parses "
            "the JSONL with pyarrow and writes one Parquet file (no schema normalization, "
            "no partitioning, no manifest); fsmemory writes a hive-partitioned dataset with a "
            "manifest. Each run is a fresh process; the two alternate."
        ]
        self.emit(table)


def _rejected(runs: list[dict[str, Any]]) -> str:
    done = [r for r in runs if "rejected" in r]
    if not done:
        return "-"
    return f"{sum(r['rejected'] for r in done)}/{sum(len(r['samples']) for r in done)}"


# -- environment ---------------------------------------------------------------------------
def peer_versions(python: Path) -> dict[str, str]:
    """Installed versions of the peer requirements in a venv (missing ones left out)."""
    code = (
        "import importlib.metadata as m, json\n"
        "out = {}\n"
        f"for d in {sorted(PEER_REQUIREMENTS)!r}:\n"
        "    try: out[d] = m.version(d)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return {}
    result: dict[str, str] = json.loads(done.stdout)
    return result


def ensure_peers(venv: Path, *, install: bool) -> dict[str, str] | None:
    """Create or reuse the peers venv; install what is missing. None when unusable."""
    python = venv / "bin" / "python"
    if not python.exists():
        if not install:
            return None
        log(f"creating the peers venv ({venv.name}) ...")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    versions = peer_versions(python)
    missing = [
        f"{dist}=={pin}" if pin else dist
        for dist, pin in PEER_REQUIREMENTS.items()
        if dist not in versions or (pin is not None and versions[dist] != pin)
    ]
    if missing and install:
        log(f"installing into the peers venv: {' '.join(missing)} ...")
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *missing],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            log("pip failed:\n" + "\n".join(done.stderr.strip().splitlines()[-5:]))
        versions = peer_versions(python)
    if versions.get("selectools") != "1.3.0" and versions.get("ag2") != "1.2.1":
        return None
    return versions


def machine_line() -> str:
    """CPU model, cores, RAM and Python version (no host names or paths)."""
    cpu = platform.processor() or platform.machine()
    ram = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f", {int(line.split()[1]) / 2**20:.0f} GiB RAM"
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores{ram}; {platform.system()}; "
        f"Python {platform.python_version()}"
    )


def load() -> str:
    """The 1-minute load average."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "?"


@contextmanager
def services(suite: Suite, want_remote: bool, want_redis: bool) -> Iterator[None]:
    """Start redis-server, moto and fake-gcs-server on loopback for the run."""
    with ExitStack() as stack:
        try:
            from fsmemory.testing.services import ServiceUnavailableError, start_redis
        except ImportError:
            yield
            return
        if want_redis or want_remote:
            try:
                redis = start_redis()
                stack.callback(redis.stop)
                suite.redis_url = str(redis.url)
                if want_remote:
                    suite.remotes["redis"] = (f"{redis.url}/0/bench/{{uid}}", {})
            except (ServiceUnavailableError, OSError) as exc:
                log(f"(no redis-server: {exc})")
        if want_remote:
            try:
                from fsmemory.fs.s3 import S3Root
                from fsmemory.testing.cloud_services import start_moto

                moto = start_moto()
                stack.callback(moto.stop)
                options = moto.s3_storage_options()
                S3Root.from_url("s3://bench", options).fs.mkdir("bench")
                suite.remotes["s3 (moto)"] = ("s3://bench/users/{uid}", options)
            except Exception as exc:  # any failure to start only drops this backend
                log(f"(no moto: {type(exc).__name__}: {exc})")
            try:
                from fsmemory.fs.gcs import GCSRoot
                from fsmemory.testing.cloud_services import start_fake_gcs

                gcs = start_fake_gcs()
                stack.callback(gcs.stop)
                options = gcs.gcs_storage_options()
                GCSRoot.from_url("gs://bench", options).fs.mkdir("bench")
                suite.remotes["gcs (fake-gcs-server)"] = ("gs://bench/users/{uid}", options)
            except Exception as exc:  # any failure to start only drops this backend
                log(f"(no fake-gcs-server: {type(exc).__name__}: {exc})")
            order = ["s3 (moto)", "gcs (fake-gcs-server)", "redis"]
            suite.remotes = {k: suite.remotes[k] for k in order if k in suite.remotes}
        yield


def versions_line(peers: dict[str, str] | None, fs_python: str) -> str:
    """Versions of everything measured."""
    code = (
        "import importlib.metadata as m, json\n"
        "out = {}\n"
        "for d in ['fsmemory', 'fsspec', 's3fs', 'gcsfs', 'redis', 'pyarrow', 'moto']:\n"
        "    try: out[d] = m.version(d)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run([fs_python, "-c", code], capture_output=True, text=True, timeout=60)
    ours: dict[str, str] = json.loads(done.stdout) if done.returncode == 0 else {}
    parts = [f"{'redis-py' if k == 'redis' else k} {v}" for k, v in ours.items()]
    if peers:
        parts += [f"{k} {peers[k]}" for k in ("selectools", "ag2", "watchdog") if k in peers]
    return ", ".join(parts)


def draw_plots(series: dict[str, Any], out: Path, peers_python: Path | None) -> list[str]:
    """Render the plots with an interpreter that has matplotlib; their file names."""
    candidates = [sys.executable] + ([str(peers_python)] if peers_python else [])
    for python in candidates:
        probe = subprocess.run([python, "-c", "import matplotlib"], capture_output=True)
        if probe.returncode != 0:
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(series, handle)
        try:
            done = subprocess.run(
                [python, str(PEERS / "plot.py"), handle.name, str(out)],
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            os.unlink(handle.name)
        if done.returncode == 0:
            return done.stdout.split()
        log(f"plotting failed: {done.stderr.strip()[-500:]}")
        return []
    log("(matplotlib not found: no plots)")
    return []


# -- main ----------------------------------------------------------------------------------
WORKLOADS = ("memory", "cold", "dedupe", "concurrency", "snapshot", "store", "remote", "export")


def main(argv: list[str] | None = None) -> int:
    """Run the suite; print the tables; write RESULTS.md and the plots."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller sizes, < 5 min")
    size.add_argument(
        "--smoke", action="store_true", help="tiny sizes, no peers, writes to a temp dir (CI)"
    )
    parser.add_argument("--no-peers", action="store_true", help="fsmemory only")
    parser.add_argument(
        "--only", default=None, help=f"comma-separated subset of {','.join(WORKLOADS)}"
    )
    parser.add_argument(
        "--output",
        default=None,
        help="folder for RESULTS.md and plots/ (default: benchmarks/, or a "
        "temp dir with --smoke or --only)",
    )
    parser.add_argument("--peers-venv", default=str(PEERS_VENV), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    kind = "smoke" if args.smoke else "quick" if args.quick else "full"
    config = CONFIGS[kind]
    chosen = WORKLOADS if args.only is None else tuple(w.strip() for w in args.only.split(","))
    unknown = set(chosen) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    load_start = load()
    fs = System(FS, sys.executable, PEERS / "fsmemory_worker.py")
    peers: dict[str, str] | None = None
    selectools = ag2 = None
    peers_python: Path | None = None
    if not (args.no_peers or args.smoke):
        venv = Path(args.peers_venv)
        try:
            peers = ensure_peers(venv, install=True)
        except (OSError, subprocess.SubprocessError) as exc:
            log(f"(peers venv unusable: {exc})")
        if peers is None:
            log("(peers unavailable: fsmemory's numbers only)")
        else:
            peers_python = venv / "bin" / "python"
            if peers.get("selectools") == "1.3.0":
                selectools = System(SELECTOOLS, str(peers_python), PEERS / "selectools_worker.py")
            if peers.get("ag2") == "1.2.1":
                ag2 = System(AG2, str(peers_python), PEERS / "ag2_worker.py")
    elif (Path(args.peers_venv) / "bin" / "python").exists():
        peers_python = Path(args.peers_venv) / "bin" / "python"
    suite = Suite(config, fs, selectools, ag2)
    remote = "remote" in chosen or "cold" in chosen
    with services(suite, remote, "store" in chosen):
        for workload in chosen:
            try:
                getattr(suite, workload)()
            except Exception as exc:  # one broken workload must not hide the others
                log(f"{workload} failed: {type(exc).__name__}: {exc}")
                suite.notes.append(f"- the {workload} workload failed: {type(exc).__name__}: {exc}")
    elapsed = time.perf_counter() - started

    if args.output:
        out = Path(args.output)
    elif args.smoke or args.only:
        out = Path(tempfile.mkdtemp(prefix="fsmemory-bench-"))
    else:
        out = BENCH
    out.mkdir(parents=True, exist_ok=True)
    plots = draw_plots(suite.series, out / "plots", peers_python) if suite.series else []
    command = (
        "python benchmarks/run.py" + {"full": "", "quick": " --quick", "smoke": " --smoke"}[kind]
    )
    header = [
        "# Benchmarks: fsmemory beside selectools and ag2",
        "",
        f"Generated by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC in "
        f"{elapsed / 60:.1f} min (1-minute load average {load_start} at the start, {load()} at "
        "the end).",
        "",
        f"- Machine: {machine_line()}",
        f"- Versions: {versions_line(peers, fs.python)}",
        "- Method: every measurement runs in a fresh worker process; the systems of one "
        f"workload alternate over {config.rounds} rounds with the same inputs (fixed seeds, "
        "`benchmarks/peers/workloads.py`). Cells show the median (min–max) in milliseconds; "
        "ratios are peer median / fsmemory median, so above 1 means fsmemory is faster. "
        "A noisy 2-core machine: compare ratios within this run.",
        "",
    ]
    summary = Table("Targets", ["target", "measured", "status"], [list(t) for t in suite.targets])
    body = [summary.render()] + [
        t.render(with_image=f"{Path(t.image or '').stem}.png" in plots) for t in suite.tables
    ]
    if "recall_latency.png" in plots:
        body.append(
            "## Recall latency vs memory size\n\n![recall latency](plots/recall_latency.png)\n"
        )
    if suite.notes:
        body.append("## Warnings\n\n" + "\n".join(suite.notes) + "\n")
    print(summary.render(), flush=True)
    results = out / "RESULTS.md"
    results.write_text("\n".join(header) + "\n" + "\n".join(body))
    log(f"wrote {results} ({', '.join(plots) or 'no plots'}) in {elapsed / 60:.1f} min")
    if args.smoke and not args.output:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    _ensure_fsmemory_interpreter()
    sys.exit(main())
