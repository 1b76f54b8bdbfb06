"""Several processes writing one Azure memory lose nothing, on both routes (Azurite),
and a writer killed mid-way does not hold the others up on the obstore route (native
compare-and-swap: there is no lease to wait for).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.fs import open_root
from fsmemory.fs.azure import AdlfsRoot, AzureRoot
from fsmemory.testing.conformance import cas_increment_worker
from tests.test_memory.test_concurrency import WORKERS, _check, _worker

pytestmark = pytest.mark.azure

PROCESSES = 4


def _options(request: pytest.FixtureRequest, route: str) -> dict[str, Any]:
    name = "azure_storage_options" if route == "obstore" else "azure_adlfs_storage_options"
    options: dict[str, Any] = request.getfixturevalue(name)
    return options


@pytest.mark.parametrize(("route", "increments"), [("obstore", 50), ("adlfs", 10)])
def test_processes_lose_no_increment(
    request: pytest.FixtureRequest, azure_root_url: str, route: str, increments: int
) -> None:
    """4 spawned processes x CAS increments on one blob end at the exact total."""
    options = _options(request, route)
    root = open_root(azure_root_url, options)
    assert isinstance(root, AzureRoot if route == "obstore" else AdlfsRoot)
    root.write("counter", b"0")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        jobs = [
            pool.apply_async(cas_increment_worker, (azure_root_url, options, "counter", increments))
            for _ in range(PROCESSES)
        ]
        applied = sum(job.get(timeout=240) for job in jobs)
    assert applied == PROCESSES * increments
    assert int(root.read_bytes("counter")) == PROCESSES * increments


@pytest.mark.parametrize(("route", "per_worker"), [("obstore", 100), ("adlfs", 25)])
def test_processes_remembering_lose_nothing(
    request: pytest.FixtureRequest, azure_root_url: str, route: str, per_worker: int
) -> None:
    """4 processes remember into one az:// memory: every entry once, MEMORY.md whole."""
    options = _options(request, route)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WORKERS) as pool:
        results = pool.starmap(
            _worker, [(azure_root_url, options, w, per_worker) for w in range(WORKERS)]
        )
    ids = [i for r in results for i in r]
    assert len(set(ids)) == WORKERS * per_worker
    _check(azure_root_url, options, ids, per_worker)


def _remember_forever(url: str, options: dict[str, Any]) -> None:
    km = KnowledgeMemory(url, storage_options=options)
    i = 0
    while True:
        km.remember(f"doomed fact {i}", persistent=i % 2 == 0)
        i += 1


def test_a_killed_writer_does_not_stall_the_others(
    azure_root_url: str, azure_storage_options: dict[str, Any]
) -> None:
    """A writer SIGKILLed in the middle of its remember() calls: the next writer's calls
    each finish in well under a second (no lease object is ever taken), and the memory
    it leaves is readable, with no corrupt line."""
    ctx = multiprocessing.get_context("spawn")
    doomed = ctx.Process(target=_remember_forever, args=(azure_root_url, azure_storage_options))
    doomed.start()
    try:
        km = KnowledgeMemory(azure_root_url, storage_options=azure_storage_options)
        deadline = time.monotonic() + 120
        while len(km.entries()) < 6:
            assert time.monotonic() < deadline, "the doomed writer never wrote"
            time.sleep(0.1)
    finally:
        assert doomed.pid is not None
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.join(timeout=30)
    survivor = KnowledgeMemory(azure_root_url, storage_options=azure_storage_options)
    times = []
    for i in range(5):
        started = time.monotonic()
        survivor.remember(f"survivor fact {i}", persistent=True)
        times.append(time.monotonic() - started)
    assert max(times) < 2.0, times
    contents = {e.content for e in survivor.entries()}
    assert {f"survivor fact {i}" for i in range(5)} <= contents
    assert survivor.stats()["corrupt_lines"] == 0
    root = open_root(azure_root_url, azure_storage_options)
    assert isinstance(root, AzureRoot)
    import obstore

    keys = [o["path"] for batch in obstore.list(root.store, root.prefix) for o in batch]
    assert not [k for k in keys if ".fsmemory.lease" in k], keys


@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_a_lease_left_by_a_crashed_writer_holds_nobody_up(
    request: pytest.FixtureRequest, azure_root_url: str, route: str
) -> None:
    """Both routes write with native conditions, never under a lease: lease blobs such
    as a crashed writer of the old lease-based adlfs route left (fresh, for MEMORY.md and
    today's log) hold no remember() up, and the lease blobs are left alone."""
    options = _options(request, route)
    km = KnowledgeMemory(azure_root_url, storage_options=options)
    km.remember("before", persistent=True)
    assert km.root.capabilities.conditional_write
    day = time.strftime("%Y-%m-%d", time.gmtime())
    lease = f'{{"owner": "crashed", "expires": {time.time() + 120}}}'.encode()
    raw = open_root(azure_root_url, request.getfixturevalue("azure_storage_options"))
    assert isinstance(raw, AzureRoot)
    import obstore

    leases = [f"{raw.prefix}/.fsmemory.lease-file-MEMORY.md"]
    leases.append(f"{raw.prefix}/.fsmemory.lease-file-logs_{day}.jsonl")
    for key in leases:
        obstore.put(raw.store, key, lease)
    started = time.monotonic()
    km.remember("after a crash", persistent=True)
    km.remember("after a crash, not persistent")
    assert time.monotonic() - started < 2.0
    assert {"before", "after a crash"} <= {e.content for e in km.entries()}
    for key in leases:
        assert bytes(obstore.get(raw.store, key).bytes()) == lease
