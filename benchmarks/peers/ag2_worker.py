"""ag2 1.2.1's side of ``benchmarks/run.py``: the path-store workload, JSON out.

Runs in the peers venv (``benchmarks/.venv-peers``). Usage::

    python benchmarks/peers/ag2_worker.py store '{"backend": "sqlite", "n": 10000, ...}'

Backends map to ag2's stores of the same kind: ``memory`` -> ``MemoryKnowledgeStore``,
``local`` -> ``DiskKnowledgeStore``, ``sqlite`` -> ``SqliteKnowledgeStore``, ``redis`` ->
``RedisKnowledgeStore``. The workload is :func:`workloads.run_path_store`, the very code
that measures fsmemory's stores.
"""

from __future__ import annotations

import asyncio
import inspect
import tempfile
import uuid
from pathlib import Path
from typing import Any

import workloads  # benchmarks/peers, the script's own folder
from ag2 import knowledge


def mode_store(params: dict[str, Any]) -> dict[str, Any]:
    """The path-store workload on one of ag2's stores."""
    backend = params["backend"]

    async def go(tmp: Path) -> dict[str, Any]:
        if backend == "memory":
            store: Any = knowledge.MemoryKnowledgeStore()
        elif backend == "local":
            store = knowledge.DiskKnowledgeStore(str(tmp / "disk"))
        elif backend == "sqlite":
            store = knowledge.SqliteKnowledgeStore(str(tmp / "store.db"))
        elif backend == "redis":
            store = knowledge.RedisKnowledgeStore(
                params["redis_url"], key_prefix=f"ag2-bench-{uuid.uuid4().hex[:8]}"
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
            closing = getattr(store, "close", None)
            if closing is not None:
                result = closing()
                if inspect.isawaitable(result):
                    await result

    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(go(Path(tmp)))


HANDLERS = {"store": mode_store}

if __name__ == "__main__":
    workloads.serve(HANDLERS)
