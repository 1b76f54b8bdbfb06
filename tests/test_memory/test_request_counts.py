"""What a KnowledgeMemory operation costs in requests on remote backends."""

from __future__ import annotations

from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.testing.requests import count_requests

from .conftest import backend_location

REMOTE = [
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("gcs", marks=pytest.mark.gcs),
    pytest.param("gcs-gcsfs", marks=[pytest.mark.gcs, pytest.mark.slow]),
    pytest.param("redis", marks=pytest.mark.redis),
]
#: the backends whose root sends the index cache's GET together with the listing
#: (the obstore routes)
CACHE_WITH_LISTING = ("s3", "gcs")


@pytest.mark.parametrize("backend", REMOTE)
def test_request_budget(request: pytest.FixtureRequest, backend: str, tmp_path: Any) -> None:
    url, options = backend_location(request, backend, tmp_path)
    km = KnowledgeMemory(url, storage_options=options)
    for i in range(20):
        km.remember(f"warm-up fact {i}", persistent=i % 2 == 0)
    km.recall("warm")
    counts = {}
    with count_requests(km.root) as c:
        km.remember("a plain note")
    counts["remember"] = len(c)
    with count_requests(km.root) as c:
        km.remember("a persistent fact", persistent=True)
    counts["remember_persistent"] = len(c)
    km.recall("x")
    with count_requests(km.root) as c:
        km.recall("note")
    counts["warm_recall"] = len(c)
    with count_requests(km.root) as c:
        km.build_context()
    counts["warm_build_context"] = len(c)
    other = KnowledgeMemory(url, storage_options=options)
    other.remember("written by another process")
    with count_requests(km.root) as c:
        assert [e.content for e in km.recall("another")] == ["written by another process"]
    counts["recall_after_remote_append"] = len(c)
    # Redis lists one directory level per round trip (root, logs/): 2 round trips.
    listing = 2 if backend == "redis" else 1
    assert counts["remember"] <= (1 if backend == "redis" else 4), counts
    assert counts["warm_recall"] <= listing, counts
    assert counts["warm_build_context"] <= listing, counts
    assert counts["recall_after_remote_append"] <= listing + 1, counts
    # MEMORY.md's compare-and-swap makes the index read again: MEMORY.md and the log it
    # appended to are fetched whole, so that the CRC-32 of what the index parsed before
    # proves those bytes unchanged (a same-length edit in place is seen).
    assert counts["remember_persistent"] <= 7, counts


@pytest.mark.parametrize("backend", REMOTE)
def test_a_cold_open_costs_one_listing_and_one_get_per_file(
    request: pytest.FixtureRequest, backend: str, tmp_path: Any
) -> None:
    url, options = backend_location(request, backend, tmp_path)
    km = KnowledgeMemory(url, storage_options=options)
    for i in range(6):
        km.remember(f"fact {i}", persistent=i % 2 == 0)
    files = len(km.root.list("", recursive=True))
    fresh = KnowledgeMemory(url, storage_options=options)
    with count_requests(fresh.root) as c:
        assert fresh.recall("fact 5")[0].content == "fact 5"
    listing = 2 if backend == "redis" else 1
    # On S3 and GCS (obstore) the index cache's GET travels with the listing (it
    # answers 404 here: a memory this small never writes one); elsewhere it is read
    # only after a listing shows a memory large enough to have one.
    probe = [call for call in c.calls if call.endswith("/.fsmemory-cache.index")]
    assert len(probe) == (1 if backend in CACHE_WITH_LISTING else 0), c.calls
    assert len(c) == listing + files + len(probe), c.calls


@pytest.mark.parametrize("backend", REMOTE)
def test_a_fresh_process_stores_its_first_vector_in_the_requests_of_an_append(
    request: pytest.FixtureRequest, backend: str, tmp_path: Any
) -> None:
    from .test_embedder import WordEmbedder

    url, options = backend_location(request, backend, tmp_path)
    km = KnowledgeMemory(url, storage_options=options, embedder=WordEmbedder("req"))
    for i in range(6):
        km.remember(f"fact {i}")
    km.recall("fact")
    assert km.root.exists("vectors/req-128.i8v")

    def vector_calls(memory: KnowledgeMemory, text: str) -> list[str]:
        with count_requests(memory.root) as c:
            memory.remember(text)
        return [call for call in c.calls if "vectors/" in call or "EVAL" in call]

    fresh = KnowledgeMemory(url, storage_options=options, embedder=WordEmbedder("req"))
    first = vector_calls(fresh, "a fresh note")
    read = KnowledgeMemory(url, storage_options=options, embedder=WordEmbedder("req"))
    read.recall("fact")  # has read the vector file: its next write is an append only
    later = vector_calls(read, "one more note")
    # The file exists: a fresh process asks whether it does (one request), then appends
    # to it as a process that read it does, with no attempt to create it.
    assert first[1:] == later, (first, later)
    if backend != "redis":  # (whose calls all read EVALSHA: counted above)
        assert [call.split()[0] for call in later] == ["get", "put"], later
    found = KnowledgeMemory(url, storage_options=options, embedder=WordEmbedder("req"))
    assert {e.content for e in found.recall("note", limit=5)} >= {"a fresh note", "one more note"}
