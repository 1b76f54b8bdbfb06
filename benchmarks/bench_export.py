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

``--fleet`` measures what a data team exports instead: many tenants with small daily
logs (2,000 tenants x 10 days x 5 lines, and 10,000 x 30 without ``--quick``), beside a
floor that reads the same files, parses them with one ``pyarrow.json`` call and writes
one Parquet file: a full export, a no-op re-run (with the manifest bytes each reads and
writes), 4 ``fsmemory export --shard i/4`` processes exporting into one destination at
once (their union checked row for row) beside one unsharded ``fsmemory export`` process,
and the same fleet on a moto S3 server: the export (reads in flight) beside the raw floor
of its reads, one listing and one GET per object with the built-in S3 client at 16 in
flight (no retry layer, no parsing), from the same server. moto serves requests in one
Python process; by default the benchmark sends them straight to moto's S3 app
(``--moto-dispatch all``: through moto's dispatcher of every service, as the test suite
runs it, about twice the server time per GET).

Usage::

    python benchmarks/bench_export.py [--lines N] [--quick] [--repeat R] [--dir PATH]
    python benchmarks/bench_export.py --fleet [--quick] [--repeat R] [--dir PATH]
    python benchmarks/bench_export.py --fleet --shards-only --repeat 5
    python benchmarks/bench_export.py --fleet --quick --s3-only [--tenants 200]
    python benchmarks/bench_export.py --fleet --tricks [--repeat R] [--tenants N]

``--tricks`` measures what each speed trick of the export command saves: ``fsmemory
export --full`` processes of the 2,000-tenant fleet, interleaved, with the public
``pyarrow.compute`` (``FSMEMORY_NO_SPEEDUPS=1``) or the private ``pyarrow._compute``,
with or without the command's process setup (Arrow's system allocator), and with the
tricks earlier versions had (pyarrow loaded with numpy held back; numpy's BLAS on one
thread; a library call switching Arrow's process-wide pool, which
``ARROW_DEFAULT_MEMORY_POOL`` stands for here); then 4 ``--shard i/4`` processes at
once with the public and the private compute module.
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


def _fact(
    rng: random.Random, now: datetime, turn: int, ttl: float | None = None, words: int = 30
) -> dict[str, Any]:
    """One remember record as ``KnowledgeMemory`` writes it (~10% with metadata)."""
    from fsmemory.memory.entry import KnowledgeEntry, new_entry_id

    return KnowledgeEntry(
        id=new_entry_id(),
        content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, words))),
        category=rng.choice(CATEGORIES),
        persistent=rng.random() < 0.25,
        importance=round(rng.random(), 3),
        ttl_days=ttl,
        created_at=now,
        metadata={"source": "chat", "turn": turn} if rng.random() < 0.1 else {},
        expires_at=None if ttl is None else now + timedelta(days=ttl),
    ).to_dict()


