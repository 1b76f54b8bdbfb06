"""benchmarks/bench_similarity.py runs end to end in a tiny configuration (no timings)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_similarity.py"


def test_tiny_run_prints_the_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("bench_similarity", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_similarity", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    module.main(["--entries", "40", "--window", "10", "--length", "120", "--difflib-checks", "2"])
    out = capsys.readouterr().out
    for corpus in ("unique", "near-dup", "shuffle"):
        assert corpus in out
    assert "med ms" in out
    assert "differ on 0 checks" in out
