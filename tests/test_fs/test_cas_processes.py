"""Several processes doing compare-and-swap on one object lose nothing.

Each of 4 spawned processes opens the root from its URL (its own client, its own
connections) and increments one counter file 50 times with ``update()``.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest

from fsmemory.fs import open_root
from fsmemory.testing.conformance import cas_increment_worker

PROCESSES = 4
INCREMENTS = 50


def _run(url: str, options: dict[str, Any]) -> None:
    root = open_root(url, options)
    root.write("counter", b"0")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        jobs = [
            pool.apply_async(cas_increment_worker, (url, options, "counter", INCREMENTS))
            for _ in range(PROCESSES)
        ]
        applied = sum(job.get(timeout=240) for job in jobs)
    assert applied == PROCESSES * INCREMENTS
    assert int(root.read_bytes("counter")) == PROCESSES * INCREMENTS


@pytest.mark.s3
def test_s3_processes_lose_no_increment(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """4 processes x 50 CAS increments on one S3 object (moto) end at 200."""
    _run(s3_root_url, s3_storage_options)


@pytest.mark.gcs
def test_gcs_processes_lose_no_increment(
    gcs_root_url: str, gcs_storage_options: dict[str, Any]
) -> None:
    """4 processes x 50 CAS increments on one GCS object (fake-gcs-server) end at 200."""
    _run(gcs_root_url, gcs_storage_options)


def test_local_processes_lose_no_increment(tmp_path: Any) -> None:
    """The same on a local folder (OS lock + atomic rename)."""
    _run(str(tmp_path / "root"), {})
