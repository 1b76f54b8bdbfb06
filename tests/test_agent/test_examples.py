"""The harness examples run offline as scripts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> str:
    return subprocess.run(
        [sys.executable, *args], check=True, capture_output=True, text=True, timeout=120, cwd=ROOT
    ).stdout


def test_journal_companion(tmp_path: Path) -> None:
    out = _run("examples/journal_companion.py", "--state", str(tmp_path / "journal-state"))
    assert "half marathon" in out.split("run 2")[1]
    assert (tmp_path / "journal-state" / "memory" / "working.md").exists()
    assert (tmp_path / "journal-state" / "SKILL.md").exists()


def test_long_history() -> None:
    out = _run("examples/long_history.py", "--turns", "400")
    assert "the log replays into the live history: ok" in out
    assert "events per model call: max 80" in out


def test_bench_harness_runs() -> None:
    out = _run("benchmarks/bench_harness.py", "--sizes", "200", "--repeat", "2", "--turns", "2")
    assert "assemble()" in out and "seed/ours" in out
