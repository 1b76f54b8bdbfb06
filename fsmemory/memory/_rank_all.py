"""The search of :class:`~fsmemory.memory._rank.BM25Index` for queries whose terms
many documents all hold: those documents are met first, in C, and a document missing
a term is ruled out by the terms' score bounds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fsmemory.memory._analysis import PAIR_BONUS
from fsmemory.memory._topk import top_accepted

if TYPE_CHECKING:
    from fsmemory.memory._rank import BM25Index

__all__ = ["all_terms_likely", "search_all_terms"]


def all_terms_likely(
    index: BM25Index, entries: Sequence[tuple[int, float, float]], limit: int
) -> bool:
    """Whether, were the terms independent, ``limit`` documents would hold them all
    (the only case :func:`search_all_terms` can answer)."""
    n = index._n_docs
    expected = float(n)
    for tid, _, _ in entries:
        expected *= index._df[tid] / n
    return len(entries) >= 2 and expected >= limit


def search_all_terms(
    index: BM25Index,
    entries: Sequence[tuple[int, float, float]],
    pairs: Sequence[tuple[int, int]],
    limit: int,
    accept: Callable[[int], bool],
    priority: Callable[[int], tuple[Any, ...]],
    order: Sequence[int] | None,
) -> list[tuple[float, int]] | None:
    """The exact answer from the documents holding every term of ``entries`` (their
    postings met as dictionaries, in C), or None when there are too few or a document
    missing a term might still rank among the first ``limit``."""
    tids = [tid for tid, _, _ in entries]
    if len(tids) < 2 or len(set(tids)) < len(tids):
        return None
    posts: list[dict[int, int]] = [dict(index._posting(tid)) for tid in tids]
    smallest = min(range(len(posts)), key=lambda i: len(posts[i]))
    every = set(posts[smallest]).intersection(*posts)
    if len(every) < limit:
        return None
    _, base, per_len = index._norms()
    lengths = index._length
    acc = dict.fromkeys(every, 0.0)
    for (_, w, _), post in zip(entries, posts, strict=True):
        for key in every:
            tf = post[key]
            acc[key] += w * tf / (tf + base + per_len * lengths[key] if per_len else tf + base)
    index._add_pair_bonus(acc, pairs)
    found = top_accepted(acc, limit, accept, priority, order)
    if len(found) < limit:
        return None
    # A document missing term t scores at most the others' bounds plus the bonus of
    # the pairs without t.
    total = sum(ub for _, _, ub in entries)
    reach = max(
        total - ub + PAIR_BONUS * sum(1 for p in pairs if tid not in p) for tid, _, ub in entries
    )
    return found if found[-1][0] > reach + 1e-9 else None
