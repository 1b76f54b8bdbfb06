"""BM25 scores added up in NumPy arrays, a posting list at a time.

:meth:`~fsmemory.memory._rank.BM25Index.score_array` (hybrid recall) and a lexical
search too heavy for Python (:meth:`~fsmemory.memory._rank.BM25Index.search`) use these.
Each score is the same float :meth:`~fsmemory.memory._rank.BM25Index.scores` gives: the
terms' parts are added in the order of the index's entries, then the pair bonuses in
the order given. ``np`` is the NumPy module, passed in: nothing here imports it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fsmemory.memory._analysis import PAIR_BONUS
from fsmemory.memory._topk import SCORE_EPS, best_first, top_accepted, top_of_array

if TYPE_CHECKING:
    from fsmemory.memory._rank import BM25Index

__all__ = ["completed_score", "entry_array", "top_of_entries"]

#: the largest term frequency whose parts are computed once per tf in a table
_TABLE = 1024
#: the share of the first term's bound the terms left out of the arrays may add up to
_TAIL_SHARE = 0.05


def entry_array(
    index: BM25Index,
    np: Any,
    entries: Sequence[tuple[int, float, float]],
    pairs: Sequence[tuple[int, int]],
) -> Any:
    """Scores by key (float64; 0 for keys matching no term, removed ones included) of
    ``entries`` (``(term id, weight, bound)``) and the term-id ``pairs`` of an index."""
    out, held = _term_array(index, np, entries)
    if pairs:
        n_keys = len(out)
        lengths = np.array(index._length, dtype=np.intp)
        starts = np.array(index._start, dtype=np.intp)
        seq = np.array(index._seq, dtype=np.uint32)  # a copy: a view would pin the array
        for a, b in pairs:
            # Keys holding both terms: a mask over the keys (linear; a key is in a
            # term's postings once, so each key is met once).
            holds_a = np.zeros(n_keys, dtype=np.bool_)
            holds_a[_held(index, np, held, a)] = True
            keys_b = _held(index, np, held, b)
            both = keys_b[holds_a[keys_b]]
            out[_side_by_side_keys(np, seq, starts, lengths, both, a, b)] += PAIR_BONUS
    return out


def top_of_entries(
    index: BM25Index,
    np: Any,
    entries: Sequence[tuple[int, float, float]],
    pairs: Sequence[tuple[int, int]],
    limit: int,
    accept: Callable[[int], bool],
    priority: Callable[[int], tuple[Any, ...]],
    order: Sequence[int] | None,
) -> list[tuple[float, int]]:
    """:func:`~fsmemory.memory._topk.top_accepted` of :func:`entry_array`, with the
    pair bonuses found only for the documents that can still reach the first
    ``limit``.

    The scores without bonuses are added up in arrays; the ``limit``-th best accepted
    of them is a floor under the answer (a bonus only raises a score). A document
    whose score plus a bonus for every query pair both of whose terms it holds stays
    below that floor cannot rank; the others' bonuses are read from their own term
    sequences, added in the order of ``pairs`` as :meth:`scores` adds them.

    Terms whose bounds add up to little (a word in every entry weighs almost nothing)
    are left out of the arrays when even their whole weight and every bonus could not
    lift a document holding no other term to that floor: the candidates' parts of
    them are read from their term sequences too, after the others' (the same order).
    """
    split = _essential(entries) if pairs else len(entries)
    out, held = _term_array(index, np, entries[:split])
    if not pairs:
        return top_of_array(np, out, limit, accept, priority, order)
    floor = _kth_accepted(np, out, limit, accept) - SCORE_EPS
    tail = entries[split:]
    most = sum(ub for _, _, ub in tail)
    if tail and floor <= most + PAIR_BONUS * len(pairs):
        _add_terms(index, np, out, held, tail)
        tail, most = [], 0.0
    keys = _at_least(np, out, floor - most - PAIR_BONUS * len(pairs))
    reach = out[keys] + (most + PAIR_BONUS * len(pairs))
    if len(keys) > 4 * limit:
        # Bound each candidate's bonus by the pairs both of whose terms it holds (a
        # term read from the sequences counts as held).
        mask = np.zeros(len(out), dtype=np.bool_)
        holds: dict[int, Any] = {}
        everywhere = np.ones(len(keys), dtype=np.bool_)
        for tid in {tid for pair in pairs for tid in pair}:
            if any(tid == entry[0] for entry in tail):
                holds[tid] = everywhere
                continue
            posting = _held(index, np, held, tid)
            mask[posting] = True
            holds[tid] = mask[keys]
            mask[posting] = False
        both = np.zeros(len(keys), dtype=np.float64)
        for a, b in pairs:
            both += holds[a] & holds[b]
        reach = out[keys] + (most + PAIR_BONUS * both)
        near = reach >= floor
        keys, reach = keys[near], reach[near]
    by_reach = np.argsort(-reach, kind="stable")
    scores = _completed(index, keys[by_reach], out, reach[by_reach], tail, pairs, limit, accept)
    return top_accepted(scores, limit, accept, priority, order)


def _essential(entries: Sequence[tuple[int, float, float]]) -> int:
    """How many of ``entries`` (highest bound first) are added up in arrays: the rest
    is the longest tail whose bounds add up to at most :data:`_TAIL_SHARE` of the
    first's (none of a single term)."""
    split, rest = len(entries), 0.0
    while split > 1 and rest + entries[split - 1][2] <= _TAIL_SHARE * entries[0][2]:
        split -= 1
        rest += entries[split][2]
    return split


