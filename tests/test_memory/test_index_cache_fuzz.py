"""Random operations against a memory whose index is loaded from the cache file.

A cache-loaded index builds several fields only when first used (see ``_LAZY`` in
:mod:`fsmemory.memory._index`): such a field must come out the same whatever changed
before it was built. This test runs seeded random sequences of writes, reads, other
writers, hand edits of MEMORY.md, TTL expiry and cache rewrites, and after every step
compares what long-lived cached instances and a fresh cached instance answer with what
a fresh instance that never reads the cache answers.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeEntry, KnowledgeMemory, open_root
from fsmemory.memory import _facts_file, _index_cache
from fsmemory.memory.entry import format_timestamp
from fsmemory.memory.layout import MEMORY_FILE

from .conftest import FakeClock, backend_location
from .test_index_cache import WORDS as _SEED_WORDS
from .test_index_cache import _seed

WORDS = [*_SEED_WORDS, "café", "東京"]
QUERIES = ["python deploy", "alice painting", "tea", "sunrise guitar lisbon", "", "café rust"]
CATEGORIES = ["work", "home", "prefs", "intl"]
# Texts that MEMORY.md holds escaped, or that differ from their bullet once stripped.
ODD_TEXTS = ["two\nlines of tea", "a back\\slash note", "an <!-- odd --> comment", "  padded tea  "]
# Never 0.5, the importance of a fact only MEMORY.md holds: such facts then tie on
# importance with each other only (see _ranked).
IMPORTANCE = [0.2, 0.7, 0.9]
MAX_ACTORS = 3
MAX_DAYS = 20  # the seeded logs stay younger than max_log_days (no automatic pruning)

Answers = tuple[Any, ...]


class Fuzz:
    """One seeded run on one memory root."""

    def __init__(self, url: str, options: dict[str, Any], seed: int) -> None:
        self.url, self.options, self.seed = url, options, seed
        self.rng = random.Random(seed)
        self.clock = FakeClock()
        self.root = open_root(url, options)
        self.actors: list[KnowledgeMemory] = []
        self.ids: list[tuple[str, bool]] = []  # (id, persistent) of what was written
        self.days = 0
        self.trail: list[str] = []
        self.n_texts = 0

    # -- helpers -------------------------------------------------------------------------
    def make(self, **kwargs: Any) -> KnowledgeMemory:
        return KnowledgeMemory(self.url, storage_options=self.options, clock=self.clock, **kwargs)

    def tick(self) -> None:
        """One millisecond per write: every entry has its own time."""
        self.clock.advance(milliseconds=1)

    def text(self) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            return rng.choice(ODD_TEXTS)
        if roll < 0.15 and self.ids:
            return " ".join(rng.choice(WORDS) for _ in range(3))  # repeats happen
        self.n_texts += 1
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))
        return f"{words} n{self.seed}-{self.n_texts}"

    def md(self) -> bytes:
        try:
            return self.root.read_bytes(MEMORY_FILE)
        except FileNotFoundError:
            return b""

    def sections(self) -> list[str]:
        return [m.decode() for m in re.findall(rb"^## (.+)$", self.md(), re.M)]

    def category(self, where: str) -> str:
        sections = self.sections()
        if where == "last" and sections:
            return sections[-1]
        if where == "new":
            return f"topic{self.rng.randrange(1000)}"
        return self.rng.choice(CATEGORIES)

    def log(self, what: str) -> None:
        self.trail.append(what)

    # -- the operations ----------------------------------------------------------------
    def remember(self, km: KnowledgeMemory, persistent: bool | None = None) -> str:
        rng = self.rng
        if persistent is None:
            persistent = rng.random() < 0.4
        where = rng.choice(["last", "last", "other", "new"])
        cat = self.category(where)
        ttl = rng.choice([None, None, None, 1, 3, 0.5])
        meta = {"k": rng.randrange(9)} if rng.random() < 0.1 else None
        text = self.text()
        self.tick()
        entry_id = km.remember(
            text,
            category=cat,
            persistent=persistent,
            importance=rng.choice(IMPORTANCE),
            ttl_days=ttl,
            metadata=meta,
        )
        self.ids.append((entry_id, persistent))
        self.log(f"remember {'persistent ' if persistent else ''}{cat!r} {text!r} ttl={ttl}")
        return entry_id

    def pick_id(self, kind: str) -> str:
        rng = self.rng
        if kind == "md":
            md_ids = [e.id for e in self.make(index_cache=False).entries() if e.id[:3] == "md-"]
            if md_ids:
                return rng.choice(md_ids)
        if kind == "missing":
            return "no-such-id"
        wanted = [i for i, p in self.ids if p == (kind == "persistent")]
        return rng.choice(wanted or [i for i, _ in self.ids] or ["no-such-id"])

    def forget(self, km: KnowledgeMemory) -> bool:
        kind = self.rng.choice(["log", "persistent", "persistent", "md", "missing"])
        entry_id = self.pick_id(kind)
        self.tick()
        self.log(f"forget {kind} {entry_id}")
        return km.forget(entry_id)

    def twin(self, **kwargs: Any) -> KnowledgeMemory:
        """A fresh uncached instance that has read the memory."""
        twin = self.make(index_cache=False, **kwargs)
        twin.refresh()
        return twin

    def evict(self, km: KnowledgeMemory) -> None:
        """A remember() over ``max_entries``: the entries it evicts are those an uncached
        instance picks (the new entry, most important and newest, is never one)."""
        n = self.rng.randint(1, 3)
        twin = self.twin()
        want = twin._index.eviction_candidates(n)
        km.max_entries = twin._index.live_count() + 1 - n
        self.tick()
        self.log(f"evict {n}")
        try:
            found = km.try_remember(self.text(), importance=1.0)
        finally:
            km.max_entries = None
        if not found.stored:  # a duplicate (with dedupe): nothing written, none evicted
            want = []
        gone = [entry_id for entry_id in want if self.twin().get(entry_id) is None]
        assert gone == want, self.failure("eviction", gone, want)

    def dedupe(self, km: KnowledgeMemory) -> None:
        """A remember() with dedupe: rejected exactly when an uncached instance would."""
        rng = self.rng
        if not km.dedupe:
            self.remember(km)
            return
        entries = self.twin().entries()
        text = rng.choice(entries).content if entries and rng.random() < 0.7 else self.text()
        if rng.random() < 0.3:
            text += " !"  # a near-duplicate
        twin = self.twin(dedupe=True)
        hook = twin._dedupe_hook
        assert hook is not None
        want = twin._index.has_content(text) or hook(text) is None
        self.tick()
        self.log(f"dedupe {text!r}")
        found = km.try_remember(text, category="work", importance=0.7)
        if found.stored:
            self.ids.append((found.id, False))
        assert (not found.stored) == want, self.failure("dedupe", found, want)

    def read(self, km: KnowledgeMemory, name: str) -> Any:
        rng = self.rng
        if name == "get":
            found = km.get(self.pick_id(rng.choice(["log", "persistent", "md"])))
            return None if found is None else _undated([found.to_dict()])
        if name == "recall":
            category = rng.choice([None, None, *CATEGORIES])
            return _ranked(km.recall(rng.choice(QUERIES), limit=6, category=category))
        if name == "context":
            return km.build_context()
        if name == "entries":
            return _undated([e.to_dict() for e in km.entries()])
        if name == "facts":
            return km.get_persistent_facts()
        assert name == "stats"
        return km.stats()

    def call(self, km: KnowledgeMemory, *, compare: bool) -> None:
        """One random call on ``km``; a read is compared with a fresh uncached instance
        (state is the same for both: nothing is written in between)."""
        rng = self.rng
        name = rng.choice(
            [
                "remember",
                "remember",
                "persistent",
                "forget",
                "get",
                "recall",
                "context",
                "entries",
                "facts",
                "stats",
                "prune",
                "evict",
                "dedupe",
            ]
        )
        if name in ("remember", "persistent"):
            self.remember(km, name == "persistent")
        elif name == "forget":
            self.forget(km)
        elif name == "prune":
            # The first day's log at most (the memory stays large enough for the cache).
            days = rng.choice([self.days - 1, self.days, self.days + 1])
            self.log(f"prune_logs(max_days={days})")
            km.prune_logs(max_days=days)
        elif name == "evict":
            self.evict(km)
        elif name == "dedupe":
            self.dedupe(km)
        else:
            state = rng.getstate()
            got = self.read(km, name)
            self.log(f"read {name}")
            if compare:
                rng.setstate(state)  # the same arguments
                want = self.read(self.make(index_cache=False), name)
                assert got == want, self.failure(f"first call {name}", got, want)

    # -- the steps -----------------------------------------------------------------------
    def step_fresh(self) -> None:
        """A fresh cached instance: a random first call, maybe more, then kept."""
        dedupe = self.rng.random() < 0.3
        km = self.make(dedupe=dedupe)
        self.log(f"fresh instance{' (dedupe)' if dedupe else ''}")
        self.call(km, compare=True)
        for _ in range(self.rng.choice([0, 0, 1, 2])):
            self.call(km, compare=False)
        self.actors.append(km)
        if len(self.actors) > MAX_ACTORS:
            self.actors.pop(self.rng.randrange(len(self.actors)))

    def step_actor(self) -> None:
        if not self.actors:
            self.step_fresh()
            return
        km = self.rng.choice(self.actors)
        self.log(f"actor {self.actors.index(km)}")
        for _ in range(self.rng.randint(1, 3)):
            self.call(km, compare=False)

    def step_writer(self) -> None:
        """Another writer (cached or not) appends, and maybe forgets and searches."""
        rng = self.rng
        cached = rng.random() < 0.5
        writer = self.make(index_cache=cached)
        n = rng.choice([1, 2, 5, 12, 300 if rng.random() < 0.2 else 3])
        self.log(f"writer cached={cached} x{n}")
        for _ in range(n):
            self.remember(writer, rng.random() < 0.3)
        if rng.random() < 0.3:
            self.forget(writer)
        if rng.random() < 0.5:
            self.log("writer recall")
            writer.recall(rng.choice(QUERIES))

    def step_edit(self) -> None:
        """A person edits MEMORY.md."""
        rng = self.rng
        md = self.md()
        if not md:
            return
        lines = md.split(b"\n")
        bullets = [i for i, line in enumerate(lines) if line.startswith(b"- ")]
        kind = rng.choice(
            ["append", "append", "append_section", "unterminated", "remove", "rewrite", "odd"]
        )
        existing = [lines[i][2:] for i in bullets]
        if existing and rng.random() < 0.3:
            text = rng.choice(existing)  # a repeated bullet
        else:
            text = self.text().strip().replace("\n", " ").encode()
        if rng.random() < 0.15:  # with an expiry comment: soon, or in two days
            when = self.clock.now + timedelta(hours=rng.choice([1, 48]))
            text = text.split(b" <!--")[0] + f" <!-- expires: {format_timestamp(when)} -->".encode()
        newline = b"" if md.endswith(b"\n") else b"\n"
        if kind == "append":
            self.root.append(MEMORY_FILE, newline + b"- " + text + b"\n")
        elif kind == "append_section":
            cat = self.category(rng.choice(["other", "new"]))
            self.root.append(MEMORY_FILE, newline + f"\n## {cat}\n".encode() + b"- " + text + b"\n")
        elif kind == "unterminated":  # a last line without its line break
            self.root.append(MEMORY_FILE, newline + b"- " + text)
        elif kind == "remove" and bullets:
            del lines[rng.choice(bullets)]
            self.root.write(MEMORY_FILE, b"\n".join(lines))
        elif kind == "odd" and bullets:
            at = rng.choice(bullets)
            lines[at] = rng.choice(
                [
                    b"* " + text,  # another bullet marker
                    b"  + " + text,  # indented
                    lines[at] + b"\r",  # a CRLF line
                    b"- " + text + b" \xff\xfe",  # not UTF-8
                    b"## " + text[:20].strip(),  # a bullet turned into a header
                    b"prose: " + text,
                ]
            )
            self.root.write(MEMORY_FILE, b"\n".join(lines))
        elif bullets:
            at = rng.choice(bullets)
            if rng.random() < 0.5:
                lines.insert(at, b"- " + text)  # a bullet in the middle
            else:
                lines[at] = b"- " + text  # a bullet changed
            data = b"\n".join(lines)
            self.root.write(MEMORY_FILE, data.rstrip(b"\n") if rng.random() < 0.2 else data)
        self.log(f"edit {kind} {text!r}")

    def step_log(self) -> None:
        """A torn or corrupt line in a log (a writer that crashed), or a log deleted."""
        rng = self.rng
        logs = sorted(i.path for i in self.root.list("logs"))
        kind = rng.choice(["torn", "torn", "corrupt", "delete"])
        if kind == "delete":
            if len(logs) > 2:  # the memory stays large enough for the cache
                self.root.delete(rng.choice(logs[:-2]))
        else:
            today = f"logs/{self.clock.now:%Y-%m-%d}.jsonl"
            line = b'{"id": "torn' if kind == "torn" else b"not json at all\n"
            self.root.append(today, line, line_safe=True)
        self.log(f"log {kind}")

    def step_time(self) -> None:
        days = self.rng.choice([1, 1, 2, 3])
        if self.days + days > MAX_DAYS:
            self.tick()
            return
        self.days += days
        self.clock.advance(days=days)
        self.log(f"+{days} days")

    def step_search(self) -> None:
        """A search that may rewrite the cache file."""
        km = self.rng.choice([*self.actors, self.make()])
        self.log("search (may rewrite the cache)")
        km.recall(self.rng.choice(QUERIES))

    # -- the comparison ------------------------------------------------------------------
    def answers(self, km: KnowledgeMemory) -> Answers:
        return (
            [_ranked(km.recall(q, limit=8)) for q in QUERIES],
            [_ranked(km.recall(q, limit=4, category="home")) for q in QUERIES],
            [_ranked(km.recall(q, limit=1000)) for q in QUERIES[:3]],
            _undated([e.to_dict() for e in km.entries()]),
            km.get_persistent_facts(),
            km.build_context(),
            km.stats(),
            km.get_recent_entries(days=2, limit=30),
        )

    def compare(self) -> None:
        want = self.answers(self.make(index_cache=False))
        fresh = self.make()
        assert self.answers(fresh) == want, self.failure("fresh cached", self.answers(fresh), want)
        for n, km in enumerate(self.actors):
            got = self.answers(km)
            assert got == want, self.failure(f"actor {n} (loaded={km._cache_loaded})", got, want)

    def failure(self, who: str, got: Any, want: Any) -> str:
        part = ""
        if isinstance(got, tuple) and isinstance(want, tuple):
            names = [
                "recall",
                "recall home",
                "recall all",
                "entries",
                "facts",
                "context",
                "stats",
                "recent",
            ]
            for name, a, b in zip(names, got, want, strict=True):
                if a != b:
                    part, got, want = name, a, b
                    break
        if isinstance(got, list) and isinstance(want, list):
            only_got = [x for x in got if x not in want][:5]
            only_want = [x for x in want if x not in got][:5]
            detail = f"only got: {only_got}\nonly wanted: {only_want}\nlens {len(got)} {len(want)}"
        else:
            detail = f"got: {str(got)[:2000]}\nwanted: {str(want)[:2000]}"
        steps = "\n".join(self.trail[-25:])
        return f"seed {self.seed}: {who} differs in {part}\n{detail}\nlast steps:\n{steps}"

    # -- the run -------------------------------------------------------------------------
    def setup(self) -> None:
        """A memory big enough for the cache, over three days, then a cache written."""
        km = self.make(index_cache=False)
        for day, count in enumerate([60, 300, 300]):
            if day:
                self.clock.advance(days=1)
                self.days += 1
            for i in range(count):
                self.tick()
                rng = self.rng
                persistent = i % 6 == 0
                text = " ".join(rng.choice(WORDS) for _ in range(8)) + f" #{day}.{i} " + "x" * 200
                entry_id = km.remember(
                    text,
                    category=rng.choice(CATEGORIES[:3]),
                    importance=rng.choice(IMPORTANCE),
                    persistent=persistent,
                    ttl_days=rng.choice([2, 5]) if i % 40 == 1 else None,
                    metadata={"n": i} if i % 40 == 3 else None,
                )
                self.ids.append((entry_id, persistent))
        self.make().recall("tea")  # writes the cache
        assert self.root.read_cache(_index_cache.CACHE_NAME) is not None

    def run(self, steps: int) -> None:
        self.setup()
        self.compare()
        weighted: list[tuple[Callable[[], None], int]] = [
            (self.step_fresh, 5),
            (self.step_actor, 4),
            (self.step_writer, 2),
            (self.step_edit, 3),
            (self.step_log, 1),
            (self.step_time, 1),
            (self.step_search, 2),
        ]
        choices = [f for f, w in weighted for _ in range(w)]
        for _ in range(steps):
            self.rng.choice(choices)()
            self.compare()


def _ranked(found: list[KnowledgeEntry]) -> list[Any]:
    """Recall ids, but MEMORY.md-only facts (``md-`` ids) of equal rank in any order:
    equal scores rank by importance (0.5 for all of them, for no other entry here),
    then by the date of their first reading (see :func:`_undated`). A run of such
    facts ending the results is only counted (which of them made the limit depends on
    those dates)."""
    out: list[Any] = []
    run: list[str] = []
    for entry in found:
        if entry.id.startswith("md-"):
            run.append(entry.id)
            continue
        if run:
            out.append(sorted(run))
            run = []
        out.append(entry.id)
    if run:
        out.append(len(run))
    return out


def _undated(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries without the date of MEMORY.md-only facts: such a fact is dated by the
    file's mtime when an index first reads it, so instances that read it at different
    times date it differently (not a matter of the cache)."""
    return [
        {k: v for k, v in e.items() if k != "timestamp" or not e["id"].startswith("md-")}
        for e in entries
    ]


