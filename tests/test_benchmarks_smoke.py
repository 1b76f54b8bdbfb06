"""The peer benchmark suite runs end to end in its tiny configuration (no timings checked).

``python benchmarks/run.py --smoke`` exercises every workload's code path for fsmemory
(memory, dedupe, concurrency, snapshot, path store, remote backends when their servers
start, export when pyarrow is installed) with tiny sizes and without the peers' venv,
writing into a temporary folder; ``bench_serverless.py`` runs at a tiny size too, its
embedder rows included. This keeps the benchmark code from rotting; the numbers
themselves are never asserted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"


def test_smoke_run_prints_every_table(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(RUN), "--smoke", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for title in (
        "## Memory on a local folder",
        "## Import cost",
        "## Cold start",
        "## Remote cold open",
        "## Dedupe",
        "## Concurrency",
        "## Snapshot",
        "## Path store",
        "## Remote backends",
        "## Export to Parquet",
        "## Targets",
    ):
        assert title in out, f"{title!r} missing from:\n{out[-3000:]}"
    assert "| remember() | 200 |" in out
    assert "concurrency: fsmemory keeps 100% of entries" in out
    assert "failed" not in done.stderr, done.stderr[-3000:]
    results = (tmp_path / "RESULTS.md").read_text()
    assert results.startswith("# Benchmarks")
    assert "## Path store" in results


@pytest.mark.s3
def test_serverless_benchmark_with_an_embedder_embeds_no_stored_entry() -> None:
    """The serverless benchmark's embedder rows at a tiny size: after a restore, the
    handler with an embedder embeds only the query and its new facts (the snapshot
    carried the stored entries' vectors); timings are not checked."""
    bench = RUN.parent / "bench_serverless.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--entries", "20", "--invocations", "2"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "| fsmemory handler, with an embedder | 3 | 3 | 0 |" in out, out[-3000:]
    assert "| with an embedder: texts embedded for stored entries (max per invocation) | 0 |" in out
    assert "| with an embedder / without, wall (median) |" in out
    assert "| save of one new entry: bytes with an embedder - without (median) |" in out
    assert "fsmemory-embedder slowest" in out
