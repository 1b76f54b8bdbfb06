"""A restore takes a bounded number of sequential round trips, whatever the number of
deltas: a listing, the head, then the base and every waiting delta at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.snapshot import FsspecBackend
from fsmemory.snapshot.backends import DEFAULT_COMPACT_AFTER

from .conftest import make_spec

#: added to every request, long beside a thread's start-up on a loaded machine, so
#: requests sent together overlap and requests sent one after another do not
LATENCY = 0.25


class RoundTrips:
    """Wraps a root's reads and listings with :data:`LATENCY` and records when each
    request was in flight."""

    def __init__(self, root: Any) -> None:
        self.spans: list[tuple[float, float, str]] = []
        self._lock = threading.Lock()
        self._inside = threading.local()
        for name in ("list", "read", "read_bytes", "read_range", "read_ranges", "stat"):
            setattr(root, name, self._timed(name, getattr(root, name)))

    def _timed(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(self._inside, "busy", False):
                return call(*args, **kwargs)  # (one method calling another: one request)
            self._inside.busy = True
            start = time.perf_counter()
            try:
                time.sleep(LATENCY)
                return call(*args, **kwargs)
            finally:
                self._inside.busy = False
                with self._lock:
                    self.spans.append((start, time.perf_counter(), name))

        return timed

    def sequential(self) -> int:
        """The longest chain of requests each sent after the previous one answered:
        the round trips the reader waited for one after another."""
        count, free_at = 0, float("-inf")
        for start, end, _ in sorted(self.spans, key=lambda s: s[1]):
            if start >= free_at:
                count, free_at = count + 1, end
        return count


@pytest.mark.parametrize("kind", ["memory", pytest.param("s3", marks=pytest.mark.s3)])
def test_a_restore_fetches_the_base_and_every_delta_in_one_round_trip(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path
) -> None:
    _, url, options = make_spec(request, kind, tmp_path)
    writer = KnowledgeMemory(
        tmp_path / "w", backend=FsspecBackend(url, options), snapshot_compact_after=1
    )
    writer.remember("in the base", persistent=True)
    writer = KnowledgeMemory(tmp_path / "w2", backend=FsspecBackend(url, options))
    waiting = DEFAULT_COMPACT_AFTER - 1  # as many as wait before a fold is due
    for i in range(waiting):
        writer.remember(f"delta {i}")
    backend = FsspecBackend(url, options)
    trips = RoundTrips(backend.root)
    state = backend.load_state()
    assert len(state.deltas) == waiting and state.base is not None
    # a listing, the head, then the base and the 31 deltas together
    assert len(trips.spans) == 2 + 1 + waiting, trips.spans
    assert trips.sequential() == 3, sorted(trips.spans)
    # and the memory restored from it holds everything
    trips.spans.clear()
    restored = KnowledgeMemory(tmp_path / "r", backend=backend)
    assert trips.sequential() == 3
    assert len(restored.entries()) == 1 + waiting
