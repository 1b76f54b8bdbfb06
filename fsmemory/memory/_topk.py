"""Picking the best accepted keys of a score map (the last step of every search)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Mapping
from operator import itemgetter
from typing import Any, TypeVar

__all__ = ["top_accepted"]

K = TypeVar("K", bound=Hashable)


def top_accepted(
    scores: Mapping[K, float],
    limit: int,
    accept: Callable[[K], bool],
    priority: Callable[[K], tuple[Any, ...]],
) -> list[tuple[float, K]]:
    """The ``limit`` best accepted keys of ``scores`` as ``(score, key)``.

    Looks at the best few first and widens only while rejected keys leave the result
    short, so a common word does not make every match pay for the ordering. Scores
    equal to nine decimals are ordered by ``priority``, higher first; it is asked only
    of the keys of the score groups the answer is taken from (a word in hundreds of
    equally long entries does not order all of them).
    """
    if not scores:
        return []
    want = max(limit * 4, 16)
    while True:
        best = heapq.nlargest(want, scores.items(), key=itemgetter(1))
        complete = len(best) >= len(scores)
        found: list[tuple[float, K]] = []
        # Runs of equal rounded score, best first: every key outside ``best`` scores
        # at most the last run's score, so only that run can continue beyond it.
        at, size = 0, len(best)
        while at < size:
            score = round(best[at][1], 9)
            end = at + 1
            while end < size and round(best[end][1], 9) == score:
                end += 1
            last = end == size and not complete
            group = (
                [kv for kv in scores.items() if round(kv[1], 9) == score] if last else best[at:end]
            )
            if len(group) > 1:
                group.sort(key=lambda kv: priority(kv[0]), reverse=True)
            for key, _ in group:
                if accept(key):
                    found.append((score, key))
                    if len(found) == limit:
                        return found
            if last:
                break
            at = end
        if complete:
            return found
        want *= 4
