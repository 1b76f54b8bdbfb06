"""A hypothesis state machine for KnowledgeMemory against a plain dict model.

Rules: remember (persistent or not, with or without TTL), forget, the clock moving on
(TTL expiry), prune_logs, build_context (which never deletes anything; an instance's
first remember of each UTC day prunes the logs older than the memory's 30 days), hand
edits of MEMORY.md (a bullet deleted, a bullet added) and reopening the folder in a
fresh instance. After every step the live entries, the persistent facts, recall and get agree
with the model.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)

from fsmemory import KnowledgeMemory
from tests.test_memory.conftest import FakeClock

CATEGORIES = ["general", "preferences", "work-notes"]
# Text around the unique token: markdown, a fake header and bullet, an HTML comment
# opener and a newline; none of it may change what the memory holds.
DECORATIONS = [
    "",
    " plain words",
    "\n## forged\n- bullet",
    " <!-- expires: 2000-01-01 -->",
    " *bold* `code`",
]

_serial = itertools.count()


@dataclass
class ModelEntry:
    token: str
    content: str
    category: str
    persistent: bool
    created_at: datetime
    expires_at: datetime | None
    entry_id: str | None  # None for a bullet added by hand (its id is fsmemory's choice)


class KnowledgeMemoryMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(datetime(2026, 3, 13, 10, 15, tzinfo=UTC))
        self.model: dict[str, ModelEntry] = {}  # token -> entry
        self.tmp = tempfile.mkdtemp(prefix="fsm-state-")
        self.url = ""
        self.km: KnowledgeMemory | None = None
        self.retention_day = ""  # the day the instance's writes last applied retention

    @initialize(backend=st.sampled_from(["local", "memory"]))
    def open_memory(self, backend: str) -> None:
        name = f"sm-{uuid.uuid4().hex[:12]}"
        self.url = f"{self.tmp}/{name}" if backend == "local" else f"memory://{name}"
        self.km = self._open()

    def _open(self) -> KnowledgeMemory:
        self.retention_day = ""
        return KnowledgeMemory(self.url, max_log_days=30, clock=self.clock)

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------
    @property
    def memory(self) -> KnowledgeMemory:
        assert self.km is not None
        return self.km

    def _live(self) -> list[ModelEntry]:
        now = self.clock()
        return [e for e in self.model.values() if e.expires_at is None or e.expires_at > now]

    def _prune_model(self, days: int) -> None:
        cutoff = (self.clock() - timedelta(days=days)).strftime("%Y-%m-%d")
        for token, entry in list(self.model.items()):
            if entry.entry_id is not None and entry.created_at.strftime("%Y-%m-%d") < cutoff:
                if entry.persistent:
                    # The log line is gone; the MEMORY.md bullet stays (a new id).
                    entry.entry_id = None
                else:
                    del self.model[token]

    # -- rules -----------------------------------------------------------------------
    @rule(
        target=ids,
        category=st.sampled_from(CATEGORIES),
        persistent=st.booleans(),
        decoration=st.sampled_from(DECORATIONS),
        importance=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
        ttl_days=st.sampled_from([None, None, 0.5, 3.0]),
    )
    def remember(
        self,
        category: str,
        persistent: bool,
        decoration: str,
        importance: float,
        ttl_days: float | None,
    ) -> str:
        token = f"zq{next(_serial):06d}x"
        content = f"{token}{decoration}"
        day = self.clock().strftime("%Y-%m-%d")
        if day != self.retention_day:
            self._prune_model(30)  # the instance's first write of the day
            self.retention_day = day
        entry_id = self.memory.remember(
            content,
            category=category,
            persistent=persistent,
            importance=importance,
            ttl_days=ttl_days,
        )
        assert entry_id
        now = self.clock()
        expires = None if ttl_days is None else now + timedelta(days=ttl_days)
        self.model[token] = ModelEntry(token, content, category, persistent, now, expires, entry_id)
        return token

    @rule(token=consumes(ids))
    def forget(self, token: str) -> None:
        entry = self.model.get(token)
        live = entry is not None and entry in self._live()
        if entry is None or entry.entry_id is None:
            # Pruned or hand-made: forget by whatever id fsmemory shows now.
            hits = [
                e for e in self.memory.entries() if e.content == (entry.content if entry else "")
            ]
            if not hits:
                assert not live
                return
            entry_id = hits[0].id
        else:
            entry_id = entry.entry_id
        forgotten = self.memory.forget(entry_id)
        if entry is None or entry in self._live():
            assert forgotten is live
        # An expired entry that is still in its log may be forgotten or not: either
        # way it never shows again.
        self.model.pop(token, None)

    @rule(hours=st.sampled_from([1, 13, 30, 24 * 10]))
    def advance_clock(self, hours: int) -> None:
        self.clock.advance(hours=hours)

    @rule(days=st.sampled_from([0, 2, 7]))
    def prune(self, days: int) -> None:
        self.memory.prune_logs(days)
        self._prune_model(days)

    @rule()
    def build_context(self) -> None:
        text = self.memory.build_context()  # deletes nothing
        now = self.clock()
        for entry in self.model.values():
            expired = entry.expires_at is not None and entry.expires_at <= now
            if entry.persistent and not expired:
                assert entry.token in text
            if expired:
                assert entry.token not in text

    @precondition(lambda self: any(e.persistent for e in self._live()))
    @rule(data=st.data())
    def hand_delete_bullet(self, data: st.DataObject) -> None:
        candidates = sorted(e.token for e in self._live() if e.persistent)
        token = data.draw(st.sampled_from(candidates))
        text = self._read_memory_md()
        lines = text.split("\n")
        kept = [line for line in lines if not (line.startswith("- ") and token in line)]
        assert len(kept) == len(lines) - 1
        self._write_memory_md("\n".join(kept))
        del self.model[token]

    @rule(category=st.sampled_from(CATEGORIES))
    def hand_add_bullet(self, category: str) -> None:
        token = f"zq{next(_serial):06d}x"
        content = f"{token} added by hand"
        text = self._read_memory_md() or "# Agent Memory\n"
        if not text.endswith("\n"):
            text += "\n"
        text += f"\n## {category}\n- {content}\n"
        self._write_memory_md(text)
        self.model[token] = ModelEntry(token, content, category, True, self.clock(), None, None)

    @rule()
    def reopen(self) -> None:
        self.km = self._open()

    def _read_memory_md(self) -> str:
        try:
            return self.memory.root.read("MEMORY.md").data.decode()
        except FileNotFoundError:
            return ""

    def _write_memory_md(self, text: str) -> None:
        self.memory.root.write("MEMORY.md", text.encode())

    # -- invariants ------------------------------------------------------------------
    @invariant()
    def entries_match_the_model(self) -> None:
        if self.km is None:
            return
        got = sorted((e.content, e.category, e.persistent) for e in self.memory.entries())
        want = sorted((e.content, e.category, e.persistent) for e in self._live())
        assert got == want

    @invariant()
    def persistent_facts_match(self) -> None:
        if self.km is None:
            return
        facts = self.memory.get_persistent_facts()
        got = sorted((cat, text) for cat, items in facts.items() for text in items)
        want = sorted((e.category, e.content) for e in self._live() if e.persistent)
        assert got == want

    @invariant()
    def get_and_recall_agree(self) -> None:
        if self.km is None:
            return
        live = {e.token for e in self._live()}
        for entry in self.model.values():
            if entry.entry_id is not None:
                found = self.memory.get(entry.entry_id)
                assert (found is not None) == (entry.token in live)
                if found is not None:
                    assert found.content == entry.content
            hits = self.memory.recall(entry.token, limit=3)
            assert any(h.content == entry.content for h in hits) == (entry.token in live)


KnowledgeMemoryMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_knowledge_memory_state_machine = KnowledgeMemoryMachine.TestCase


@pytest.mark.slow
def test_knowledge_memory_state_machine_long() -> None:
    """The same machine with many more and longer runs."""
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        KnowledgeMemoryMachine,
        settings=settings(
            max_examples=300,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
