"""The export on memory:// and on S3 (moto server on loopback): sources and destinations
are only URLs, and the result reads back through pyarrow and DuckDB."""

from __future__ import annotations

from typing import Any

import pytest

from fsmemory import KnowledgeMemory, _jsonutil
from fsmemory.export import MANIFEST_PATH, export_parquet, memory_schema
from fsmemory.fs import open_root

from .conftest import FakeClock, lines, record, write_log

pa = pytest.importorskip("pyarrow")
ds = pytest.importorskip("pyarrow.dataset")
duckdb = pytest.importorskip("duckdb")


def _dataset(url: str, options: dict[str, Any] | None, table: str = "memory") -> Any:
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    root = open_root(f"{url}/{table}", options)
    fs = PyFileSystem(FSSpecHandler(root.fs))
    return ds.dataset(root.root, filesystem=fs, format="parquet", partitioning="hive")


def _duckdb_count(url: str, options: dict[str, Any] | None) -> list[tuple[Any, ...]]:
    root = open_root(url, options)
    con = duckdb.connect()
    con.register_filesystem(root.fs)
    protocol = url.split("://", 1)[0]
    rows: list[tuple[Any, ...]] = con.sql(
        f"SELECT category, count(*) FROM read_parquet('{protocol}://{root.root}/memory/*/*"
        ".parquet', hive_partitioning=true) GROUP BY category ORDER BY category"
    ).fetchall()
    return rows


def _roundtrip(src: str, dest: str, options: dict[str, Any] | None, clock: FakeClock) -> None:
    km = KnowledgeMemory(src, clock=clock, storage_options=options)
    km.remember("likes tea", category="preferences")
    km.remember("ships on fridays", category="facts", metadata={"k": 1})
    clock.advance(days=1)
    km.remember("prefers short answers", category="preferences", persistent=True)
    report = export_parquet(src, dest, storage_options=options)
    assert report.rows == 3 and report.parts_written == 2 and report.corrupt_lines == 0
    table = _dataset(dest, options).to_table()
    assert table.num_rows == 3
    for field in memory_schema():
        assert table.schema.field(field.name).type == field.type
    assert sorted(str(d) for d in table.column("date").to_pylist()) == [
        "2026-03-10", "2026-03-10", "2026-03-11",
    ]  # fmt: skip
    assert _duckdb_count(dest, options) == [("facts", 1), ("preferences", 2)]
    # Incremental: one more line, then nothing.
    km.remember("uses vim", category="facts")
    assert export_parquet(src, dest, storage_options=options).rows == 1
    again = export_parquet(src, dest, storage_options=options)
    assert again.rows == 0 and again.parts_written == 0
    assert _dataset(dest, options).to_table().num_rows == 4
    manifest = _jsonutil.loads(open_root(dest, options).read_bytes(MANIFEST_PATH))
    assert sum(p["rows"] for p in manifest["parts"].values()) == 4


def test_memory_fs(memory_urls: tuple[str, str], clock: FakeClock) -> None:
    src, dest = memory_urls
    _roundtrip(src, dest, None, clock)


@pytest.mark.s3
def test_s3(s3_root_url: str, s3_storage_options: dict[str, Any], clock: FakeClock) -> None:
    _roundtrip(f"{s3_root_url}/memory", f"{s3_root_url}/export", s3_storage_options, clock)


