"""Inputs and timing helpers shared by every benchmark worker (standard library only).

The workers of ``benchmarks/run.py`` run in two virtualenvs: fsmemory's (the project
venv) and the peers' (``benchmarks/.venv-peers``, with selectools and ag2). This module
is imported by all of them, so every system gets the same inputs from the same seeds:

* :func:`make_facts` -- the facts a memory of ``n`` entries holds (every 2nd
  persistent, 8 categories, ~60-byte texts, spread over the last 20 days);
* :func:`fresh_facts` and :func:`recall_queries` -- what the timed calls remember and
  search for;
* :func:`dedupe_corpus` -- ~1,080-character texts for the dedupe workload (unique,
  near-duplicate, adversarial word shuffles);
* :func:`run_path_store` -- the path-store workload, run unchanged against any object
  with the seed's async ``write/read/append/read_range/list`` methods.

A worker script calls :func:`serve` with its handlers; the orchestrator reads the one
``RESULT {json}`` line it prints.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "RESULT_PREFIX",
    "WORDS",
    "Fact",
    "dedupe_corpus",
    "file_states",
    "fresh_facts",
    "make_facts",
    "recall_queries",
    "remember_many",
    "run_concurrency",
    "run_path_store",
    "sample",
    "serve",
    "written_since",
]

#: The line prefix a worker's result is printed with.
RESULT_PREFIX = "RESULT "
#: Days over which a pre-generated memory's entries are spread (< 30: nothing is pruned).
SPREAD_DAYS = 20

_WORDS_TEXT = (
    "python rust editor dark mode meeting project atlas deploy server database "
    "postgres timeout payment service invoice customer alice bob lisbon coffee tea "
    "keyboard review release branch feature flag metrics latency cache redis bucket "
    "lambda schedule vacation budget travel flight hotel dinner birthday gift music "
    "guitar"
)
WORDS = _WORDS_TEXT.split()
CATEGORIES = ("preferences", "personal", "technical", "context", "work", "travel", "food", "misc")


@dataclass(frozen=True, slots=True)
class Fact:
    """One remembered fact, independent of any system's record format.

    Attributes:
        content: the text (8 words and a serial number, ~60 bytes).
        category: one of :data:`CATEGORIES`.
        persistent: every 2nd fact.
        importance: 0.00 - 1.00.
        timestamp: creation time, seconds since the epoch (UTC).
    """

    content: str
    category: str
    persistent: bool
    importance: float
    timestamp: float


def _fact(rng: random.Random, i: int, timestamp: float) -> Fact:
    text = " ".join(rng.choice(WORDS) for _ in range(8)) + f" #{i}"
    return Fact(
        text, CATEGORIES[i % len(CATEGORIES)], i % 2 == 0, round(rng.random(), 2), timestamp
    )


def make_facts(n: int, *, now: float, seed: int = 42) -> list[Fact]:
    """The ``n`` facts of a pre-generated memory, oldest first, all before ``now``.

    Args:
        n: number of facts.
        now: the run's reference time (seconds since the epoch); every system gets
            the same one, so the files hold the same timestamps.
        seed: the random seed.
    """
    rng = random.Random(seed)
    span = SPREAD_DAYS * 86400.0
    step = span / max(n, 1)
    start = now - span - 60.0
    return [_fact(rng, i, start + i * step) for i in range(n)]


def fresh_facts(count: int, *, start: int, seed: int = 7) -> list[Fact]:
    """Facts for the timed ``remember()`` calls (timestamps are the call's own)."""
    rng = random.Random(seed)
    return [_fact(rng, start + i, 0.0) for i in range(count)]


def recall_queries(count: int, *, seed: int = 11) -> list[str]:
    """Two-word keyword queries over :data:`WORDS`."""
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, 2)) for _ in range(count)]


# -- dedupe corpora --------------------------------------------------------------------
DEDUPE_KINDS = ("unique", "near-duplicate", "adversarial")
DEDUPE_TEXT_CHARS = 1080
DEDUPE_WINDOW = 200


def _vocabulary(rng: random.Random, size: int = 2500) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    return ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(size)]


