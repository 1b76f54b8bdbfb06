"""Serverless snapshots: bytes uploaded and time per save, and restore time.

    python benchmarks/bench_snapshot.py [--quick] [--no-s3]

For memories of 100 / 1k / 10k entries (every 2nd persistent) it prints, per backend
(a local file, and moto's S3 server started on 127.0.0.1):

* bytes uploaded per ``remember()`` save (fsmemory's delta) beside the seed's approach
  (the whole folder re-packed into one blob on every save);
* median time per ``remember()`` including the save;
* restore time of the whole memory beside the raw floor measured in the same run: one
  GET of the same number of bytes plus a JSON decode.

Nothing is asserted; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

import orjson

from fsmemory import KnowledgeMemory
from fsmemory.snapshot import FsspecBackend, SnapshotState, pack_archive


def build_memory(folder: Path, n: int) -> dict[str, bytes]:
    km = KnowledgeMemory(folder)
    for i in range(n):
        km.remember(
            f"fact {i}: the user mentioned project atlas and prefers python for scripts",
            category=f"cat{i % 8}",
            persistent=i % 2 == 0,
            importance=(i % 10) / 10,
        )
    return {i.path: km.root.read_bytes(i.path) for i in km.root.list("", recursive=True)}


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f}"


def run_backend(
    name: str, url_for: Any, options: dict[str, Any], sizes: list[int], saves: int
) -> list[list[str]]:
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            files = build_memory(Path(tmp) / "src", n)
            archive = pack_archive(files)
            url = url_for(n)
            backend = FsspecBackend(url, storage_options=options)
            backend.save_base(archive, folded=[], expected=SnapshotState(None))
            # restore, several times (fresh scratch folders)
            restore: list[float] = []
            floor: list[float] = []
            for k in range(5):
                t0 = time.perf_counter()
                KnowledgeMemory(
                    Path(tmp) / f"r{k}", backend=FsspecBackend(url, storage_options=options)
                )
                restore.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                raw = backend.root.read_bytes(f"{backend.objects}/{backend.load_state().base_name}")
                orjson.loads(raw)
                floor.append(time.perf_counter() - t0)
            km = KnowledgeMemory(
                Path(tmp) / "w", backend=FsspecBackend(url, storage_options=options)
            )
            sync = km._replica
            assert sync is not None
            per_save: list[int] = []
            latency: list[float] = []
            for i in range(saves):
                before = sync.bytes_uploaded
                t0 = time.perf_counter()
                km.remember(
                    f"new fact {i} from this invocation", category="context", persistent=i % 2 == 0
                )
                latency.append(time.perf_counter() - t0)
                per_save.append(sync.bytes_uploaded - before)
            rows.append(
                [
                    name,
                    f"{n:,}",
                    f"{len(archive):,}",
                    f"{statistics.median(per_save):,.0f}",
                    f"{len(archive) / statistics.median(per_save):,.0f}x",
                    median_ms(latency),
                    median_ms(restore),
                    median_ms(floor),
                    f"{statistics.median(restore) / statistics.median(floor):.2f}x",
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-s3", action="store_true")
    args = parser.parse_args()
    sizes = [100, 1000] if args.quick else [100, 1000, 10000]
    saves = 10 if args.quick else 30
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory() as snaps:
        rows += run_backend("local file", lambda n: f"{snaps}/u{n}.snapshot", {}, sizes, saves)
    if not args.no_s3:
        from fsmemory.fs.s3 import S3Root
        from fsmemory.testing.cloud_services import start_moto

        service = start_moto()
        try:
            options = service.s3_storage_options()
            S3Root.from_url("s3://bench", options).fs.mkdir("bench")
            rows += run_backend(
                "moto S3", lambda n: f"s3://bench/users/u{n}.snapshot", options, sizes, saves
            )
        finally:
            service.stop()
    header = [
        "backend",
        "entries",
        "seed: bytes/save (whole folder)",
        "fsmemory bytes/save",
        "ratio",
        "remember+save ms",
        "restore ms",
        "floor GET+decode ms",
        "restore/floor",
    ]
    print("\n| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
