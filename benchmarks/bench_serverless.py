"""Serverless invocations on S3 (moto): fsmemory's handler vs a hand-rolled boto3 one.

    python benchmarks/bench_serverless.py [--quick] [--entries N] [--invocations N] [--s3fs]
        [--compare CHECKOUT]

Both handlers serve the same user with the same data (10k entries, every 2nd a
persistent fact) and do the same work per invocation: load the memory, remember two
facts, recall, build a context, save. Each invocation is a **fresh process** (a cold
start), and the two handlers alternate so that drift on the machine hits both alike.

* fsmemory: ``examples/serverless_handler.py`` (``KnowledgeMemory`` on a fresh scratch
  folder with an ``FsspecBackend`` snapshot): restore, two saves (deltas; a fold once
  ``compact_after`` deltas wait or they pass a quarter of the base).
* with ``--compare CHECKOUT``: the same handler on the fsmemory of another checkout
  (e.g. a ``git worktree`` of an earlier commit), on a snapshot of its own seeded by
  that version, alternating with the others in the same run.
* boto3: ``GetObject`` of one JSON blob, ``json.loads``, append, ``json.dumps``,
  ``PutObject`` (two requests; no merge of concurrent writers: the last one wins).

The snapshot is seeded the way a user's first save makes one: a folder holding the
memory (searched once, so its index cache is written) saved as the first base.

Printed: wall time per invocation (process start to exit, as the platform bills it),
the time inside the process, requests per invocation and the max/median over the
invocations in a row; bytes uploaded per invocation (median, mean, and the mean as a
share of the base each invocation restored), the sequential round trips of the restore
(the requests the handler's thread sent one after another, plus the most any fetching
thread sent; and, by the clock, the longest chain of requests each sent after the
previous one answered, which also counts a fetch whose thread started after another
fetch's reply came back), the first ``recall()`` after the restore; then where
fsmemory's time goes. Nothing is asserted.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUCKET = "serverless-bench"
USER = "user-1"


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


# -- the two handlers (run in fresh processes) -------------------------------------------
class Spans:
    """When each request of a root was in flight (wraps its reads, listings and writes;
    a method calling another counts once)."""

    def __init__(self, root: Any) -> None:
        import threading

        self.spans: list[tuple[float, float, int]] = []
        self.put_bytes = 0
        self._lock = threading.Lock()
        self._inside = threading.local()
        for name in ("list", "read", "read_bytes", "read_range", "read_ranges", "stat"):
            setattr(root, name, self._timed(getattr(root, name)))
        write = self._timed(root.write)

        def counted_write(path: str, data: bytes, **kwargs: Any) -> Any:
            with self._lock:
                self.put_bytes += len(data)
            return write(path, data, **kwargs)

        root.write = counted_write

    def _timed(self, call: Any) -> Any:
        import threading

        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(self._inside, "busy", False):
                return call(*args, **kwargs)
            self._inside.busy = True
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self._inside.busy = False
                with self._lock:
                    self.spans.append((start, time.perf_counter(), threading.get_ident()))

        return timed

    def sequential(self) -> int:
        """Round trips waited for one after another: the requests the calling thread
        sent (each after the previous answered) plus the most any helper thread sent
        (a pool smaller than the requests it fetches sends them in waves)."""
        import threading

        main = threading.get_ident()
        per_thread: dict[int, int] = {}
        for _, _, thread in self.spans:
            per_thread[thread] = per_thread.get(thread, 0) + 1
        mine = per_thread.pop(main, 0)
        return mine + max(per_thread.values(), default=0)

    def chained(self) -> int:
        """The longest chain of requests each sent after the previous one answered, by
        the clock: :meth:`sequential` plus requests whose thread started late."""
        count, free_at = 0, float("-inf")
        for start, end, _ in sorted(self.spans, key=lambda s: s[1]):
            if start >= free_at:
                count, free_at = count + 1, end
        return count


def fsmemory_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    phases: dict[str, float] = {}
    t = time.perf_counter()
    sys.path[:0] = [cfg.get("lib") or str(ROOT), str(ROOT / "examples")]
    import serverless_handler as example

    from fsmemory.snapshot import FsspecBackend
    from fsmemory.testing.requests import count_requests

    spans: list[Spans] = []

    class Observed(FsspecBackend):
        """The handler's backend, its requests timed from the start."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            spans.append(Spans(self.root))

    example.FsspecBackend = Observed  # type: ignore[misc]

    phases["import fsmemory + handler"] = time.perf_counter() - t
    t = time.perf_counter()
    # imported on first use of an s3:// URL; timed apart here
    if cfg["options"].get("client") == "s3fs":
        import s3fs  # noqa: F401

        phases["import S3 client (s3fs)"] = time.perf_counter() - t
    else:
        import obstore.store  # noqa: F401

        import fsmemory.fs.s3  # noqa: F401

        phases["import S3 client (obstore)"] = time.perf_counter() - t
    example.SNAPSHOT_ROOT = f"s3://{BUCKET}/users"
    example.SCRATCH = cfg["scratch"]
    example.STORAGE_OPTIONS = cfg["options"]
    t = time.perf_counter()
    # the handler's backend reuses this filesystem (fsspec caches it): count its requests
    probe = FsspecBackend(f"s3://{BUCKET}/users/{cfg['user']}.snapshot", cfg["options"])
    phases["open backend"] = time.perf_counter() - t
    with count_requests(probe.root) as requests:
        t = time.perf_counter()
        memory = example.memory_for(cfg["user"])
        phases["restore"] = time.perf_counter() - t
        replica = memory._replica
        assert replica is not None
        (observed,) = spans
        restore_trips = observed.sequential()
        restore_chain = observed.chained()
        base_bytes = len(replica._state.base or b"")
        saving = [0.0]
        save = replica.save

        def timed_save() -> int:
            start = time.perf_counter()
            try:
                return save()
            finally:
                saving[0] += time.perf_counter() - start

        replica.save = timed_save  # type: ignore[method-assign]
        t = time.perf_counter()
        for fact in cfg["facts"]:
            memory.remember(
                fact["content"], category=fact["category"], persistent=fact["persistent"]
            )
        phases["remember x2 (saves included)"] = time.perf_counter() - t
        phases["  of which snapshot saves (fold + delta)"] = saving[0]
        t = time.perf_counter()
        found = memory.recall(cfg["query"])
        phases["first recall() after the restore"] = time.perf_counter() - t
        t = time.perf_counter()
        memory.flush()
        context = memory.build_context()
        phases["flush + build_context"] = time.perf_counter() - t
        phases["  of which the save in flush"] = (
            saving[0] - phases["  of which snapshot saves (fold + delta)"]
        )
    assert found and context
    return {
        "inside_ms": _ms(time.perf_counter() - T0),
        "requests": len(requests),
        "phases": {k: _ms(v) for k, v in phases.items()},
        "folds": memory._replica.folds if memory._replica else 0,
        "uploaded": observed.put_bytes,
        "base": base_bytes,
        "trips": restore_trips,
        "chain": restore_chain,
    }


