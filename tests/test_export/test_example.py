"""The DuckDB example runs as a script and answers its questions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "query_with_duckdb.py"


def test_query_with_duckdb_example(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path / "export")],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "Facts remembered per category per day" in out
    assert "Most-remembered topics" in out
    assert "exported 0 rows" in out  # the incremental re-run
    assert "Agent events" in out and "│      0 │" in out
    first = out.split("exported ", 1)[1].split(" rows", 1)[0]
    assert f"2 shards exported {first} rows into one dataset; one run exported {first}" in out
    assert (tmp_path / "export" / "_fsmemory_manifest.json").exists()
