"""The differential check on the snapshot path: serverless invocations, some of them
cut short, never bring a forgotten fact back and never lose an acknowledged one.

Each invocation restores the snapshot into a scratch folder (a fresh one, or the one a
warm container kept), remembers (plain, persistent, the same persistent fact again) and
forgets, and saves. Some invocations lose the delete that follows a fold (killed between
the head's write and the delete, or a role without delete permission), so folded
deltas stay behind. After every invocation a fresh restore must hold exactly the model's
acknowledged, unforgotten entries, and answer as a cache-less instance does.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.snapshot import FsspecBackend
from tests.test_memory.conftest import FakeClock

from .conftest import make_spec


def _no_delete(paths: Sequence[str]) -> int:
    return 0


class Invocations:
    def __init__(self, spec: Any, seed: int, scratch: Path) -> None:
        self.spec = spec
        self.rng = random.Random(seed)
        self.scratch = scratch
        self.clock = FakeClock(datetime(2026, 3, 13, 23, 58, tzinfo=UTC))
        self.model: dict[str, str] = {}
        self.persistent: set[str] = set()
        self.forgotten: set[str] = set()
        self.serial = 0
        self.calls = 0
        self.warm: Path | None = None

    def _backend(self, *, can_delete: bool = True) -> FsspecBackend:
        _, location, options = self.spec
        backend = FsspecBackend(location, storage_options=options)
        if not can_delete:
            backend.root.delete_many = _no_delete  # type: ignore[method-assign]
        return backend

    def _open(self, folder: Path, backend: FsspecBackend, **kwargs: Any) -> KnowledgeMemory:
        return KnowledgeMemory(
            folder, backend=backend, snapshot_compact_after=2, clock=self.clock, **kwargs
        )

    def invoke(self) -> None:
        self.calls += 1
        if self.warm is not None and self.rng.random() < 0.3:
            folder = self.warm
        else:
            folder = self.scratch / f"call-{self.calls}"
        self.warm = folder
        km = self._open(folder, self._backend(can_delete=self.rng.random() < 0.6))
        for _ in range(self.rng.randrange(1, 4)):
            op = self.rng.choices(["remember", "again", "forget"], weights=[6, 2, 3])[0]
            live = sorted(self.model)
            if op == "forget" and live:
                entry_id = self.rng.choice(live)
                assert km.forget(entry_id)
                del self.model[entry_id]
                self.forgotten.add(entry_id)
                continue
            twins = sorted(self.persistent & set(self.model))
            if op == "again" and twins:
                text = self.model[self.rng.choice(twins)]
                persistent = True
            else:
                self.serial += 1
                text = f"fact {self.serial:04d} kept by invocation {self.calls}"
                persistent = self.rng.random() < 0.5
            entry_id = km.remember(text, category="notes", persistent=persistent)
            self.model[entry_id] = text
            if persistent:
                self.persistent.add(entry_id)
        km.flush()
        self.clock.advance(minutes=1)

    def check(self) -> None:
        fresh = self._open(self.scratch / f"check-{self.calls}", self._backend())
        held = {e.id: e.content for e in fresh.entries()}
        assert held == self.model, (
            f"after {self.calls} invocations: missing {sorted(set(self.model) - set(held))}, "
            f"back or extra {sorted(set(held) - set(self.model))}"
        )
        for entry_id in self.forgotten:
            assert fresh.get(entry_id) is None
        cacheless = self._open(
            self.scratch / f"plain-{self.calls}", self._backend(), index_cache=False
        )
        assert {e.id: e.content for e in cacheless.entries()} == held
        facts = fresh.get_persistent_facts()
        for entry_id in self.persistent & set(self.model):
            assert self.model[entry_id] in facts.get("notes", [])


def _run(request: pytest.FixtureRequest, tmp_path: Path, kind: str, seed: int, n: int) -> None:
    run = Invocations(make_spec(request, kind, tmp_path), seed, tmp_path)
    for i in range(n):
        run.invoke()
        if i % 4 == 3:
            run.check()
    run.check()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["local", "memory"])
def test_invocations_short(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, seed: int
) -> None:
    _run(request, tmp_path, kind, seed, 40)


@pytest.mark.s3
def test_invocations_s3_short(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    _run(request, tmp_path, "s3", 7, 24)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 106))
@pytest.mark.parametrize("kind", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_invocations_long(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, seed: int
) -> None:
    """Long enough for hundreds of folds after a delta was left behind."""
    _run(request, tmp_path, kind, seed, 600)