def boto3_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    import boto3

    options = cfg["options"]
    client = boto3.client(
        "s3",
        endpoint_url=options["client_kwargs"]["endpoint_url"],
        aws_access_key_id=options["key"],
        aws_secret_access_key=options["secret"],
        region_name="us-east-1",
    )
    sent: list[str] = []
    client.meta.events.register("before-send.s3", lambda request, **_: sent.append(request.method))
    key = f"users/{USER}.json"  # (the boto3 handler's own object)
    body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    data = json.loads(body)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for i, fact in enumerate(cfg["facts"]):
        record = {"id": f"{time.time_ns()}-{i}", "timestamp": now, **fact}
        data["entries"].append(record)
        if fact["persistent"]:
            data["facts"].setdefault(fact["category"], []).append(fact["content"])
    words = cfg["query"].lower().split()
    found = [e for e in data["entries"] if all(w in e["content"].lower() for w in words)][:5]
    facts = "\n".join(
        f"## {c}\n" + "\n".join(f"- {f}" for f in fs) for c, fs in data["facts"].items()
    )
    recent = "\n".join(
        f"- [{e['timestamp'][:16]}] ({e['category']}) {e['content']}" for e in data["entries"][-50:]
    )
    context = f"[Long-term Memory]\n{facts}\n\n[Recent Memory]\n{recent}"
    client.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(data).encode())
    assert found and context
    return {"inside_ms": _ms(time.perf_counter() - T0), "requests": len(sent), "phases": {}}


# -- the driver --------------------------------------------------------------------------
def seed_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """Seed a snapshot as a user's first save does (run with the version measured): the
    folder, searched once (its index cache written), saved as the first base."""
    sys.path[:0] = [cfg.get("lib") or str(ROOT)]
    from fsmemory import KnowledgeMemory
    from fsmemory.snapshot import FsspecBackend

    KnowledgeMemory(cfg["folder"], max_log_days=100000).recall("seed")
    url = f"s3://{BUCKET}/users/{cfg['user']}.snapshot"
    km = KnowledgeMemory(cfg["folder"], backend=FsspecBackend(url, cfg["options"]))
    assert km._replica is not None
    return {"base": km._replica.bytes_uploaded, "phases": {}}


