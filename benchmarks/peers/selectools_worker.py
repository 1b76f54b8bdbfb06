"""selectools 1.3.0's side of ``benchmarks/run.py``: one workload per process, JSON out.

Runs in the peers venv (``benchmarks/.venv-peers``). Usage::

    python benchmarks/peers/selectools_worker.py MODE '{"param": ...}'

selectools' ``KnowledgeMemory`` (file mode, the default ``FileKnowledgeStore``) keeps
``entries.jsonl`` (one ``json.dumps`` record per entry, rewritten whole with fsync on
every save), ``YYYY-MM-DD.log`` text lines and ``MEMORY.md`` (``- [category] text``).
A memory of N entries is written in exactly that format (:func:`memory_files`), so the
per-call cost at N is measured without paying the O(N^2) of N ``remember()`` calls.

``max_entries`` is raised to 10,000,000 everywhere: with the default (50) selectools
evicts down to 50 entries and there would be no "memory of N entries" to measure.
Its recall is the ``recall`` tool of ``selectools.toolbox.memory_tools`` (limit 5).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import workloads  # benchmarks/peers, the script's own folder
from selectools.knowledge import KnowledgeMemory, _pack_directory
from selectools.toolbox.memory_tools import make_recall_tool

MAX_ENTRIES = 10_000_000


def memory_files(facts: Iterable[workloads.Fact]) -> dict[str, bytes]:
    """The files selectools' file mode holds after remembering ``facts`` in order."""
    rng = random.Random(99)
    entries: list[str] = []
    logs: dict[str, list[str]] = {}
    md: list[str] = []
    for fact in facts:
        created = datetime.fromtimestamp(fact.timestamp, UTC)
        stamp = created.isoformat()
        record = {
            "id": uuid.UUID(int=rng.getrandbits(128), version=4).hex,
            "content": fact.content,
            "category": fact.category,
            "importance": fact.importance,
            "persistent": fact.persistent,
            "ttl_days": None,
            "created_at": stamp,
            "updated_at": stamp,
            "metadata": {},
        }
        entries.append(json.dumps(record) + "\n")
        logs.setdefault(f"{created:%Y-%m-%d}.log", []).append(
            f"[{created:%Y-%m-%d %H:%M:%S}] [{fact.category}] {fact.content}\n"
        )
        if fact.persistent:
            md.append(f"- [{fact.category}] {fact.content}\n")
    files = {name: "".join(lines).encode() for name, lines in logs.items()}
    files["entries.jsonl"] = "".join(entries).encode()
    if md:
        files["MEMORY.md"] = "".join(md).encode()
    return files


def fill(folder: Path, files: dict[str, bytes]) -> None:
    """Write pre-generated files into a folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)


def mode_memory(params: dict[str, Any]) -> dict[str, Any]:
    """remember / recall tool (limit 5) / build_context at a pre-generated size."""
    size: int = params["size"]
    repeat: dict[str, int] = params["repeat"]
    budget: float = params.get("budget_s", 60.0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mem"
        fill(folder, memory_files(workloads.make_facts(size, now=params["now"])))
        out: dict[str, Any] = {}
        t0 = time.perf_counter()
        km = KnowledgeMemory(directory=str(folder), max_entries=MAX_ENTRIES)
        recall = make_recall_tool(km).function
        recall(query="python", limit="5")
        out["cold"] = [(time.perf_counter() - t0) * 1000]
        out["entries"] = km.store.count()
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
            lambda i: recall(query=queries[i], limit="5"), repeat["recall"], budget_s=budget
        )
        out["context"] = workloads.sample(
            lambda i: km.build_context(), repeat["context"], budget_s=budget
        )
        return out


def mode_dedupe(params: dict[str, Any]) -> dict[str, Any]:
    """``KnowledgeMemory(dedupe=True)`` (difflib, window 200, threshold 0.9): one
    remember() per probe, 1k entries existing."""
    existing, probes = workloads.dedupe_corpus(
        params["kind"], existing=params["existing"], probes=params["probes"]
    )
    now = params["now"]
    facts = [
        workloads.Fact(text, "general", False, 0.5, now - 86400 + i)
        for i, text in enumerate(existing)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mem"
        fill(folder, memory_files(facts))
        km = KnowledgeMemory(
            directory=str(folder),
            max_entries=MAX_ENTRIES,
            dedupe=True,
            dedupe_window=workloads.DEDUPE_WINDOW,
        )
        rejected = 0

        def call(i: int) -> None:
            nonlocal rejected
            if not km.remember(probes[i]):
                rejected += 1

        samples = workloads.sample(call, len(probes), budget_s=params.get("budget_s", 60.0))
        return {"samples": samples, "rejected": rejected, "how": "KnowledgeMemory(dedupe=True)"}


def count_entries(root: str) -> int:
    """Entries a fresh instance's store holds."""
    return int(KnowledgeMemory(directory=root, max_entries=MAX_ENTRIES).store.count())


