"""A restore makes progress while other invocations fold the same snapshot: a fold keeps
what it replaces until the next fold, and a read keeps what it fetched across attempts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.snapshot import FsspecBackend

from .conftest import Spec, make_spec

KINDS = ["local", pytest.param("s3", marks=pytest.mark.s3)]


class FoldedUnderTheReader(FsspecBackend):
    """A reader during whose attempts another invocation folds: right after the reader
    read the head, before it fetches what the head names (``folds_per_read`` folds in
    each of the first ``reads`` attempts, then none)."""

    def __init__(
        self, spec: Spec, folder: KnowledgeMemory, folds_per_read: int, reads: int = 10**6
    ) -> None:
        _kind, location, options = spec
        super().__init__(location, storage_options=options)
        self.folder = folder
        self.folds_per_read = folds_per_read
        self.reads = reads
        self.folds = 0

    def _read_head(self) -> Any:
        head = super()._read_head()
        if self.reads > 0:
            self.reads -= 1
            for _ in range(self.folds_per_read):
                self.folds += 1
                self.folder.remember(f"folded under the reader {self.folds}")
        return head


def _backend(spec: Spec) -> FsspecBackend:
    _kind, location, options = spec
    return FsspecBackend(location, storage_options=options)


def _folder(spec: Spec, path: Path) -> KnowledgeMemory:
    km = KnowledgeMemory(path, backend=_backend(spec), snapshot_compact_after=1)
    assert km._replica is not None
    return km


@pytest.mark.parametrize("kind", KINDS)
def test_a_cold_restore_succeeds_while_a_fold_lands_in_every_read(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    other = _folder(spec, tmp_path / "other")
    for i in range(3):
        other.remember(f"before {i}", persistent=True)
    backend = FoldedUnderTheReader(spec, other, folds_per_read=1)
    km = KnowledgeMemory(tmp_path / "reader", backend=backend)
    assert backend.folds >= 1 and other._replica is not None and other._replica.folds > 3
    contents = {e.content for e in km.entries()}
    assert {f"before {i}" for i in range(3)} <= contents
    km.remember("the reader's own fact")
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    assert {e.content for e in check.entries()} == {e.content for e in other.entries()} | {
        "the reader's own fact"
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_warm_restore_succeeds_while_a_fold_lands_in_every_read(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    other = _folder(spec, tmp_path / "other")
    other.remember("first", persistent=True)
    scratch = tmp_path / "warm"
    warm = KnowledgeMemory(scratch, backend=_backend(spec))
    warm.remember("from the warm container")
    other.remember("moves the head on")  # the warm container's base is no longer the head's
    # One fold in every attempt, however many attempts; then two folds in each of the
    # first 5 attempts (a reader stalled while others fold twice: it tries again).
    for folds, reads in ((1, 10**6), (1, 10**6), (2, 5)):
        backend = FoldedUnderTheReader(spec, other, folds_per_read=folds, reads=reads)
        again = KnowledgeMemory(scratch, backend=backend)
        assert backend.folds >= folds
        contents = {e.content for e in again.entries()}
        assert {"first", "from the warm container", "moves the head on"} <= contents
        again.remember(f"after {backend.folds} folds under the reader")
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    theirs = {e.content for e in other.entries()}
    ours = {e.content for e in KnowledgeMemory(scratch, backend=_backend(spec)).entries()}
    assert {e.content for e in check.entries()} == theirs | ours
