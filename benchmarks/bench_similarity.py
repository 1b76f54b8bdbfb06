"""Micro-benchmark: our near-duplicate check against the difflib check it replaces.

Three corpora of about 1,000-character texts, built from fixed seeds:

* ``unique``: independent texts over the same vocabulary;
* ``near-dup``: a third of the texts are light edits (about 2% of characters) of a
  text in the window, the rest are fresh;
* ``shuffle``: every text is a word shuffle of one base text, so all texts have the
  same characters with the same counts and no count-based bound can prune them (the
  adversarial case for difflib's ``quick_ratio``).

Each corpus is streamed: text ``i`` is checked against the ``window`` texts before it
(a sliding window, like ``KnowledgeMemory(dedupe_window=200)``), then added.  We time

* ``index``: :meth:`NearDuplicateIndex.is_near_duplicate` (entries prepared on add);
* ``hook``: the :func:`dedupe_against` hook with a fetcher returning the window;
* ``difflib``: the check of the seed's reference (``real_quick_ratio``, ``quick_ratio``
  and ``ratio`` of ``SequenceMatcher(None, a, b, autojunk=False)`` against each window
  text), on a few sampled checks only because each takes seconds.

On the sampled checks we also compare decisions, per check and per (text, window
entry) pair.  A pair that difflib rejects and we accept would break the "at least as
strict" guarantee and is reported in the ``difflib-only`` column.

Run ``python benchmarks/bench_similarity.py --help`` for options.  Timings are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import difflib
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fsmemory.sanitizers import NearDuplicateIndex, dedupe_against, similarity


def make_vocabulary(rnd: random.Random, size: int = 3000) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["th", "st", "er"]
    return ["".join(rnd.choices(syllables, k=rnd.randint(1, 4))) for _ in range(size)]


def make_text(rnd: random.Random, vocabulary: Sequence[str], length: int) -> str:
    words: list[str] = []
    size = 0
    while size < length:
        # A Zipf-like pick: a few words are frequent, most are rare.
        word = vocabulary[min(int(rnd.paretovariate(1.1)) - 1, len(vocabulary) - 1)]
        if rnd.random() < 0.08:
            word += rnd.choice(".,;")
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:length]


def light_edit(rnd: random.Random, text: str, rate: float = 0.02) -> str:
    chars = list(text)
    for _ in range(max(1, int(len(chars) * rate))):
        position = rnd.randrange(len(chars))
        operation = rnd.random()
        if operation < 0.4:
            chars[position] = rnd.choice("abcdefghijklmnopqrstuvwxyz ")
        elif operation < 0.7:
            del chars[position]
        else:
            chars.insert(position, rnd.choice("abcdefghijklmnopqrstuvwxyz "))
    return "".join(chars)


def word_shuffle(rnd: random.Random, text: str) -> str:
    words = text.split(" ")
    rnd.shuffle(words)
    return " ".join(words)


def build_corpora(seed: int, entries: int, window: int, length: int) -> dict[str, list[str]]:
    rnd = random.Random(seed)
    vocabulary = make_vocabulary(rnd)
    unique = [make_text(rnd, vocabulary, length) for _ in range(entries)]
    near: list[str] = []
    for _ in range(entries):
        if near and rnd.random() < 1 / 3:
            source = rnd.choice(near[-window:])
            near.append(light_edit(rnd, source))
        else:
            near.append(make_text(rnd, vocabulary, length))
    base = make_text(rnd, vocabulary, length)
    shuffles = [word_shuffle(rnd, base) for _ in range(entries)]
    return {"unique": unique, "near-dup": near, "shuffle": shuffles}


def difflib_pair(text: str, other: str, threshold: float) -> bool:
    matcher = difflib.SequenceMatcher(None, text, other, autojunk=False)
    return (
        matcher.real_quick_ratio() >= threshold
        and matcher.quick_ratio() >= threshold
        and matcher.ratio() >= threshold
    )


def difflib_check(text: str, window: Sequence[str], threshold: float) -> bool:
    return any(difflib_pair(text, other, threshold) for other in window)


@dataclass
class Row:
    corpus: str
    checks: int
    index_ms: list[float]
    hook_ms: list[float]
    difflib_ms: list[float]
    ours_rejects: int
    difflib_rejects: int
    sampled_ours_rejects: int
    checks_agree: int
    pairs: int
    pairs_agree: int
    difflib_only_pairs: int
    ours_only_pairs: int = 0
    hook_first_ms: float = 0.0
    index_hook_disagree: int = 0


def timed(call: Callable[..., object], *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = call(*args)
    return (time.perf_counter() - start) * 1e3, result


def run_corpus(
    name: str,
    texts: list[str],
    window: int,
    threshold: float,
    difflib_checks: int,
    rnd: random.Random,
) -> Row:
    index = NearDuplicateIndex(texts[:window], threshold=threshold, maxlen=window)
    current: list[str] = []
    hook = dedupe_against(lambda: current, threshold)
    checked = range(window, len(texts))
    sampled = set(rnd.sample(list(checked), min(difflib_checks, len(checked))))
    row = Row(name, len(checked), [], [], [], 0, 0, 0, 0, 0, 0, 0)
    for position in checked:
        text = texts[position]
        current[:] = texts[position - window : position]
        index_ms, rejected = timed(index.is_near_duplicate, text)
        hook_ms, hook_result = timed(hook, text)
        if position == window:
            row.hook_first_ms = hook_ms  # the hook prepares the whole window on its first call
        row.index_hook_disagree += (hook_result is None) != rejected
        row.index_ms.append(index_ms)
        row.hook_ms.append(hook_ms)
        row.ours_rejects += bool(rejected)
        if position in sampled:
            difflib_ms, difflib_rejected = timed(difflib_check, text, current, threshold)
            row.difflib_ms.append(difflib_ms)
            row.difflib_rejects += bool(difflib_rejected)
            row.sampled_ours_rejects += bool(rejected)
            row.checks_agree += bool(rejected) == bool(difflib_rejected)
            for other in current:
                ours = similarity(text, other) >= threshold
                theirs = difflib_pair(text, other, threshold)
                row.pairs += 1
                row.pairs_agree += ours == theirs
                row.difflib_only_pairs += theirs and not ours
                row.ours_only_pairs += ours and not theirs
        index.add(text)
    return row


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def print_table(rows: list[Row]) -> None:
    columns = [
        ("corpus", "", 9),
        ("checks", "", 6),
        ("index", "med ms", 7),
        ("index", "p95 ms", 7),
        ("hook", "med ms", 7),
        ("hook", "1st ms", 7),
        ("difflib", "med ms", 8),
        ("speedup", "x", 7),
        ("rejects", "ours", 7),
        ("sampled rej", "ours/dl", 11),
        ("checks", "agree", 7),
        ("pairs", "agree", 9),
        ("ours-only", "pairs", 9),
        ("dl-only", "pairs", 7),
    ]
    print(" ".join(f"{title:>{width}}" for title, _, width in columns))
    print(" ".join(f"{unit:>{width}}" for _, unit, width in columns))
    print("-" * (sum(width for _, _, width in columns) + len(columns) - 1))
    for row in rows:
        index_median = statistics.median(row.index_ms)
        difflib_median = statistics.median(row.difflib_ms) if row.difflib_ms else float("nan")
        cells = [
            row.corpus,
            str(row.checks),
            f"{index_median:.2f}",
            f"{quantile(row.index_ms, 0.95):.2f}",
            f"{statistics.median(row.hook_ms):.2f}",
            f"{row.hook_first_ms:.1f}",
            f"{difflib_median:.0f}",
            f"{difflib_median / index_median:.0f}",
            str(row.ours_rejects),
            f"{row.sampled_ours_rejects}/{row.difflib_rejects}",
            f"{row.checks_agree}/{len(row.difflib_ms)}",
            f"{row.pairs_agree}/{row.pairs}",
            str(row.ours_only_pairs),
            str(row.difflib_only_pairs),
        ]
        print(
            " ".join(f"{cell:>{width}}" for cell, (_, _, width) in zip(cells, columns, strict=True))
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=1000, help="texts per corpus")
    parser.add_argument("--window", type=int, default=200, help="texts compared per check")
    parser.add_argument("--length", type=int, default=1000, help="characters per text")
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument(
        "--difflib-checks",
        type=int,
        default=3,
        help="sampled checks timed with difflib per corpus (each takes seconds)",
    )
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args(argv)

    print(
        f"Python {platform.python_version()} on {platform.machine()}; "
        f"{args.entries} texts of {args.length} chars per corpus, window {args.window}, "
        f"threshold {args.threshold}, seed {args.seed}"
    )
    corpora = build_corpora(args.seed, args.entries, args.window, args.length)
    rnd = random.Random(args.seed + 1)
    rows = []
    for name, texts in corpora.items():
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows.append(run_corpus(name, texts, args.window, args.threshold, args.difflib_checks, rnd))
    print()
    print_table(rows)
    print()
    print(
        "index: NearDuplicateIndex.is_near_duplicate (window of prepared texts); hook: "
        "dedupe_against with a fetcher returning the window (1st: first call, which prepares "
        f"the window); difflib: the reference check, on {args.difflib_checks} sampled checks "
        "per corpus; speedup = difflib median / index median; rejects: checks answered "
        "'near-duplicate'; ours-only / dl-only: sampled (text, window entry) pairs that only "
        "we / only difflib call near-duplicates (dl-only must be 0)."
    )
    disagree = sum(row.index_hook_disagree for row in rows)
    print(f"index and hook decisions differ on {disagree} checks (expected 0).")


if __name__ == "__main__":
    main()
