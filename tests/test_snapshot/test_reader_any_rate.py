"""A reader makes progress under any rate of folds: a fold keeps what it retires (the
base it replaces, the deltas it folds) for RETIRED_GRACE seconds, dated in the head, so
a read attempt shorter than that finds everything its head named however many folds
complete meanwhile; a later fold deletes retired objects once older than the grace."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory, _jsonutil
from fsmemory.snapshot import FsspecBackend
from fsmemory.snapshot.backends import RETIRED_GRACE, SnapshotState

from .conftest import Spec, make_spec
from .test_folded_leftovers import (
    Killed,
    _check,
    _delta_objects,
    _killed_after_head_write,
    _pin_and_hand_edit,
)

KINDS = [
    "local",
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("redis-fs", marks=pytest.mark.redis),
]
FOLDS_PER_ATTEMPT = 10


class Clock:
    """A clock the test moves (epoch seconds)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _backend(spec: Spec, clock: Clock | None = None) -> FsspecBackend:
    _kind, location, options = spec
    backend = FsspecBackend(location, storage_options=options)
    if clock is not None:
        backend.clock = clock
    return backend


class ManyFoldsInEveryAttempt(FsspecBackend):
    """A reader during each of whose read attempts another invocation folds
    ``FOLDS_PER_ATTEMPT`` times, right after the reader read the head and before it
    fetches what the head names; counts the attempts and the reads."""

    def __init__(self, spec: Spec, folder: KnowledgeMemory) -> None:
        _kind, location, options = spec
        super().__init__(location, storage_options=options)
        self.folder = folder
        self.folds = 0
        self.attempts = 0
        self.reads = 0

    def load_state(self, known: SnapshotState | None = None) -> SnapshotState:
        self.reads += 1
        return super().load_state(known)

    def _read_head(self) -> Any:
        head = super()._read_head()
        self.attempts += 1
        for _ in range(FOLDS_PER_ATTEMPT):
            self.folds += 1
            self.folder.remember(f"folded under the reader {self.folds}")
        return head


def _folder(spec: Spec, path: Path) -> KnowledgeMemory:
    """An invocation whose every save is a fold."""
    km = KnowledgeMemory(path, backend=_backend(spec), snapshot_compact_after=1)
    assert km._replica is not None
    return km


