"""S3 cold open + first recall at 10k entries, fresh processes, against the raw floor.

    python benchmarks/bench_s3_cold.py [--rounds N] [--size N] [--base PATH]

One moto server; one memory of ``--size`` entries over 20 daily logs (its index cache
file written by a first open). Then ``--rounds`` rounds, each running once, in a fresh
process and in alternating order:

* ``fsmemory (obstore)``: ``KnowledgeMemory(url, storage_options)`` + ``recall`` (the
  default route);
* ``fsmemory (s3fs forced)``: the same with ``client="s3fs"`` (what the fallback costs);
* ``fsmemory at --base``: the same code path of another checkout (e.g. the commit
  before a change, through its own ``benchmarks/peers/cold_worker.py``);
* ``floor: obstore list + cache GET``: obstore directly (import included), the
  listing of the memory and the GET of its index cache file sent together (two
  threads) -- the requests a cached cold open cannot do without.

Times exclude ``import fsmemory`` (as ``benchmarks/run.py`` does) but include importing
the client library. Prints one Markdown table of medians and ratios to the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

RESULT = "RESULT "

FLOOR = """
import json, sys, threading, time
params = json.loads(sys.argv[1])
t0 = time.perf_counter()
import obstore
from obstore.store import S3Store
store = S3Store(params["bucket"], endpoint=params["endpoint"], access_key_id="testing",
                secret_access_key="testing", region="us-east-1",
                client_options={"allow_http": True}, retry_config={"max_retries": 0})
box = {}
def get():
    box["cache"] = bytes(obstore.get(store, params["prefix"] + "/.fsmemory-cache.index").bytes())
thread = threading.Thread(target=get)
thread.start()
pages = obstore.list(store, params["prefix"] + "/", chunk_size=1000)
listing = [o for batch in pages for o in batch]
thread.join()
t1 = time.perf_counter()
assert listing and box["cache"]
print("RESULT " + json.dumps({"first": (t1 - t0) * 1000, "files": len(listing)}))
"""


def _run(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT):
            result: dict[str, Any] = json.loads(line[len(RESULT) :])
            return result
    raise RuntimeError(f"{argv[:3]} failed: {done.stderr[-2000:]}")


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--base", type=Path, default=None)
    args = parser.parse_args()

    from fsmemory.testing.cloud_services import start_moto

    moto = start_moto()
    try:
        options = moto.s3_storage_options()
        from fsmemory.fs.s3 import S3Root

        bucket = "bench-cold"
        S3Root.from_url(f"s3://{bucket}", options).fs.mkdir(bucket)
        url = f"s3://{bucket}/mem"
        py = sys.executable
        gen = {"size": args.size, "now": time.time(), "url": url, "storage_options": options}
        _run([py, str(HERE / "peers" / "fsmemory_worker.py"), "cold-gen", json.dumps(gen)])
        cold = str(HERE / "peers" / "cold_worker.py")
        params = {"system": "fsmemory", "url": url, "op": "recall"}
        systems: dict[str, list[str]] = {
            "fsmemory (obstore)": [
                py,
                cold,
                "cold",
                json.dumps({**params, "storage_options": {**options, "client": "obstore"}}),
            ],
            "fsmemory (s3fs forced)": [
                py,
                cold,
                "cold",
                json.dumps({**params, "storage_options": {**options, "client": "s3fs"}}),
            ],
            "floor: obstore list + cache GET": [
                py,
                "-c",
                FLOOR,
                json.dumps(
                    {"bucket": bucket, "endpoint": options["client_kwargs"]["endpoint_url"]}
                    | {"prefix": "mem"}
                ),
            ],
        }
        if args.base is not None:
            base_worker = str(args.base / "benchmarks" / "peers" / "cold_worker.py")
            systems[f"fsmemory at {args.base.name} (before)"] = [
                py,
                base_worker,
                "cold",
                json.dumps({**params, "storage_options": options}),
            ]
        _run(systems["fsmemory (obstore)"])  # writes the index cache file
        times: dict[str, list[float]] = {name: [] for name in systems}
        env = {k: v for k, v in os.environ.items() if k != "FSMEMORY_S3_CLIENT"}
        names = list(systems)
        for i in range(args.rounds):
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                times[name].append(_run(systems[name], env)["first"])
    finally:
        moto.stop()
    floor = statistics.median(times["floor: obstore list + cache GET"])
    print(f"\nS3 cold open + first recall at {args.size:,} entries (moto, {args.rounds} rounds)\n")
    print("| system | median ms | min ms | / floor |")
    print("|---|---|---|---|")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"| {name} | {med:.1f} | {min(values):.1f} | {med / floor:.2f}x |")


if __name__ == "__main__":
    main()