def generate(root: str, lines: int, *, seed: int = 1) -> int:
    """Write ``lines`` log lines into ``root/logs/`` over :data:`DAYS` days; returns bytes."""
    from fsmemory._jsonutil import dumps_line

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
                record = _fact(rng, now, i, rng.choice([None, None, None, 7.0, 30.0]), 40)
                if len(ids) < 10_000:
                    ids.append(record["id"])
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

    if task in ("export", "fleet-export"):
        # The process setup of `fsmemory export` (the allocator), before
        # pyarrow is imported.
        from fsmemory._cli_export import _prepare_process

        _prepare_process(own_process=True)
    import pyarrow as pa

    tasks: dict[str, Callable[..., dict[str, Any]]] = {
        "floor": task_floor,
        "export": task_export,
        "tracemalloc": task_tracemalloc,
        "fleet-floor": task_fleet_floor,
        "fleet-export": task_fleet_export,
        "s3-floor": task_s3_floor,
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


# -- the fleet workload -----------------------------------------------------------------
def generate_fleet(base: str, tenants: int, days: int, per_day: int = 5, *, seed: int = 1) -> int:
    """``tenants`` memory roots under ``base``, one log of ``per_day`` lines per day."""
    from fsmemory._jsonutil import dumps_line

    rng = random.Random(seed)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    written = 0
    for t in range(tenants):
        logs = os.path.join(base, f"tenant-{t:05d}", "logs")
        os.makedirs(logs, exist_ok=True)
        for d in range(days):
            moment = t0 + timedelta(days=d)
            out = []
            for i in range(per_day):
                out.append(dumps_line(_fact(rng, moment + timedelta(seconds=i * 600), i)))
            data = b"".join(out)
            with open(os.path.join(logs, f"{moment:%Y-%m-%d}.jsonl"), "wb") as f:
                f.write(data)
            written += len(data)
    return written


def task_fleet_floor(src: str, dest: str) -> dict[str, Any]:
    """Find, read and concatenate every log, one ``pyarrow.json`` parse, one Parquet file."""
    import glob

    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    cpu = _cpu()
    t = time.perf_counter()
    blobs = []
    for path in sorted(glob.glob(os.path.join(src, "*", "logs", "*.jsonl"))):
        with open(path, "rb") as f:
            blobs.append(f.read())
    table = pj.read_json(pa.BufferReader(b"".join(blobs)))
    del blobs
    os.makedirs(dest, exist_ok=True)
    pq.write_table(table, os.path.join(dest, "floor.parquet"))
    return {"seconds": time.perf_counter() - t, "cpu": _cpu() - cpu, "rows": table.num_rows}


def task_fleet_export(src: str, dest: str, mode: str, *extra: str) -> dict[str, Any]:
    """fsmemory's export of a fleet (``mode``: full, incremental or shard:i/n);
    ``extra`` = JSON storage options for an S3 run."""
    import fsspec
    import pyarrow.compute
    import pyarrow.json
    import pyarrow.parquet  # noqa: F401 - imported before the clock starts, as in the floor

    from fsmemory.export import export_parquet

    fsspec.filesystem("file")  # the import of fsspec's implementations, before the clock
    options = json.loads(extra[0]) if extra else None
    shard = None
    if mode.startswith("shard:"):
        index, count = mode.split(":", 1)[1].split("/")
        shard = (int(index), int(count))
    cpu = _cpu()
    t = time.perf_counter()
    report = export_parquet(
        src, dest, incremental=mode != "full", shard=shard, storage_options=options
    )
    return {
        "seconds": time.perf_counter() - t,
        "cpu": _cpu() - cpu,
        "rows": report.rows,
        "files": report.files_seen,
        "manifest_read": report.manifest_bytes_read,
        "manifest_written": report.manifest_bytes_written,
        "in_flight": report.max_reads_in_flight,
        "parts": report.parts_written,
    }


def _rows_sorted(dest: str, options: dict[str, Any] | None = None) -> Any:
    import pyarrow.dataset as ds

    from fsmemory.fs import open_root

    root = open_root(dest, options)
    table = ds.dataset(
        f"{root.root}/memory", filesystem=root.fs, format="parquet", partitioning="hive"
    ).to_table()
    return table.sort_by([("root", "ascending"), ("source_file", "ascending"),
                          ("line", "ascending")])  # fmt: skip


#: A process running ``fsmemory export`` exactly as the command does (the console
#: script's own imports only), then printing its report with the process's CPU (from
#: interpreter start) and peak RSS as one JSON line.
_CLI_PROCESS = """\
import contextlib, io, json, resource, sys
from fsmemory.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main()  # this process's own arguments, as the console script runs it
if code:
    sys.exit(code)
usage = resource.getrusage(resource.RUSAGE_SELF)
hwm = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
print(json.dumps({"report": json.loads(out.getvalue()),
                  "cpu": usage.ru_utime + usage.ru_stime, "maxrss": hwm}))
"""


def _cli_processes(
    src: str,
    dest: str,
    flags: list[list[str]],
    *,
    sessions: bool = False,
    env: dict[str, str] | None = None,
) -> tuple[float, list[dict[str, Any]]]:
    """Run one ``fsmemory export SRC DEST --json <flags>`` process per entry of ``flags``,
    all at once; returns the wall time from the first start to the last exit and each
    process's measurements (CPU and RSS of the whole process, imports included).
    ``sessions``: each process in a session of its own, as separate jobs get."""
    t = time.perf_counter()
    command = [sys.executable, "-c", _CLI_PROCESS, "export", src, dest, "--json", "--no-progress"]
    procs = [
        subprocess.Popen(
            [*command, *extra],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=sessions,
            env=env,
        )
        for extra in flags
    ]
    results = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"export process failed ({proc.returncode})")
        measured = json.loads(out.strip().splitlines()[-1])
        report = measured["report"]
        results.append(
            {
                "cpu": measured["cpu"],
                "maxrss": measured["maxrss"],
                "rows": report["rows"],
                "files": report["files_seen"],
                "manifest_read": report["manifest_bytes_read"],
                "manifest_written": report["manifest_bytes_written"],
                "in_flight": report["max_reads_in_flight"],
            }
        )
    return time.perf_counter() - t, results


