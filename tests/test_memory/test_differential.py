"""The differential check: derived state never changes an answer.

A seeded random run of what users, people and other processes do to one memory:
``remember`` (plain, persistent, with a TTL, the same persistent fact again),
``forget``, the clock moving on (across midnight), recalls that write the index cache,
hand edits of MEMORY.md and of log lines (same-length ones, with the modification time
put back), bullets deleted by hand, other writers' appends, damaged caches and stale
caches put back. After every step, every warm writer, a fresh default instance (which
loads the index cache) and a fresh ``index_cache=False`` instance must answer exactly
the same, and every acknowledged, unforgotten, unexpired entry must be there with its
content (a model of the acknowledged writes says which).

Short runs by default on a local folder, ``memory://`` and S3; long ones are ``slow``.
"""

from __future__ import annotations

import os
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.fs import open_root
from fsmemory.memory import _index_cache
from fsmemory.memory.layout import MEMORY_FILE, log_date
from tests.test_memory.conftest import FakeClock

#: every content ends with the same 80 characters, so tail checks of 64 bytes collide
SUFFIX = " -- shared ending so that any short tail check sees the same bytes everywhere."
WORDS = ["alpha", "bravo", "delta", "gamma", "omega", "sigma"]
QUERIES = ["alpha", "bravo omega", "shared ending", "sigma tails", ""]


@dataclass
class Fact:
    """What the model knows of one acknowledged entry."""

    content: str
    persistent: bool
    expires_at: datetime | None
    touched: bool = False  # a person edited its bullet: the model no longer predicts it


