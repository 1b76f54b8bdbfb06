"""Export of many tenants: the split manifest, shards, compaction, source identity.

Fleets here are small (a few dozen tenants); the big ones are marked slow and the speed
is measured in ``benchmarks/bench_export.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsmemory import _jsonutil
from fsmemory.errors import InvalidInputError, KeyNotFoundError
from fsmemory.export import MANIFEST_PATH, NeedsFullExport, export_parquet
from fsmemory.export._manifest import (
    BUCKETS,
    SEGMENTS_DIR,
    Manifest,
    bucket_of,
    segment_path,
)
from fsmemory.fs import open_root

from .conftest import file_states, lines, parquet_files, read_rows, record, write_log

DAYS = ("2026-03-10", "2026-03-11", "2026-03-12")


def _fleet(src: str, tenants: int, days: tuple[str, ...] = DAYS, rows: int = 3) -> int:
    """``tenants`` memory roots under ``src``, ``rows`` records per day; returns rows."""
    for t in range(tenants):
        root = open_root(os.path.join(src, f"tenant-{t:03d}"))
        for day in days:
            recs = [
                record(f"t{t} {day} {i}", day=day, n=i, id=f"{t}-{day}-{i}") for i in range(rows)
            ]
            write_log(root, day, lines(recs))
    return tenants * len(days) * rows


def _head(dest: str) -> Manifest:
    return Manifest.from_bytes(Path(dest, MANIFEST_PATH).read_bytes())


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["root"], row["source_file"], row["line"], row["id"], row["content"])


def _assert_manifest_matches_files(dest: str) -> None:
    """A glob reader and a manifest reader see the same files; every part a source's
    state names is in the dataset."""
    head = _head(dest)
    assert set(parquet_files(dest)) == set(head.parts)
    for state in file_states(dest).values():
        assert set(state.parts) <= set(head.parts)


def test_noop_rerun_reads_only_the_head(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    total = _fleet(src, 40)
    first = export_parquet(src, dest)
    assert first.rows == total and first.segments_written == len(_head(dest).segments)
    before = sorted(p.relative_to(dest).as_posix() for p in Path(dest).rglob("*"))
    again = export_parquet(src, dest)
    assert again.rows == 0 and again.files_unchanged == again.files_seen == 120
    assert again.segments_read == 0 and again.manifest_bytes_written == 0
    assert again.manifest_bytes_read == os.path.getsize(os.path.join(dest, MANIFEST_PATH))
    assert again.manifest_generation == first.manifest_generation
    # Nothing written, not even a lease.
    assert sorted(p.relative_to(dest).as_posix() for p in Path(dest).rglob("*")) == before


def test_append_rewrites_only_its_segment(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    total = _fleet(src, 30)
    export_parquet(src, dest)
    root = open_root(os.path.join(src, "tenant-007"))
    write_log(root, DAYS[1], lines([record("late", day=DAYS[1], n=50, id="late")]))
    report = export_parquet(src, dest)
    assert report.rows == 1 and report.files_read == 1
    assert report.segments_read == 1 and report.segments_written == 1
    rows = read_rows(dest)
    assert len(rows) == total + 1 and len({_key(r) for r in rows}) == total + 1
    _assert_manifest_matches_files(dest)
    # The replaced segment file is gone; the head names only existing ones.
    head = _head(dest)
    on_disk = {p.relative_to(dest).as_posix() for p in Path(dest, SEGMENTS_DIR).rglob("*.json")}
    assert on_disk == {segment_path(s, r.run) for s, r in head.segments.items()}


def test_rewritten_source_in_a_shared_part_keeps_the_other_tenants(
    local_dirs: tuple[str, str],
) -> None:
    src, dest = local_dirs
    total = _fleet(src, 20)
    export_parquet(src, dest)
    root = open_root(os.path.join(src, "tenant-003"))
    write_log(root, DAYS[0], lines([record("rewritten", day=DAYS[0], id="rw")]), append=False)
    report = export_parquet(src, dest)
    assert report.files_reexported == 1 and report.rewritten_rows == 19 * 3
    rows = read_rows(dest)
    assert len(rows) == total - 3 + 1
    mine = [
        r["content"] for r in rows if r["root"] == "tenant-003" and r["date"].isoformat() == DAYS[0]
    ]
    assert mine == ["rewritten"]
    _assert_manifest_matches_files(dest)


def _run_shards(src: str, dest: str, n: int) -> list[dict[str, Any]]:
    code = (
        "import json, sys\n"
        "from fsmemory.export import export_parquet\n"
        "r = export_parquet(sys.argv[1], sys.argv[2], shard=(int(sys.argv[3]), int(sys.argv[4])))\n"
        "print(json.dumps(r.to_dict()))\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, src, dest, str(i), str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


@pytest.mark.parametrize("tenants", [24, pytest.param(400, marks=pytest.mark.slow)])
def test_four_concurrent_shards_equal_one_unsharded_run(tmp_path: Path, tenants: int) -> None:
    src = str(tmp_path / "users")
    total = _fleet(src, tenants)
    whole = str(tmp_path / "whole")
    assert export_parquet(src, whole).rows == total
    sharded = str(tmp_path / "sharded")
    reports = _run_shards(src, sharded, 4)
    assert sum(r["rows"] for r in reports) == total
    assert sorted(r["shard"] for r in reports) == ["0/4", "1/4", "2/4", "3/4"]
    assert [_key(r) for r in read_rows(sharded)] == [_key(r) for r in read_rows(whole)]
    _assert_manifest_matches_files(sharded)
    # Every shard committed only its own buckets.
    head = _head(sharded)
    assert {r["run"] for r in head.runs} >= {r["run_id"] for r in reports}
    for report in reports:
        index, count = map(int, report["shard"].split("/"))
        for seg, ref in head.segments.items():
            if ref.run == report["run_id"]:
                assert int(seg.split("/")[0]) % count == index
    # Re-running a shard, or all of them unsharded, finds nothing new.
    assert _run_shards(src, sharded, 4)[0]["rows"] == 0
    assert export_parquet(src, sharded).rows == 0


@pytest.mark.parametrize("block_size", [1024, 4096, 8 << 20])
def test_small_logs_read_ahead_in_groups_give_the_same_rows(
    tmp_path: Path, block_size: int
) -> None:
    """Small logs of a local source are read several days at once (up to block_size
    bytes per read call); whatever the grouping, a file that vanished is counted and
    every other row is exported once, in the same files as a read one by one."""
    src = str(tmp_path / "users")
    total = _fleet(src, 12, rows=4)
    gone = os.path.join(src, "tenant-005", "logs", f"{DAYS[1]}.jsonl")
    whole = str(tmp_path / "whole")
    assert export_parquet(src, whole, concurrency=1).rows == total
    grouped = str(tmp_path / "grouped")

    real = open_root(src).read_ranges
    removed: list[str] = []

    def vanish_once(requests: Any) -> list[bytes | None]:
        if not removed:
            os.remove(gone)  # between the listing and the first read
            removed.append(gone)
        return real(requests)

    root = open_root(src)
    root.read_ranges = vanish_once  # type: ignore[method-assign]
    report = export_parquet(root, grouped, block_size=block_size)
    assert report.files_vanished == 1 and report.rows == total - 4
    kept = [
        r
        for r in read_rows(whole)
        if not (r["root"] == "tenant-005" and DAYS[1] in r["source_file"])
    ]
    assert [_key(r) for r in read_rows(grouped)] == [_key(r) for r in kept]
    _assert_manifest_matches_files(grouped)
    # The vanished file is exported once it is back.
    write_log(
        open_root(os.path.join(src, "tenant-005")), DAYS[1], lines([record("back", id="back")])
    )
    assert export_parquet(root, grouped, block_size=block_size).rows == 1


def test_a_shard_rewriting_a_shared_part_keeps_the_other_shards_rows(tmp_path: Path) -> None:
    """After an unsharded export (parts hold every tenant's rows), a shard that re-exports
    a rewritten log carries the other shards' rows over and updates their segments; the
    other shard then continues from there."""
    src = str(tmp_path / "users")
    total = _fleet(src, 8, days=DAYS[:1])
    dest = str(tmp_path / "out")
    export_parquet(src, dest)
    owner = next(t for t in range(8) if bucket_of(f"tenant-{t:03d}", BUCKETS) % 2 == 0)
    other = next(t for t in range(8) if bucket_of(f"tenant-{t:03d}", BUCKETS) % 2 == 1)
    rewritten = open_root(os.path.join(src, f"tenant-{owner:03d}"))
    write_log(rewritten, DAYS[0], lines([record("again", id="again")]), append=False)
    report = export_parquet(src, dest, shard=(0, 2))
    assert report.files_reexported == 1 and report.rewritten_rows == total - 3
    grown = open_root(os.path.join(src, f"tenant-{other:03d}"))
    write_log(grown, DAYS[0], lines([record("more", n=7, id="more")]))
    assert export_parquet(src, dest, shard=(1, 2)).rows == 1
    assert export_parquet(src, dest).rows == 0
    rows = read_rows(dest)
    assert len(rows) == total - 3 + 2 and len({_key(r) for r in rows}) == len(rows)
    _assert_manifest_matches_files(dest)


def test_shard_splits_tenants_by_a_stable_hash(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _fleet(src, 16, days=DAYS[:1], rows=1)
    report = export_parquet(src, dest, shard=(1, 3))
    expected = sorted(
        f"tenant-{t:03d}" for t in range(16) if bucket_of(f"tenant-{t:03d}", BUCKETS) % 3 == 1
    )
    assert sorted({r["root"] for r in read_rows(dest)}) == expected
    assert report.rows == len(expected) and report.shard == "1/3"


def test_shards_split_by_top_level_folder(tmp_path: Path) -> None:
    """Nested roots (org/user) and a source that is itself a root: each top-level folder
    is one tenant, and the shards together are exactly the unsharded export."""
    src = tmp_path / "src"
    for root in ("", "org/a", "org/b", "x", "y/z/w"):
        log = open_root(str(src / root) if root else str(src))
        write_log(log, DAYS[0], lines([record(f"{root or 'top'} {i}", n=i, id=f"{root}{i}") for i in range(2)]))  # fmt: skip
    whole = str(tmp_path / "whole")
    assert export_parquet(str(src), whole).rows == 10
    sharded = str(tmp_path / "sharded")
    seen: dict[str, int] = {}
    for i in range(3):
        export_parquet(str(src), sharded, shard=(i, 3))
        for row in read_rows(sharded):
            seen.setdefault(row["root"], i)
    assert [_key(r) for r in read_rows(sharded)] == [_key(r) for r in read_rows(whole)]
    assert seen["org/a"] == seen["org/b"]
    for root, shard in seen.items():
        assert bucket_of(root.split("/")[0], BUCKETS) % 3 == shard


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"shard": (3, 3)}, "0 <= i < n"),
        ({"shard": (0, 0)}, "0 <= i < n"),
        ({"shard": "1/2"}, "pair"),
        ({"shard": (0, 2), "incremental": False}, "incremental"),
        ({"shard": (0, 2), "compact": True}, "without shard"),
        ({"concurrency": 0}, "concurrency"),
    ],
)
def test_bad_shard_arguments(
    local_dirs: tuple[str, str], kwargs: dict[str, Any], needle: str
) -> None:
    src, dest = local_dirs
    with pytest.raises(InvalidInputError, match=needle):
        export_parquet(src, dest, **kwargs)
    assert not os.path.exists(dest)


def test_compact_merges_a_partitions_small_files(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    root = open_root(os.path.join(src, "solo"))
    other = open_root(os.path.join(src, "other"))
    for run in range(5):
        write_log(root, DAYS[0], lines([record(f"r{run}", n=run, id=f"s{run}")]))
        write_log(other, DAYS[0], lines([record(f"o{run}", n=run, id=f"o{run}")]))
        export_parquet(src, dest)
    assert len(parquet_files(dest)) == 5
    before = read_rows(dest)
    report = export_parquet(src, dest, compact=True)
    assert report.parts_compacted == 5 and report.parts_written == 1 and report.rows == 0
    assert len(parquet_files(dest)) == 1
    assert read_rows(dest) == before
    _assert_manifest_matches_files(dest)
    # The sources' states point at the merged file: a rewrite after compaction still
    # replaces exactly that tenant's rows.
    write_log(root, DAYS[0], lines([record("new", id="n")]), append=False)
    assert export_parquet(src, dest).files_reexported == 1
    rows = read_rows(dest)
    assert sorted(r["content"] for r in rows) == ["new", "o0", "o1", "o2", "o3", "o4"]
    # A second compaction finds one file per partition and leaves it.
    assert export_parquet(src, dest, compact=True).parts_compacted == 2
    assert export_parquet(src, dest, compact=True).parts_compacted == 0


def test_source_is_identified_by_its_normalized_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "mem"
    _fleet(str(src), 2, days=DAYS[:1], rows=2)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    assert export_parquet("mem", "out").rows == 4
    write_log(open_root(str(src / "tenant-000")), DAYS[0], lines([record("x", n=9, id="x")]))
    assert export_parquet(str(src), str(tmp_path / "out")).rows == 1
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert export_parquet("../mem/", "../out").rows == 0
    assert export_parquet(f"file://{src}", "../out").rows == 0
    assert len(read_rows(str(tmp_path / "out"))) == 5


def test_another_source_is_refused(local_dirs: tuple[str, str], tmp_path: Path) -> None:
    src, dest = local_dirs
    _fleet(src, 1, days=DAYS[:1], rows=1)
    export_parquet(src, dest)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(NeedsFullExport, match="incremental=False") as caught:
        export_parquet(str(other), dest)
    assert "holds an export of" in caught.value.problem
    assert "incremental" not in caught.value.problem


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_local_source_that_is_not_a_folder_is_an_error(tmp_path: Path, kind: str) -> None:
    source = tmp_path / "nonexistent"
    if kind == "file":
        source.write_text("not a folder")
    dest = tmp_path / "out"
    with pytest.raises(KeyNotFoundError, match="no such folder" if kind == "missing" else "a file"):
        export_parquet(str(source), str(dest))
    assert not dest.exists()


@pytest.mark.parametrize("where", ["inside", "same", "nested"])
def test_destination_inside_the_source_is_refused(tmp_path: Path, where: str) -> None:
    src = tmp_path / "mem"
    _fleet(str(src), 1, days=DAYS[:1], rows=1)
    before = sorted(p.as_posix() for p in src.rglob("*"))
    dest = {"inside": src / "out", "same": src, "nested": src / "tenant-000" / "x"}[where]
    with pytest.raises(InvalidInputError, match="inside the source"):
        export_parquet(str(src), str(dest))
    with pytest.raises(InvalidInputError, match="inside the source"):
        export_parquet(f"file://{src}/", os.path.relpath(dest))
    assert sorted(p.as_posix() for p in src.rglob("*")) == before


def test_destination_beside_or_around_the_source_is_fine(tmp_path: Path) -> None:
    src = tmp_path / "mem"
    _fleet(str(src), 1, days=DAYS[:1], rows=1)
    assert export_parquet(str(src), str(tmp_path / "mem-export")).rows == 1
    assert export_parquet(str(src / "tenant-000"), str(src)).rows == 1  # dest around it


def test_table_folders_exist_without_rows(local_dirs: tuple[str, str]) -> None:
    pads = pytest.importorskip("pyarrow.dataset")
    src, dest = local_dirs
    _fleet(src, 1, days=DAYS[:1], rows=1)
    export_parquet(src, dest)
    assert os.path.isfile(os.path.join(dest, "events", "_common_metadata"))
    events = pads.dataset(os.path.join(dest, "events"), format="parquet", partitioning="hive")
    assert events.to_table().num_rows == 0
    # An empty source still creates both tables' folders (and a manifest).
    empty_src, empty_dest = os.path.join(src, "..", "empty"), os.path.join(dest, "..", "e")
    os.makedirs(empty_src)
    export_parquet(empty_src, empty_dest)
    for table in ("memory", "events"):
        assert os.path.isfile(os.path.join(empty_dest, table, "_common_metadata"))


def test_layout_1_manifest_is_converted_in_place(local_dirs: tuple[str, str]) -> None:
    """A destination written by an older fsmemory (one JSON manifest) continues
    incrementally: only new rows, and the manifest becomes head + segments."""
    from dataclasses import asdict

    src, dest = local_dirs
    total = _fleet(src, 5)
    export_parquet(src, dest)
    head = _head(dest)
    legacy = {
        "format": "fsmemory-export-manifest",
        "schema_version": 1,
        "generation": head.generation,
        "source": src,  # layout 1 kept the URL as typed
        "files": {k: asdict(v) for k, v in file_states(dest).items()},
        "parts": {
            k: {f: v for f, v in asdict(p).items() if f != "segments"}
            for k, p in head.parts.items()
        },
        "trash": [],
        "runs": [],
    }
    open_root(dest).write(MANIFEST_PATH, _jsonutil.dumps(legacy))
    open_root(dest).delete_tree(SEGMENTS_DIR)
    write_log(open_root(os.path.join(src, "tenant-001")), DAYS[2],
              lines([record("new", day=DAYS[2], n=40, id="new")]))  # fmt: skip
    report = export_parquet(src, dest)
    assert report.rows == 1
    rows = read_rows(dest)
    assert len(rows) == total + 1 and len({_key(r) for r in rows}) == total + 1
    converted = _jsonutil.loads(Path(dest, MANIFEST_PATH).read_bytes())
    assert converted["layout"] == 2 and "files" not in converted
    assert len(file_states(dest)) == 15
    # Rewrites after the conversion still find the holders of old parts.
    write_log(open_root(os.path.join(src, "tenant-002")), DAYS[0],
              lines([record("redo", id="redo")]), append=False)  # fmt: skip
    assert export_parquet(src, dest).files_reexported == 1
    assert len(read_rows(dest)) == total + 1 - 3 + 1
    _assert_manifest_matches_files(dest)


def test_orphan_segment_files_of_a_crashed_run_are_swept(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _fleet(src, 3, days=DAYS[:1], rows=1)
    export_parquet(src, dest)
    root = open_root(dest)
    dead = f"{SEGMENTS_DIR}/00/2026-03-10-20260101T000000Z-0badf00d.json"
    live = f"{SEGMENTS_DIR}/00/2026-03-10-20260101T000000Z-0000beef.json"
    root.write(dead, b"{}")
    root.write(live, b"{}")
    lease = {"run": "20260101T000000Z-0000beef", "state": "running", "expires": 4e12}
    root.write("_fsmemory_runs/20260101T000000Z-0000beef.json", _jsonutil.dumps(lease))
    write_log(open_root(os.path.join(src, "tenant-000")), DAYS[0],
              lines([record("more", n=5, id="more")]))  # fmt: skip
    export_parquet(src, dest)
    assert not root.exists(dead)  # no lease: its run is gone
    assert root.exists(live)  # its run still holds a lease


def _leftovers(root: Any, run: str, shard: list[int] | None, *, lease: bool = True) -> list[str]:
    """A part and a segment file of ``run``, a run that died before committing (its
    lease, when written, expired an hour ago)."""
    part = f"memory/date={DAYS[0]}/part-{run}-00001.parquet"
    segment = f"{SEGMENTS_DIR}/00/{DAYS[0]}-{run}.json"
    root.write(part, root.read_bytes(parquet_files(root.root)[0]))
    root.write(segment, b"{}")
    if lease:
        body = {"run": run, "state": "running", "expires": 1e9, "shard": shard}
        root.write(f"_fsmemory_runs/{run}.json", _jsonutil.dumps(body))
    return [part, segment]


def test_a_shard_sweeps_only_what_its_own_crashed_runs_left(local_dirs: tuple[str, str]) -> None:
    """Leftovers of a crashed run are deleted by the next run of the same shard; another
    shard leaves them (and their lease) alone, and files no lease accounts for wait for
    an unsharded run. A person's files in the dataset survive every sweep byte for byte."""
    src, dest = local_dirs
    _fleet(src, 8, days=DAYS[:1], rows=1)
    export_parquet(src, dest)
    root = open_root(dest)
    mine = _leftovers(root, "20260101T000000Z-00000000", [0, 2])
    theirs = _leftovers(root, "20260101T000000Z-11111111", [1, 2])
    other_split = _leftovers(root, "20260101T000000Z-22222222", [0, 3])
    unsharded = _leftovers(root, "20260101T000000Z-33333333", None)
    no_lease = _leftovers(root, "20260101T000000Z-44444444", None, lease=False)
    some_part = root.read_bytes(parquet_files(dest)[0])
    by_hand = {  # a backfill copied in by hand, notes
        f"memory/date={DAYS[0]}/backfill.parquet": some_part,
        f"memory/date={DAYS[0]}/part-by-hand.parquet": some_part,
        f"memory/date={DAYS[0]}/part-2024-00001.parquet": some_part,
        f"{SEGMENTS_DIR}/00/{DAYS[0]}-my-notes.json": b"{}",
        f"{SEGMENTS_DIR}/00/README.md": b"# kept\r\n\x00",
        "_fsmemory_runs/notes.txt": b"a person's note",
        "_fsmemory_runs/notes.json": b"not a lease",
    }
    for path, data in by_hand.items():
        root.write(path, data)

    def grow(shard: int) -> None:
        tenant = next(t for t in range(8) if bucket_of(f"tenant-{t:03d}", BUCKETS) % 2 == shard)
        write_log(open_root(os.path.join(src, f"tenant-{tenant:03d}")), DAYS[0],
                  lines([record(f"more {shard}", n=9, id=f"more-{shard}")]))  # fmt: skip

    def present(paths: list[str]) -> list[bool]:
        return [root.exists(p) for p in paths]

    grow(0)
    assert export_parquet(src, dest, shard=(0, 2)).parts_removed == 1
    assert present(mine) == [False, False]
    assert not root.exists("_fsmemory_runs/20260101T000000Z-00000000.json")
    for paths in (theirs, other_split, unsharded, no_lease):
        assert present(paths) == [True, True]
    assert root.exists("_fsmemory_runs/20260101T000000Z-11111111.json")
    grow(1)
    assert export_parquet(src, dest, shard=(1, 2)).parts_removed == 1
    assert present(theirs) == [False, False]
    for paths in (other_split, unsharded, no_lease):
        assert present(paths) == [True, True]
    # An unsharded run sweeps whatever no live run holds.
    grow(0)
    assert export_parquet(src, dest).parts_removed == 3
    for paths in (other_split, unsharded, no_lease):
        assert present(paths) == [False, False]
    leases = sorted(i.path for i in root.list("_fsmemory_runs"))
    assert leases == sorted(
        [
            "_fsmemory_runs/notes.json",
            "_fsmemory_runs/notes.txt",
            *(f"_fsmemory_runs/{r['run']}.json" for r in _head(dest).runs),
        ]
    )
    for path, data in by_hand.items():
        assert root.read_bytes(path) == data
    head = _head(dest)
    assert set(parquet_files(dest)) == set(head.parts) | {
        p for p in by_hand if p.endswith(".parquet")
    }
    pq = pytest.importorskip("pyarrow.parquet")
    assert sum(pq.read_metadata(os.path.join(dest, p)).num_rows for p in head.parts) == 8 + 3


def test_import_stays_light() -> None:
    code = (
        "import sys, fsmemory, fsmemory.cli, fsmemory.export\n"
        "fsmemory.cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'dask')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_readme_dask_recipe_runs(tmp_path: Path) -> None:
    pytest.importorskip("dask")
    import fsmemory.export

    readme = Path(fsmemory.export.__file__).with_name("README.md").read_text()
    block = readme.split("With Dask", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    total = _fleet(str(tmp_path / "users"), 12)
    done = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"{total} rows"
    whole = str(tmp_path / "whole")
    export_parquet(str(tmp_path / "users"), whole)
    sharded = str(tmp_path / "exports" / "memory")
    assert [_key(r) for r in read_rows(sharded)] == [_key(r) for r in read_rows(whole)]


@pytest.mark.s3
def test_shards_at_once_on_s3(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    """Two shards racing to create the manifest of a new S3 dataset both commit (the
    loser merges), reads run concurrently, and the union is the whole source."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    users = f"{s3_root_url}/users"
    for t in range(12):
        root = open_root(f"{users}/tenant-{t:03d}", s3_storage_options)
        write_log(root, DAYS[0], lines([record(f"t{t}", id=f"t{t}")]))
    start = threading.Barrier(2)

    def shard(i: int) -> Any:
        start.wait()
        return export_parquet(users, f"{s3_root_url}/out", shard=(i, 2),
                              storage_options=s3_storage_options, concurrency=4)  # fmt: skip

    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(shard, range(2)))
    assert sum(r.rows for r in reports) == 12
    again = export_parquet(users, f"{s3_root_url}/out", storage_options=s3_storage_options)
    assert again.rows == 0 and again.files_unchanged == 12
    whole = export_parquet(users, f"{s3_root_url}/whole", storage_options=s3_storage_options,
                           concurrency=4)  # fmt: skip
    assert whole.rows == 12 and whole.max_reads_in_flight > 1
    dest = open_root(f"{s3_root_url}/out", s3_storage_options)
    head = Manifest.from_bytes(dest.read_bytes(MANIFEST_PATH))
    assert {p.path for p in dest.list("memory", recursive=True) if p.path.endswith(".parquet")} \
        == set(head.parts)  # fmt: skip