#: moto's S3 server as the test suite runs it (``fsmemory.testing``), except that every
#: request except ``/moto-api/`` goes straight to moto's S3 app: moto's own dispatcher
#: matches each request's host against every service's URL patterns under one lock,
#: about a third of the server's time per GET here. argv: host port.
_MOTO_S3_ONLY = """
import logging, os, sys
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication, MotoRequestHandler, create_backend_app,
)
host, port = sys.argv[1], int(sys.argv[2])
os.environ.setdefault("MOTO_PORT", str(port))
logging.getLogger("werkzeug").setLevel(logging.WARNING)
dispatcher = DomainDispatcherApplication(create_backend_app)
s3 = create_backend_app("s3")

def app(environ, start_response):
    if environ.get("PATH_INFO", "").startswith("/moto-api"):
        return dispatcher(environ, start_response)
    return s3(environ, start_response)

run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler)
"""


def _start_moto(dispatch: str) -> Any:
    """moto's S3 server on loopback (``dispatch``: ``"s3"`` straight to the S3 app,
    ``"all"`` through moto's dispatcher as the test suite runs it)."""
    from fsmemory.testing.cloud_services import MotoService

    class S3OnlyMoto(MotoService):
        def command(self) -> list[str]:
            return [sys.executable, "-c", _MOTO_S3_ONLY, self.host, str(self.port)]

    service = S3OnlyMoto() if dispatch == "s3" else MotoService(serialize=False)
    return service.start()


def _s3_fleet(src: str, tenants: int, dispatch: str) -> tuple[Any, str, dict[str, Any]] | None:
    """A moto server holding the first ``tenants`` tenants of ``src``; None without moto."""
    from concurrent.futures import ThreadPoolExecutor

    try:
        service = _start_moto(dispatch)
    except Exception as exc:  # moto[server] missing or not starting: skip the row
        print(f"(no S3 row: {exc})")
        return None
    from fsmemory.fs import open_root

    options = service.s3_storage_options()
    root: Any = open_root("s3://fleet", options)  # an S3Root on obstore
    root.fs.mkdir("fleet")  # CreateBucket
    files = [
        (f"users/{name}/logs/{log}", os.path.join(src, name, "logs", log))
        for name in sorted(os.listdir(src))[:tenants]
        for log in sorted(os.listdir(os.path.join(src, name, "logs")))
    ]

    def put(item: tuple[str, str]) -> None:
        with open(item[1], "rb") as f:
            root.write(item[0], f.read())

    t = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, files))
    print(f"uploaded {len(files):,} objects to moto in {time.perf_counter() - t:.1f} s")
    return service, "s3://fleet/users", options


def task_s3_floor(url: str, options: str, concurrency: str) -> dict[str, Any]:
    """The raw floor of an S3 export's reads: one listing, then one GET per object with
    obstore directly (no retry layer, no parsing), ``concurrency`` in flight."""
    from concurrent.futures import ThreadPoolExecutor

    import obstore

    from fsmemory.fs import open_root

    root: Any = open_root(url, json.loads(options))  # an S3Root on obstore
    store = root.store
    _, _, prefix = root.root.partition("/")
    cpu = _cpu()
    t = time.perf_counter()
    keys = [f"{prefix}/{info.path}" for info in root.list("", recursive=True)]
    with ThreadPoolExecutor(int(concurrency)) as pool:
        size = sum(pool.map(lambda key: len(obstore.get(store, key).bytes()), keys))
    return {
        "seconds": time.perf_counter() - t,
        "cpu": _cpu() - cpu,
        "rows": 0,
        "files": len(keys),
        "bytes": size,
        "in_flight": int(concurrency),
    }