def completed_score(
    terms: Sequence[int],
    score: float,
    rest: Sequence[tuple[int, float]],
    pairs: Sequence[tuple[int, int]],
    base: float,
    per_len: float,
) -> float:
    """``score`` (a document's partial BM25 score) completed from the document's own
    term sequence ``terms``: the part of each ``rest`` term (id, weight) it holds and
    the bonus of each of ``pairs`` it holds side by side (``base`` and ``per_len`` are
    the index's length norms)."""
    n = len(terms)
    for tid, w in rest:
        tf = terms.count(tid)
        if tf:
            score += w * tf / (tf + base + per_len * n) if per_len else w * tf / (tf + base)
    for a, b in pairs:
        if _side_by_side(terms, a, b):
            score += PAIR_BONUS
    return score


def _completed(
    index: BM25Index,
    keys: Any,
    out: Any,
    reach: Any,
    tail: Sequence[tuple[int, float, float]],
    pairs: Sequence[tuple[int, int]],
    limit: int,
    accept: Callable[[int], bool],
) -> dict[int, float]:
    """The whole scores of ``keys`` (in descending order of ``reach``, the most each
    can score): the parts of the ``tail`` terms and the pair bonuses read from their
    own term sequences, until no key left can reach the ``limit``-th best accepted
    score found."""
    seq, start, length = index._seq, index._start, index._length
    _, base, per_len = index._norms()
    rest = [(tid, w) for tid, w, _ in tail]
    scores: dict[int, float] = {}
    best: list[float] = []  # the best ``limit`` accepted scores found (a heap)
    for key, score, most in zip(keys.tolist(), out[keys].tolist(), reach.tolist(), strict=True):
        if len(best) == limit and most < best[0] - SCORE_EPS:
            break
        score = completed_score(
            seq[start[key] : start[key] + length[key]], score, rest, pairs, base, per_len
        )
        scores[key] = score
        if accept(key):
            if len(best) < limit:
                heapq.heappush(best, score)
            elif score > best[0]:
                heapq.heapreplace(best, score)
    return scores


def _at_least(np: Any, out: Any, floor: float) -> Any:
    """The keys of the nonzero scores of ``out`` that are at least ``floor``."""
    if floor > 0:
        return np.flatnonzero(out >= floor)
    keys = np.flatnonzero(out)
    return keys if floor == -math.inf else keys[out[keys] >= floor]


def _kth_accepted(np: Any, out: Any, limit: int, accept: Callable[[int], bool]) -> float:
    """The ``limit``-th best nonzero score of ``out`` among accepted keys (minus
    infinity when fewer are accepted)."""
    want = max(limit * 4, 16)
    while True:
        part = best_first(np, out, want)
        whole = len(part) == len(out)
        found = 0
        for key, score in zip(part.tolist(), out[part].tolist(), strict=True):
            if not score:
                return -math.inf  # every nonzero score was looked at
            if accept(key):
                found += 1
                if found == limit:
                    return float(score)
        if whole:
            return -math.inf
        want *= 4