def _fuzz(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    backend: str,
    seed: int,
    steps: int,
) -> None:
    rng = random.Random(seed)
    # Cache rewrites after a few new rows (not 256), and MEMORY.md appends of every
    # kind: a repeated section header instead of a rewrite, and early tidying.
    monkeypatch.setattr(_index_cache, "MIN_NEW_ROWS", rng.choice([1, 8, 64]))
    monkeypatch.setattr(_facts_file, "_REWRITE_LIMIT", rng.choice([0, 64 * 1024]))
    monkeypatch.setattr(_facts_file, "_EXTRA_HEADERS_BEFORE_TIDY", rng.choice([2, 32]))
    url, options = backend_location(request, backend, tmp_path / f"s{seed}")
    Fuzz(url, options, seed).run(steps)


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_random_operations_answer_as_uncached(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, backend: str
) -> None:
    for seed in (0, 4):
        _fuzz(request, monkeypatch, tmp_path, backend, seed, steps=15)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "memory"])
@pytest.mark.parametrize("seed", range(50))
def test_random_operations_answer_as_uncached_long(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    backend: str,
    seed: int,
) -> None:
    _fuzz(request, monkeypatch, tmp_path, backend, seed, steps=40)


# -- divergences the random test found, one focused test each ------------------------------


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_a_bullet_appended_without_its_line_break_is_seen(
    make_km: Callable[..., KnowledgeMemory], clock: FakeClock
) -> None:
    # A person appends a last bullet without the final newline. A reader that had read
    # MEMORY.md before (a warm instance, or one loaded from the cache) took only the
    # complete lines of what was appended and so never saw the fact; a fresh reader
    # parses the whole file, last line included.
    _seed(make_km(), clock=clock)
    make_km().recall("tea")  # writes the cache
    warm = make_km()
    before = _facts(warm)
    warm.root.append(MEMORY_FILE, b"- a hand-written fact about rust")
    want = make_km(index_cache=False)
    assert _facts(want) == before + 1
    cached = make_km()
    for km in (warm, cached):
        assert _facts(km) == before + 1
        assert [e.to_dict() for e in km.entries()][-1][
            "content"
        ] == "a hand-written fact about rust"
    assert cached._cache_loaded
    # The line completed later (and one more bullet) is read again in full.
    warm.root.append(MEMORY_FILE, b" and tea\n- another one\n")
    for km in (warm, cached, make_km(), make_km(index_cache=False)):
        facts = km.get_persistent_facts()
        assert sum(map(len, facts.values())) == before + 2
        assert "a hand-written fact about rust and tea" in facts[_last_section(km)]


