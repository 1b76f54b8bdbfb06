"""The arithmetic of hybrid recall over a :class:`~fsmemory.memory._vectors.VectorStore`:
products of the stored vectors (int8 codes and a power-of-two scale per row, see
:mod:`fsmemory.memory._vecmath`) with float32 weights, the exact mean of the live
entries' vectors, centred cosines, the fusion with the lexical scores and context, and
the best rows of a fused score. The store holds the vectors; this holds what is derived
from them for ranking (kept between recalls, built again when the live rows change).

NumPy is imported only when an embedder is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fsmemory.errors import require
from fsmemory.memory._rank import top_accepted
from fsmemory.memory._vecmath import (
    chunks,
    dot_rows,
    row_scales,
    stored_norms,
    widen,
    widen_dot,
)
from fsmemory.memory._vecrank import (
    CONTEXT_GAP,
    CONTEXT_SPAN,
    CONTEXT_WEIGHT,
    always,
    context_scores,
    standardise,
)

if TYPE_CHECKING:
    from fsmemory.memory._index import MemoryIndex

__all__ = ["LEXICAL_WEIGHT", "VectorScoring"]

# Weight of the lexical score in the fusion (both scores are standardised first).
LEXICAL_WEIGHT = 0.3
# The mean of the vectors is shrunk by n / (n + this) toward 0: a few vectors say little
# about the direction all of a model's vectors share.
_CENTRE_PRIOR = 4
# The mean is summed in fixed point (see _row_sum): units of 2**-40.
_FIXED_ONE = float(1 << 40)


def _numpy() -> Any:
    return require("numpy", "embed")


class VectorScoring:
    """Ranking over the vectors a :class:`~fsmemory.memory._vectors.VectorStore` holds
    (its base class): the store supplies the vector rows (:attr:`_ids`,
    :meth:`_parts`, the file's per-piece sums) and the default size of the float32 copy
    (:meth:`_default_cache_bytes`), and calls :meth:`_init_scoring` once."""

    # Supplied by the store.
    dimension: int | None
    _ids: list[str]
    _piece_sums: dict[int, Any]

    def _parts(self) -> list[tuple[int, Any]]:
        """The vectors as (first vector row, stored rows) pieces, in row order."""
        raise NotImplementedError

    def _default_cache_bytes(self) -> int:
        """The most bytes the float32 copy may take when the store was given no
        ``cache_bytes``."""
        raise NotImplementedError

    def _init_scoring(self, cache_bytes: int | None) -> None:
        """The derived state of an empty store, which keeps a float32 copy of its
        vectors while that takes at most ``cache_bytes`` (see :meth:`_widened`; None:
        :meth:`_default_cache_bytes`, asked for when the copy is first wanted)."""
        self._wide_limit = cache_bytes
        self._wide: Any = None  # float32 copy of the first _wide_rows (see _widened)
        self._wide_rows = 0
        self._products = 0  # products taken (see _product)
        # The mean of the live entries' vectors and what each vector row needs of it
        # (see _centring): which vector rows the sum holds, the sum itself (exact, in
        # fixed point), and the vector rows it was last asked for.
        self._counted: Any = None
        self._fixed_sum: Any = None  # int64, units of 1 / _FIXED_ONE
        self._n_counted = 0
        self._centred_on: Any = None
        self._mu: Any = None
        self._dots: Any = None  # v . mu of every vector row
        self._sq_norms: Any = ()  # |v|^2 of the first vector rows (see _product)
        self._spread: Any = None  # |v - mu| of every vector row
        # For the vector rows last centred on: v . mu, |v - mu| and |v - mu| > 0, and
        # the dots they were taken from.
        self._live_dots: tuple[Any, Any, tuple[Any, Any, Any]] = (None, None, (0, 0, 0))
        # What context_of last returned, and for which live rows and timeline.
        self._context_for: tuple[Any, Any] = (None, None)
        self._context: tuple[Any, Any] = ((), ())
        # Index rows in the order their entries were written (see _timeline), and the
        # state of the index it was built from.
        self._timeline_key: tuple[int, int] = (-1, -1)
        self._timeline_of: tuple[Any, Any] = ((), ())

    def _stacked(self) -> Any:
        """The stored vectors as one float32 array, one row per id of ``_ids`` (a
        copy)."""
        np = _numpy()
        out = np.empty((len(self._ids), self.dimension or 0), dtype=np.float32)
        for start, array in self._parts():
            widen(np, array, out[start : start + len(array)])
        return out

    def _product(self, weights: Any, norms: bool = False) -> Any:
        """``vectors @ weights`` (float32, one row per vector row) for float32
        ``weights`` of shape (dimension, k). With ``norms``, the squared norm of each
        vector row not known yet is read from its row (:attr:`_sq_norms`: a stored
        vector is of unit length only to about 1e-2). The first product widens a few
        hundred rows at a time; the widened copy (see :meth:`_widened`) is made by the
        second, so that a process that recalls once never pays for it."""
        np = _numpy()
        n = len(self._ids)
        wide = self._widened() if self._products else None
        self._products += 1
        out = np.empty((n, weights.shape[1]), dtype=np.float32)
        known = len(self._sq_norms) if norms else n
        sq = None
        if known < n:
            sq = np.empty(n, dtype=np.float32)
            sq[:known] = self._sq_norms
        for start, array in self._parts():
            end = start + len(array)
            fill = sq[start:end] if sq is not None and end > known else None
            if wide is None:  # one pass over the stored rows: products and norms
                widen_dot(np, array, weights, out[start:end], fill)
            elif fill is not None:
                stored_norms(np, array, row_scales(np, array), fill)
        if wide is not None:
            dot_rows(np, wide, np.ascontiguousarray(weights.T), out)
        if sq is not None:
            self._sq_norms = sq
        return out

    def _widened(self) -> Any:
        """Every vector as float32 (an (n, dimension) view), kept and extended as rows
        are added, while that takes at most the store's cache bytes; else None. The
        copy grows by an eighth at a time: rows added to a large memory copy it again
        rarely and reserve little."""
        limit = self._wide_limit
        if limit is None:  # asked for once, by the first recall that could keep a copy
            limit = self._wide_limit = self._default_cache_bytes()
        n, width = len(self._ids), self.dimension or 0
        if n * width * 4 > limit:
            self._wide, self._wide_rows = None, 0
            return None
        np = _numpy()
        done, wide = self._wide_rows, self._wide
        if wide is None or wide.shape[0] < n:
            fits = limit // 4 // max(width, 1)
            grown = np.empty((min(max(n, done + done // 8, 64), fits), width), dtype=np.float32)
            if wide is not None:
                grown[:done] = wide[:done]
            self._wide = wide = grown
        for start, array in self._parts():
            end = start + len(array)
            if end > done:
                skip = max(done - start, 0)
                widen(np, array[skip:], wide[start + skip : end])
        self._wide_rows = n
        return wide[:n]

    def _row_sum(self, rows: Any) -> Any:
        """The sum of the vector rows ``rows`` in units of ``1 / _FIXED_ONE`` (int64),
        exact: a stored value is a whole number of 2**-24, so a float64 sum of fewer
        than 2**29 of them (unit vectors) loses nothing, and so does the scaling: the
        same sum in any order and after any additions and subtractions."""
        np = _numpy()
        total = np.zeros(self.dimension or 0, dtype=np.float64)
        rows = np.sort(np.asarray(rows, dtype=np.intp))
        for start, array in self._parts():
            lo, hi = np.searchsorted(rows, [start, start + len(array)])
            if lo == hi:
                continue
            local = None if hi - lo == len(array) else rows[lo:hi] - start
            whole = self._piece_sums.get(start)
            if whole is not None and 2 * (hi - lo) >= len(array):
                # The file's sum of the piece, less the rows not asked for.
                total += whole
                if local is not None:
                    others = np.ones(len(array), dtype=np.bool_)
                    others[local] = False
                    for _, part in chunks(np, array, np.flatnonzero(others)):
                        total -= part.sum(axis=0, dtype=np.float64)
                continue
            for _, part in chunks(np, array, local):
                total += part.sum(axis=0, dtype=np.float64)
        return np.rint(total * _FIXED_ONE).astype(np.int64)

    def _centring(self, vecs: Any) -> tuple[Any, bool]:
        """The mean ``mu`` of the vector rows ``vecs`` (the live entries', shrunk toward
        0 for a small memory), and whether ``v . mu`` must be taken again for every
        vector row (see :meth:`dense_scores`).

        A function of the live entries' vectors alone, whatever else the file holds
        (forgotten and expired entries, texts fixed since): every process, with the
        vector file or without it, ranks alike. The sum is kept in fixed point
        (:meth:`_row_sum`), exact whatever the order vectors come and go in, and
        follows the live set by what joined and left it."""
        np = _numpy()
        n = len(self._ids)
        previous = self._centred_on
        if previous is not vecs and (previous is None or not np.array_equal(previous, vecs)):
            counted = self._counted
            if counted is None or len(counted) < n:
                grown = np.zeros(n, dtype=np.bool_)
                if counted is not None:
                    grown[: len(counted)] = counted
                counted = grown
            want = np.zeros(len(counted), dtype=np.bool_)
            want[vecs] = True
            joined = np.flatnonzero(want & ~counted)
            left = np.flatnonzero(counted & ~want)
            if self._fixed_sum is None:
                self._fixed_sum = np.zeros(self.dimension or 0, dtype=np.int64)
            if joined.size or left.size:
                self._fixed_sum += self._row_sum(joined)
                self._fixed_sum -= self._row_sum(left)
                self._mu = None
            self._counted = want
            self._n_counted = len(vecs)
        self._centred_on = vecs
        stale = self._mu is None or self._dots is None or len(self._dots) != n
        if self._mu is None:
            total = self._fixed_sum.astype(np.float64) / _FIXED_ONE
            self._mu = (total / (self._n_counted + _CENTRE_PRIOR)).astype(np.float32)
        return self._mu, stale

    def dense_scores(self, query_vector: Any, vecs: Any = None) -> Any:
        """Cosine of ``query_vector`` with the vector rows ``vecs`` (every stored vector
        when None), both centred on the mean of those rows (float32, one per item of
        ``vecs``).

        Sentence embeddings share a common direction (all of them are alike in it), which
        crowds the cosines of unrelated texts together; taking the mean away spreads them
        (measured on the LoCoMo development split with all-MiniLM-L6-v2: dense recall@5
        0.609 raw, 0.637 centred). Computed from one pass over the raw vectors:
        ``(v - mu) . (q - mu) = v . q - v . mu - q . mu + mu . mu``, divided by
        ``|v - mu| = sqrt(|v|^2 - 2 v . mu + mu . mu)`` (the query's own norm is the
        same for every row); ``v . mu`` is taken in the same pass when the mean
        changed."""
        np = _numpy()
        if vecs is None:
            vecs = np.arange(len(self._ids))
        query = np.asarray(query_vector, dtype=np.float32)
        if not len(vecs):
            return np.zeros(0, dtype=np.float32)
        mu, stale = self._centring(vecs)
        if stale:
            both = self._product(np.stack([query, mu], axis=1), norms=True)
            raw_all = both[:, 0]
            dots = self._dots = np.ascontiguousarray(both[:, 1])
            spread = self._sq_norms - 2.0 * dots + float(mu @ mu)
            self._spread = np.sqrt(np.maximum(spread, 0.0))
        else:
            raw_all = self._product(query[:, None])[:, 0]
        held = self._live_dots
        if held[0] is not vecs or held[1] is not self._dots:
            spread = self._spread[vecs]
            self._live_dots = (vecs, self._dots, (self._dots[vecs], spread, spread > 1e-6))
        dots, spread, spread_ok = self._live_dots[2]
        raw = raw_all[vecs]
        shift = float(mu @ mu) - float(mu @ query)
        centred = raw - dots + np.float32(shift)
        return np.divide(centred, spread, out=np.zeros_like(centred), where=spread_ok)

    def context_of(self, index: MemoryIndex, rows: Any) -> tuple[Any, Any]:
        """The places in ``rows`` (the live index rows, :meth:`live_rows`) in the order
        their entries were written (creation time, then row), and their creation times
        (microseconds): what :func:`context_scores` takes. Kept while the live rows and
        the index rows stay the same."""
        np = _numpy()
        order, stamps = self._timeline(index)
        held_rows, held_order = self._context_for
        if held_rows is not rows or held_order is not order:
            place = np.full(index.rows, -1, dtype=np.intp)
            place[rows] = np.arange(len(rows))
            placed = place[order]
            keep = placed >= 0
            self._context = (placed[keep], stamps[keep])
            self._context_for = (rows, order)
        return self._context

    def _timeline(self, index: MemoryIndex) -> tuple[Any, Any]:
        """Every index row in the order its entry was written (creation time, then
        row), with those times; built again when the index has new rows."""
        key = (index.row_epoch, index.rows)
        if key != self._timeline_key:
            np = _numpy()
            created = index.created_array(np)
            by_time = np.lexsort((np.arange(len(created)), created))
            self._timeline_of = (by_time, created[by_time])
            self._timeline_key = key
        return self._timeline_of

    def fused_scores(
        self,
        query_vector: Any,
        lexical: Any,
        live: tuple[Any, Any],
        context: tuple[Any, Any] | None = None,
    ) -> Any:
        """The hybrid score of every live entry: ``0.3 * z(lexical) + 0.7 * z(dense)``,
        plus the context share when ``context`` is given.

        ``live`` is what :meth:`live_rows` returns (the live index rows and their vector
        rows); the result holds one score per item of it. ``lexical`` holds the BM25
        score of every index row; ``dense`` is :meth:`dense_scores` over the live
        entries' vectors, and ``z`` standardises a score over the live entries (in index
        row order: the same numbers whatever order the vectors were stored in).
        ``context`` is what :meth:`context_of` returns (places in ``live`` in the order
        the entries were written, and when): each entry then gains
        :data:`CONTEXT_WEIGHT` times the best positive score of an entry written next
        to it (:func:`context_scores`)."""
        np = _numpy()
        rows, vecs = live
        dense = self.dense_scores(query_vector, vecs)
        lex = lexical[rows]
        fused = LEXICAL_WEIGHT * standardise(np, lex) + (1 - LEXICAL_WEIGHT) * standardise(
            np, dense
        )
        if context is not None:
            order, stamps = context
            fused += CONTEXT_WEIGHT * context_scores(
                np, fused, order, stamps, CONTEXT_SPAN, CONTEXT_GAP
            )
        return fused

    def top_rows(
        self,
        fused: Any,
        rows: Any,
        limit: int,
        accept: Callable[[int], bool],
        priority: Callable[[int], tuple[Any, ...]],
    ) -> list[tuple[float, int]]:
        """The ``limit`` accepted index rows of best score, ``fused[i]`` being the score
        of index row ``rows[i]`` (:meth:`fused_scores`), equal scores ordered by
        ``priority``. Every row scoring as high as the last candidate is a candidate
        too: which of equal scores are looked at never depends on their order."""
        np = _numpy()
        n = fused.shape[0]
        if not n:
            return []
        want = min(n, max(limit * 4, 16))
        while True:
            if want < n:
                cut = np.partition(fused, n - want)[n - want]
                top = np.flatnonzero(fused >= cut)
            else:
                top = np.arange(n)
            scores = {
                row: float(fused[i])
                for i, row in zip(top.tolist(), rows[top].tolist(), strict=True)
                if accept(row)
            }
            found = top_accepted(scores, limit, always, priority)
            if len(found) >= limit or len(top) >= n:
                return found
            want = min(n, want * 4)
