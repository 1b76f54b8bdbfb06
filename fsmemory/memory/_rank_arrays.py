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
    lengths = np.array(index._length, dtype=np.float64) if per_len else None
    for tid, w, _ in entries:
        keys, tf = _posting_arrays(index, np, tid, alive)
        norm = tf + base
        if lengths is not None:
            norm += per_len * lengths[keys]
        out += np.bincount(keys, weights=w * tf / norm, minlength=n_keys)
    for a, b in pairs:
        both = np.intersect1d(
            _posting_arrays(index, np, a, alive)[0], _posting_arrays(index, np, b, alive)[0]
        )
        out[_side_by_side_keys(index, np, both, a, b)] += PAIR_BONUS
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


def _side_by_side_keys(index: BM25Index, np: Any, keys: Any, first: int, second: int) -> Any:
    """The ``keys`` whose term sequence holds ``second`` right after ``first``."""
    if not len(keys):
        return keys
    starts = np.array(index._start, dtype=np.intp)[keys]
    gaps = np.array(index._length, dtype=np.intp)[keys] - 1  # adjacent positions each
    keep = gaps > 0
    keys, starts, gaps = keys[keep], starts[keep], gaps[keep]
    total = int(gaps.sum())
    if not total:
        return keys[:0]
    # Every adjacent position of every key, one flat array (owner: ``which``).
    which = np.repeat(np.arange(len(keys)), gaps)
    offsets = np.cumsum(gaps) - gaps
    at = starts[which] + (np.arange(total) - offsets[which])
    seq = np.frombuffer(index._seq, dtype=np.uint32)
    inside = at + 1 < len(seq)  # a damaged loaded index may point past the end
    at, which = at[inside], which[inside]
    found = (seq[at] == first) & (seq[at + 1] == second)
    del seq  # a live view would stop the array from growing
    return keys[np.unique(which[found])]