def _facts(km: KnowledgeMemory) -> int:
    return sum(map(len, km.get_persistent_facts().values()))


def _last_section(km: KnowledgeMemory) -> str:
    headers: list[bytes] = re.findall(rb"^## (.+)$", km.root.read_bytes(MEMORY_FILE), re.M)
    return headers[-1].decode()


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_corrupt_lines_go_with_their_log(
    make_km: Callable[..., KnowledgeMemory], clock: FakeClock
) -> None:
    # The count of corrupt log lines was one number for the whole index: a log dropped
    # (deleted or pruned) kept its corrupt lines in it, and a log read again whole (it
    # was rewritten) counted them twice; the index cache then carried the wrong count
    # to every fresh process.
    _seed(make_km(), clock=clock)
    old = "logs/2026-03-01.jsonl"
    record = make_km().entries()[0].to_dict()
    lines = [
        orjson.dumps(dict(record, id=f"old-{i}", content=f"old note {i}", persistent=False))
        for i in range(2)
    ]
    root = make_km().root
    root.write(old, b"\n".join([lines[0], b"not json", lines[1], b""]))
    make_km().recall("tea")  # writes the cache
    warm = make_km()
    assert warm.stats()["corrupt_lines"] == 1
    cached = make_km()
    assert cached.stats()["corrupt_lines"] == 1 and cached._cache_loaded

    root.write(old, b"\n".join([lines[0], b"not json", b""]))  # rewritten: read again
    for km in (warm, cached, make_km(), make_km(index_cache=False)):
        assert km.stats()["corrupt_lines"] == 1
        assert km.get("old-1") is None and km.get("old-0") is not None
    make_km().recall("tea")  # a cache with the rewritten log

    root.delete(old)
    for km in (warm, cached, make_km(), make_km(index_cache=False)):
        assert km.stats()["corrupt_lines"] == 0
        assert km.get("old-0") is None


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_entries_come_back_when_the_log_of_their_forget_records_goes(
    make_km: Callable[..., KnowledgeMemory], clock: FakeClock
) -> None:
    # An entry is forgotten by a record in a later log. When that log is deleted, a
    # fresh reader sees the entry live again; an index that had applied the forget
    # (a warm instance, or one loaded from the cache) kept the entry removed.
    ids = _seed(make_km(), clock=clock)
    clock.advance(days=1)
    writer = make_km()
    assert writer.forget(ids[1]) and writer.forget(ids[2])
    writer.remember("a note of the second day", importance=0.9)
    forgets = f"logs/{clock.now:%Y-%m-%d}.jsonl"
    clock.advance(days=1)
    writer.remember("a note of the third day")
    make_km().recall("tea")  # writes the cache
    warm = make_km()
    assert warm.get(ids[2]) is None
    cached = make_km()
    assert cached.get(ids[2]) is None and cached._cache_loaded

    warm.root.delete(forgets)
    uncached = make_km(index_cache=False)
    want = [e.to_dict() for e in uncached.entries()]
    assert uncached.get(ids[2]) is not None
    for km in (warm, cached, make_km()):
        assert km.get(ids[2]) is not None
        assert [e.to_dict() for e in km.entries()] == want
        assert [e.id for e in km.recall("tea", limit=10)] == [
            e.id for e in uncached.recall("tea", limit=10)
        ]
