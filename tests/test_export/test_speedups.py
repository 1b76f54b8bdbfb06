"""The speed-up switch: ``FSMEMORY_NO_SPEEDUPS=1`` takes the public ``pyarrow.compute``,
a pyarrow without the private module falls back to it, and both paths write the same
Parquet bytes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsmemory import _speedups
from fsmemory.fs import open_root

from .conftest import lines, record, write_log

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyarrow.parquet")


def test_the_switch_picks_the_public_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_speedups.ENV, raising=False)
    assert _speedups.enabled()
    assert _speedups.arrow_compute().__name__ == "pyarrow._compute"
    for value in ("1", "true", "YES", " on "):
        monkeypatch.setenv(_speedups.ENV, value)
        assert not _speedups.enabled()
        assert _speedups.arrow_compute().__name__ == "pyarrow.compute"
    monkeypatch.setenv(_speedups.ENV, "0")
    assert _speedups.enabled()


def test_a_pyarrow_without_the_private_module_takes_the_public_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pyarrow release that renames ``pyarrow._compute`` still exports (the old code
    failed with an ImportError, which the command reported as a usage error)."""
    import pyarrow

    monkeypatch.delenv(_speedups.ENV, raising=False)
    monkeypatch.delattr(pyarrow, "_compute")
    monkeypatch.setitem(sys.modules, "pyarrow._compute", None)
    assert _speedups.arrow_compute().__name__ == "pyarrow.compute"


def test_a_private_module_missing_a_name_takes_the_public_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pyarrow import _compute

    monkeypatch.delenv(_speedups.ENV, raising=False)
    monkeypatch.delattr(_compute, "StrftimeOptions")
    assert _speedups.arrow_compute().__name__ == "pyarrow.compute"


#: Runs one export in a fresh process; prints which compute module it used.
_EXPORT = """\
import json, sys
from fsmemory.export import export_parquet
from fsmemory.export import _compute
src, dest, compact = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
report = export_parquet(src, dest, compact=compact, block_size=4096)
print(json.dumps({"module": _compute._arrow.__name__, "rows": report.rows,
                  "rewritten": report.rewritten_rows}))
"""


def _export(src: str, dest: str, *, public: bool, compact: bool = False) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != _speedups.ENV}
    if public:
        env[_speedups.ENV] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _EXPORT, src, dest, "1" if compact else "0"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _parts(dest: str) -> list[tuple[str, str, str]]:
    """(partition folder, sequence number, SHA-256) of every Parquet part file: the
    bytes, without the run ids in the names."""
    found = []
    for folder, _, names in os.walk(dest):
        for name in names:
            if name.startswith("part-") and name.endswith(".parquet"):
                data = Path(folder, name).read_bytes()
                seq = name.removesuffix(".parquet").rsplit("-", 1)[1]
                rel = os.path.relpath(folder, dest)
                found.append((rel, seq, hashlib.sha256(data).hexdigest()))
    return sorted(found)


def _corpus(src: Path) -> None:
    """Tenants with many small logs (parsed as one block), a log longer than a block,
    forget and expiring records, metadata, a corrupt line, an unfinished last line
    that is a whole object, and event logs over several days."""
    for t in range(3):
        root = open_root(str(src / f"tenant-{t}"))
        for d in range(10, 14):
            day = f"2026-03-{d}"
            recs = [
                record(
                    f"t{t} fact {i} of {day}",
                    day=day,
                    n=i,
                    importance=i / 10,
                    metadata={"turn": i} if i % 2 else None,
                )
                for i in range(4)
            ]
            recs.append({"op": "forget", "id": recs[0]["id"], "timestamp": f"{day}T11:00:00Z",
                         "reason": "evicted"})  # fmt: skip
            recs.append(record("ttl", day=day, n=9, ttl_days=2.5))
            write_log(root, day, lines(recs))
    big = open_root(str(src / "big"))
    many = [record(f"long fact {i} " + "x" * 200, day="2026-03-12", n=i) for i in range(80)]
    write_log(big, "2026-03-12", lines(many) + b"{not json\n" + lines([record("last", n=99)])[:-1])
    events = [
        {"type": "UserMessage", "timestamp": f"2026-03-{d}T10:00:00Z", "content": f"m{d}"}
        for d in (10, 11, 11, 12)
    ]
    big.append("log/stream-1.jsonl", lines(events) + lines([{"type": "NoStamp"}]))


def test_private_and_public_paths_write_the_same_parquet(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _corpus(src)
    fast, public = str(tmp_path / "fast"), str(tmp_path / "public")
    a = _export(str(src), fast, public=False)
    b = _export(str(src), public, public=True)
    assert a["module"] == "pyarrow._compute" and b["module"] == "pyarrow.compute"
    assert a["rows"] == b["rows"] > 80
    assert _parts(fast) == _parts(public) != []
    # A rewritten log (its old rows dropped from their part files) and a compaction.
    open_root(str(src / "tenant-1")).write("logs/2026-03-11.jsonl", lines([record("new")]))
    a = _export(str(src), fast, public=False, compact=True)
    b = _export(str(src), public, public=True, compact=True)
    assert a == {**b, "module": "pyarrow._compute"} and a["rewritten"] > 0
    assert _parts(fast) == _parts(public)