def _text(rng: random.Random, vocabulary: list[str]) -> str:
    words: list[str] = []
    size = 0
    while size < DEDUPE_TEXT_CHARS:
        # Zipf-like: a few words are frequent, most are rare (as in prose).
        word = vocabulary[min(int(rng.paretovariate(1.1)) - 1, len(vocabulary) - 1)]
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def _light_edit(rng: random.Random, text: str, rate: float = 0.02) -> str:
    chars = list(text)
    for _ in range(max(1, int(len(chars) * rate))):
        at = rng.randrange(len(chars))
        roll = rng.random()
        if roll < 0.4:
            chars[at] = rng.choice("abcdefghijklmnopqrstuvwxyz ")
        elif roll < 0.7:
            del chars[at]
        else:
            chars.insert(at, rng.choice("abcdefghijklmnopqrstuvwxyz "))
    return "".join(chars)


def _shuffle(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    rng.shuffle(words)
    return " ".join(words)


def dedupe_corpus(
    kind: str, *, existing: int, probes: int, seed: int = 5
) -> tuple[list[str], list[str]]:
    """Existing texts (oldest first) and the probe texts remembered against them.

    * ``unique``: unrelated texts over one vocabulary; probes are new texts (accepted).
    * ``near-duplicate``: probes are ~2 % character edits of one of the
      :data:`DEDUPE_WINDOW` most recent existing texts (rejected).
    * ``adversarial``: every text is a word shuffle of one base text: the same
      characters with the same counts, so no count-based bound can prune a comparison.

    Raises:
        ValueError: unknown ``kind``.
    """
    rng = random.Random(f"{seed}-{kind}")
    vocabulary = _vocabulary(rng)
    if kind == "unique":
        return [_text(rng, vocabulary) for _ in range(existing)], [
            _text(rng, vocabulary) for _ in range(probes)
        ]
    if kind == "near-duplicate":
        old = [_text(rng, vocabulary) for _ in range(existing)]
        window = min(DEDUPE_WINDOW, existing)
        return old, [_light_edit(rng, old[-1 - rng.randrange(window)]) for _ in range(probes)]
    if kind == "adversarial":
        base = _text(rng, vocabulary)
        return [_shuffle(rng, base) for _ in range(existing)], [
            _shuffle(rng, base) for _ in range(probes)
        ]
    raise ValueError(f"unknown dedupe corpus {kind!r}")


# -- timing ----------------------------------------------------------------------------
def sample(
    fn: Callable[[int], object], count: int, *, budget_s: float = float("inf"), minimum: int = 1
) -> list[float]:
    """Call ``fn(i)`` up to ``count`` times; milliseconds per call.

    Stops early once ``budget_s`` seconds have passed and ``minimum`` calls were made,
    so a slow system still yields a median without blowing the run's time budget.
    """
    out: list[float] = []
    clock = time.perf_counter_ns
    started = time.perf_counter()
    for i in range(count):
        t0 = clock()
        fn(i)
        out.append((clock() - t0) / 1e6)
        if len(out) >= minimum and time.perf_counter() - started > budget_s:
            break
    return out


# -- the path-store workload -----------------------------------------------------------
VALUE = ("x" * 190) + "-{i:08d}"  # ~200 B
RECORD = '{{"t": {i}, "event": "tool_call", "payload": "' + "y" * 60 + '"}}\n'  # ~100 B


async def _timed(call: Callable[[int], Awaitable[object]], n: int, budget_s: float) -> list[float]:
    out: list[float] = []
    clock = time.perf_counter_ns
    started = time.perf_counter()
    for i in range(n):
        t0 = clock()
        await call(i)
        out.append((clock() - t0) / 1e6)
        if time.perf_counter() - started > budget_s:
            break
    return out


async def run_path_store(
    store: Any, n: int, *, list_repeat: int, base: str, budget_s: float = float("inf")
) -> dict[str, Any]:
    """N awaited ops one after another, each timed (ms): ``write`` of ~200 B to N files,
    ``read`` of each, ``append`` of ~100 B to one file N times, ``read_range`` of its
    tail N times, and ``list`` of the N-file folder ``list_repeat`` times.

    ``budget_s`` bounds each op's loop; a loop cut short is reported in ``done``.
    """
    samples: dict[str, list[float]] = {}
    samples["write"] = await _timed(
        lambda i: store.write(f"{base}/w/{i:06d}.md", VALUE.format(i=i)), n, budget_s
    )
    written = len(samples["write"])
    samples["read"] = await _timed(lambda i: store.read(f"{base}/w/{i:06d}.md"), written, budget_s)
    wal = f"{base}/log/events.jsonl"
    offsets: list[int] = []

    async def append(i: int) -> None:
        offsets.append(await store.append(wal, RECORD.format(i=i)))

    samples["append"] = await _timed(append, n, budget_s)
    tail = offsets[-1]
    samples["read_range"] = await _timed(lambda i: store.read_range(wal, tail), n, budget_s)
    samples["list"] = await _timed(lambda i: store.list(f"{base}/w"), list_repeat, budget_s)
    listed = await store.list(f"{base}/w")
    if len(listed) != written:
        raise AssertionError(f"list returned {len(listed)} entries, expected {written}")
    appends = samples["append"]
    tenth = max(1, len(appends) // 10)
    growth = statistics.median(appends[-tenth:]) / statistics.median(appends[:tenth])
    return {
        "samples": samples,
        "done": {op: len(v) for op, v in samples.items()},
        "append_growth": growth,
    }


# -- concurrency -----------------------------------------------------------------------
def run_concurrency(
    script: Path, params: dict[str, Any], count: Callable[[str], int]
) -> dict[str, Any]:
    """Start ``procs`` children of ``script`` (mode ``concurrency-child``) on one folder,
    release them together, wait, then ``count(folder)`` the entries that were kept."""
    procs: int = params["procs"]
    per: int = params["per"]
    with tempfile.TemporaryDirectory() as tmp:
        root = str(Path(tmp) / "shared")
        gate = Path(tmp) / "go"
        ready = [Path(tmp) / f"ready-{p}" for p in range(procs)]
        children = []
        for p in range(procs):
            child = {"root": root, "proc": p, "per": per, "gate": str(gate), "ready": str(ready[p])}
            children.append(
                subprocess.Popen(
                    [sys.executable, str(script), "concurrency-child", json.dumps(child)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in ready):
            if time.monotonic() > deadline or any(c.poll() is not None for c in children):
                break
            time.sleep(0.005)
        t0 = time.perf_counter()
        gate.touch()
        results = []
        for c in children:
            stdout, stderr = c.communicate(timeout=600)
            lines = [x for x in stdout.splitlines() if x.startswith(RESULT_PREFIX)]
            if not lines:
                raise RuntimeError(f"concurrency child failed: {stderr[-2000:]}")
            results.append(json.loads(lines[-1][len(RESULT_PREFIX) :]))
        wall = time.perf_counter() - t0
        return {
            "kept": count(root),
            "expected": procs * per,
            "errors": sum(r["errors"] for r in results),
            "error_kinds": sorted({k for r in results for k in r["kinds"]}),
            "wall_s": wall,
        }


def remember_many(km: Any, params: dict[str, Any]) -> dict[str, Any]:
    """A concurrency child: wait for the gate, then ``per`` remember() calls (every 2nd
    persistent), counting exceptions instead of stopping at the first."""
    Path(params["ready"]).touch()
    gate = Path(params["gate"])
    while not gate.exists():
        time.sleep(0.001)
    errors = 0
    kinds: set[str] = set()
    p = params["proc"]
    for i in range(params["per"]):
        try:
            km.remember(
                f"process {p} fact {i}: the deploy window is tuesday",
                category="context",
                persistent=i % 2 == 0,
            )
        except Exception as exc:  # a system's failures are what this workload counts
            errors += 1
            kinds.add(type(exc).__name__)
    return {"errors": errors, "kinds": sorted(kinds)}


# -- snapshot byte counting --------------------------------------------------------------
def file_states(folder: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of every file under ``folder``."""
    out = {}
    for path in folder.rglob("*"):
        if path.is_file():
            st = path.stat()
            out[str(path)] = (st.st_size, st.st_mtime_ns)
    return out


def written_since(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> int:
    """Bytes of the files that are new or changed since ``before`` (a backend on a local
    folder uploads each object whole, so this is the bytes a save sent)."""
    return sum(size for path, (size, mtime) in after.items() if before.get(path) != (size, mtime))


# -- worker plumbing -------------------------------------------------------------------
Handler = Callable[[dict[str, Any]], dict[str, Any]]


def serve(handlers: Mapping[str, Handler], argv: list[str] | None = None) -> None:
    """Run ``handlers[argv[1]](json.loads(argv[2]))`` and print its result as one line.

    Errors are reported as ``{"error": ...}`` (exit status 1), never as a traceback
    only, so the orchestrator can print what went wrong in its table.
    """
    args = sys.argv if argv is None else argv
    if len(args) != 3 or args[1] not in handlers:
        raise SystemExit(f"usage: {args[0]} {{{','.join(handlers)}}} JSON")
    params = json.loads(args[2])
    try:
        result = handlers[args[1]](params)
    except Exception as exc:
        traceback.print_exc()
        print(RESULT_PREFIX + json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        raise SystemExit(1) from exc
    print(RESULT_PREFIX + json.dumps(result), flush=True)