def fleet(args: argparse.Namespace, work: str) -> None:
    """The fleet benchmark (see the module docstring)."""
    repeat = 2 if args.quick else args.repeat
    sizes = [(2000, 10)] if args.quick else [(2000, 10), (10000, 30)]
    if args.tenants:
        sizes = [(args.tenants, args.days)]
    table: list[tuple[str, str, dict[str, Any], str]] = []
    from _bytecode import stale_bytecode_note

    import fsmemory

    note = stale_bytecode_note(os.path.dirname(fsmemory.__file__))
    if note:
        print(note)
    for tenants, days in sizes:
        src = os.path.join(work, f"fleet-{tenants}x{days}")
        shutil.rmtree(src, ignore_errors=True)
        t = time.perf_counter()
        size = generate_fleet(src, tenants, days)
        print(
            f"generated {tenants:,} tenants x {days} days ({tenants * days:,} files, "
            f"{size / 2**20:,.1f} MiB) in {time.perf_counter() - t:.1f} s"
        )
        label = f"{tenants:,} x {days}"
        samples: dict[str, list[dict[str, Any]]] = {"floor": [], "full": [], "noop": []}
        rounds = repeat if tenants * days <= 20_000 else 1
        for i in range(0 if args.shards_only else rounds):
            dest = os.path.join(work, f"out-fleet-{i}")
            shutil.rmtree(dest, ignore_errors=True)
            samples["floor"].append(run("fleet-floor", src, dest))
            shutil.rmtree(dest, ignore_errors=True)
            samples["full"].append(run("fleet-export", src, dest, "full"))
            samples["noop"].append(run("fleet-export", src, dest, "incremental"))
            shutil.rmtree(dest, ignore_errors=True)
        full = 0.0
        if args.shards_only:
            rounds = repeat
        else:
            full = _local_rows(table, label, samples, tenants)
        shutil.rmtree(os.path.join(work, "out-fleet-0"), ignore_errors=True)
        if (tenants, days) != sizes[0] or args.local_only:
            continue
        if not args.s3_only:
            _shard_rows(table, label, src, work, rounds, args.sessions)
        # S3 (moto server on loopback).
        skip_s3 = args.shards_only or args.no_s3
        s3 = None if skip_s3 else _s3_fleet(src, tenants, args.moto_dispatch)
        if s3 is not None:
            service, url, options = s3
            try:
                _s3_rows(table, label, url, options, full, args.s3_repeat)
            finally:
                service.stop()
        shutil.rmtree(src, ignore_errors=True)
    _print_fleet(table)


def _s3_rows(
    table: list[tuple[str, str, dict[str, Any], str]],
    label: str,
    url: str,
    options: dict[str, Any],
    full: float,
    repeat: int,
) -> None:
    """The raw S3 read floor and the S3 export, interleaved, ``repeat`` rounds each."""
    floors, exports = [], []
    opts = json.dumps(options)
    for i in range(repeat):
        floors.append(run("s3-floor", url, opts, "16"))
        exports.append(run("fleet-export", url, f"s3://fleet/out-{i}", "full", opts))
    floor = _median(floors, "seconds")
    seconds = _median(exports, "seconds")
    per_get = floor / floors[0]["files"] * 1e3
    note = f"{floor / full:.2f}x local; {per_get:.2f} ms per GET"
    table.append((f"{label} moto S3: raw GETs, 16 in flight", "s3floor", _summary(floors), note))
    note = (
        f"{seconds / full:.2f}x local (target <= 5x, >= 16 in flight); "
        f"{seconds / floor:.2f}x the raw GETs"
    )
    table.append((f"{label} moto S3: export --full", "s3", _summary(exports), note))


def _local_rows(
    table: list[tuple[str, str, dict[str, Any], str]],
    label: str,
    samples: dict[str, list[dict[str, Any]]],
    tenants: int,
) -> float:
    """The floor, full-export and no-op rows; returns the full export's median wall."""
    floor = _median(samples["floor"], "seconds")
    full = _median(samples["full"], "seconds")
    table.append(
        (f"{label} local: floor (read+parse+1 write)", "floor", _summary(samples["floor"]), "")
    )
    cpu = _median(samples["full"], "cpu") / _median(samples["floor"], "cpu")
    note = f"{full / floor:.2f}x floor wall, {cpu:.2f}x CPU (target <= 3x)"
    table.append((f"{label} local: export --full", "full", _summary(samples["full"]), note))
    table.append((f"{label} local: no-op re-run", "noop", _summary(samples["noop"]),
                  "target <= 0.3 s, <= 1 MB manifest" if tenants == 2000 else ""))  # fmt: skip
    return full


