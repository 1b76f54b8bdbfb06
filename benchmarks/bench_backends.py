"""KnowledgeMemory on every backend: requests and time per operation vs the raw floor.

    python benchmarks/bench_backends.py [--quick] [--entries N]

Starts moto (S3), fake-gcs-server (GCS) and redis-server on 127.0.0.1, fills a memory
of N entries on each backend, then measures per operation the median time and the
number of requests (round trips), beside the backend's raw round-trip floor measured
in the same run: one ``pipe`` + ``cat`` of 1 KiB through the same fsspec filesystem.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

from fsmemory import KnowledgeMemory
from fsmemory.testing.requests import count_requests


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


def requests_of(km: KnowledgeMemory, fn: Callable[[], object]) -> str:
    try:
        with count_requests(km.root) as counter:
            fn()
    except TypeError:
        return "-"
    return str(len(counter))


def measure(name: str, url: str, options: dict[str, Any], entries: int, repeat: int) -> list[str]:
    km = KnowledgeMemory(url, storage_options=options)
    for i in range(entries):
        km.remember(f"fact {i} about project atlas and python", persistent=i % 2 == 0)
    km.recall("warm")
    fs = km.root.fs
    probe = f"{km.root.root}/floor-probe.bin"
    payload = os.urandom(1024)

    def floor() -> None:
        fs.pipe_file(probe, payload)
        fs.cat_file(probe)

    floor_ms = median_ms(floor, repeat)
    counter = iter(range(10**9))
    rows = []
    ops: list[tuple[str, Callable[[], object]]] = [
        ("remember()", lambda: km.remember(f"note {next(counter)}")),
        ("remember(persistent)", lambda: km.remember(f"fact {next(counter)}", persistent=True)),
        ("recall() warm", lambda: km.recall("atlas")),
        ("build_context() warm", km.build_context),
    ]
    for op, fn in ops:
        reqs = requests_of(km, fn)
        ms = median_ms(fn, repeat)
        rows.append([name, op, reqs, f"{ms:.2f}", f"{floor_ms:.2f}", f"{ms / floor_ms:.1f}x"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--entries", type=int, default=None)
    args = parser.parse_args()
    entries = args.entries or (100 if args.quick else 1000)
    repeat = 10 if args.quick else 30
    rows: list[list[str]] = []
    services: list[Any] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows += measure("local", f"{tmp}/mem", {}, entries, repeat)
            rows += measure(
                "memory://", f"memory://bench-{uuid.uuid4().hex[:8]}", {}, entries, repeat
            )
            from fsmemory.fs.s3 import S3Root
            from fsmemory.testing.cloud_services import start_fake_gcs, start_moto
            from fsmemory.testing.services import start_redis

            moto = start_moto()
            services.append(moto)
            s3 = moto.s3_storage_options()
            S3Root.from_url("s3://bench", s3).fs.mkdir("bench")
            rows += measure("s3 (moto)", "s3://bench/users/1", s3, entries, repeat)
            gcs_service = start_fake_gcs()
            services.append(gcs_service)
            gcs = gcs_service.gcs_storage_options()
            from fsmemory.fs.gcs import GCSRoot

            GCSRoot.from_url("gs://bench", gcs).fs.mkdir("bench")
            rows += measure("gcs (fake)", "gs://bench/users/1", gcs, entries, repeat)
            redis = start_redis()
            services.append(redis)
            rows += measure("redis", f"{redis.url}/0/users/1", {}, entries, repeat)
    finally:
        for service in services:
            service.stop()
    header = ["backend", "operation", "requests", "median ms", "floor pipe+cat 1KiB ms", "ratio"]
    print(f"\nKnowledgeMemory at {entries:,} entries (every 2nd persistent), n={repeat}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
