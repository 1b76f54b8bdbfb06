"""Serverless invocations on S3 (moto): fsmemory's handler vs a hand-rolled boto3 one.

    python benchmarks/bench_serverless.py [--quick] [--entries N] [--invocations N] [--s3fs]
        [--compare CHECKOUT] [--no-embedder]

Both handlers serve the same user with the same data (10k entries, every 2nd a
persistent fact) and do the same work per invocation: load the memory, remember two
facts, recall, build a context, save. Each invocation is a **fresh process** (a cold
start), and the two handlers alternate so that drift on the machine hits both alike.

* fsmemory: ``examples/serverless_handler.py`` (``KnowledgeMemory`` on a fresh scratch
  folder with an ``FsspecBackend`` snapshot): restore, two saves (deltas; a fold once
  ``compact_after`` deltas wait or they pass a quarter of the base).
* with an embedder (unless ``--no-embedder``): the same handler, its ``KnowledgeMemory``
  built with ``embedder=`` a fixed random projection of the hashed words (384
  dimensions, dense, deterministic, no model to load; it counts its calls and the texts
  it embeds), on a snapshot of its own seeded with the embedder (so its base carries
  the vectors). Hybrid recall needs NumPy, and the worker does not import it ahead: the
  handler's process pays its import inside the invocation's wall time (an embedder
  running a local model has it loaded anyway; one calling an API may not), where
  fsmemory does it; what is left of it after the restore (all of it, unless the restore
  imported it) is timed as a phase of its own.
* with ``--compare CHECKOUT``: the same handler on the fsmemory of another checkout
  (e.g. a ``git worktree`` of an earlier commit), on a snapshot of its own seeded by
  that version, alternating with the others in the same run (and, unless
  ``--no-embedder``, that checkout's handler with the embedder too).
* boto3: ``GetObject`` of one JSON blob, ``json.loads``, append, ``json.dumps``,
  ``PutObject`` (two requests; no merge of concurrent writers: the last one wins).

The snapshot is seeded the way a user's first save makes one: a folder holding the
memory (searched once, so its index cache and, with the embedder, its vectors are
written) saved as the first base.

Before each round the bytecode of every module the workers import from a source tree
(each fsmemory checkout, the handler, this file) is brought up to date (``compileall``),
and the workers run this file with ``-m`` (as a module, from its ``.pyc``), as a
deployed function's package is: with ``PYTHONDONTWRITEBYTECODE`` set (as here), a module
edited since its ``.pyc`` was written, and a script run by its path, are compiled again
by every fresh process, inside its wall time (this file alone takes 6-10 ms to
compile), and in a shared work tree a module edited in the middle of a run would be
compiled by every invocation after the edit and by none before it. Installed packages
(boto3, obstore, NumPy) have their bytecode.

Printed: wall time per invocation (process start to exit, as the platform bills it), the
time inside the process, the CPU time of the process (user + system, its threads
included: steadier than the wall on a busy machine), requests per invocation and the
max/median over the invocations in a row; bytes uploaded per invocation (median, mean,
and the mean as a share of the base each invocation restored), the sequential round
trips of the restore (the requests the handler's thread sent one after another, plus the
most any fetching thread sent; and, by the clock, the longest chain of requests each
sent after the previous one answered, which also counts a fetch whose thread started
after another fetch's reply came back), the first ``recall()`` after the restore; then
where fsmemory's time goes: each phase's median beside the slowest invocation's (with
the time outside the process's own code: interpreter start and exit), every invocation's
wall and restore time in order, the invocations that folded, and the median restore of
the quarter of invocations with the fewest deltas waiting beside the quarter with the
most (a restore fetches every waiting delta, one request each). With the embedder: its
calls and texts per invocation (those for stored entries apart: after a restore there
should be none), the bytes each save uploads beside those of the handler without an
embedder, and the ratio of the wall times (and, not a target, of the wall less the
phase that imported NumPy: what is left when the embedder imports NumPy itself, as the
OpenAI client does once NumPy is installed, and sentence-transformers and fastembed
do). Nothing is asserted.
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


class ProjectionEmbedder:
    """A fixed random projection of the hashed words of a text (dense, deterministic,
    no model to load): each word adds its own pseudo-random vector. Counts its calls,
    the texts it embedded and the time spent in it."""

    name = "projection"
    dimension = 384

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []
        self.spent = 0.0
        self._words: dict[str, list[int]] = {}

    def __call__(self, texts: Any) -> list[list[float]]:
        import hashlib
        import re

        start = time.perf_counter()
        self.calls += 1
        self.texts.extend(texts)
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for word in re.findall(r"\w+", text.lower()):
                signs = self._words.get(word)
                if signs is None:
                    digest = hashlib.shake_256(word.encode()).digest(self.dimension)
                    signs = self._words[word] = [byte - 128 for byte in digest]
                vec = [v + s for v, s in zip(vec, signs, strict=True)]
            out.append(vec)
        self.spent += time.perf_counter() - start
        return out


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
    embedder = ProjectionEmbedder() if cfg.get("embedder") else None
    if embedder is not None:
        # the README's handler, its memory built with an embedder
        plain = example.KnowledgeMemory

        def with_embedder(*args: Any, **kwargs: Any) -> Any:
            return plain(*args, embedder=embedder, **kwargs)

        example.KnowledgeMemory = with_embedder  # type: ignore[assignment,misc]

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
        if embedder is not None:
            # hybrid recall needs NumPy: the import the handler waits for after the
            # restore (none when the restore imported it), still inside the invocation
            t = time.perf_counter()
            import numpy  # noqa: F401

            phases["import NumPy (after the restore)"] = time.perf_counter() - t
        replica = memory._replica
        assert replica is not None
        (observed,) = spans
        restore_trips = observed.sequential()
        restore_chain = observed.chained()
        base_bytes = len(replica._state.base or b"")
        saving = [0.0]
        save_bytes: list[int] = []
        save = replica.save

        def timed_save() -> int:
            start, sent = time.perf_counter(), observed.put_bytes
            try:
                return save()
            finally:
                saving[0] += time.perf_counter() - start
                if observed.put_bytes > sent:
                    save_bytes.append(observed.put_bytes - sent)

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
    embedded: dict[str, Any] = {}
    if embedder is not None:
        new = {cfg["query"], *(fact["content"] for fact in cfg["facts"])}
        embedded = {
            "calls": embedder.calls,
            "texts": len(embedder.texts),
            "stored": sum(text not in new for text in embedder.texts),
            "ms": _ms(embedder.spent),
        }
    return {
        "inside_ms": _ms(time.perf_counter() - T0),
        "requests": len(requests),
        "phases": {k: _ms(v) for k, v in phases.items()},
        "folds": memory._replica.folds if memory._replica else 0,
        "uploaded": observed.put_bytes,
        "save_bytes": save_bytes,
        "base": base_bytes,
        "trips": restore_trips,
        "chain": restore_chain,
        "embedded": embedded,
        "numpy": "numpy" in sys.modules,
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

    embedder = ProjectionEmbedder() if cfg.get("embedder") else None
    KnowledgeMemory(cfg["folder"], max_log_days=100000, embedder=embedder).recall("seed")
    url = f"s3://{BUCKET}/users/{cfg['user']}.snapshot"
    backend = FsspecBackend(url, cfg["options"])
    km = KnowledgeMemory(cfg["folder"], backend=backend, embedder=embedder)
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
        _worker_command("seed", cfg), check=True, capture_output=True, text=True, cwd=HERE
    )
    return int(json.loads(out.stdout.strip().splitlines()[-1])["base"])


def _worker_command(kind: str, cfg: dict[str, Any]) -> list[str]:
    # -m, not the script's path: a module run with -m loads its cached bytecode, as a
    # platform imports a handler; a script path is compiled again by every process
    return [sys.executable, "-m", Path(__file__).stem, "--worker", kind, json.dumps(cfg)]


def compile_bytecode(libs: list[str | None]) -> None:
    """Write the ``.pyc`` of every module the workers import from source trees (each
    fsmemory checkout, the handler, this file) whose bytecode is missing or older than
    its source, as installing a package or building a function's package does."""
    import compileall

    for lib in {lib or str(ROOT) for lib in libs}:
        compileall.compile_dir(Path(lib) / "fsmemory", quiet=1)
    compileall.compile_file(ROOT / "examples" / "serverless_handler.py", quiet=1)
    compileall.compile_file(Path(__file__).resolve(), quiet=1)


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_worker(kind: str, cfg: dict[str, Any]) -> dict[str, Any]:
    t, cpu = time.perf_counter(), _children_cpu()
    out = subprocess.run(
        _worker_command(kind, cfg), check=True, capture_output=True, text=True, cwd=HERE
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_ms"] = _ms(time.perf_counter() - t)
    # the worker's CPU (its threads included): steadier than the wall on a busy machine
    result["cpu_ms"] = _ms(_children_cpu() - cpu)
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
        f"{statistics.median(r['cpu_ms'] for r in runs):.0f}" if "cpu_ms" in runs[0] else "-",
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


def _median_wall_less_numpy(runs: list[dict[str, Any]]) -> float:
    """The median wall time less the phase that imported NumPy (which an embedder
    such as the OpenAI client with NumPy installed, sentence-transformers or fastembed
    imports itself); its teardown at exit stays in."""
    return statistics.median(
        r["wall_ms"] - r["phases"].get("import NumPy (after the restore)", 0.0) for r in runs
    )


def _median_cpu(runs: list[dict[str, Any]]) -> float:
    return float(statistics.median(r["cpu_ms"] for r in runs))


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
    parser.add_argument(
        "--no-embedder",
        action="store_true",
        help="leave out the handler with an embedder",
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
    from _bytecode import stale_bytecode_note

    for lib in {args.compare or str(ROOT), str(ROOT)}:
        note = stale_bytecode_note(str(Path(lib) / "fsmemory"))
        if note:
            print(f"{lib}: {note}\n")
    from fsmemory import _jsonutil
    from fsmemory.fs.s3 import S3Root
    from fsmemory.testing.cloud_services import start_moto

    kinds = ["fsmemory"]
    if not args.no_embedder:
        kinds.append("fsmemory-embedder")
    if args.s3fs:
        kinds.append("fsmemory-s3fs")
    if args.compare:
        kinds.append("fsmemory-before")
        if not args.no_embedder:
            kinds.append("fsmemory-embedder-before")
    kinds.append("boto3")
    libs = {kind: args.compare if kind.endswith("-before") else None for kind in kinds}
    service = start_moto()
    try:
        options = service.s3_storage_options()
        S3Root.from_url(f"s3://{BUCKET}", options).fs.mkdir(BUCKET)
        with tempfile.TemporaryDirectory() as tmp:
            files, document = build_data(entries, Path(tmp) / "source")
            bases = {}
            for kind in kinds[:-1]:
                cfg = {
                    "options": options,
                    "user": f"{USER}-{kind}",
                    "lib": libs[kind],
                    "embedder": kind in EMBEDDER_KINDS,
                }
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
                compile_bytecode(list(libs.values()))
                for kind in kinds:
                    forced = {"client": "s3fs"} if kind == "fsmemory-s3fs" else {}
                    cfg = {
                        "options": {**options, **forced},
                        "user": f"{USER}-{kind}",
                        "lib": libs[kind],
                        "embedder": kind in EMBEDDER_KINDS,
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
    report(kinds, runs)


NAMES = {
    "fsmemory": "fsmemory handler",
    "fsmemory-embedder": "fsmemory handler, with an embedder",
    "fsmemory-s3fs": "fsmemory handler, s3fs forced",
    "fsmemory-before": "fsmemory handler, --compare checkout",
    "fsmemory-embedder-before": "fsmemory handler, with an embedder, --compare checkout",
}
#: the handlers built with an embedder, and the same handler without one (same checkout)
EMBEDDER_KINDS = {"fsmemory-embedder": "fsmemory", "fsmemory-embedder-before": "fsmemory-before"}


def _steady_saves(runs: list[dict[str, Any]]) -> list[int]:
    """Bytes uploaded by each save of the invocations that did not fold."""
    return [b for r in runs if not r["folds"] for b in r["save_bytes"]]


def embedder_rows(runs: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    """The handler with an embedder beside the same handler without one."""
    rows = []
    for kind in ("fsmemory", *(k for k in EMBEDDER_KINDS if k in runs)):
        plain = runs[EMBEDDER_KINDS.get(kind, "fsmemory")]
        got = runs[kind]
        emb = [r["embedded"] for r in got]
        wall = [r["wall_ms"] for r in got]
        saves = _steady_saves(got)
        rows.append(
            [
                NAMES[kind],
                f"{statistics.median(e['calls'] for e in emb):.0f}" if emb[0] else "-",
                f"{statistics.median(e['texts'] for e in emb):.0f}" if emb[0] else "-",
                f"{max(e['stored'] for e in emb)}" if emb[0] else "-",
                f"{statistics.median(e['ms'] for e in emb):.1f}" if emb[0] else "-",
                f"{statistics.median(r['requests'] for r in got):.0f} (max "
                f"{max(r['requests'] for r in got)})",
                f"{statistics.median(r['trips'] for r in got):.0f} (max "
                f"{max(r['trips'] for r in got)})",
                f"{statistics.median(r['uploaded'] for r in got) / 1024:.1f} / "
                f"{statistics.mean(r['uploaded'] for r in got) / 1024:.1f}",
                f"{statistics.median(saves):.0f}" if saves else "-",
                f"{statistics.median(wall):.0f}",
                f"{max(wall) / statistics.median(wall):.2f}x",
                f"{statistics.median(wall) / _median_wall(plain):.2f}x",
                f"{statistics.median(r['cpu_ms'] for r in got):.0f}",
                f"{_median_cpu(got) / _median_cpu(plain):.2f}x",
                "yes" if all(r["numpy"] for r in got) else "no",
            ]
        )
    return rows


def slowest_rows(runs: dict[str, list[dict[str, Any]]], kinds: list[str]) -> list[list[str]]:
    """Each phase's median beside the slowest invocation's, per handler; the time
    outside the process's own code (interpreter start and exit) is wall - in-process."""
    slow = {k: max(runs[k], key=lambda r: r["wall_ms"]) for k in kinds}
    phases = list(max((runs[k][0]["phases"] for k in kinds), key=len))
    rows = []
    for phase in ["wall", "outside the process's code (start, exit)", *phases]:

        def value(r: dict[str, Any], phase: str = phase) -> float:
            if phase == "wall":
                return float(r["wall_ms"])
            if phase.startswith("outside"):
                return float(r["wall_ms"] - r["inside_ms"])
            return float(r["phases"].get(phase, 0.0))

        row = [phase]
        for k in kinds:
            row += [
                f"{statistics.median(value(r) for r in runs[k]):.1f}",
                f"{value(slow[k]):.1f}",
            ]
        rows.append(row)
    rows.append(
        ["which invocation (1-based), folds"]
        + [
            cell
            for k in kinds
            for cell in ("-", f"#{runs[k].index(slow[k]) + 1}, {slow[k]['folds']} fold(s)")
        ]
    )
    return rows


def report(kinds: list[str], runs: dict[str, list[dict[str, Any]]]) -> None:
    """Print the tables."""
    fs_runs, b3_runs = runs["fsmemory"], runs["boto3"]
    header = [
        "handler",
        "wall ms (median)",
        "in-process ms",
        "CPU ms (median)",
        "max/median wall",
        "requests/invocation",
        "max requests",
        "max/median requests",
    ]
    fs_kinds = [k for k in kinds if k != "boto3"]
    table(
        header,
        [summarize(NAMES[k], runs[k]) for k in fs_kinds] + [summarize("boto3 one blob", b3_runs)],
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
        [upload_rows(NAMES[k], runs[k]) for k in fs_kinds],
    )
    with_embedder = "fsmemory-embedder" in runs
    if with_embedder:
        print(
            f"\nWith an embedder ({ProjectionEmbedder.dimension}-d fixed random projection, "
            "the snapshot seeded with its vectors); embedder columns per invocation, texts "
            "for stored entries = texts other than the query and the two new facts:"
        )
        table(
            [
                "handler",
                "embedder calls",
                "texts embedded",
                "texts for stored entries (max)",
                "embedder ms",
                "requests",
                "restore round trips",
                "KiB uploaded (median / mean)",
                "bytes per save, no fold (median)",
                "wall ms (median)",
                "max/median wall",
                "wall / without an embedder",
                "CPU ms (median)",
                "CPU / without an embedder",
                "NumPy loaded",
            ],
            embedder_rows(runs),
        )
    ratio = _median_wall(fs_runs) / _median_wall(b3_runs)
    inside = statistics.median(r["inside_ms"] for r in fs_runs) / statistics.median(
        r["inside_ms"] for r in b3_runs
    )
    max_wall = max(r["wall_ms"] for r in fs_runs) / _median_wall(fs_runs)
    uploaded = [r["uploaded"] for r in fs_runs]
    share = statistics.mean(r["uploaded"] / r["base"] for r in fs_runs)
    recall = statistics.median(r["phases"]["first recall() after the restore"] for r in fs_runs)
    embedder_targets = []
    if with_embedder:
        emb_runs = runs["fsmemory-embedder"]
        extra = statistics.median(_steady_saves(emb_runs)) - statistics.median(
            _steady_saves(fs_runs)
        )
        limit = ProjectionEmbedder.dimension * 2 + 1024
        embedder_targets = [
            [
                "with an embedder: texts embedded for stored entries (max per invocation)",
                f"{max(r['embedded']['stored'] for r in emb_runs)}",
                "0",
            ],
            [
                "with an embedder / without, wall (median)",
                f"{_median_wall(emb_runs) / _median_wall(fs_runs):.2f}x",
                "<= 1.3x",
            ],
            [
                "  the same, the wall less NumPy's import (what an embedder that imports "
                "NumPy itself leaves: not a target)",
                f"{_median_wall_less_numpy(emb_runs) / _median_wall(fs_runs):.2f}x",
                "-",
            ],
            [
                "with an embedder / without, CPU of the process (median)",
                f"{_median_cpu(emb_runs) / _median_cpu(fs_runs):.2f}x",
                "(the wall's target, on CPU)",
            ],
            [
                "save of one new entry: bytes with an embedder - without (median)",
                f"{extra:+.0f} B",
                f"<= {ProjectionEmbedder.dimension} x 2 + 1024 = {limit} B",
            ],
            [
                f"with an embedder: max / median wall over {len(emb_runs)} in a row",
                f"{max(r['wall_ms'] for r in emb_runs) / _median_wall(emb_runs):.2f}x",
                "<= 2x",
            ],
        ]
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
            *embedder_targets,
        ],
    )
    shown: list[str] = [k for k in ("fsmemory", "fsmemory-embedder") if k in runs]
    table(
        ["fsmemory phase (ms)"] + [cell for k in shown for cell in (f"{k} median", f"{k} slowest")],
        slowest_rows(runs, shown),
    )
    print("\ninvocations that folded (uploaded a new base):")
    if not any(r["folds"] for k in fs_kinds for r in runs[k]):
        print("  none")
    for kind in fs_kinds:
        med = _median_wall(runs[kind])
        for n, r in enumerate(runs[kind], 1):
            if r["folds"]:
                print(
                    f"  {kind} #{n}: wall {r['wall_ms']:.0f} ms ({r['wall_ms'] / med:.2f}x the "
                    f"median), saves {r['phases']['  of which snapshot saves (fold + delta)']:.0f}"
                    f" ms, uploaded {r['uploaded'] / 1e6:.2f} MB"
                )
    print("wall ms per invocation, in order:")
    for kind in kinds:
        print(f"  {kind}:", [round(r["wall_ms"]) for r in runs[kind]])
    print("restore ms per invocation, in order:")
    for kind in fs_kinds:
        print(f"  {kind}:", [round(r["phases"]["restore"]) for r in runs[kind]])
    print("restore ms (median) by the deltas waiting (requests), fewest vs most quarter:")
    for kind in fs_kinds:
        ordered = sorted(runs[kind], key=lambda r: r["requests"])
        quarter = max(1, len(ordered) // 4)
        fewest, most = ordered[:quarter], ordered[-quarter:]
        print(
            f"  {kind}: {statistics.median(r['phases']['restore'] for r in fewest):.0f} ms "
            f"({fewest[0]['requests']}-{fewest[-1]['requests']} requests) vs "
            f"{statistics.median(r['phases']['restore'] for r in most):.0f} ms "
            f"({most[0]['requests']}-{most[-1]['requests']} requests)"
        )
    print("requests per invocation, in order:")
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