class Run:
    """One memory, its writers, and the model of what they were told was stored."""

    def __init__(self, url: str, options: dict[str, Any], seed: int, local: bool) -> None:
        self.url, self.options, self.local = url, options, local
        self.rng = random.Random(seed)
        self.clock = FakeClock(datetime(2026, 3, 13, 23, 40, tzinfo=UTC))
        self.root = open_root(url, options)
        self.writers = [self._open() for _ in range(3)]
        self.model: dict[str, Fact] = {}
        self.forgotten: set[str] = set()
        self.serial = 0
        self.saved_caches: list[bytes] = []
        self.trace: list[str] = []

    def _open(self, **kwargs: Any) -> KnowledgeMemory:
        kwargs.setdefault("max_log_days", 3650)
        return KnowledgeMemory(self.url, storage_options=self.options, clock=self.clock, **kwargs)

    # -- operations ------------------------------------------------------------------
    def _text(self) -> str:
        self.serial += 1
        words = " ".join(self.rng.sample(WORDS, 2))
        return f"tok{self.serial:04d}x {words}{SUFFIX}"

    def _live(self, *, persistent: bool | None = None) -> list[str]:
        now = self.clock()
        return sorted(
            i
            for i, f in self.model.items()
            if not f.touched
            and (f.expires_at is None or f.expires_at > now)
            and (persistent is None or f.persistent == persistent)
        )

    def remember(self) -> None:
        km = self.rng.choice(self.writers)
        persistent = self.rng.random() < 0.4
        ttl = self.rng.choice([None, None, None, 1, 2])
        text = self._text()
        entry_id = km.remember(text, category="notes", persistent=persistent, ttl_days=ttl)
        expires = None if ttl is None else self.clock() + timedelta(days=ttl)
        self.model[entry_id] = Fact(text, persistent, expires)
        self.trace.append(f"remember {entry_id} p={persistent} ttl={ttl}")

    def remember_again(self) -> None:
        """The same persistent text remembered once more: both records are kept."""
        ids = self._live(persistent=True)
        if not ids:
            return self.remember()
        fact = self.model[self.rng.choice(ids)]
        entry_id = self.rng.choice(self.writers).remember(
            fact.content, category="notes", persistent=True
        )
        self.model[entry_id] = Fact(fact.content, True, None)
        self.trace.append(f"remember-again {entry_id}")
        return None

    def forget(self) -> None:
        ids = self._live()
        if not ids:
            return
        entry_id = self.rng.choice(ids)
        assert self.rng.choice(self.writers).forget(entry_id)
        del self.model[entry_id]
        self.forgotten.add(entry_id)
        self.trace.append(f"forget {entry_id}")

    def advance(self) -> None:
        step = self.rng.choice([timedelta(minutes=7), timedelta(hours=5), timedelta(days=1)])
        self.clock.now += step
        self.trace.append(f"advance {step}")

    def recall(self) -> None:
        self.rng.choice(self.writers).recall(self.rng.choice(QUERIES), limit=5)
        self.trace.append("recall")

    def keep_cache(self) -> None:
        data = self.root.read_cache(_index_cache.CACHE_NAME)
        if data is not None:
            self.saved_caches.append(bytes(data))  # (mapped on a local folder)
            self.trace.append("keep-cache")

    def stale_cache(self) -> None:
        """Put back a cache file saved at an earlier step."""
        if self.saved_caches:
            self.root.write_cache(_index_cache.CACHE_NAME, self.rng.choice(self.saved_caches))
            self.trace.append("stale-cache")

    def damage_cache(self) -> None:
        data = self.root.read_cache(_index_cache.CACHE_NAME)
        if not data:
            return
        buf = bytearray(data)
        kind = self.rng.choice(["flip", "truncate", "garbage"])
        if kind == "flip":
            buf[self.rng.randrange(len(buf))] ^= 1 << self.rng.randrange(8)
        elif kind == "truncate":
            del buf[self.rng.randrange(len(buf)) :]
        else:
            buf = bytearray(self.rng.randbytes(len(buf)))
        self.root.write_cache(_index_cache.CACHE_NAME, bytes(buf))
        self.trace.append(f"damage-cache {kind}")

    def _edit_in_place(self, path: str, old: bytes, new: bytes) -> None:
        """Replace ``old`` with ``new`` (same length) in ``path`` as an editor that
        writes in place would; on a local folder the modification time is put back."""
        assert len(old) == len(new)
        data = self.root.read_bytes(path)
        at = data.index(old)
        if self.local:
            full = self.root.full_path(path)
            st = os.stat(full)
            with open(full, "r+b") as f:
                f.seek(at)
                f.write(new)
            os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns))
        else:
            self.root.write(path, data[:at] + new + data[at + len(old) :])

    @staticmethod
    def _fixed(content: str) -> str:
        """The same text with its token's last letter changed (x <-> y)."""
        return content[:7] + ("y" if content[7] == "x" else "x") + content[8:]

    def edit_log_line(self) -> None:
        """A person fixes a word of a log record (same length, in place)."""
        ids = self._live(persistent=False)
        if not ids:
            return
        entry_id = self.rng.choice(ids)
        fact = self.model[entry_id]
        new = self._fixed(fact.content)
        for info in self.root.list("logs", recursive=True):
            data = self.root.read_bytes(info.path)
            if f'"id":"{entry_id}"'.encode() in data and fact.content.encode() in data:
                self._edit_in_place(info.path, fact.content.encode(), new.encode())
                fact.content = new
                self.trace.append(f"edit-log {entry_id}")
                return

    def edit_bullet(self) -> None:
        """A person fixes a word of a MEMORY.md bullet (same length, in place)."""
        ids = self._live(persistent=True)
        if not ids:
            return
        entry_id = self.rng.choice(ids)
        fact = self.model[entry_id]
        old = f"- {fact.content}".encode()
        if old not in self.root.read_bytes(MEMORY_FILE):
            return
        self._edit_in_place(MEMORY_FILE, old, f"- {self._fixed(fact.content)}".encode())
        for other in self.model.values():  # twins share the bullet text
            if other.content == fact.content and other.persistent:
                other.touched = True
        self.trace.append(f"edit-bullet {entry_id}")

    def delete_bullet(self) -> None:
        """A person deletes a bullet: that fact is forgotten."""
        ids = self._live(persistent=True)
        if not ids:
            return
        entry_id = self.rng.choice(ids)
        fact = self.model[entry_id]
        data = self.root.read_bytes(MEMORY_FILE)
        line = f"- {fact.content}\n".encode()
        if line not in data:
            return
        self.root.write(MEMORY_FILE, data.replace(line, b"", 1))
        # which of several twins loses its bullet is the memory's choice: the model
        # stops predicting all of them
        for other in self.model.values():
            if other.content == fact.content and other.persistent:
                other.touched = True
        self.trace.append(f"delete-bullet {entry_id}")

    def reopen_writer(self) -> None:
        """One writer process ends and a new one starts (cache-loaded)."""
        at = self.rng.randrange(len(self.writers))
        self.writers[at] = self._open()
        self.trace.append(f"reopen {at}")

    OPS: ClassVar[dict[str, int]] = {
        "remember": 30,
        "remember_again": 4,
        "forget": 10,
        "advance": 8,
        "recall": 10,
        "keep_cache": 3,
        "stale_cache": 3,
        "damage_cache": 3,
        "edit_log_line": 6,
        "edit_bullet": 4,
        "delete_bullet": 3,
        "reopen_writer": 4,
    }

    def step(self) -> None:
        names = list(self.OPS)
        op = self.rng.choices(names, weights=[self.OPS[n] for n in names])[0]
        getattr(self, op)()

    # -- the check ---------------------------------------------------------------------
    def answers(self, km: KnowledgeMemory) -> dict[str, Any]:
        entries = {
            e.id: (e.content, e.category, e.persistent, e.created_at, e.expires_at)
            for e in km.entries()
        }
        got = {i: km.get(i) for i in list(entries)[:20]}
        return {
            "entries": entries,
            "get": {i: None if e is None else e.content for i, e in got.items()},
            "facts": km.get_persistent_facts(),
            "recall": {q: [e.id for e in km.recall(q, limit=8)] for q in QUERIES},
        }

    def check(self) -> None:
        where = "; ".join(self.trace[-8:])
        fresh = self._open()
        cold_context = fresh.build_context()
        reference = self._open(index_cache=False)
        expected = self.answers(reference)
        assert self.answers(fresh) == expected, f"fresh (cache) != cache-less after: {where}"
        assert fresh.build_context() == cold_context, f"cold context differs: {where}"
        assert reference.build_context() == cold_context, f"context differs: {where}"
        for n, km in enumerate(self.writers):
            assert self.answers(km) == expected, f"warm writer {n} differs after: {where}"
        held = expected["entries"]
        for entry_id in self._live():
            fact = self.model[entry_id]
            assert entry_id in held, f"acknowledged {entry_id} missing after: {where}"
            assert held[entry_id][0] == fact.content, f"{entry_id} content after: {where}"
        for entry_id in self.forgotten:
            assert entry_id not in held, f"forgotten {entry_id} is back after: {where}"
            assert reference.get(entry_id) is None
        for entry_id, fact in self.model.items():
            if fact.expires_at is not None and fact.expires_at <= self.clock():
                assert entry_id not in held, f"expired {entry_id} shown after: {where}"