def _shard_rows(
    table: list[tuple[str, str, dict[str, Any], str]],
    label: str,
    src: str,
    work: str,
    rounds: int,
    sessions: bool = False,
) -> None:
    """4 ``fsmemory export --shard i/4`` processes at once into one destination, beside
    one unsharded ``fsmemory export`` process (interleaved, ``rounds`` of each); with
    ``sessions``, the same again with every process in a session of its own
    (interleaved with the first)."""
    modes = [False, True] if sessions else [False]
    whole = os.path.join(work, "out-whole")
    sharded = os.path.join(work, "out-sharded")
    walls: dict[bool, list[float]] = {m: [] for m in modes}
    whole_walls: dict[bool, list[float]] = {m: [] for m in modes}
    cpus: dict[bool, list[float]] = {m: [] for m in modes}
    unsharded: dict[bool, list[dict[str, Any]]] = {m: [] for m in modes}
    shards: dict[bool, list[dict[str, Any]]] = {}
    same = True
    for _ in range(rounds):
        for mode in modes:
            for path in (whole, sharded):
                shutil.rmtree(path, ignore_errors=True)
            wall, runs = _cli_processes(src, whole, [[]], sessions=mode)
            whole_walls[mode].append(wall)
            unsharded[mode].append({**runs[0], "seconds": wall})
            flags = [["--shard", f"{i}/4"] for i in range(4)]
            wall, shards[mode] = _cli_processes(src, sharded, flags, sessions=mode)
            walls[mode].append(wall)
            cpus[mode].append(sum(r["cpu"] for r in shards[mode]))
            same = same and _rows_sorted(sharded).equals(_rows_sorted(whole))
    for mode in modes:
        where = ", own sessions" if mode else ""
        one = statistics.median(whole_walls[mode])
        shard_row = {
            "seconds": statistics.median(walls[mode]),
            "cpu": statistics.median(cpus[mode]),
            "rows": sum(r["rows"] for r in shards[mode]),
            "files": sum(r["files"] for r in shards[mode]) // 4,
            "maxrss": max(r["maxrss"] for r in shards[mode]),
            "manifest_read": sum(r["manifest_read"] for r in shards[mode]),
            "manifest_written": sum(r["manifest_written"] for r in shards[mode]),
            "in_flight": 0,
        }
        whole_row = _summary(unsharded[mode])
        table.append((f"{label} local: unsharded, process wall{where}", "whole",
                      {**whole_row, "seconds": one}, ""))  # fmt: skip
        note = (
            f"union {'==' if same else '!='} unsharded; "
            f"{shard_row['seconds'] / one:.2f}x unsharded wall (target < 1x), "
            f"{shard_row['cpu'] / whole_row['cpu']:.2f}x CPU"
        )
        table.append(
            (f"{label} local: 4 shard processes at once{where}", "shards", shard_row, note)
        )


#: ``fsmemory export`` processes of ``--tricks``: label, extra environment, code run
#: before the command (``{default}``: Arrow's default allocator here).
_NUMPY_HELD_BACK = (
    "sys.modules['numpy'] = None\n"
    "import pyarrow, pyarrow._compute, pyarrow.json, pyarrow.parquet\n"
    "del sys.modules['numpy']\n"
)
_TRICKS: list[tuple[str, dict[str, str], str]] = [
    ("public compute, no process setup", {"FSMEMORY_NO_SPEEDUPS": "1"}, ""),
    ("private compute, no process setup", {}, ""),
    ("public compute + system allocator", {"FSMEMORY_NO_SPEEDUPS": "1", "POOL": "system"}, ""),
    ("public compute + 1 BLAS thread", {"FSMEMORY_NO_SPEEDUPS": "1", "BLAS": "1"}, ""),
    ("public compute + numpy held back", {"FSMEMORY_NO_SPEEDUPS": "1"}, _NUMPY_HELD_BACK),
    ("private compute, as the command runs", {"POOL": "system"}, ""),
    ("all old tricks (+ numpy held back)", {"POOL": "system", "BLAS": "1"}, _NUMPY_HELD_BACK),
]


