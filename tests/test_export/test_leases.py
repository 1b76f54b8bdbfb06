"""Run ids, lease files and the sweep of crashed runs' files (``_leases.py``)."""

from __future__ import annotations

import json

import pytest

from fsmemory.export._leases import Lease, is_run_id, new_run_id, segment_run, sweep
from fsmemory.export._manifest import RUNS_DIR, SEGMENTS_DIR, Manifest
from fsmemory.fs import open_root


def test_run_ids_have_one_recognisable_shape() -> None:
    assert all(is_run_id(new_run_id()) for _ in range(50))
    assert is_run_id("20260313T101500Z-1a2b3c4d")
    for text in [
        "",
        "notes",
        "2024",
        "by-hand",
        "20260313T101500Z",
        "20260313T101500Z-1a2b3c4",  # 7 hex digits
        "20260313T101500Z-1a2b3c4d5",
        "20260313T101500Z-1A2B3C4D",  # upper case
        "20260313T101500Z-1a2b3c4g",
        "20260313X101500Z-1a2b3c4d",
        "2026031３T101500Z-1a2b3c4d",  # a non-ASCII digit
        "20260313T101500Z-1a2b-c4d",
        "../20260313T101500Z-1a2b3c4d",
        "20260313T101500Z-1a2b3c4d\n",
    ]:
        assert not is_run_id(text), text


def test_segment_file_names_give_their_run() -> None:
    run = "20260313T101500Z-1a2b3c4d"
    assert segment_run(f"{SEGMENTS_DIR}/07/2026-03-13-{run}.json") == run
    assert segment_run(f"{SEGMENTS_DIR}/07/events-{run}.json") == run
    assert segment_run(f"{SEGMENTS_DIR}/07/README.md") is None
    assert segment_run(f"{SEGMENTS_DIR}/07/notes.json") is None


def test_a_lease_names_its_run_state_and_shard(tmp_path: str) -> None:
    root = open_root(str(tmp_path))
    lease = Lease(root, "20260313T101500Z-1a2b3c4d", (2, 4), 600.0)
    assert not lease.held and not lease.due() and not lease.lapsing()
    lease.hold()
    body = json.loads(root.read_bytes(f"{RUNS_DIR}/20260313T101500Z-1a2b3c4d.json"))
    assert body["run"] == lease.run_id and body["state"] == "running"
    assert body["shard"] == [2, 4] and lease.held
    lease.finish("committed")
    body = json.loads(root.read_bytes(lease.path))
    assert body["state"] == "committed" and body["expires"] > 0


@pytest.mark.parametrize("shard", [None, (0, 2)])
def test_an_unreadable_lease_is_swept_only_by_an_unsharded_run(
    tmp_path: str, shard: tuple[int, int] | None
) -> None:
    """A lease that cannot be read names no shard: an unsharded run takes its run as
    dead (and deletes the lease); a sharded run leaves everything as it is."""
    root = open_root(str(tmp_path))
    run = "20260101T000000Z-0badf00d"
    part = f"memory/date=2026-03-10/part-{run}-00001.parquet"
    root.write(part, b"PAR1")
    root.write(f"{RUNS_DIR}/{run}.json", b"{not json")
    removed = sweep(
        root,
        Manifest(source="file:///x"),
        run_id=new_run_id(),
        shard=shard,
        map_fn=lambda fn, items: [fn(i) for i in items],
    )
    if shard is None:
        assert removed == 1 and not root.exists(part)
        assert not root.exists(f"{RUNS_DIR}/{run}.json")
    else:
        assert removed == 0 and root.read_bytes(part) == b"PAR1"
        assert root.read_bytes(f"{RUNS_DIR}/{run}.json") == b"{not json"
