"""Picking the best accepted keys of a score map (the last step of every search)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar

__all__ = ["SCORE_EPS", "best_first", "kth_accepted", "top_accepted", "top_of_array"]

K = TypeVar("K", bound=Hashable)

#: margin below which a score bound clearly cannot reach another score (scores are
#: compared rounded to nine decimals)
SCORE_EPS = 1e-8

#: values :func:`best_first` estimates its threshold from (a stride sample)
_SAMPLE = 1024

#: a tie group at least this large is ordered by walking the priority order (when
#: given) instead of sorting it
_WALK_MIN = 256


def top_accepted(
    scores: Mapping[K, float],
    limit: int,
    accept: Callable[[K], bool],
    priority: Callable[[K], tuple[Any, ...]],
    order: Sequence[K] | None = None,
) -> list[tuple[float, K]]:
    """The ``limit`` best accepted keys of ``scores`` as ``(score, key)``.

    Looks at the best few first and widens only while rejected keys leave the result
    short, so a common word does not make every match pay for the ordering. Scores
    equal to nine decimals are ordered by ``priority``, higher first; it is asked only
    of the keys of the score groups the answer is taken from (a word in hundreds of
    equally long entries does not order all of them).

    ``order``, when given, holds every key in ascending ``priority`` (equal priorities
    in ascending key order); a large group of equal scores is then ordered by walking
    it from the end instead of sorting the group (a word in every entry asks for the
    most important few of a group as large as the memory).
    """
    if not scores:
        return []

    def run_keys(run: list[tuple[K, float]], score: float, last: bool, need: int) -> Iterator[K]:
        group = _equal_scores(scores, run[0][1], score) if last else run
        return _by_priority(group, priority, order, need)

    want = max(limit * 4, 16)
    while True:
        best = heapq.nlargest(want, scores.items(), key=itemgetter(1))
        complete = len(best) >= len(scores)
        found = _take(best, complete, limit, accept, run_keys)
        if found is not None:
            return found
        want *= 4


def _take(
    best: list[tuple[K, float]],
    complete: bool,
    limit: int,
    accept: Callable[[K], bool],
    run_keys: Callable[[list[tuple[K, float]], float, bool, int], Iterable[K]],
) -> list[tuple[float, K]] | None:
    """The first ``limit`` accepted keys of ``best`` (``(key, score)``, best first) as
    ``(score, key)``, taken run by run of equal rounded score; None when too few are
    accepted and ``best`` is not ``complete`` (the caller widens it).

    ``run_keys(run, score, last, need)`` gives the keys of ``run`` (a new list: a slice
    of ``best``) in priority order. Every key outside ``best`` scores at most the last
    run's score, so only that run can continue beyond it: ``last`` is true for it when
    ``best`` is not ``complete``, and ``run_keys`` then gives the whole group of keys
    of that score.
    """
    found: list[tuple[float, K]] = []
    at, size = 0, len(best)
    while at < size:
        score = round(best[at][1], 9)
        end = at + 1
        while end < size and round(best[end][1], 9) == score:
            end += 1
        last = end == size and not complete
        for key in run_keys(best[at:end], score, last, limit - len(found)):
            if accept(key):
                found.append((score, key))
                if len(found) == limit:
                    return found
        at = end
    return found if complete else None


def _equal_scores(scores: Mapping[K, float], ref: float, score: float) -> list[tuple[K, float]]:
    """Every item of ``scores`` whose score rounds to ``score`` (``ref`` is one such
    score): a score equal to ``ref`` needs no rounding, and only one within 1e-9 of
    ``score`` can round to it (a word in every entry makes one group of them all)."""
    lo, hi = score - 1e-9, score + 1e-9
    return [
        kv
        for kv in scores.items()
        if kv[1] == ref or (lo < kv[1] < hi and round(kv[1], 9) == score)
    ]


def _by_priority(
    group: list[tuple[K, float]],
    priority: Callable[[K], tuple[Any, ...]],
    order: Sequence[K] | None,
    need: int,
) -> Iterator[K]:
    """The keys of ``group`` by ``priority``, higher first (see :func:`top_accepted`).

    Sorting costs about ``g log g`` for a group of ``g``; walking the whole order from
    its end meets ``need`` members after about ``need * len(order) / g`` steps: the
    walk is taken when that is clearly less.
    """
    size = len(group)
    if size == 1:
        yield group[0][0]
        return
    if order is None or size < _WALK_MIN or need * len(order) > size * size.bit_length():
        group.sort(key=lambda kv: priority(kv[0]), reverse=True)
        for key, _ in group:
            yield key
        return
    members = {key for key, _ in group}
    left = size
    for key in reversed(order):
        if key in members:
            yield key
            left -= 1
            if not left:
                return
    # Keys the order does not hold (none when it is complete): by priority after it.
    seen = set(order)
    rest = sorted((k for k in members if k not in seen), key=priority, reverse=True)
    yield from rest


def kth_accepted(acc: Mapping[int, float], limit: int, accept: Callable[[int], bool]) -> float:
    """The ``limit``-th best score among the accepted keys of ``acc`` (minus infinity
    when fewer are accepted)."""
    want = max(limit * 4, 16)
    while True:
        best = heapq.nlargest(want, acc.items(), key=itemgetter(1))
        found = 0
        for key, score in best:
            if accept(key):
                found += 1
                if found == limit:
                    return score
        if len(best) >= len(acc):
            return -math.inf
        want *= 4


def top_of_array(
    np: Any,
    out: Any,
    limit: int,
    accept: Callable[[int], bool],
    priority: Callable[[int], tuple[Any, ...]],
    order: Sequence[int] | None,
    keys: Any = None,
) -> list[tuple[float, int]]:
    """:func:`top_accepted` of the nonzero scores of ``out`` (``keys``: their keys,
    when already found), taken from its best few (widened while rejected keys leave
    the answer short).

    The group of equal scores the best few end in is found with array masks, and a
    large one is ordered by walking ``order`` against a mask of its members, so a
    word in a large share of the entries does not make a dictionary of them all.
    """
    if keys is None:
        keys = np.flatnonzero(out)

    def run_keys(
        run: list[tuple[int, float]], score: float, last: bool, need: int
    ) -> Iterator[int]:
        group = _array_group(np, out, keys, run[0][1], score) if last else [k for k, _ in run]
        return _keys_by_priority(np, group, priority, order, need)

    want = max(limit * 4, 16)
    while True:
        part = keys[best_first(np, out[keys], want)]
        complete = len(part) == len(keys)
        best = list(zip(part.tolist(), out[part].tolist(), strict=True))
        found = _take(best, complete, limit, accept, run_keys)
        if found is not None:
            return found
        want *= 4


def _array_group(np: Any, out: Any, keys: Any, ref: float, score: float) -> Any:
    """The ``keys`` whose score in ``out`` rounds to ``score`` (``ref`` is one such
    score; see :func:`_equal_scores`), as an array."""
    values = out[keys]
    near = (values > score - 1e-9) & (values < score + 1e-9) & (values != ref)
    group = keys[values == ref]
    if near.any():
        pairs = zip(keys[near].tolist(), values[near].tolist(), strict=True)
        extra = [key for key, value in pairs if round(value, 9) == score]
        group = np.concatenate([group, np.array(extra, dtype=group.dtype)])
    return group


def _keys_by_priority(
    np: Any,
    group: Any,
    priority: Callable[[int], tuple[Any, ...]],
    order: Sequence[int] | None,
    need: int,
) -> Iterator[int]:
    """:func:`_by_priority` of a group of keys given as a list or an array: a large
    group is walked against a mask of its members instead of a set."""
    size = len(group)
    if order is None or size < _WALK_MIN or need * len(order) > size * size.bit_length():
        members = group if isinstance(group, list) else group.tolist()
        yield from _by_priority([(key, 0.0) for key in members], priority, None, need)
        return
    group = np.asarray(group)
    mask = np.zeros(int(group.max()) + 1, dtype=np.bool_)
    mask[group] = True
    held = mask.tobytes()
    top = len(held)
    left = size
    for key in reversed(order):
        if key < top and held[key]:
            yield key
            left -= 1
            if not left:
                return
    # Keys the order does not hold (none when it is complete): by priority after it.
    seen = set(order)
    yield from sorted((k for k in group.tolist() if k not in seen), key=priority, reverse=True)


def best_first(np: Any, values: Any, want: int) -> Any:
    """Indices of at least ``min(want, len(values))`` of the largest ``values``, every
    other value at most the smallest of theirs, best first (equal values in index
    order).

    NumPy's ``argpartition`` slows down by tens of times on values with few distinct
    levels (a word's scores take a handful): a threshold is estimated from a stride
    sample instead, then the values at least that high are sorted.
    """
    size = len(values)
    if want >= size:
        return np.argsort(-values, kind="stable")
    step = max(1, size // _SAMPLE)
    sample = np.sort(values[::step])[::-1]
    rank = 2 * (want // step) + 2
    while True:
        floor = sample[min(rank, len(sample) - 1)]
        above = np.flatnonzero(values > floor)
        if len(above) >= want or rank >= len(sample) - 1:
            break
        rank *= 4
    if len(above) < want:
        # Enough values equal to the threshold to make up ``want`` (the rest of that
        # level is left out: none of it is above what is taken).
        level = np.flatnonzero(values == floor)[: want - len(above)]
        above = np.concatenate([above, level])
        if len(above) < want:  # the sample's lowest value: the values below it too
            return np.argsort(-values, kind="stable")
    return above[np.argsort(-values[above], kind="stable")]
