"""On an obstore root (S3 here, on moto) a memory with an embedder reads its vector file
with the listing and the index cache, in the same round trip: the first hybrid recall of
a cold open waits one round trip less, for the same answers. The copy read ahead is
checked as any read is (a damaged one is rebuilt, never served), and one older than
vectors stored since is read again before anything is embedded. A memory without an
embedder sends no extra request."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.fs._obstore import ObstoreRoot
from fsmemory.fs.base import StorageRoot
from fsmemory.memory import _vecfile

from .conftest import backend_location
from .test_embedder import WordEmbedder, fresh_vocabulary  # noqa: F401 (autouse)
from .test_vectors_file import TEXTS, _embedded

pytest.importorskip("numpy")
pytestmark = pytest.mark.s3

VECTORS = "vectors/file-128.i8v"
#: added before every obstore call: long beside a thread's start-up, so requests sent
#: together overlap and requests sent one after another do not
LATENCY = 0.2


class Calls:
    """The obstore calls of a root while :meth:`watch` runs: ``(start, thread,
    "operation bucket/key")``, each started :data:`LATENCY` late."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()

    @contextmanager
    def watch(self, root: Any) -> Iterator[Calls]:
        def observe(operation: str, key: str) -> None:
            with self._lock:
                self.calls.append(
                    (time.perf_counter(), threading.current_thread().name, f"{operation} {key}")
                )
            time.sleep(LATENCY)

        root.observers.append(observe)
        try:
            yield self
        finally:
            root.observers.remove(observe)

    def round_trips(self) -> int:
        """Requests each sent after the previous one could have answered."""
        count, free_at = 0, float("-inf")
        for start, _, _ in sorted(self.calls):
            if start >= free_at:
                count, free_at = count + 1, start + LATENCY
        return count

    def of(self, path: str) -> list[tuple[str, str]]:
        """``(thread, call)`` of the calls on ``path``."""
        return [(thread, call) for _, thread, call in self.calls if call.endswith("/" + path)]


@pytest.fixture
def seeded(request: pytest.FixtureRequest, tmp_path: Any) -> tuple[str, dict[str, Any], list[str]]:
    """An S3 memory with the vectors of :data:`TEXTS` stored."""
    url, options = backend_location(request, "s3", tmp_path)
    km = KnowledgeMemory(url, storage_options=options, embedder=WordEmbedder("file"))
    ids = [km.remember(t) for t in TEXTS]
    return url, options, ids


def _cold_recall(
    url: str, options: dict[str, Any], query: str
) -> tuple[list[str], Calls, WordEmbedder]:
    embedder = WordEmbedder("file")
    fresh = KnowledgeMemory(url, storage_options=options, embedder=embedder)
    with Calls().watch(fresh.root) as calls:
        found = [e.id for e in fresh.recall(query, limit=3)]
    return found, calls, embedder


def test_a_cold_hybrid_recall_reads_the_vectors_with_the_listing(
    seeded: tuple[str, dict[str, Any], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, options, ids = seeded
    found, calls, embedder = _cold_recall(url, options, "tea sunrise")
    with monkeypatch.context() as m:  # as before: the vector file read when first used
        m.setattr(ObstoreRoot, "fetch_with_listing", StorageRoot.fetch_with_listing)
        before, old_calls, old_embedder = _cold_recall(url, options, "tea sunrise")
    assert found == before and found[0] == ids[3]
    assert _embedded(embedder) == _embedded(old_embedder) == []  # every vector was read
    # The same requests, the vector file's GET sent with the listing: one round trip less.
    assert len(calls.calls) == len(old_calls.calls), (calls.calls, old_calls.calls)
    assert [thread for thread, _ in calls.of(VECTORS)] == ["fsmemory-get"], calls.calls
    assert [thread for thread, _ in old_calls.of(VECTORS)] == ["MainThread"], old_calls.calls
    assert calls.round_trips() == old_calls.round_trips() - 1, (calls.calls, old_calls.calls)


def test_a_memory_without_an_embedder_reads_no_vectors(
    seeded: tuple[str, dict[str, Any], list[str]],
) -> None:
    url, options, ids = seeded
    fresh = KnowledgeMemory(url, storage_options=options)
    with Calls().watch(fresh.root) as calls:
        assert fresh.recall("tea sunrise", limit=1)[0].id == ids[3]
    assert calls.of(VECTORS) == []
    # Only the index cache's GET (404: a memory this small has none) goes with the listing.
    ahead = [call for _, thread, call in calls.calls if thread != "MainThread"]
    assert len(ahead) == 1 and ahead[0].endswith("/.fsmemory-cache.index"), calls.calls


def test_a_damaged_copy_read_ahead_is_rebuilt_never_served(
    seeded: tuple[str, dict[str, Any], list[str]],
) -> None:
    url, options, ids = seeded
    root = KnowledgeMemory(url, storage_options=options).root
    data = bytearray(root.read_bytes(VECTORS))
    header = _vecfile.read_header(bytes(data))
    assert header is not None
    scan = _vecfile.scan_blocks(bytes(data), _vecfile.HEADER_SIZE, len(data), header.dimension)
    data[scan.blocks[2].vectors_at + 17] ^= 0x40  # a vector of TEXTS[2]
    root.write(VECTORS, bytes(data))
    found, calls, embedder = _cold_recall(url, options, "marathon training")
    assert calls.of(VECTORS)[0][0] == "fsmemory-get"  # the copy read ahead
    assert found[0] == ids[2]
    assert _embedded(embedder) == [TEXTS[2]]  # the damaged row only, embedded again
    rebuilt = root.read_bytes(VECTORS)
    scan = _vecfile.scan_blocks(rebuilt, _vecfile.HEADER_SIZE, len(rebuilt), header.dimension)
    assert scan.skipped == 0 and sorted(i for b in scan.blocks for i in b.ids) == sorted(ids)
    # The next cold open serves every vector from the rebuilt file.
    found, _, embedder = _cold_recall(url, options, "violin strings")
    assert found[0] == ids[1] and _embedded(embedder) == []


def test_vectors_stored_after_the_read_ahead_are_read_not_embedded(
    seeded: tuple[str, dict[str, Any], list[str]],
) -> None:
    url, options, ids = seeded
    embedder = WordEmbedder("file")
    fresh = KnowledgeMemory(url, storage_options=options, embedder=embedder)
    fresh.refresh()  # the listing, with the vector file read ahead
    other = KnowledgeMemory(url, storage_options=options, embedder=WordEmbedder("file"))
    late = other.remember("the lighthouse keeper counts ships")
    assert fresh.recall("lighthouse ships", limit=1)[0].id == late
    assert _embedded(embedder) == []  # its vector was read from the file
    assert fresh.recall("tea sunrise", limit=1)[0].id == ids[3]
