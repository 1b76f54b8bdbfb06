"""Incremental re-runs, rewritten sources, full rebuilds, crashes and concurrent exports."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fsmemory import _jsonutil
from fsmemory.errors import InvalidInputError
from fsmemory.export import MANIFEST_PATH, ExportProgress, export_parquet
from fsmemory.fs import open_root

from .conftest import file_states, lines, parquet_files, read_rows, record, write_log

pytest.importorskip("duckdb")


def _manifest(dest: str) -> dict[str, Any]:
    data: dict[str, Any] = _jsonutil.loads(Path(dest, MANIFEST_PATH).read_bytes())
    return data


def _assert_consistent(dest: str) -> None:
    """Every part file is listed in the manifest and every listed part exists."""
    listed = set(_manifest(dest)["parts"])
    on_disk = set(parquet_files(dest, "memory")) | set(parquet_files(dest, "events"))
    assert listed == on_disk


def _days(src: str, days: dict[str, int], *, start: int = 0) -> None:
    root = open_root(src)
    for day, count in days.items():
        write_log(root, day, lines([record(f"{day} #{i}", day=day, n=i)
                                    for i in range(start, start + count)]))  # fmt: skip


def test_rerun_exports_nothing_new(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 5, "2026-03-11": 3})
    first = export_parquet(src, dest)
    assert first.rows == 8
    generation = _manifest(dest)["generation"]
    again = export_parquet(src, dest)
    assert (again.rows, again.parts_written, again.files_read) == (0, 0, 0)
    assert again.files_unchanged == 2
    assert _manifest(dest)["generation"] == generation
    assert len(read_rows(dest)) == 8


_NO_OP_PROCESS = """\
import json, sys
from fsmemory.export import export_parquet
report = export_parquet(sys.argv[1], sys.argv[2])
print(json.dumps([report.rows, report.files_unchanged, "pyarrow" in sys.modules]))
"""


def test_a_no_op_rerun_does_not_import_pyarrow(local_dirs: tuple[str, str]) -> None:
    """A re-run with nothing to write (checking every log, a same-length edit included)
    never needs pyarrow, whose import costs more than the run; a run that writes does."""
    import subprocess
    import sys

    src, dest = local_dirs
    _days(src, {"2026-03-10": 5, "2026-03-11": 3})
    assert export_parquet(src, dest).rows == 8

    def rerun() -> list[Any]:
        done = subprocess.run([sys.executable, "-c", _NO_OP_PROCESS, src, dest],
                              capture_output=True, text=True, check=True)  # fmt: skip
        result: list[Any] = _jsonutil.loads(done.stdout.strip().splitlines()[-1])
        return result

    assert rerun() == [0, 2, False]
    log = Path(src, "logs", "2026-03-11.jsonl")
    stat = os.stat(log)
    log.write_bytes(log.read_bytes().replace(b"#0", b"#9"))  # same length, same mtime
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert rerun() == [3, 1, True]
    assert rerun()[:2] == [0, 2]  # commits the head without the replaced files' trash
    assert rerun() == [0, 2, False]
    assert sorted(
        r["content"] for r in read_rows(dest) if r["content"].startswith("2026-03-11")
    ) == ["2026-03-11 #1", "2026-03-11 #2", "2026-03-11 #9"]


def test_appended_lines_only(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 5, "2026-03-11": 3})
    export_parquet(src, dest)
    _days(src, {"2026-03-11": 4, "2026-03-12": 2}, start=100)
    report = export_parquet(src, dest)
    assert report.rows == 6 and report.files_read == 2 and report.files_unchanged == 1
    rows = read_rows(dest)
    assert len(rows) == 14
    keys = [(r["source_file"], r["line"]) for r in rows]
    assert len(set(keys)) == len(keys)
    march11 = [r["line"] for r in rows if r["source_file"] == "logs/2026-03-11.jsonl"]
    assert march11 == list(range(1, 8))
    _assert_consistent(dest)


def test_rewritten_file_is_replaced(tmp_path: Path) -> None:
    users = tmp_path / "users"
    for name in ("alice", "bob"):
        _days(str(users / name), {"2026-03-10": 3})
    dest = str(tmp_path / "out")
    export_parquet(str(users), dest)
    assert len(parquet_files(dest)) == 1  # both roots in one file
    # alice's log is rewritten (e.g. hand-edited): smaller, different content.
    open_root(str(users / "alice")).write(
        "logs/2026-03-10.jsonl", lines([record("edited", day="2026-03-10")])
    )
    report = export_parquet(str(users), dest)
    assert report.files_reexported == 1
    assert report.rewritten_rows == 3  # bob's rows carried into a new file
    rows = read_rows(dest)
    assert [(r["root"], r["content"]) for r in rows] == [
        ("alice", "edited"),
        ("bob", "2026-03-10 #0"), ("bob", "2026-03-10 #1"), ("bob", "2026-03-10 #2"),
    ]  # fmt: skip
    _assert_consistent(dest)
    # A rewrite that keeps the size but changes the exported prefix is noticed too.
    path = users / "bob" / "logs" / "2026-03-10.jsonl"
    data = path.read_bytes().replace(b"#1", b"#X")
    path.write_bytes(data)
    export_parquet(str(users), dest)
    assert [r["content"] for r in read_rows(dest) if r["root"] == "bob"] == [
        "2026-03-10 #0", "2026-03-10 #X", "2026-03-10 #2",
    ]  # fmt: skip
    _assert_consistent(dest)


def test_pruned_logs_keep_their_rows(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 2, "2026-03-11": 2})
    export_parquet(src, dest)
    open_root(src).delete("logs/2026-03-10.jsonl")
    assert export_parquet(src, dest).rows == 0
    assert len(read_rows(dest)) == 4


def test_full_rebuild(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 2, "2026-03-11": 2})
    export_parquet(src, dest)
    old = parquet_files(dest)
    report = export_parquet(src, dest, incremental=False)
    assert report.full and report.rows == 4 and report.parts_removed == len(old)
    assert not set(old) & set(parquet_files(dest))
    assert len(read_rows(dest)) == 4
    _assert_consistent(dest)


def test_other_source_needs_full(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _days(a, {"2026-03-10": 1})
    _days(b, {"2026-03-10": 2})
    dest = str(tmp_path / "out")
    export_parquet(a, dest)
    with pytest.raises(InvalidInputError, match="holds an export of"):
        export_parquet(b, dest)
    assert export_parquet(b, dest, incremental=False).rows == 2
    assert len(read_rows(dest)) == 2


def test_crash_before_commit_is_repaired(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 2})
    export_parquet(src, dest)
    root = open_root(dest)
    # A crashed run left a file and a lease that expired; a live run's file is kept.
    orphan = "memory/date=2026-03-10/part-20260101T000000Z-deadbeef-00001.parquet"
    live = "memory/date=2026-03-10/part-20260101T000000Z-cafecafe-00001.parquet"
    some_part = parquet_files(dest)[0]
    for path in (orphan, live):
        root.write(path, root.read_bytes(some_part))
    root.write("_fsmemory_runs/20260101T000000Z-deadbeef.json",
               _jsonutil.dumps({"run": "20260101T000000Z-deadbeef", "state": "running",
                                "expires": time.time() - 1}))  # fmt: skip
    root.write("_fsmemory_runs/20260101T000000Z-cafecafe.json",
               _jsonutil.dumps({"run": "20260101T000000Z-cafecafe", "state": "running",
                                "expires": time.time() + 600}))  # fmt: skip
    report = export_parquet(src, dest)
    assert report.parts_removed == 1
    assert not root.exists(orphan) and root.exists(live)
    assert not root.exists("_fsmemory_runs/20260101T000000Z-deadbeef.json")


def test_crash_after_commit_is_repaired(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 2})
    export_parquet(src, dest)
    root = open_root(dest)
    leftover = "memory/date=2026-03-10/part-20260101T000000Z-0badf00d-00001.parquet"
    root.write(leftover, root.read_bytes(parquet_files(dest)[0]))
    manifest = _manifest(dest)
    manifest["trash"] = [leftover]
    root.write(MANIFEST_PATH, _jsonutil.dumps(manifest))
    _days(src, {"2026-03-10": 1}, start=10)
    report = export_parquet(src, dest)
    assert report.parts_removed == 1 and not root.exists(leftover)
    assert _manifest(dest)["trash"] == []
    assert len(read_rows(dest)) == 3


def _concurrent(src: str, dest: str, n: int) -> list[Any]:
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = export_parquet(src, dest)
        except Exception as exc:  # surfaced by the assertions below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_exports_do_not_duplicate(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {f"2026-03-{d:02d}": 200 for d in range(1, 11)})
    results = _concurrent(src, dest, 3)
    assert all(not isinstance(r, Exception) for r in results), results
    assert sum(r.rows for r in results) == 2000
    rows = read_rows(dest)
    assert len(rows) == 2000
    assert len({(r["source_file"], r["line"]) for r in rows}) == 2000
    _assert_consistent(dest)


def test_concurrent_exports_on_memory_fs(memory_urls: tuple[str, str]) -> None:
    src, dest = memory_urls
    _days(src, {"2026-03-10": 100, "2026-03-11": 100})
    results = _concurrent(src, dest, 2)
    assert all(not isinstance(r, Exception) for r in results), results
    assert sum(r.rows for r in results) == 200
    root = open_root(dest)
    manifest = _jsonutil.loads(root.read_bytes(MANIFEST_PATH))
    listed = set(manifest["parts"])
    on_store = {i.path for i in root.list("memory", recursive=True) if i.path.endswith(".parquet")}
    assert listed == on_store
    assert sum(p["rows"] for p in manifest["parts"].values()) == 200


def test_losing_exporter_deletes_its_files(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 50, "2026-03-11": 50})
    nested: list[Any] = []

    def progress(p: ExportProgress) -> None:
        if not nested:  # a concurrent export of the same files commits first
            nested.append(export_parquet(src, dest))

    report = export_parquet(src, dest, progress=progress)
    assert nested[0].rows == 100
    assert report.conflicts >= 1 and report.rows == 0
    assert len(read_rows(dest)) == 100
    _assert_consistent(dest)


def test_disjoint_concurrent_commit_is_merged(tmp_path: Path) -> None:
    src = str(tmp_path / "m")
    _days(src, {"2026-03-10": 20})
    open_root(src).append(
        "log/s.jsonl", lines([{"type": "x", "timestamp": "2026-03-10T00:00:00Z"}])
    )
    dest = str(tmp_path / "out")
    nested: list[Any] = []

    def progress(p: ExportProgress) -> None:
        if not nested:  # a concurrent export of the other table commits first
            nested.append(export_parquet(src, dest, tables=("events",)))

    report = export_parquet(src, dest, tables=("memory",), progress=progress)
    assert report.conflicts == 1 and report.rows == 20  # merged, not redone
    assert len(read_rows(dest)) == 20 and len(read_rows(dest, "events")) == 1
    _assert_consistent(dest)


def test_manifest_is_small_json(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _days(src, {"2026-03-10": 1000})
    export_parquet(src, dest)
    size = os.path.getsize(os.path.join(dest, MANIFEST_PATH))
    assert size < 4096
    state = file_states(dest)["logs/2026-03-10.jsonl"]
    assert state.lines == 1000 and state.offset == state.size