@pytest.fixture
def small_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Write and read the index cache at any size, after every new row."""
    monkeypatch.setattr(_index_cache, "MIN_NEW_ROWS", 1)
    monkeypatch.setattr(_index_cache, "MIN_BYTES", 0)


def _location(request: pytest.FixtureRequest, backend: str, tmp_path: Any) -> tuple[str, Any]:
    name = f"d-{uuid.uuid4().hex[:10]}"
    if backend == "local":
        return str(tmp_path / name), {}
    if backend == "memory":
        return f"memory://{name}", {}
    url = request.getfixturevalue("s3_root_url")
    return url, request.getfixturevalue("s3_storage_options")


def _run(
    request: pytest.FixtureRequest, tmp_path: Any, backend: str, seed: int, steps: int
) -> None:
    url, options = _location(request, backend, tmp_path)
    run = Run(url, options, seed, local=backend == "local")
    for _ in range(12):
        run.remember()
    run.check()
    for n in range(steps):
        run.step()
        if n % 3 == 2:
            run.check()
    run.check()
    assert any(log_date(i.path) for i in run.root.list("logs", recursive=True))


@pytest.mark.usefixtures("small_cache")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("backend", ["local", "memory"])
def test_differential_short(
    request: pytest.FixtureRequest, tmp_path: Any, backend: str, seed: int
) -> None:
    _run(request, tmp_path, backend, seed, steps=45)


@pytest.mark.s3
@pytest.mark.usefixtures("small_cache")
def test_differential_s3_short(request: pytest.FixtureRequest, tmp_path: Any) -> None:
    _run(request, tmp_path, "s3", seed=11, steps=30)


@pytest.mark.slow
@pytest.mark.usefixtures("small_cache")
@pytest.mark.parametrize("seed", range(100, 130))
@pytest.mark.parametrize("backend", ["local", "memory", pytest.param("s3", marks=pytest.mark.s3)])
def test_differential_long(
    request: pytest.FixtureRequest, tmp_path: Any, backend: str, seed: int
) -> None:
    _run(request, tmp_path, backend, seed, steps=200)
