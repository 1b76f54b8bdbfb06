"""BM25 scores added up in NumPy arrays, a posting list at a time.

:meth:`~fsmemory.memory._rank.BM25Index.score_array` (hybrid recall) and a lexical
search too heavy for Python (:meth:`~fsmemory.memory._rank.BM25Index.search`) use these.
Each score is the same float :meth:`~fsmemory.memory._rank.BM25Index.scores` gives: the
terms' parts are added in the order of the index's entries, then the pair bonuses in
the order given. ``np`` is the NumPy module, passed in: nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fsmemory.memory._analysis import PAIR_BONUS

if TYPE_CHECKING:
    from fsmemory.memory._rank import BM25Index

__all__ = ["entry_array"]


def entry_array(
    index: BM25Index,
    np: Any,
    entries: Sequence[tuple[int, float, float]],
    pairs: Sequence[tuple[int, int]],
) -> Any:
    """Scores by key (float64; 0 for keys matching no term, removed ones included) of
    ``entries`` (``(term id, weight, bound)``) and the term-id ``pairs`` of an index."""
    n_keys = len(index._alive)
    out = np.zeros(n_keys, dtype=np.float64)
    _, base, per_len = index._norms()
    alive = np.array(index._alive, dtype=np.bool_)
    lengths = np.array(index._length, dtype=np.intp)
    for tid, w, _ in entries:
        keys, tf = _posting_arrays(index, np, tid, alive)
        norm = tf + base
        if per_len:
            norm += per_len * lengths[keys].astype(np.float64)
        out += np.bincount(keys, weights=w * tf / norm, minlength=n_keys)
    if pairs:
        starts = np.array(index._start, dtype=np.intp)
        seq = np.array(index._seq, dtype=np.uint32)  # a copy: a view would pin the array
        for a, b in pairs:
            # Keys holding both terms: a mask over the keys (linear; a key is in a
            # term's postings once, so each key is met once).
            holds_a = np.zeros(n_keys, dtype=np.bool_)
            holds_a[_posting_arrays(index, np, a, alive)[0]] = True
            keys_b = _posting_arrays(index, np, b, alive)[0]
            both = keys_b[holds_a[keys_b]]
            out[_side_by_side_keys(np, seq, starts, lengths, both, a, b)] += PAIR_BONUS
    return out


def _posting_arrays(index: BM25Index, np: Any, tid: int, alive: Any) -> tuple[Any, Any]:
    """Live keys (intp) and term frequencies (float64) of term ``tid`` (copies)."""
    rows, tfs = index._post(tid)
    keys = np.array(rows, dtype=np.intp)
    tf = np.array(tfs, dtype=np.float64)
    if len(keys) != index._df[tid]:
        live = alive[keys]
        keys, tf = keys[live], tf[live]
    return keys, tf


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