@pytest.mark.s3
def test_s3_rewrite_and_many_roots(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    users = f"{s3_root_url}/users"
    for name in ("u1", "u2"):
        root = open_root(f"{users}/{name}", s3_storage_options)
        write_log(root, "2026-03-10", lines([record(f"{name} {i}", n=i) for i in range(3)]))
    dest = f"{s3_root_url}/out"
    assert export_parquet(users, dest, storage_options=s3_storage_options).rows == 6
    root = open_root(f"{users}/u1", s3_storage_options)
    root.write("logs/2026-03-10.jsonl", lines([record("u1 edited")]))
    report = export_parquet(users, dest, storage_options=s3_storage_options)
    assert report.files_reexported == 1 and report.rewritten_rows == 3
    rows = _dataset(dest, s3_storage_options).to_table().to_pylist()
    assert sorted(r["content"] for r in rows) == ["u1 edited", "u2 0", "u2 1", "u2 2"]
    dest_root = open_root(dest, s3_storage_options)
    manifest = _jsonutil.loads(dest_root.read_bytes(MANIFEST_PATH))
    stored = {i.path for i in dest_root.list("memory", recursive=True)
              if i.path.endswith(".parquet")}  # fmt: skip
    assert stored == set(manifest["parts"])


@pytest.mark.s3
def test_local_source_to_s3_dest(
    tmp_path: Any, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    src = str(tmp_path / "m")
    write_log(open_root(src), "2026-03-10", lines([record("a"), record("b", n=1)]))
    dest = f"{s3_root_url}/out"
    report = export_parquet(src, dest, dest_storage_options=s3_storage_options)
    assert report.rows == 2
    assert _dataset(dest, s3_storage_options).to_table().num_rows == 2


@pytest.mark.s3
def test_s3_concurrent_exports(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    import threading

    src = f"{s3_root_url}/memory"
    root = open_root(src, s3_storage_options)
    for day in ("2026-03-10", "2026-03-11", "2026-03-12"):
        write_log(root, day, lines([record(f"{day} {i}", day=day, n=i) for i in range(30)]))
    dest = f"{s3_root_url}/out"
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def run() -> None:
        barrier.wait()
        try:
            results.append(export_parquet(src, dest, storage_options=s3_storage_options))
        except Exception as exc:  # surfaced below
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(not isinstance(r, Exception) for r in results), results
    assert sum(r.rows for r in results) == 90
    table = _dataset(dest, s3_storage_options).to_table()
    assert table.num_rows == 90
    dest_root = open_root(dest, s3_storage_options)
    manifest = _jsonutil.loads(dest_root.read_bytes(MANIFEST_PATH))
    stored = {i.path for i in dest_root.list("memory", recursive=True)
              if i.path.endswith(".parquet")}  # fmt: skip
    assert stored == set(manifest["parts"])


@pytest.mark.s3
def test_s3_sources_cost_one_listing_and_one_get_each_without_s3fs(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """On obstore an export lists the source once and reads each log with one GET (no
    HEAD), from a process that never imports s3fs."""
    import json
    import subprocess
    import sys
    from urllib.parse import unquote

    from fsmemory.testing.requests import count_requests

    users = f"{s3_root_url}/users"
    for t in range(12):
        root = open_root(f"{users}/tenant-{t:02d}", s3_storage_options)
        for day in ("2026-03-10", "2026-03-11"):
            write_log(root, day, lines([record(f"t{t} {day}", day=day, id=f"{t}-{day}")]))
    source = open_root(users, {**s3_storage_options, "client": "obstore"})
    with count_requests(source) as counter:  # every obstore call on this bucket
        report = export_parquet(users, f"{s3_root_url}/out", storage_options=s3_storage_options,
                                concurrency=4)  # fmt: skip
    assert report.rows == 24 and report.max_reads_in_flight > 1
    calls = [unquote(c) for c in counter.calls]
    listings = [c for c in calls if c.split(" ", 1)[0] == "list" and "/root/users/" in c]
    reads = sorted(c for c in calls if "/root/users/" in c and c not in listings)
    assert len(listings) == 1
    assert [c.split(" ", 1)[0] for c in reads] == ["get"] * 24
    assert [c.split("/root/users/", 1)[1] for c in reads] == [
        f"tenant-{t:02d}/logs/{day}.jsonl"
        for t in range(12)
        for day in ("2026-03-10", "2026-03-11")
    ]
    code = (
        "import json, sys\n"
        "from fsmemory.export import export_parquet\n"
        "r = export_parquet(sys.argv[1], sys.argv[2], storage_options=json.loads(sys.argv[3]))\n"
        "print(json.dumps([r.rows, sorted(m for m in ('s3fs', 'aiobotocore', 'botocore') "
        "if m in sys.modules)]))\n"
    )
    options = json.dumps(s3_storage_options)
    done = subprocess.run(
        [sys.executable, "-c", code, users, f"{s3_root_url}/again", options],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [24, []]