def _term_array(
    index: BM25Index, np: Any, entries: Sequence[tuple[int, float, float]]
) -> tuple[Any, dict[int, Any]]:
    """The scores without pair bonuses by key, and the live keys of each term added.

    The terms' parts are added in the order of ``entries``, to each key from 0.0, as
    :meth:`scores` adds them (a key is in a term's postings once, so each addition
    reaches its key alone).
    """
    out = np.zeros(len(index._alive), dtype=np.float64)
    held: dict[int, Any] = {}
    _add_terms(index, np, out, held, entries, fresh=True)
    return out, held


def _add_terms(
    index: BM25Index,
    np: Any,
    out: Any,
    held: dict[int, Any],
    entries: Sequence[tuple[int, float, float]],
    fresh: bool = False,
) -> None:
    """Add the parts of ``entries`` to ``out`` (in their order), keeping each term's
    live keys in ``held``; ``fresh``: ``out`` is all zeros, so the first term's parts
    are written, not added (0.0 + part is part)."""
    _, base, per_len = index._norms()
    lengths = np.array(index._length, dtype=np.intp) if per_len else None
    for tid, w, _ in entries:
        keys, tf = _posting_arrays(index, np, tid)
        held[tid] = keys
        top = index._max_tf[tid]
        if lengths is None and top <= _TABLE:
            # Each tf's part once (the same float), then looked up per posting.
            table = np.array([0.0] + [w * f / (f + base) for f in range(1, top + 1)])
            parts = table[tf]
        else:
            tf = tf.astype(np.float64)
            norm = tf + base
            if lengths is not None:
                norm += per_len * lengths[keys].astype(np.float64)
            parts = w * tf / norm
        if fresh:
            out[keys] = parts
            fresh = False
        else:
            out[keys] += parts


def _held(index: BM25Index, np: Any, held: dict[int, Any], tid: int) -> Any:
    """The live keys of term ``tid`` (from ``held`` when its scores were added)."""
    keys = held.get(tid)
    if keys is None:
        keys = held[tid] = _posting_arrays(index, np, tid)[0]
    return keys


def _posting_arrays(index: BM25Index, np: Any, tid: int) -> tuple[Any, Any]:
    """Live keys (intp) and term frequencies (uint32) of term ``tid`` (copies)."""
    rows, tfs = index._post(tid, np)
    keys = np.array(rows, dtype=np.intp)
    tf = np.array(tfs, dtype=np.uint32)
    if len(keys) != index._df[tid]:
        live = np.frombuffer(bytes(index._alive), dtype=np.bool_)[keys]
        keys, tf = keys[live], tf[live]
    return keys, tf


def _side_by_side(seq: Sequence[int], first: int, second: int) -> bool:
    """True when ``second`` directly follows ``first`` somewhere in ``seq``."""
    try:
        i = seq.index(first)
        while True:
            if i + 1 < len(seq) and seq[i + 1] == second:
                return True
            i = seq.index(first, i + 1)
    except ValueError:
        return False


def _side_by_side_keys(
    np: Any, seq: Any, starts: Any, lengths: Any, keys: Any, first: int, second: int
) -> Any:
    """The ``keys`` whose term sequence (``seq[starts[k] : starts[k] + lengths[k]]``)
    holds ``second`` right after ``first``."""
    if not len(keys):
        return keys
    gaps = lengths[keys] - 1  # adjacent positions each
    keep = gaps > 0
    keys, at0, gaps = keys[keep], starts[keys][keep], gaps[keep]
    total = int(gaps.sum())
    if not total:
        return keys[:0]
    # Every adjacent position of every key, one flat array (owner: ``which``).
    which = np.repeat(np.arange(len(keys)), gaps)
    offsets = np.cumsum(gaps) - gaps
    at = at0[which] + (np.arange(total) - offsets[which])
    inside = (at >= 0) & (at + 1 < len(seq))  # a damaged loaded index may point past the end
    at, which = at[inside], which[inside]
    found = (seq[at] == first) & (seq[at + 1] == second)
    return keys[np.unique(which[found])]