def _trick_env(extra: dict[str, str], default_pool: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FSMEMORY_NO_SPEEDUPS"}
    # Set explicitly either way: the command only fills in what is unset.
    env["ARROW_DEFAULT_MEMORY_POOL"] = extra.get("POOL", default_pool)
    env["OPENBLAS_NUM_THREADS"] = extra.get("BLAS", str(os.cpu_count() or 1))
    if "FSMEMORY_NO_SPEEDUPS" in extra:
        env["FSMEMORY_NO_SPEEDUPS"] = extra["FSMEMORY_NO_SPEEDUPS"]
    return env


def tricks(args: argparse.Namespace, work: str) -> None:
    """What each speed trick of the export command saves (see the module docstring)."""
    tenants = args.tenants or 2000
    src = os.path.join(work, f"fleet-{tenants}x{args.days}")
    shutil.rmtree(src, ignore_errors=True)
    generate_fleet(src, tenants, args.days)
    default_pool = subprocess.run(
        [sys.executable, "-c", "import pyarrow; print(pyarrow.default_memory_pool().backend_name)"],
        env={k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"},
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    samples: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in _TRICKS}
    floors = []
    dest = os.path.join(work, "out-tricks")
    for _ in range(args.repeat):
        shutil.rmtree(dest, ignore_errors=True)
        floors.append(run("fleet-floor", src, dest))
        for label, extra, before in _TRICKS:
            shutil.rmtree(dest, ignore_errors=True)
            samples[label].append(
                _trick_process(src, dest, _trick_env(extra, default_pool), before)
            )
    # 4 shard processes at once, public against private compute (as the command runs).
    shards: dict[str, list[dict[str, Any]]] = {"public": [], "private": []}
    flags = [["--shard", f"{i}/4"] for i in range(4)]
    for _ in range(args.repeat):
        for mode in shards:
            extra = {"POOL": "system"}
            if mode == "public":
                extra["FSMEMORY_NO_SPEEDUPS"] = "1"
            shutil.rmtree(dest, ignore_errors=True)
            wall, runs = _cli_processes(src, dest, flags, env=_trick_env(extra, default_pool))
            shards[mode].append(
                {"seconds": wall, "cpu": sum(r["cpu"] for r in runs),
                 "maxrss": max(r["maxrss"] for r in runs), "rows": sum(r["rows"] for r in runs)}
            )  # fmt: skip
    shutil.rmtree(dest, ignore_errors=True)
    base = samples[_TRICKS[0][0]]
    title = f"export --full process, {tenants:,} x {args.days}"
    header = f"{title:<44} {'wall s':>7} {'CPU s':>6} {'RSS MiB':>8}  vs first row"
    print(header)
    print("-" * len(header))
    floor = _median(floors, "seconds")
    floor_rss = _mib(max(r["maxrss"] for r in floors))
    name = "floor (in-process, read+parse+1 write)"
    print(f"{name:<44} {floor:>7.3f} {_median(floors, 'cpu'):>6.2f} {floor_rss:>8}")
    for label, runs in samples.items():
        wall, cpu = _median(runs, "seconds"), _median(runs, "cpu")
        rss = statistics.median(r["maxrss"] for r in runs)
        base_rss = statistics.median(r["maxrss"] for r in base)
        note = (
            f"{wall - _median(base, 'seconds'):+.3f} s wall, "
            f"{cpu - _median(base, 'cpu'):+.3f} s CPU, {(rss - base_rss) / 2**20:+.1f} MiB RSS"
        )
        print(f"{label:<44} {wall:>7.3f} {cpu:>6.2f} {_mib(rss):>8}  {note}")
    for mode, runs in shards.items():
        wall, cpu = _median(runs, "seconds"), _median(runs, "cpu")
        rss = statistics.median(r["maxrss"] for r in runs)
        note = ""
        if mode == "private":
            pub = shards["public"]
            note = (
                f"{wall - _median(pub, 'seconds'):+.3f} s wall, "
                f"{cpu - _median(pub, 'cpu'):+.3f} s CPU (4 processes) vs public"
            )
        print(f"{'4 shard processes, ' + mode + ' compute':<44} {wall:>7.3f} {cpu:>6.2f} "
              f"{_mib(rss):>8}  {note}")  # fmt: skip
    print(
        f"\nMedians of {args.repeat} interleaved rounds; each row is a whole `fsmemory export "
        "--full` process (interpreter start to exit: wall, CPU of all threads, peak RSS "
        f"median). Arrow's default allocator here: {default_pool}. "
        f"Load average: {os.getloadavg()[0]:.1f}."
    )


def _trick_process(src: str, dest: str, env: dict[str, str], before: str) -> dict[str, Any]:
    code = "import sys\n" + before + _CLI_PROCESS
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, "export", src, dest, "--json", "--no-progress", "--full"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - t
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": wall, "cpu": measured["cpu"], "maxrss": measured["maxrss"],
            "rows": measured["report"]["rows"]}  # fmt: skip


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    first = runs[0]
    return {
        "seconds": _median(runs, "seconds"),
        "cpu": _median(runs, "cpu") if all("cpu" in r for r in runs) else 0.0,
        "rows": first["rows"],
        "files": first.get("files", 0),
        "maxrss": max(r["maxrss"] for r in runs),
        "manifest_read": first.get("manifest_read", 0),
        "manifest_written": first.get("manifest_written", 0),
        "in_flight": max(r.get("in_flight", 0) for r in runs),
    }


def _print_fleet(table: list[tuple[str, str, dict[str, Any], str]]) -> None:
    width = max([44, *(len(label) for label, *_ in table)])
    header = (
        f"{'fleet workload':<{width}} {'rows':>9} {'wall s':>7} {'CPU s':>6} {'RSS MiB':>8} "
        f"{'manifest read':>13} {'written':>9} {'in flight':>9}  note"
    )
    print(header)
    print("-" * len(header))
    for label, _, row, note in table:
        print(
            f"{label:<{width}} {row['rows']:>9,} {row['seconds']:>7.3f} {_cpu_text(row):>6} "
            f"{_mib(row['maxrss']):>8} "
            f"{_kib(row['manifest_read']):>13} {_kib(row['manifest_written']):>9} "
            f"{row['in_flight'] or '-':>9}  {note}"
        )
    print(
        "\nMedians of interleaved runs, each in a fresh process (wall and CPU of the export "
        "call). The last local rows run the `fsmemory export` command: the shard row is the "
        "wall from the first start to the last exit of 4 processes and the CPU of the 4 "
        "whole processes (interpreter and imports included), the unsharded row beside it "
        "the same for one process. Where the scheduler gives each session a fixed share "
        "of a busy machine (Linux autogroup), the shard row's wall ratio tends to its CPU "
        "ratio: the 4 processes share one session's cores; the 'own sessions' rows "
        "(--sessions) start every process in a session of its own, as the tasks of a job "
        f"array get. Load average: {os.getloadavg()[0]:.1f}."
    )


def _cpu_text(row: dict[str, Any]) -> str:
    cpu = float(row.get("cpu") or 0.0)
    return f"{cpu:.2f}" if cpu else "-"


def _kib(n: int) -> str:
    return "-" if not n else (f"{n / 2**10:,.0f} KiB" if n < 2**20 else f"{n / 2**20:,.1f} MiB")


# -- the report -----------------------------------------------------------------------
def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100k lines, 2 repeats")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None, help="work folder (default: a temp dir)")
    parser.add_argument("--fleet", action="store_true", help="the many-tenants workload")
    parser.add_argument("--tenants", type=int, default=0, help="--fleet: only this many tenants")
    parser.add_argument("--days", type=int, default=10, help="--fleet --tenants: days each")
    parser.add_argument("--local-only", action="store_true", help="--fleet: no shards, no S3")
    parser.add_argument(
        "--shards-only",
        action="store_true",
        help="--fleet: only the shard rows (--repeat rounds; for a quiet moment)",
    )
    parser.add_argument("--s3-repeat", type=int, default=1, help="--fleet: S3 runs (slow)")
    parser.add_argument(
        "--s3-only", action="store_true", help="--fleet: the local and S3 rows, no shards"
    )
    parser.add_argument(
        "--sessions",
        action="store_true",
        help="--fleet: the shard rows again with every process in a session of its own "
        "(as separate jobs; Linux autogroup shares a busy machine's cores per session)",
    )
    parser.add_argument(
        "--moto-dispatch",
        choices=("s3", "all"),
        default="s3",
        help="--fleet: moto requests straight to its S3 app (default) or through its "
        "dispatcher of every service, as the test suite runs it",
    )
    parser.add_argument(
        "--tricks", action="store_true", help="--fleet: what each speed trick saves"
    )
    parser.add_argument("--no-s3", action="store_true", help="--fleet: no S3 rows")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1:])
        return
    if args.fleet:
        work = args.dir or tempfile.mkdtemp(prefix="bench_export_")
        try:
            (tricks if args.tricks else fleet)(args, work)
        finally:
            if args.dir is None:
                shutil.rmtree(work, ignore_errors=True)
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
