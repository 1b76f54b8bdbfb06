"""benchmarks/bench_integrations.py runs end to end in its tiny configuration (no timings
are checked: this keeps the benchmark code from rotting)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("langgraph")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_integrations.py"


def test_smoke_run_prints_both_tables(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--smoke"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| MCP start to first tool list (median of 1) |" in done.stdout
    for op in ("put", "get", "search", "search(filter)", "search(query)"):
        assert f"| {op} |" in done.stdout, done.stdout
