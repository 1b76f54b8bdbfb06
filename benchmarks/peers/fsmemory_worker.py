"""fsmemory's side of ``benchmarks/run.py``: one workload per process, JSON out.

Runs in the project venv (``fsmemory`` importable from the repository). Usage::

    python benchmarks/peers/fsmemory_worker.py MODE '{"param": ...}'

Modes: ``memory`` (remember / recall / build_context / cold start at a memory size, on a
local folder or any URL, with the backend's raw round-trip floor), ``dedupe``,
``concurrency`` (+ ``concurrency-child``), ``snapshot``, ``store`` (the path store),
``export-gen``, ``export-floor``, ``export-run``, ``cold-gen`` (a memory for the
fresh-process workload of ``cold_worker.py``). Each prints one ``RESULT {json}`` line.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

import workloads  # noqa: E402  (benchmarks/peers, the script's own folder)

from fsmemory import KnowledgeMemory, StorageRoot, open_root  # noqa: E402
from fsmemory._jsonutil import dumps_line  # noqa: E402
from fsmemory.memory.entry import KnowledgeEntry  # noqa: E402
from fsmemory.memory.layout import MEMORY_FILE, TITLE, log_name_for  # noqa: E402
from fsmemory.memory.markdown import fact_line  # noqa: E402

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid(timestamp: float, rng: random.Random) -> str:
    """A ULID for ``timestamp`` with seeded random bits (same layout as fsmemory's ids)."""
    value = int(timestamp * 1000) << 80 | rng.getrandbits(80)
    return "".join(_CROCKFORD[(value >> (5 * k)) & 31] for k in range(25, -1, -1))


def memory_files(facts: Iterable[workloads.Fact]) -> dict[str, bytes]:
    """The files ``KnowledgeMemory`` would hold after remembering ``facts`` in order:
    daily JSONL logs of ``KnowledgeEntry.to_dict()`` records and MEMORY.md with the
    persistent ones by category (first-seen category order)."""
    rng = random.Random(99)
    logs: dict[str, list[bytes]] = {}
    sections: dict[str, list[str]] = {}
    for fact in facts:
        created = datetime.fromtimestamp(fact.timestamp, UTC)
        entry = KnowledgeEntry(
            id=_ulid(fact.timestamp, rng),
            content=fact.content,
            category=fact.category,
            persistent=fact.persistent,
            importance=fact.importance,
            created_at=created,
        )
        logs.setdefault(log_name_for(created), []).append(dumps_line(entry.to_dict()))
        if fact.persistent:
            sections.setdefault(fact.category, []).append(fact_line(fact.content))
    files = {name: b"".join(lines) for name, lines in logs.items()}
    if sections:
        body = "".join(
            f"\n## {cat}\n" + "".join(f"{b}\n" for b in bullets)
            for cat, bullets in sections.items()
        )
        files[MEMORY_FILE] = f"{TITLE}\n{body}".encode()
    return files


def fill(root: StorageRoot, files: dict[str, bytes]) -> None:
    """Write pre-generated files into a root (through fsmemory's storage layer)."""
    for name, data in files.items():
        root.write(name, data)


def _open(params: dict[str, Any], tmp: str) -> tuple[KnowledgeMemory, StorageRoot]:
    url = params.get("url") or str(Path(tmp) / "mem")
    url = url.replace("{uid}", uuid.uuid4().hex[:10])
    root = open_root(url, params.get("storage_options"))
    return KnowledgeMemory(root), root


def mode_memory(params: dict[str, Any]) -> dict[str, Any]:
    """remember / recall(limit=5) / build_context at a pre-generated memory size."""
    size: int = params["size"]
    repeat: dict[str, int] = params["repeat"]
    budget: float = params.get("budget_s", 60.0)
    with tempfile.TemporaryDirectory() as tmp:
        facts = workloads.make_facts(size, now=params["now"])
        files = memory_files(facts)
        km, root = _open(params, tmp)
        fill(root, files)
        out: dict[str, Any] = {}
        t0 = time.perf_counter()
        cold = KnowledgeMemory(root)
        cold.recall("python")
        out["cold"] = [(time.perf_counter() - t0) * 1000]
        out["entries"] = cold.stats()["entries"]
        km.recall("warm")
        km.build_context()
        new = workloads.fresh_facts(repeat["remember"] + 1, start=size)
        km.remember(new[-1].content, category=new[-1].category)

        def remember(i: int) -> None:
            f = new[i]
            km.remember(
                f.content, category=f.category, persistent=f.persistent, importance=f.importance
            )

        out["remember"] = workloads.sample(remember, repeat["remember"], budget_s=budget)
        queries = workloads.recall_queries(repeat["recall"])
        out["recall"] = workloads.sample(
            lambda i: km.recall(queries[i], limit=5), repeat["recall"], budget_s=budget
        )
        out["context"] = workloads.sample(
            lambda i: km.build_context(), repeat["context"], budget_s=budget
        )
        if params.get("floor"):
            fs = root.fs
            probe = root.full_path("floor-probe.bin")
            payload = os.urandom(1024)

            def floor(i: int) -> None:
                fs.pipe_file(probe, payload)
                fs.cat_file(probe)

            out["floor"] = workloads.sample(floor, repeat["recall"], budget_s=budget)
        if params.get("url"):
            root.delete_tree("")
        return out


# -- dedupe ----------------------------------------------------------------------------
def mode_dedupe(params: dict[str, Any]) -> dict[str, Any]:
    """remember() of each probe with near-duplicate rejection, 1k entries existing.

    Uses ``KnowledgeMemory(dedupe=True)`` when this fsmemory has it; otherwise the
    ``fsmemory.sanitizers.dedupe_against`` hook (window: the 200 most recent entries,
    threshold 0.9, as the seed's defaults) in front of ``remember()``.
    """
    existing, probes = workloads.dedupe_corpus(
        params["kind"], existing=params["existing"], probes=params["probes"]
    )
    accepts = inspect.signature(KnowledgeMemory).parameters
    with tempfile.TemporaryDirectory() as tmp:
        now = params["now"]
        facts = [
            workloads.Fact(text, "general", False, 0.5, now - 86400 + i)
            for i, text in enumerate(existing)
        ]
        root = open_root(str(Path(tmp) / "mem"))
        fill(root, memory_files(facts))
        rejected = 0
        if "dedupe" in accepts:
            how = "KnowledgeMemory(dedupe=True)"
            options: dict[str, Any] = {"dedupe": True}
            if "dedupe_window" in accepts:
                options["dedupe_window"] = workloads.DEDUPE_WINDOW
            if "dedupe_threshold" in accepts:
                options["dedupe_threshold"] = 0.9
            km = KnowledgeMemory(root, **options)
            km.recall("warm")

            def call(i: int) -> None:
                nonlocal rejected
                try:
                    if not km.remember(probes[i]):
                        rejected += 1
                except ValueError:
                    rejected += 1

        else:
            try:
                from fsmemory.sanitizers import dedupe_against
            except ImportError:
                return {"unavailable": "no KnowledgeMemory(dedupe=) nor fsmemory.sanitizers"}
            how = "dedupe_against hook + remember()"
            km = KnowledgeMemory(root)
            window = workloads.DEDUPE_WINDOW
            hook = dedupe_against(
                lambda: [e["content"] for e in km.get_recent_entries(days=36500, limit=window)],
                threshold=0.9,
            )
            km.recall("warm")

            def call(i: int) -> None:
                nonlocal rejected
                text = hook(probes[i])
                if text is None:
                    rejected += 1
                else:
                    km.remember(text)

        samples = workloads.sample(call, len(probes), budget_s=params.get("budget_s", 60.0))
        return {"samples": samples, "rejected": rejected, "how": how}


# -- concurrency -----------------------------------------------------------------------
def mode_concurrency(params: dict[str, Any]) -> dict[str, Any]:
    """``procs`` processes x ``per`` remember() on one local folder, started together."""
    return workloads.run_concurrency(Path(__file__), params, count_fsmemory)


def count_fsmemory(root: str) -> int:
    """Live entries a fresh instance sees."""
    return int(KnowledgeMemory(root).stats()["entries"])


def mode_concurrency_child(params: dict[str, Any]) -> dict[str, Any]:
    """One of the concurrent writers."""
    km = KnowledgeMemory(params["root"])
    return workloads.remember_many(km, params)


# -- snapshot --------------------------------------------------------------------------
def mode_snapshot(params: dict[str, Any]) -> dict[str, Any]:
    """Restore time and bytes uploaded per remember() with a snapshot backend on a local
    file (the serverless pattern: restore, remember, save)."""
    from fsmemory.snapshot import FsspecBackend, SnapshotState, pack_archive

    size: int = params["size"]
    with tempfile.TemporaryDirectory() as tmp:
        snaps = Path(tmp) / "snapshots"
        snaps.mkdir()
        url = str(snaps / "user.snapshot")
        archive = pack_archive(memory_files(workloads.make_facts(size, now=params["now"])))
        FsspecBackend(url).save_base(archive, folded=[], expected=SnapshotState(None))
        restore = []
        for k in range(params["restores"]):
            t0 = time.perf_counter()
            km = KnowledgeMemory(Path(tmp) / f"restore-{k}", backend=FsspecBackend(url))
            restore.append((time.perf_counter() - t0) * 1000)
        entries = km.stats()["entries"]
        new = workloads.fresh_facts(params["saves"], start=size)
        uploaded: list[int] = []
        latency: list[float] = []
        for f in new:
            before = workloads.file_states(snaps)
            t0 = time.perf_counter()
            km.remember(f.content, category=f.category, persistent=f.persistent)
            latency.append((time.perf_counter() - t0) * 1000)
            uploaded.append(workloads.written_since(before, workloads.file_states(snaps)))
        return {
            "restore": restore,
            "uploaded": uploaded,
            "save": latency,
            "blob": len(archive),
            "entries": entries,
        }


# -- path store ------------------------------------------------------------------------
def mode_store(params: dict[str, Any]) -> dict[str, Any]:
    """The path-store workload on one backend (memory, local, sqlite, redis)."""
    from fsmemory.store import (
        DiskKnowledgeStore,
        MemoryKnowledgeStore,
        RedisKnowledgeStore,
        SqliteKnowledgeStore,
    )

    backend = params["backend"]

    async def go(tmp: Path) -> dict[str, Any]:
        if backend == "memory":
            store: Any = MemoryKnowledgeStore(watch="none")
        elif backend == "local":
            store = DiskKnowledgeStore(tmp / "disk", watch="none")
        elif backend == "sqlite":
            store = SqliteKnowledgeStore(tmp / "store.db", watch="none")
        elif backend == "redis":
            store = RedisKnowledgeStore(
                params["redis_url"], prefix=f"b-{uuid.uuid4().hex[:8]}", watch="none"
            )
        else:
            raise ValueError(f"unknown backend {backend!r}")
        try:
            return await workloads.run_path_store(
                store,
                params["n"],
                list_repeat=params["list_repeat"],
                base="/bench",
                budget_s=params.get("budget_s", float("inf")),
            )
        finally:
            if backend == "redis":
                await store.delete("/", allow_root=True)
            await store.close()

    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(go(Path(tmp)))


# -- export ----------------------------------------------------------------------------
def mode_export_gen(params: dict[str, Any]) -> dict[str, Any]:
    """Write a memory of ``rows`` log lines into ``dir`` (for the export workload)."""
    files = memory_files(workloads.make_facts(params["rows"], now=params["now"], seed=3))
    files.pop(MEMORY_FILE, None)
    root = open_root(params["dir"])
    fill(root, files)
    return {"bytes": sum(len(v) for v in files.values()), "files": len(files)}


def mode_export_floor(params: dict[str, Any]) -> dict[str, Any]:
    """The raw floor: ``pyarrow.json.read_json`` of every log + one ``ParquetWriter``."""
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    files = sorted(Path(params["src"], "logs").glob("*.jsonl"))
    dest = Path(params["dest"])
    dest.mkdir(parents=True, exist_ok=True)
    schema = pj.read_json(files[0]).schema
    options = pj.ParseOptions(explicit_schema=schema)
    t0 = time.perf_counter()
    rows = 0
    with pq.ParquetWriter(dest / "floor.parquet", schema) as writer:
        for path in files:
            table = pj.read_json(path, parse_options=options)
            writer.write_table(table)
            rows += table.num_rows
    seconds = time.perf_counter() - t0
    shutil.rmtree(dest, ignore_errors=True)
    return {"seconds": seconds, "rows": rows}


def mode_export_run(params: dict[str, Any]) -> dict[str, Any]:
    """``fsmemory.export.export_parquet(src, dest, incremental=False)``."""
    try:
        from fsmemory.export import export_parquet
    except ImportError as exc:
        return {"unavailable": f"fsmemory.export: {exc}"}
    t0 = time.perf_counter()
    report = export_parquet(params["src"], params["dest"], incremental=False)
    seconds = time.perf_counter() - t0
    shutil.rmtree(params["dest"], ignore_errors=True)
    return {"seconds": seconds, "rows": report.rows}


# -- cold start ------------------------------------------------------------------------
def mode_cold_gen(params: dict[str, Any]) -> dict[str, Any]:
    """Write a memory of ``size`` entries at ``url`` (a folder or any URL)."""
    files = memory_files(workloads.make_facts(params["size"], now=params["now"]))
    fill(open_root(params["url"], params.get("storage_options")), files)
    return {"bytes": sum(len(v) for v in files.values()), "files": len(files)}


HANDLERS = {
    "cold-gen": mode_cold_gen,
    "memory": mode_memory,
    "dedupe": mode_dedupe,
    "concurrency": mode_concurrency,
    "concurrency-child": mode_concurrency_child,
    "snapshot": mode_snapshot,
    "store": mode_store,
    "export-gen": mode_export_gen,
    "export-floor": mode_export_floor,
    "export-run": mode_export_run,
}

if __name__ == "__main__":
    workloads.serve(HANDLERS)
