"""remember() with dedupe=True at 1k existing entries, beside the seed's approach.

    python benchmarks/bench_dedupe.py [--quick]

Three corpora of new texts against a memory of 1,000 entries (window 200, threshold
0.9): unique texts, near-duplicates (one word changed) of recent entries, and the
adversarial case: ~1,000-character word shuffles of recent entries (same characters,
different order, so every cheap bound passes). The seed's approach (difflib
``SequenceMatcher(autojunk=False).ratio()`` against each of the 200 newest entries) runs
in the same process on the same inputs; its decisions are compared with ours (ours must
reject at least everything difflib rejects). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import difflib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsmemory import KnowledgeMemory

WINDOW = 200
THRESHOLD = 0.9


def words(rng: random.Random, n: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def seed_is_duplicate(text: str, window: list[str]) -> bool:
    return any(
        difflib.SequenceMatcher(None, text, other, autojunk=False).ratio() >= THRESHOLD
        for other in window
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rng = random.Random(7)
    existing = [" ".join(words(rng, 170)) for _ in range(1000)]  # ~1,000 characters each
    per_corpus = 10 if args.quick else 30
    seed_checks = 2 if args.quick else 4
    recent = existing[-WINDOW:]
    corpora = {
        "unique": [" ".join(words(rng, 170)) for _ in range(per_corpus)],
        "near-duplicate": [],
        "adversarial shuffle": [],
    }
    for _ in range(per_corpus):
        base = rng.choice(recent).split()
        changed = list(base)
        changed[rng.randrange(len(changed))] = "different"
        corpora["near-duplicate"].append(" ".join(changed))
        shuffled = list(base)
        rng.shuffle(shuffled)
        corpora["adversarial shuffle"].append(" ".join(shuffled))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, texts in corpora.items():
            km = KnowledgeMemory(
                Path(tmp) / name.replace(" ", "-"),
                dedupe=True,
                dedupe_threshold=THRESHOLD,
                dedupe_window=WINDOW,
            )
            loader = KnowledgeMemory(km.root)
            for text in existing:
                loader.remember(text)
            km.recall("warm")
            km.try_remember("warm up the dedupe window " + " ".join(words(rng, 5)))
            ours: list[float] = []
            rejected = 0
            decisions = []
            for text in texts:
                t0 = time.perf_counter()
                result = km.try_remember(text)
                ours.append(time.perf_counter() - t0)
                decisions.append(not result.stored)
                rejected += not result.stored
                if result.stored:
                    km.forget(result.id)  # keep the memory identical for the next text
            window = [e.content for e in km.entries()][-WINDOW:]
            seed_times = []
            disagreements = 0
            for text, ours_rejected in list(zip(texts, decisions, strict=True))[:seed_checks]:
                t0 = time.perf_counter()
                seed_rejected = seed_is_duplicate(text, window)
                seed_times.append(time.perf_counter() - t0)
                if seed_rejected and not ours_rejected:
                    disagreements += 1
            ours_ms = statistics.median(ours) * 1000
            seed_ms = statistics.median(seed_times) * 1000
            rows.append(
                [
                    name,
                    f"{len(texts)}",
                    f"{rejected}",
                    f"{ours_ms:.2f}",
                    f"{seed_ms:,.0f}",
                    f"{seed_ms / ours_ms:,.0f}x",
                    f"{disagreements}",
                ]
            )
    header = [
        "corpus",
        "texts",
        "rejected (ours)",
        "remember() ms (ours, median)",
        "seed difflib ms (median)",
        "speedup",
        "difflib rejects we accept",
    ]
    print(f"\nremember(dedupe=True) at 1,000 entries, window {WINDOW}, threshold {THRESHOLD}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