def _objects(backend: FsspecBackend) -> dict[str, bytes]:
    """Every object in the snapshot's folder, by name inside it, with its bytes."""
    cut = len(backend.objects) + 1
    return {
        i.path[cut:]: backend.root.read_bytes(i.path)
        for i in backend.root.list(backend.objects, recursive=True)
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_read_completes_in_one_attempt_while_ten_folds_land_in_every_attempt(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    other = _folder(spec, tmp_path / "other")
    for i in range(3):
        other.remember(f"before {i}", persistent=True)
    # A backend read: every attempt sees ten folds between its head read and its fetches.
    reader = ManyFoldsInEveryAttempt(spec, other)
    state = reader.load_state()
    assert (reader.reads, reader.attempts, reader.folds) == (1, 1, FOLDS_PER_ATTEMPT)
    assert state.base is not None
    # A cold restore, then a warm one whose known base is long replaced.
    scratch = tmp_path / "reader"
    cold = ManyFoldsInEveryAttempt(spec, other)
    km = KnowledgeMemory(scratch, backend=cold)
    assert cold.attempts == cold.reads >= 1 and cold.folds == FOLDS_PER_ATTEMPT * cold.reads
    assert {f"before {i}" for i in range(3)} <= {e.content for e in km.entries()}
    km.remember("the reader's own fact")
    other.remember("moves the head on")
    warm = ManyFoldsInEveryAttempt(spec, other)
    again = KnowledgeMemory(scratch, backend=warm)
    assert warm.attempts == warm.reads >= 1
    contents = {e.content for e in again.entries()}
    assert {"before 0", "the reader's own fact", "moves the head on"} <= contents
    again.remember("after the warm restore")
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    ours = {e.content for e in KnowledgeMemory(scratch, backend=_backend(spec)).entries()}
    assert {e.content for e in check.entries()} == {e.content for e in other.entries()} | ours


@pytest.mark.parametrize("kind", KINDS)
def test_retired_objects_are_deleted_once_older_than_the_grace_not_before(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    clock = Clock()
    deltas = KnowledgeMemory(tmp_path / "d", backend=_backend(spec), snapshot_compact_after=10**6)

    def fold(i: int) -> None:
        """A delta, then an invocation whose first save folds it (at the clock's time:
        with the delta it found, two are waiting)."""
        deltas.remember(f"delta {i}")
        km = KnowledgeMemory(
            tmp_path / f"f{i}", backend=_backend(spec, clock), snapshot_compact_after=2
        )
        km.remember(f"fold {i}")

    fold(0)
    first = _objects(_backend(spec))
    state = _backend(spec).load_state()
    retired = set(first) - {state.base_name}
    assert any(n.startswith("delta/") for n in retired) and state.retired is not None
    assert set(state.retired) == retired
    # Folds within the grace keep them, byte for byte.
    for i, step in enumerate((10.0, RETIRED_GRACE - 11.0)):
        clock.now += step
        fold(1 + i)
        objects = _objects(_backend(spec))
        assert {n: objects.get(n) for n in first} == first
    kept = _objects(_backend(spec))
    # Once older than the grace, the next fold deletes them; what is younger survives.
    clock.now += 2.0
    fold(3)
    objects = _objects(_backend(spec))
    assert not retired & set(objects)
    state = _backend(spec).load_state()
    assert state.retired is not None
    young = set(kept) - retired
    assert {n: objects[n] for n in young} == {n: kept[n] for n in young}
    assert young <= set(state.retired) == set(objects) - {state.base_name}
    restored = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    assert {e.content for e in restored.entries()} == {
        *(f"delta {i}" for i in range(4)),
        *(f"fold {i}" for i in range(4)),
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_fold_killed_before_its_delete_leaves_nothing_applied_again_within_or_after_grace(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    clock = Clock()
    pin, deltas = _pin_and_hand_edit(spec, tmp_path / "a")
    killed = _killed_after_head_write(_backend(spec, clock))
    km = KnowledgeMemory(tmp_path / "b", backend=killed, snapshot_compact_after=1)
    with pytest.raises(Killed):
        km.remember("saved by the killed invocation", category="later", persistent=True)
    later = KnowledgeMemory(tmp_path / "c", backend=_backend(spec, clock), snapshot_compact_after=1)
    assert later.forget(pin)
    texts = ["saved by the killed invocation"]
    for i in range(5):  # folds within the grace: the leftovers stay, never applied again
        clock.now += (RETIRED_GRACE - 1.0) / 5
        texts.append(f"within the grace {i}")
        later.remember(texts[-1], category="later", persistent=True)
        assert set(deltas) <= _delta_objects(_backend(spec))
        _check(spec, tmp_path / f"check-{i}", pin, texts)
    clock.now += 2.0
    texts.append("after the grace")
    later.remember(texts[-1], category="later", persistent=True)
    assert not set(deltas) & _delta_objects(_backend(spec))
    _check(spec, tmp_path / "check", pin, texts)


@pytest.mark.parametrize("kind", KINDS)
def test_the_record_holds_what_was_retired_within_the_grace(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    clock = Clock()
    deltas = KnowledgeMemory(tmp_path / "d", backend=_backend(spec), snapshot_compact_after=10**6)
    sizes = []
    for i in range(24):  # four folds per grace, each retiring a base and one delta
        clock.now += RETIRED_GRACE / 4 + 1
        deltas.remember(f"delta {i}")
        KnowledgeMemory(
            tmp_path / f"f{i}", backend=_backend(spec, clock), snapshot_compact_after=2
        ).remember(f"f {i}")
        state = _backend(spec).load_state()
        assert state.retired is not None
        sizes.append((len(state.retired), len(state.folded), len(_objects(_backend(spec)))))
    # Retired within the last grace: 4 folds' bases and deltas. Folded names: retired
    # within the last grace, or known gone within the last grace (4 + 4, and this one).
    assert max(r for r, _, _ in sizes) <= 8 and max(f for _, f, _ in sizes) <= 9, sizes
    state = _backend(spec).load_state()
    assert state.gone_at is not None and len(state.gone_at) <= 4
    assert max(o for _, _, o in sizes) <= 10, sizes


@pytest.mark.parametrize("kind", KINDS)
def test_a_head_without_the_record_counts_its_retired_objects_as_retired_now(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    """A head an older fsmemory wrote (no ``"retired"``), or a hostile record: nothing it
    retired is deleted before the grace has passed on the reading writer's clock."""
    spec = make_spec(request, kind, tmp_path)
    clock = Clock()
    deltas = KnowledgeMemory(tmp_path / "d", backend=_backend(spec), snapshot_compact_after=10**6)
    for i, record in enumerate((None, [1, 2], {"x": "not a time", "base-y.json": 5})):
        deltas.remember(f"delta {i}")
        KnowledgeMemory(
            tmp_path / f"f{i}", backend=_backend(spec, clock), snapshot_compact_after=2
        ).remember(f"f {i}")
        backend = _backend(spec)
        head = _jsonutil.loads(backend.root.read_bytes(backend.head))
        before = _objects(backend)
        stale = set(before) - {head["base"]}
        assert stale
        if record is None:
            del head["retired"], head["gone"]
        else:
            head["retired"] = record if isinstance(record, list) else dict.fromkeys(stale, "?")
        backend.root.write(backend.head, _jsonutil.dumps(head))
        clock.now += RETIRED_GRACE + 10  # as if long ago: the record does not say when
        KnowledgeMemory(
            tmp_path / f"g{i}", backend=_backend(spec, clock), snapshot_compact_after=1
        ).remember(f"g {i}")
        objects = _objects(_backend(spec))
        assert {n: objects.get(n) for n in stale} == {n: before[n] for n in stale}
        state = _backend(spec).load_state()
        assert state.retired is not None and stale <= set(state.retired)
        clock.now += RETIRED_GRACE + 1
        KnowledgeMemory(
            tmp_path / f"h{i}", backend=_backend(spec, clock), snapshot_compact_after=1
        ).remember(f"h {i}")
        assert not stale & set(_objects(_backend(spec)))
    expected = {f"{w} {i}" for w in ("delta", "f", "g", "h") for i in range(3)}
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    assert {e.content for e in check.entries()} == expected


class FoldsBetweenListingAndHead(FsspecBackend):
    """A reader between whose listing and head read, in every attempt, other invocations
    delete what was retired more than RETIRED_GRACE ago (which the listing still shows)
    and fold again: two folds at once, after the clock passed the grace."""

    def __init__(self, spec: Spec, fold: Any, clock: Clock) -> None:
        _kind, location, options = spec
        super().__init__(location, storage_options=options)
        self.fold = fold
        self.clock_of_folds = clock
        self.attempts = 0

    def _read_head(self) -> Any:
        self.attempts += 1
        self.clock_of_folds.now += RETIRED_GRACE + 1
        self.fold()
        self.fold()
        return super()._read_head()


@pytest.mark.parametrize("kind", KINDS)
def test_a_read_completes_in_one_attempt_while_folds_delete_what_its_listing_shows(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    """A folded delta a fold deleted stays in the record for RETIRED_GRACE seconds more,
    so a listing younger than that never shows a delta that is gone and not recorded."""
    spec = make_spec(request, kind, tmp_path)
    clock = Clock()
    deltas = KnowledgeMemory(tmp_path / "d", backend=_backend(spec), snapshot_compact_after=10**6)
    count = 0

    def fold() -> None:
        nonlocal count
        count += 1
        deltas.remember(f"delta {count}")
        KnowledgeMemory(
            tmp_path / f"f{count}", backend=_backend(spec, clock), snapshot_compact_after=2
        ).remember(f"fold {count}")

    for _ in range(3):
        fold()
    reader = FoldsBetweenListingAndHead(spec, fold, clock)
    state = reader.load_state()
    assert reader.attempts == 1
    assert state.base is not None
    check = KnowledgeMemory(tmp_path / "check", backend=_backend(spec))
    assert {e.content for e in check.entries()} == {
        f"{w} {i}" for w in ("delta", "fold") for i in range(1, count + 1)
    }
