"""The peer benchmark suite runs end to end in its tiny configuration (no timings checked).

``python benchmarks/run.py --smoke`` exercises every workload's code path for fsmemory
(memory, dedupe, concurrency, snapshot, path store, remote backends when their servers
start, export when pyarrow is installed) with tiny sizes and without the peers' venv,
writing into a temporary folder. This keeps the benchmark code from rotting; the
numbers themselves are never asserted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
