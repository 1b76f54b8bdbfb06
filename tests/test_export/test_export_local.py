"""End-to-end export on local folders: layout, schema, types, read-back, bad input."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory, _jsonutil
from fsmemory.errors import InvalidInputError
from fsmemory.export import (
    MANIFEST_PATH,
    SCHEMA_VERSION,
    ExportReport,
    events_schema,
    export_parquet,
    memory_schema,
)
from fsmemory.fs import open_root

from .conftest import FakeClock, lines, parquet_files, read_rows, record, write_log

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
ds = pytest.importorskip("pyarrow.dataset")
pq = pytest.importorskip("pyarrow.parquet")


def _memory(src: str, clock: FakeClock) -> tuple[KnowledgeMemory, list[str]]:
    km = KnowledgeMemory(src, clock=clock)
    ids = [
        km.remember("Prefers dark mode", category="preferences", persistent=True),
        km.remember("Works on the billing service", category="projects", importance=0.9),
    ]
    clock.advance(days=1)
    ids.append(km.remember("Meeting moved to Tuesday", category="tasks", ttl_days=3,
                           metadata={"source": "calendar", "n": 1}))  # fmt: skip
    km.forget(ids[1])
    clock.advance(days=1)
    ids.append(km.remember("Likes green tea", category="preferences"))
    return km, ids


def test_export_of_a_knowledge_memory(local_dirs: tuple[str, str], clock: FakeClock) -> None:
    src, dest = local_dirs
    km, ids = _memory(src, clock)
    report = export_parquet(src, dest)
    assert isinstance(report, ExportReport)
    assert (report.rows, report.memory_rows, report.event_rows) == (5, 5, 0)
    assert report.files_seen == report.files_read == 3
    assert report.corrupt_lines == 0
    assert sorted(os.listdir(os.path.join(dest, "memory"))) == [
        "_common_metadata", "date=2026-03-10", "date=2026-03-11", "date=2026-03-12",
    ]  # fmt: skip
    rows = read_rows(dest)
    assert [r["id"] for r in rows if r["op"] == "remember"] == ids
    forget = next(r for r in rows if r["op"] == "forget")
    assert forget["id"] == ids[1] and forget["reason"] == "forget"
    assert str(forget["date"]) == "2026-03-11"
    tuesday = next(r for r in rows if r["content"] == "Meeting moved to Tuesday")
    assert json.loads(tuesday["metadata"]) == {"source": "calendar", "n": 1}
    assert tuesday["ttl_days"] == 3.0
    assert (tuesday["expires_at"] - tuesday["timestamp"]).days == 3
    assert rows[0]["persistent"] is True and rows[0]["category"] == "preferences"
    assert rows[0]["root"] == "" and rows[0]["source_file"] == "logs/2026-03-10.jsonl"
    # The live entries the memory shows are the remember rows minus the forgotten one.
    live = {e.id for e in km.entries()}
    exported = {r["id"] for r in rows if r["op"] == "remember"} - {forget["id"]}
    assert exported == live


def test_types_in_duckdb_and_pyarrow(local_dirs: tuple[str, str], clock: FakeClock) -> None:
    src, dest = local_dirs
    _memory(src, clock)
    export_parquet(src, dest)
    described = duckdb.sql(
        f"DESCRIBE SELECT * FROM read_parquet('{dest}/memory/*/*.parquet', hive_partitioning=true)"
    ).fetchall()
    types = {name: kind for name, kind, *_ in described}
    assert types["timestamp"] == types["expires_at"] == "TIMESTAMP WITH TIME ZONE"
    assert types["persistent"] == "BOOLEAN"
    assert types["importance"] == types["ttl_days"] == "DOUBLE"
    assert types["line"] == "BIGINT"
    assert types["date"] == "DATE"
    assert types["id"] == types["content"] == types["metadata"] == "VARCHAR"
    dataset = ds.dataset(os.path.join(dest, "memory"), format="parquet", partitioning="hive")
    schema = dataset.schema
    expected = memory_schema()
    for field in expected:
        assert schema.field(field.name).type == field.type
    assert schema.metadata[b"fsmemory_schema_version"] == str(SCHEMA_VERSION).encode()
    table = dataset.to_table()
    assert table.num_rows == 5
    for name in parquet_files(dest):
        file_schema = pq.read_schema(os.path.join(dest, name))
        assert file_schema.equals(expected, check_metadata=False)
        assert file_schema.metadata[b"fsmemory_schema_version"] == b"1"
    common = pq.read_schema(os.path.join(dest, "memory", "_common_metadata"))
    assert common.equals(expected)


def test_many_roots_under_one_prefix(tmp_path: Path, clock: FakeClock) -> None:
    users = tmp_path / "users"
    for name in ("alice", "bob", "team/carol"):
        km = KnowledgeMemory(str(users / name), clock=clock)
        km.remember(f"{name} likes tea", category="preferences")
        km.remember(f"{name} works remotely", category="facts")
    dest = str(tmp_path / "out")
    report = export_parquet(str(users), dest)
    assert report.rows == 6 and report.files_read == 3
    rows = read_rows(dest)
    assert sorted({r["root"] for r in rows}) == ["alice", "bob", "team/carol"]
    assert all(r["content"].startswith(r["root"]) for r in rows)
    # One day, three roots: one file (not one per tenant).
    assert len(parquet_files(dest)) == 1
    per_root = duckdb.sql(
        f"SELECT root, count(*) FROM read_parquet('{dest}/memory/*/*.parquet', "
        "hive_partitioning=true) GROUP BY root ORDER BY root"
    ).fetchall()
    assert per_root == [("alice", 2), ("bob", 2), ("team/carol", 2)]


def test_event_logs_of_a_path_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    root = open_root(str(store / "agent1"))
    events: list[dict[str, Any]] = [
        {"type": "UserMessage", "timestamp": "2026-03-10T10:00:00Z", "content": "hi"},
        {"type": "ToolCall", "timestamp": "2026-03-10T10:00:01Z", "args": {"q": "x"}},
        {"type": "ModelReply", "timestamp": "2026-03-11T00:00:02Z", "content": "hello"},
    ]
    root.append("log/stream-1.jsonl", lines(events))
    root.append("log/stream-2.jsonl", lines(events[:1]))
    root.write("log/notes.txt", b"not a log")
    dest = str(tmp_path / "out")
    report = export_parquet(str(store), dest)
    assert report.event_rows == 4 and report.memory_rows == 0
    rows = read_rows(dest, "events")
    assert [(r["root"], r["stream_id"], r["line"]) for r in rows] == [
        ("agent1", "stream-1", 1), ("agent1", "stream-1", 2), ("agent1", "stream-1", 3),
        ("agent1", "stream-2", 1),
    ]  # fmt: skip
    assert [json.loads(r["data"]) for r in rows[:3]] == events
    assert str(rows[2]["date"]) == "2026-03-11"
    assert rows[2]["timestamp"] == datetime(2026, 3, 11, 0, 0, 2, tzinfo=UTC)
    dataset = ds.dataset(os.path.join(dest, "events"), format="parquet", partitioning="hive")
    for field in events_schema():
        assert dataset.schema.field(field.name).type == field.type


def test_corrupt_lines_are_skipped_and_counted(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    root = open_root(src)
    data = lines([record("good one", n=1)]) + b"{broken\n" + b'{"content": "\xff\xfe"}\n'
    data += b"[]\n" + lines([record("good two", n=2)])
    write_log(root, "2026-03-10", data)
    report = export_parquet(src, dest)
    assert report.rows == 2
    assert report.corrupt_lines == 3
    assert [(c.source_file, c.line) for c in report.corrupt_samples] == [
        ("logs/2026-03-10.jsonl", 2), ("logs/2026-03-10.jsonl", 3),
        ("logs/2026-03-10.jsonl", 4),
    ]  # fmt: skip
    assert "corrupt" in report.summary()
    assert [r["line"] for r in read_rows(dest)] == [1, 5]


def test_unfinished_last_line(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    root = open_root(src)
    write_log(root, "2026-03-10", lines([record("a", n=1)]) + b'{"content": "half')
    report = export_parquet(src, dest)
    assert report.rows == 1 and report.pending_lines == 1 and report.corrupt_lines == 0
    # The writer finishes the line: exported by the next run, nothing twice.
    write_log(root, "2026-03-10", b' written"}\n' + lines([record("c", n=3)]))
    report = export_parquet(src, dest)
    assert report.rows == 2 and report.pending_lines == 0
    rows = read_rows(dest)
    assert [(r["line"], r["content"]) for r in rows] == [
        (1, "a"), (2, "half written"), (3, "c"),
    ]  # fmt: skip


def test_last_line_without_newline_that_is_whole(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    root = open_root(src)
    write_log(root, "2026-03-10", lines([record("a", n=1)]) + lines([record("b", n=2)])[:-1])
    assert export_parquet(src, dest).rows == 2
    # A line-safe appender first adds the missing newline.
    root.append("logs/2026-03-10.jsonl", lines([record("c", n=3)]), line_safe=True)
    assert export_parquet(src, dest).rows == 1
    assert [(r["line"], r["content"]) for r in read_rows(dest)] == [(1, "a"), (2, "b"), (3, "c")]


def test_since_and_until_select_days(tmp_path: Path) -> None:
    src = tmp_path / "m"
    root = open_root(str(src))
    for day in ("2026-03-09", "2026-03-10", "2026-03-11", "2026-03-12"):
        write_log(root, day, lines([record(f"fact of {day}", day=day)]))
    root.append(
        "log/s.jsonl",
        lines([{"type": "e", "timestamp": f"{d}T12:00:00Z"} for d in
               ("2026-03-09", "2026-03-10", "2026-03-11", "2026-03-12")]),
    )  # fmt: skip
    dest = str(tmp_path / "out")
    report = export_parquet(str(src), dest, since="2026-03-10", until=datetime(2026, 3, 11, 23))
    assert report.memory_rows == 2 and report.event_rows == 2 and report.out_of_window == 1
    assert sorted(str(r["date"]) for r in read_rows(dest)) == ["2026-03-10", "2026-03-11"]
    # Without a window: the memory logs left out are exported now; the stream continues
    # after the event it stopped before; the event before `since` stays passed over.
    report = export_parquet(str(src), dest)
    assert report.memory_rows == 2 and report.event_rows == 1
    assert len(read_rows(dest)) == 4
    assert [str(r["date"]) for r in read_rows(dest, "events")] == [
        "2026-03-10", "2026-03-11", "2026-03-12",
    ]  # fmt: skip


def test_bad_arguments(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    with pytest.raises(InvalidInputError):
        export_parquet(src, dest, since="yesterday")
    with pytest.raises(InvalidInputError):
        export_parquet(src, dest, since="2026-03-12", until="2026-03-10")
    with pytest.raises(InvalidInputError):
        export_parquet(src, dest, tables=("nope",))


def test_empty_source_creates_a_manifest(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    report = export_parquet(src, dest)
    assert report.rows == 0 and report.parts_written == 0
    manifest = _jsonutil.loads(Path(dest, MANIFEST_PATH).read_bytes())
    assert manifest["generation"] == 1 and manifest["parts"] == {}


def test_report_is_json_and_summary_is_one_line(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    write_log(open_root(src), "2026-03-10", lines([record("a")]))
    report = export_parquet(src, dest)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["rows"] == 1 and data["parts_written"] == 1
    summary = report.summary()
    assert "\n" not in summary and "1 rows" in summary and " s" in summary


def test_file_with_only_an_unfinished_line(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    root = open_root(src)
    write_log(root, "2026-03-10", b'{"content": "not yet')
    report = export_parquet(src, dest)
    assert report.rows == 0 and report.pending_lines == 1
    write_log(root, "2026-03-10", b'"}\n')
    report = export_parquet(src, dest)
    assert report.rows == 1 and report.files_reexported == 0
    assert [r["content"] for r in read_rows(dest)] == ["not yet"]


def test_every_report_field_is_filled_from_the_run() -> None:
    """The counters' table names every number of the report: a field left out of it
    would silently read 0."""
    import dataclasses

    from fsmemory.export import ExportReport
    from fsmemory.export._state import Counters

    counters = Counters()
    counts = counters.report_counts()
    given = {"source", "dest", "run_id", "full", "manifest_generation", "shard", "seconds"}
    given.add("corrupt_samples")
    fields = {f.name for f in dataclasses.fields(ExportReport)}
    assert set(counts) == fields - given
    counters.files_read, counters.corrupt, counters.max_in_flight = 3, 2, 5
    counters.rows = {name: 4 for name in counters.rows}
    counts = counters.report_counts()
    assert (counts["files_read"], counts["corrupt_lines"], counts["max_reads_in_flight"]) == (
        3,
        2,
        5,
    )
    assert counts["rows"] == 4 * len(counters.rows)
