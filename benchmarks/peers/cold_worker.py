"""Fresh-process measurements of ``benchmarks/run.py`` (fsmemory or selectools).

    python benchmarks/peers/cold_worker.py MODE '{"system": "fsmemory", ...}'

Nothing but the standard library is imported before the timed import, so a mode sees
what a new process (a CLI call, a serverless cold start) pays. Modes:

* ``cold``: import, then ``open + first op`` (the memory's construction and its first
  ``recall`` or ``build_context``, import excluded), then the other op, and the peak
  resident memory of the whole process; op ``recall-nocache`` deletes the local
  folder's index cache file first (a first process ever; ``build_context`` keeps no
  cache file of its own);
* ``cold-floor``: the floor of a cold open (fsmemory's folder, any URL): list and fetch
  every file with one ``cat``, read + ``orjson.loads`` every log line; and one GET
  round trip of a 1 KiB object (the faster of fsspec's client and fsmemory's root).

Each prints one ``RESULT {json}`` line (see ``workloads.serve``).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

import workloads  # noqa: E402  (benchmarks/peers: standard library only)

MAX_ENTRIES = 10_000_000


def _rss_mb() -> float:
    """Peak resident memory of this process (MB). ``VmHWM`` rather than ``ru_maxrss``:
    a child spawned with vfork inherits its parent's peak in ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mode_cold(params: dict[str, Any]) -> dict[str, Any]:
    """Import, open + first ``op`` (``recall`` or ``context``), the other op, RSS."""
    first_op = params["op"]
    if first_op == "recall-nocache":
        # The first process ever: no index cache file yet (deleted before timing).
        first_op = "recall"
        Path(params["url"], ".fsmemory-cache.index").unlink(missing_ok=True)
    t0 = time.perf_counter()
    if params["system"] == "fsmemory":
        from fsmemory import KnowledgeMemory

        t1 = time.perf_counter()
        km: Any = KnowledgeMemory(params["url"], storage_options=params.get("storage_options"))

        def recall() -> object:
            return km.recall("python", limit=5)

    else:
        from selectools.knowledge import KnowledgeMemory as Peer
        from selectools.toolbox.memory_tools import make_recall_tool

        t1 = time.perf_counter()
        km = Peer(directory=params["url"], max_entries=MAX_ENTRIES)
        tool = make_recall_tool(km).function

        def recall() -> object:
            return tool(query="python", limit="5")

    if first_op == "recall":
        recall()
    else:
        km.build_context()
    t2 = time.perf_counter()
    if first_op == "recall":
        km.build_context()
    else:
        recall()
    return {"import": (t1 - t0) * 1000, "first": (t2 - t1) * 1000, "rss_mb": _rss_mb()}


def mode_cold_floor(params: dict[str, Any]) -> dict[str, Any]:
    """List + fetch every file in one ``cat_ranges``, parse every log line; one 1 KiB GET."""
    import fsspec
    import orjson

    from fsmemory.implementations import register

    register()
    options = dict(params.get("storage_options") or {})
    # fsspec's filesystem takes the options without fsmemory's route choice
    plain = {k: v for k, v in options.items() if k != "client"}
    fs, path = fsspec.url_to_fs(params["url"], **plain)
    t0 = time.perf_counter()
    names = [p for p in fs.find(path) if not p.rsplit("/", 1)[-1].startswith(".")]
    # cat_ranges from 0: one GET per object (s3fs's whole-object cat sends a HEAD first)
    blobs = fs.cat_ranges(names, [0] * len(names), [None] * len(names))
    data = dict(zip(names, blobs, strict=True))
    t1 = time.perf_counter()
    for name, blob in data.items():
        if name.endswith(".jsonl"):
            for line in blob.splitlines():
                orjson.loads(line)
    t2 = time.perf_counter()
    probe = f"{path.rstrip('/')}/floor-probe.bin"
    fs.pipe_file(probe, os.urandom(1024))

    def median_ms(get: Any) -> float:
        get()  # a warm connection
        times = []
        for _ in range(9):
            g0 = time.perf_counter()
            get()
            times.append((time.perf_counter() - g0) * 1000)
        return sorted(times)[len(times) // 2]

    # One GET round trip, the faster of two clients: fsspec's (a ranged read from 0, no
    # HEAD first) and fsmemory's own root (on S3 through obstore).
    from fsmemory import open_root

    root = open_root(params["url"], options)
    get_fsspec = median_ms(lambda: fs.cat_ranges([probe], [0], [None]))
    get_root = median_ms(lambda: root.read_bytes("floor-probe.bin"))
    fs.rm_file(probe)
    return {
        "fetch": (t1 - t0) * 1000,
        "parse": (t2 - t1) * 1000,
        "get": min(get_fsspec, get_root),
        "get_fsspec": get_fsspec,
        "get_root": get_root,
        "bytes": sum(len(v) for v in data.values()),
    }


if __name__ == "__main__":
    workloads.serve({"cold": mode_cold, "cold-floor": mode_cold_floor})
