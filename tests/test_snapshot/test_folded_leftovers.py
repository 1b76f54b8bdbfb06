"""Folded deltas left behind (a fold killed between the head's write and its delete, a
role without delete permission) are never applied again, however many folds pass, and a
later fold removes them when it can."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.snapshot import FsspecBackend, backends

from .conftest import Spec, make_spec

KINDS = ["local", pytest.param("s3", marks=pytest.mark.s3)]
LATER_FOLDS = 260  # more than the 256 folded names a head used to remember


class Killed(BaseException):
    """The invocation stops here (as a SIGKILL or a timeout would)."""


def _backend(spec: Spec) -> FsspecBackend:
    _kind, location, options = spec
    return FsspecBackend(location, storage_options=options)


def _killed_after_head_write(backend: FsspecBackend) -> FsspecBackend:
    """The first write of the head object lands, then the invocation dies."""
    write: Callable[..., Any] = backend.root.write

    def write_then_die(path: str, data: bytes, **kwargs: Any) -> Any:
        version = write(path, data, **kwargs)
        if path == backend.head:
            raise Killed
        return version

    backend.root.write = write_then_die  # type: ignore[method-assign]
    return backend


def _cannot_delete(backend: FsspecBackend) -> FsspecBackend:
    """A role without delete permission: every delete is refused."""

    def refuse(paths: Sequence[str]) -> int:
        raise PermissionError(f"AccessDenied: DeleteObjects ({len(paths)} keys)")

    backend.root.delete_many = refuse  # type: ignore[method-assign]
    return backend


def _pin_and_hand_edit(spec: Spec, folder: Path) -> tuple[str, list[str]]:
    """Two deltas: the PIN's bullet (``md_add``) and a hand edit of MEMORY.md's prose
    (a whole-file ``put`` that holds the PIN); returns the PIN's id and the deltas."""
    km = KnowledgeMemory(folder, backend=_backend(spec), snapshot_compact_after=1000)
    pin = km.remember("My PIN is 4321", category="secrets", persistent=True)
    md = folder / "MEMORY.md"
    md.write_text(md.read_text() + "\nKept by hand: a prose line.\n")
    assert km.flush() > 0
    deltas = [name for name, _ in _backend(spec).load_state().deltas]
    assert len(deltas) == 2
    return pin, deltas


def _delta_objects(backend: FsspecBackend) -> set[str]:
    return {i.path.rsplit("/", 1)[-1] for i in backend.root.list(f"{backend.objects}/delta")}


def _check(spec: Spec, folder: Path, pin: str, acknowledged: list[str]) -> None:
    fresh = KnowledgeMemory(folder, backend=_backend(spec))
    assert fresh.get(pin) is None
    text = (folder / "MEMORY.md").read_text()
    assert "4321" not in text and "Kept by hand: a prose line." in text
    facts = fresh.get_persistent_facts()
    assert "secrets" not in facts
    assert facts.get("later", []) == acknowledged
    assert sorted(e.content for e in fresh.entries()) == sorted(acknowledged)


def _later_folds(km: KnowledgeMemory, count: int) -> list[str]:
    """``count`` folds, each with a delta of its own folded (``compact_after=2``)."""
    assert km._replica is not None and km._replica.compact_after == 2
    folds = km._replica.folds
    texts = []
    while km._replica.folds < folds + count:
        texts.append(f"acknowledged {len(texts):04d}")
        km.remember(texts[-1], category="later", persistent=True)
    return texts


@pytest.mark.parametrize("kind", KINDS)
def test_a_fold_killed_before_its_delete_never_brings_a_forgotten_fact_back(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Retired objects may be deleted by the next fold (test_reader_any_rate.py covers
    # the grace itself, with a killed fold too).
    monkeypatch.setattr(backends, "RETIRED_GRACE", 0.0)
    spec = make_spec(request, kind, tmp_path)
    pin, deltas = _pin_and_hand_edit(spec, tmp_path / "a")
    # The restorer's first save folds both deltas; it dies right after the head's write.
    killed = _killed_after_head_write(_backend(spec))
    km = KnowledgeMemory(tmp_path / "b", backend=killed, snapshot_compact_after=1)
    with pytest.raises(Killed):
        km.remember("saved by the killed invocation", category="later", persistent=True)
    assert set(deltas) <= set(_backend(spec).load_state().folded)
    assert set(deltas) <= _delta_objects(_backend(spec))  # left behind
    # The next invocation forgets the PIN, then many folds pass.
    later = KnowledgeMemory(tmp_path / "c", backend=_backend(spec), snapshot_compact_after=2)
    assert later.forget(pin)
    texts = ["saved by the killed invocation", *_later_folds(later, LATER_FOLDS)]
    _check(spec, tmp_path / "check", pin, texts)
    assert not set(deltas) & _delta_objects(_backend(spec))  # a later fold removed them


@pytest.mark.parametrize("kind", KINDS)
def test_leftovers_a_role_cannot_delete_are_never_applied_again(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    spec = make_spec(request, kind, tmp_path)
    pin, deltas = _pin_and_hand_edit(spec, tmp_path / "a")
    km = KnowledgeMemory(
        tmp_path / "b", backend=_cannot_delete(_backend(spec)), snapshot_compact_after=2
    )
    assert km.forget(pin)
    texts = _later_folds(km, LATER_FOLDS)
    assert set(deltas) <= _delta_objects(_backend(spec))  # still there: never deletable
    _check(spec, tmp_path / "check", pin, texts)
    # Fresh invocations that cannot delete either: each restore and fold still skips them.
    for i in range(3):
        again = KnowledgeMemory(
            tmp_path / f"again-{i}",
            backend=_cannot_delete(_backend(spec)),
            snapshot_compact_after=1,
        )
        texts.append(f"from invocation {i}")
        again.remember(texts[-1], category="later", persistent=True)
    _check(spec, tmp_path / "check-again", pin, texts)


@pytest.mark.parametrize("kind", KINDS)
def test_the_record_of_folded_deltas_stays_small(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names leave the head's record once their objects are known gone, in a long-lived
    process (its own deletes) and across invocations (their listings). Objects are
    retired for RETIRED_GRACE seconds first: without a grace, the next fold deletes them
    (test_reader_any_rate.py bounds the record with a grace)."""
    monkeypatch.setattr(backends, "RETIRED_GRACE", 0.0)
    spec = make_spec(request, kind, tmp_path)
    km = KnowledgeMemory(tmp_path / "a", backend=_backend(spec), snapshot_compact_after=2)
    for i in range(40):
        km.remember(f"fact {i}")
    assert len(_backend(spec).load_state().folded) <= 2
    for i in range(6):
        other = KnowledgeMemory(tmp_path / f"call-{i}", backend=_backend(spec))
        other.remember(f"call {i}")
        other.remember(f"call {i} again")
    state = _backend(spec).load_state()
    assert len(state.folded) <= 4
    assert len(KnowledgeMemory(tmp_path / "check", backend=_backend(spec)).entries()) == 52