def build_data(n: int, folder: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The same memory as a folder (for the snapshot) and as one JSON document."""
    sys.path[:0] = [str(ROOT), str(HERE)]
    from bench_snapshot import build_memory

    from fsmemory import KnowledgeMemory

    files = build_memory(folder, n)
    km = KnowledgeMemory(folder, max_log_days=100000)
    entries = [
        json.loads(line)
        for path, data in sorted(files.items())
        if path.startswith("logs/")
        for line in data.splitlines()
        if line.strip()
    ]
    return files, {"facts": km.get_persistent_facts(), "entries": entries}


def seed(kind: str, cfg: dict[str, Any], files: dict[str, bytes], folder: Path) -> int:
    """Seed ``kind``'s snapshot in a fresh process of its version; the base's bytes."""
    for path, data in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", "seed", json.dumps(cfg)],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(json.loads(out.stdout.strip().splitlines()[-1])["base"])


def run_worker(kind: str, cfg: dict[str, Any]) -> dict[str, Any]:
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", kind, json.dumps(cfg)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_ms"] = _ms(time.perf_counter() - t)
    return result


def summarize(name: str, runs: list[dict[str, Any]]) -> list[str]:
    wall = [r["wall_ms"] for r in runs]
    inside = [r["inside_ms"] for r in runs]
    req = [r["requests"] for r in runs]
    med = statistics.median(wall)
    return [
        name,
        f"{med:.0f}",
        f"{statistics.median(inside):.0f}",
        f"{max(wall) / med:.2f}x",
        f"{statistics.median(req):.0f}",
        f"{max(req)}",
        f"{max(req) / statistics.median(req):.2f}x",
    ]


def table(header: list[str], rows: list[list[str]]) -> None:
    print("\n| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _median_wall(runs: list[dict[str, Any]]) -> float:
    return float(statistics.median(r["wall_ms"] for r in runs))


def upload_rows(name: str, runs: list[dict[str, Any]]) -> list[str]:
    """Bytes uploaded per invocation, restore round trips and the first recall."""
    uploaded = [r["uploaded"] for r in runs]
    share = [r["uploaded"] / r["base"] for r in runs if r["base"]]
    recall = [r["phases"]["first recall() after the restore"] for r in runs]
    trips = [r["trips"] for r in runs]
    chain = [r["chain"] for r in runs]
    return [
        name,
        f"{statistics.median(uploaded) / 1024:.1f}",
        f"{statistics.mean(uploaded) / 1024:.1f}",
        f"{100 * statistics.mean(share):.1f}%" if share else "-",
        f"{statistics.median(r['base'] for r in runs) / 1e6:.2f}",
        f"{statistics.median(trips):.0f} (max {max(trips)}); by the clock "
        f"{statistics.median(chain):.0f} (max {max(chain)})",
        f"{statistics.median(recall):.1f}",
        f"{sum(r['folds'] for r in runs)}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--entries", type=int)
    parser.add_argument("--invocations", type=int)
    parser.add_argument(
        "--s3fs",
        action="store_true",
        help="also run the fsmemory handler with s3fs forced (storage option client='s3fs')",
    )
    parser.add_argument(
        "--compare",
        metavar="CHECKOUT",
        help="also run the handler on the fsmemory of this checkout (e.g. an earlier commit)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, config = args.worker
        workers = {"boto3": boto3_worker, "seed": seed_worker}
        print(json.dumps(workers.get(kind, fsmemory_worker)(json.loads(config))))
        return
    entries = args.entries or (1000 if args.quick else 10000)
    invocations = args.invocations or (6 if args.quick else 24)
    sys.path.insert(0, str(ROOT))
    from fsmemory import _jsonutil
    from fsmemory.fs.s3 import S3Root
    from fsmemory.testing.cloud_services import start_moto

    kinds = ["fsmemory"]
    if args.s3fs:
        kinds.append("fsmemory-s3fs")
    if args.compare:
        kinds.append("fsmemory-before")
    kinds.append("boto3")
    libs = {kind: args.compare if kind == "fsmemory-before" else None for kind in kinds}
    service = start_moto()
    try:
        options = service.s3_storage_options()
        S3Root.from_url(f"s3://{BUCKET}", options).fs.mkdir(BUCKET)
        with tempfile.TemporaryDirectory() as tmp:
            files, document = build_data(entries, Path(tmp) / "source")
            bases = {}
            for kind in kinds[:-1]:
                cfg = {"options": options, "user": f"{USER}-{kind}", "lib": libs[kind]}
                folder = Path(tmp) / f"seed-{kind}"
                bases[kind] = seed(kind, {**cfg, "folder": str(folder)}, files, folder)
            blob = _jsonutil.dumps(document)
            S3Root.from_url(f"s3://{BUCKET}", options).write(f"users/{USER}.json", blob)
            print(
                f"{entries:,} entries: snapshot base "
                + ", ".join(f"{k} {b / 1e6:.2f} MB" for k, b in bases.items())
                + f"; boto3 blob {len(blob) / 1e6:.2f} MB; {invocations} invocations each, "
                "fresh processes, alternating (after one warm-up each)"
            )
            runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
            for i in range(invocations + 1):
                for kind in kinds:
                    forced = {"client": "s3fs"} if kind == "fsmemory-s3fs" else {}
                    cfg = {
                        "options": {**options, **forced},
                        "user": f"{USER}-{kind}",
                        "lib": libs[kind],
                        "scratch": str(Path(tmp) / f"scratch-{kind}-{i}"),
                        "facts": [
                            {
                                "content": f"invocation {i} prefers dark mode",
                                "category": "preferences",
                                "persistent": True,
                            },
                            {
                                "content": f"invocation {i} asked about invoice {i}",
                                "category": "context",
                                "persistent": False,
                            },
                        ],
                        "query": "invoice",
                    }
                    result = run_worker(kind, cfg)
                    if i:
                        runs[kind].append(result)
    finally:
        service.stop()
    fs_runs, b3_runs = runs["fsmemory"], runs["boto3"]
    header = [
        "handler",
        "wall ms (median)",
        "in-process ms",
        "max/median wall",
        "requests/invocation",
        "max requests",
        "max/median requests",
    ]
    names = {
        "fsmemory": "fsmemory handler",
        "fsmemory-s3fs": "fsmemory handler, s3fs forced",
        "fsmemory-before": "fsmemory handler, --compare checkout",
    }
    fs_kinds = [k for k in kinds if k != "boto3"]
    table(
        header,
        [summarize(names[k], runs[k]) for k in fs_kinds] + [summarize("boto3 one blob", b3_runs)],
    )
    table(
        [
            "handler",
            "KiB uploaded/invocation (median)",
            "KiB uploaded (mean)",
            "mean uploaded / base",
            "base MB (median)",
            "restore round trips (by thread; by the clock)",
            "first recall() ms (median)",
            f"folds in {len(fs_runs)}",
        ],
        [upload_rows(names[k], runs[k]) for k in fs_kinds],
    )
    ratio = _median_wall(fs_runs) / _median_wall(b3_runs)
    inside = statistics.median(r["inside_ms"] for r in fs_runs) / statistics.median(
        r["inside_ms"] for r in b3_runs
    )
    max_wall = max(r["wall_ms"] for r in fs_runs) / _median_wall(fs_runs)
    uploaded = [r["uploaded"] for r in fs_runs]
    share = statistics.mean(r["uploaded"] / r["base"] for r in fs_runs)
    recall = statistics.median(r["phases"]["first recall() after the restore"] for r in fs_runs)
    table(
        ["target", "measured", "target value"],
        [
            ["fsmemory / boto3, wall (median)", f"{ratio:.2f}x", "<= 1.0x"],
            ["fsmemory / boto3, in-process (median)", f"{inside:.2f}x", "<= 1.5x"],
            *(
                [
                    [
                        "fsmemory with s3fs forced / boto3, wall (median)",
                        f"{_median_wall(runs['fsmemory-s3fs']) / _median_wall(b3_runs):.2f}x",
                        "<= 1.5x",
                    ]
                ]
                if "fsmemory-s3fs" in runs
                else []
            ),
            [
                "bytes uploaded per invocation (median)",
                f"{statistics.median(uploaded) / 1024:.1f} KiB",
                "<= 64 KiB",
            ],
            ["bytes uploaded per invocation / base (mean)", f"{100 * share:.1f}%", "<= 10%"],
            ["first recall() after the restore (median)", f"{recall:.1f} ms", "<= 20 ms"],
            [
                "restore: sequential round trips (max)",
                f"{max(r['trips'] for r in fs_runs)}",
                "<= 3",
            ],
            [f"max / median wall over {len(fs_runs)} in a row", f"{max_wall:.2f}x", "<= 2x"],
        ],
    )
    phases = list(fs_runs[0]["phases"])
    table(
        ["fsmemory phase", "median ms"],
        [[p, f"{statistics.median(r['phases'][p] for r in fs_runs):.1f}"] for p in phases]
        + [["folds per invocation", f"{statistics.median(r['folds'] for r in fs_runs):.0f}"]],
    )
    print("\nrequests per invocation, in order:")
    for kind in kinds:
        print(f"  {kind}:", [r["requests"] for r in runs[kind]])
    print("restore round trips per invocation (by thread), in order:")
    for kind in fs_kinds:
        print(f"  {kind}:", [r["trips"] for r in runs[kind]])
    print("bytes uploaded per invocation, in order:")
    for kind in fs_kinds:
        print(f"  {kind}:", [r["uploaded"] for r in runs[kind]])


if __name__ == "__main__":
    main()