def mode_concurrency(params: dict[str, Any]) -> dict[str, Any]:
    """``procs`` processes x ``per`` remember() on one directory, started together."""
    return workloads.run_concurrency(Path(__file__), params, count_entries)


def mode_concurrency_child(params: dict[str, Any]) -> dict[str, Any]:
    """One of the concurrent writers."""
    km = KnowledgeMemory(directory=params["root"], max_entries=MAX_ENTRIES)
    return workloads.remember_many(km, params)


class FileBackend:
    """selectools' ``KnowledgeBackend`` protocol on a local file (atomic replace)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load_bytes(self) -> bytes | None:
        """The stored blob, or None."""
        return self.path.read_bytes() if self.path.exists() else None

    def save_bytes(self, data: bytes) -> None:
        """Replace the stored blob."""
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, self.path)


def mode_snapshot(params: dict[str, Any]) -> dict[str, Any]:
    """Restore time and bytes uploaded per remember() with a blob backend on a file."""
    size: int = params["size"]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        fill(source, memory_files(workloads.make_facts(size, now=params["now"])))
        snaps = Path(tmp) / "snapshots"
        snaps.mkdir()
        blob = _pack_directory(str(source))
        backend = FileBackend(snaps / "user.snapshot")
        backend.save_bytes(blob)
        restore = []
        for k in range(params["restores"]):
            t0 = time.perf_counter()
            km = KnowledgeMemory(
                directory=str(Path(tmp) / f"restore-{k}"), backend=backend, max_entries=MAX_ENTRIES
            )
            restore.append((time.perf_counter() - t0) * 1000)
        entries = km.store.count()
        uploaded: list[int] = []
        latency: list[float] = []
        for f in workloads.fresh_facts(params["saves"], start=size):
            before = workloads.file_states(snaps)
            t0 = time.perf_counter()
            km.remember(f.content, category=f.category, persistent=f.persistent)
            latency.append((time.perf_counter() - t0) * 1000)
            uploaded.append(workloads.written_since(before, workloads.file_states(snaps)))
        return {
            "restore": restore,
            "uploaded": uploaded,
            "save": latency,
            "blob": len(blob),
            "entries": entries,
        }


def mode_cold_gen(params: dict[str, Any]) -> dict[str, Any]:
    """Write a memory of ``size`` entries into the folder ``url`` (selectools' format)."""
    files = memory_files(workloads.make_facts(params["size"], now=params["now"]))
    fill(Path(params["url"]), files)
    return {"bytes": sum(len(v) for v in files.values()), "files": len(files)}


HANDLERS = {
    "cold-gen": mode_cold_gen,
    "memory": mode_memory,
    "dedupe": mode_dedupe,
    "concurrency": mode_concurrency,
    "concurrency-child": mode_concurrency_child,
    "snapshot": mode_snapshot,
}

if __name__ == "__main__":
    workloads.serve(HANDLERS)
