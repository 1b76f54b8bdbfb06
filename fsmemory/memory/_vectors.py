"""Embedding vectors for hybrid recall, stored beside the memory as derived data.

An embedder is any callable ``fn(texts: Sequence[str]) -> Sequence[Sequence[float]]``
that embeds a batch at once (OpenAI embeddings, fastembed, sentence-transformers...).
Its identity is its ``name`` attribute (else its qualified name) and its dimension (its
``dimension`` attribute, else the length of the first vector it returns). Vectors of one
identity live in one append-only file::

    <root>/vectors/<name>-<dimension>.jsonl

one line per entry, ``{"id": ..., "v": <base64 of little-endian float32>}``. Two models
never share a file; a file may be deleted at any time: entries without a vector are
embedded again, in batches, by the next ``recall()``. The vectors are never needed to
read the memory, never appear in MEMORY.md or the logs, and are left out of snapshots
(they are rebuilt from the logs, which is cheaper to ship than 1.5 KB per entry).

Ranking (:meth:`VectorStore.fused_scores`) adds three parts: the standardised BM25 score
(weight :data:`LEXICAL_WEIGHT`), the standardised cosine taken about the mean vector
(the rest), and context: an entry gains :data:`CONTEXT_WEIGHT` times the best positive
score among the live entries written up to :data:`CONTEXT_SPAN` places before or after
it (by creation time), no more than :data:`CONTEXT_GAP` apart. Facts an agent notes in
one sitting lean on each other ("John is running for office again." then "He believes
politics can change things."): a question about why John runs matches the first and
needs the second. Measured with all-MiniLM-L6-v2 on LoCoMo, context lifts recall@5
from 0.672 to 0.682 on the development observations and from 0.600 to 0.667 on the
held-out conversations' dialog turns (``benchmarks/bench_recall_quality.py``). Entries
written hours apart, forgotten or expired ones pass nothing on; ``KnowledgeMemory(...,
recall_context=False)`` leaves context out.

NumPy is imported only here, and only when an embedder is used.
"""

from __future__ import annotations

import base64
import logging
import math
import re
from collections.abc import Callable, Sequence
from datetime import timedelta
from itertools import repeat
from typing import TYPE_CHECKING, Any

from fsmemory import _jsonutil
from fsmemory.errors import EmbedderError, require
from fsmemory.fs.base import StorageRoot
from fsmemory.memory._rank import query_terms, top_accepted, words

if TYPE_CHECKING:
    from datetime import datetime

    from fsmemory.memory._index import MemoryIndex
    from fsmemory.memory.entry import KnowledgeEntry

__all__ = [
    "CONTEXT_GAP",
    "CONTEXT_SPAN",
    "CONTEXT_WEIGHT",
    "LEXICAL_WEIGHT",
    "VECTOR_DIR",
    "Embedder",
    "EmbedderError",
    "VectorStore",
    "is_derived",
]

logger = logging.getLogger(__name__)

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]

VECTOR_DIR = "vectors"
_BATCH = 64
# Bytes of the vector file read and decoded at a time: 100k vectors of 384 floats are
# ~200 MB of text, and decoding them in one go held several copies at once.
_LOAD_CHUNK = 8 << 20
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
# Weight of the lexical score in the fusion (both scores are standardised first).
LEXICAL_WEIGHT = 0.3
# The mean of the vectors is shrunk by n / (n + this) toward 0: a few vectors say little
# about the direction all of a model's vectors share.
_CENTRE_PRIOR = 4
# Context (see context_scores): an entry gains this share of the best fused score among
# the live entries written up to CONTEXT_SPAN places before or after it, no more than
# CONTEXT_GAP apart in time.
CONTEXT_WEIGHT = 0.25
CONTEXT_SPAN = 2
CONTEXT_GAP = timedelta(hours=1)


def is_derived(path: str) -> bool:
    """True for files under the vector folder (derived data, never in snapshots)."""
    return path == VECTOR_DIR or path.startswith(VECTOR_DIR + "/")


def embedder_name(embedder: Embedder) -> str:
    """The identity part of an embedder that is not its dimension."""
    name = getattr(embedder, "name", None)
    if not isinstance(name, str) or not name:
        name = getattr(embedder, "__qualname__", None) or type(embedder).__qualname__
    slug = _SLUG.sub("_", str(name)).strip("._") or "embedder"
    return slug[:100]


def _numpy() -> Any:
    return require("numpy", "embed")


class VectorStore:
    """The vectors of one embedder for one memory root, loaded lazily.

    Args:
        root: the memory root.
        embedder: the batched embedding function.
        context: rank with context (see :meth:`fused_scores`).
    """

    def __init__(self, root: StorageRoot, embedder: Embedder, *, context: bool = True) -> None:
        if not callable(embedder):
            raise TypeError("embedder must be callable: texts -> vectors")
        self.root = root
        self.embedder = embedder
        self.context = context
        self.name = embedder_name(embedder)
        dim = getattr(embedder, "dimension", None)
        self.dimension: int | None = dim if isinstance(dim, int) and dim > 0 else None
        self._rows: dict[str, int] = {}
        self._ids: list[str] = []
        self._buffer: Any = None  # (capacity, dimension) float32; rows [0, len(_ids))
        self._loaded_upto = -1
        # What the index looked like when its live rows were last all embedded.
        self._filled_for: tuple[int, ...] = ()
        # Index rows <-> vector rows (see _sync_rows).
        self._map_epoch = -1
        self._vec_of: Any = None
        self._row_of_vec: Any = None
        self._mapped_rows = self._mapped_vecs = 0
        # The mean of the vectors and what each row needs of it (see _centring).
        self._sum: Any = None  # float64 sum of the stored vectors
        self._mu: Any = None
        self._mu_rows = 0
        self._dots: Any = None
        self._spread: Any = None
        # Vector rows in the order their entries were written (see _timeline), and the
        # row maps it was built from.
        self._timeline_key: tuple[int, int, int] = (-1, -1, -1)
        self._timeline_of: tuple[Any, Any, Any] = ((), (), ())
        self.calls = 0

    @property
    def path(self) -> str:
        """The vector file of this embedder (its dimension must be known)."""
        return f"{VECTOR_DIR}/{self.name}-{self.dimension}.jsonl"

    # -- embedding -----------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> Any:
        """Embed ``texts`` in one call; an (n, dimension) float32 array, rows L2-normed.

        Raises:
            EmbedderError: the embedder raised, or returned the wrong number of vectors,
                a vector of another dimension, or a non-finite value.
        """
        np = _numpy()
        self.calls += 1
        try:
            raw = self.embedder(list(texts))
        except Exception as exc:
            raise EmbedderError(f"embedder {self.name!r} failed: {exc}") from exc
        try:
            vectors = [list(map(float, v)) for v in raw]
        except (TypeError, ValueError) as exc:
            raise EmbedderError(
                f"embedder {self.name!r} must return a sequence of float sequences"
            ) from exc
        if len(vectors) != len(texts):
            raise EmbedderError(
                f"embedder {self.name!r} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        dims = {len(v) for v in vectors}
        expected = self.dimension if self.dimension is not None else next(iter(dims), None)
        if dims and (len(dims) != 1 or expected not in dims or not expected):
            raise EmbedderError(
                f"embedder {self.name!r} returned vectors of dimension "
                f"{sorted(dims)}, expected {expected}"
            )
        if any(not math.isfinite(x) for v in vectors for x in v):
            raise EmbedderError(f"embedder {self.name!r} returned a non-finite value")
        if self.dimension is None and expected:
            self.dimension = expected
        arr = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), self.dimension or 0)
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.where(norms > 0, norms, 1.0)

    # -- storage -------------------------------------------------------------------------
    def store(self, ids: Sequence[str], vectors: Any) -> None:
        """Append the vectors of ``ids`` to the file (one append) and keep them."""
        if not ids:
            return
        lines = b"".join(
            _jsonutil.dumps_line(
                {"id": i, "v": base64.b64encode(v.astype("<f4").tobytes()).decode()}
            )
            for i, v in zip(ids, vectors, strict=True)
        )
        try:
            offset = self.root.append(self.path, lines, line_safe=True, unique=True)
        except Exception as exc:  # derived data: another instance embeds them again
            logger.warning("could not store %d vectors (%s)", len(ids), exc)
            self._add(ids, vectors)
            return
        self._add(ids, vectors)
        if offset == self._loaded_upto:
            self._loaded_upto = offset + len(lines)

    def _add(self, ids: Sequence[str], vectors: Any) -> None:
        """Keep the vectors of the ids not held yet, one row per id: the first vector of
        an id wins (two writers that embedded the same entry at once append it twice;
        a second row of an entry would stand next to it in ranking's written order)."""
        known = self._rows
        fresh: list[tuple[str, int]] = []
        taken: set[str] = set()
        for n, i in enumerate(ids):
            if i not in known and i not in taken:
                taken.add(i)
                fresh.append((i, n))
        if not fresh:
            return
        np = _numpy()
        start = len(self._ids)
        end = start + len(fresh)
        if self._buffer is None or end > self._buffer.shape[0]:
            self._reserve(max(end, 2 * start), vectors.shape[1])
        buffer = self._buffer
        added = vectors if len(fresh) == len(ids) else vectors[[n for _, n in fresh]]
        buffer[start:end] = added
        total = added.sum(axis=0, dtype=np.float64)
        self._sum = total if self._sum is None else self._sum + total
        for i, _ in fresh:
            self._rows[i] = len(self._ids)
            self._ids.append(i)

    def _reserve(self, rows: int, width: int) -> None:
        """Make room for at least ``rows`` vectors of ``width`` floats (kept ones are
        copied over)."""
        buffer = self._buffer
        if buffer is not None and buffer.shape[0] >= rows:
            return
        grown = _numpy().empty((max(rows, 64), width), dtype="float32")
        if buffer is not None:
            held = len(self._ids)
            grown[:held] = buffer[:held]
        self._buffer = grown

    def load(self) -> None:
        """Read vectors appended to the file since the last load (by any writer), in
        reads of :data:`_LOAD_CHUNK` bytes: what a load holds beside the vectors is one
        read's worth, not the whole file (100k vectors of 384 floats are ~200 MB of
        text)."""
        if self.dimension is None:
            return
        try:
            info = self.root.stat(self.path)
        except FileNotFoundError:
            info = None
        if info is None:
            self._loaded_upto = 0
            return
        start = max(self._loaded_upto, 0)
        # The shortest line a vector can have: {"id":"","v":"<base64>"} and a newline.
        shortest = 17 + 4 * -(-4 * self.dimension // 3)
        at, carried = start, b""  # carried: the start of a line a read cut
        while at < info.size:
            piece = self.root.read_range(self.path, at, min(at + _LOAD_CHUNK, info.size))
            if not piece:  # the file shrank meanwhile
                break
            *lines, carried = (carried + piece).split(b"\n")
            if at == start:  # room for as many vectors as the bytes can hold, at once
                self._reserve(len(self._ids) + (info.size - start) // shortest, self.dimension)
            at += len(piece)
            self._load_lines(lines)
        self._loaded_upto = at - len(carried)

    def _load_lines(self, lines: list[bytes]) -> None:
        """Keep the vectors of whole lines of the vector file (a corrupt line, or one
        of another dimension, is skipped: its entry is embedded again)."""
        np = _numpy()
        dimension = self.dimension or 0
        ids: list[str] = []
        raws: list[bytes] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                record = _jsonutil.loads(line)
                raw = base64.b64decode(record["v"])
                entry_id = record["id"]
            except Exception:
                logger.warning("skipping a corrupt line in %s", self.path)
                continue
            if len(raw) != 4 * dimension or not isinstance(entry_id, str):
                continue
            ids.append(entry_id)
            raws.append(raw)
        if ids:
            arr = np.frombuffer(b"".join(raws), dtype="<f4").reshape(len(ids), dimension)
            norms = np.linalg.norm(arr, axis=1, keepdims=True)
            self._add(ids, arr / np.where(norms > 0, norms, 1.0))

    # -- index rows <-> vector rows ------------------------------------------------------
    def _sync_rows(self, index: MemoryIndex) -> None:
        """Bring the row maps up to date with ``index`` and the stored vectors.

        ``_vec_of[row]`` is the vector row of index row ``row`` and ``_row_of_vec[v]``
        the (newest) index row of vector row ``v``, -1 where there is none. Both are
        extended by what was added since the last call; they are built again when the
        index numbers its rows afresh (a reset or a cache load: ``row_epoch``)."""
        np = _numpy()
        if self._map_epoch != index.row_epoch:
            self._map_epoch = index.row_epoch
            self._vec_of = np.full(0, -1, dtype=np.intp)
            self._row_of_vec = np.full(0, -1, dtype=np.intp)
            self._mapped_rows = self._mapped_vecs = 0
        n_rows, n_vecs = index.rows, len(self._ids)
        vec_of = self._vec_of = _grown(np, self._vec_of, n_rows)
        row_of_vec = self._row_of_vec = _grown(np, self._row_of_vec, n_vecs)
        if n_rows > self._mapped_rows:
            start = self._mapped_rows
            found = np.fromiter(
                map(self._rows.get, index.row_ids(range(start, n_rows)), repeat(-1)),
                dtype=np.intp,
                count=n_rows - start,
            )
            vec_of[start:n_rows] = found
            new = np.flatnonzero(found >= 0)
            row_of_vec[found[new]] = new + start  # a later row of an id wins
            self._mapped_rows = n_rows
        if n_vecs > self._mapped_vecs:
            for v in range(self._mapped_vecs, n_vecs):
                row = index.row_of(self._ids[v])
                if row is not None:
                    row_of_vec[v] = row
                    vec_of[row] = v
            self._mapped_vecs = n_vecs

    def _embed_missing(self, index: MemoryIndex, now: datetime) -> None:
        """Embed the live rows of ``index`` that have no vector (in batches)."""
        self.load()
        self._sync_rows(index)
        np = _numpy()
        n = index.rows
        todo = np.flatnonzero((self._vec_of[:n] < 0) & index.live_mask(np, now)).tolist()
        if not todo:
            return
        for start in range(0, len(todo), _BATCH):
            rows = todo[start : start + _BATCH]
            vectors = self.embed([index.row_content(r) for r in rows])
            self.store(index.row_ids(rows), vectors)
        self._sync_rows(index)

    # -- ranking -------------------------------------------------------------------------
    def _stacked(self) -> Any:
        """The stored vectors, one row per id of ``_ids`` (a view, grown by doubling)."""
        if self._buffer is None:
            return _numpy().zeros((0, self.dimension or 0), dtype="float32")
        return self._buffer[: len(self._ids)]

    def _centring(self, matrix: Any) -> tuple[Any, Any, Any]:
        """The mean ``mu`` of the stored vectors (shrunk toward 0 for a small memory),
        and per vector row ``v . mu`` and ``|v - mu|`` (see :meth:`dense_scores`).

        Taken again whenever vectors were added (once, on the next search, from a running
        sum): a function of the stored vectors alone, so every process ranks alike."""
        np = _numpy()
        n = matrix.shape[0]
        if self._mu is None or n != self._mu_rows:
            mean = self._sum / (n + _CENTRE_PRIOR)
            mu = self._mu = mean.astype(np.float32)
            self._mu_rows = n
            dots = self._dots = np.einsum("ij,j->i", matrix, mu)
            self._spread = np.sqrt(np.maximum(1.0 - 2.0 * dots + float(mu @ mu), 0.0))
        return self._mu, self._dots, self._spread

    def dense_scores(self, query_vector: Any) -> Any:
        """Cosine of ``query_vector`` with every stored vector, both centred on the mean
        of the stored vectors (float32, one per vector row).

        Sentence embeddings share a common direction (all of them are alike in it), which
        crowds the cosines of unrelated texts together; taking the mean away spreads them
        (measured on the LoCoMo development split with all-MiniLM-L6-v2: dense recall@5
        0.609 raw, 0.637 centred). Computed from one product with the raw vectors:
        ``(v - mu) . (q - mu) = v . q - v . mu - q . mu + mu . mu``, divided by
        ``|v - mu|`` (the query's own norm is the same for every row)."""
        np = _numpy()
        matrix = self._stacked()
        # einsum runs in this thread: a BLAS matrix-vector product may start a thread
        # pool, which costs more than it saves at this size and stalls on a busy machine.
        raw = np.einsum("ij,j->i", matrix, query_vector)
        if not matrix.shape[0]:
            return raw
        mu, dots, spread = self._centring(matrix)
        shift = float(mu @ mu) - float(mu @ query_vector)
        centred = raw - dots + np.float32(shift)
        return np.divide(centred, spread, out=np.zeros_like(centred), where=spread > 1e-6)

    def search(
        self, index: MemoryIndex, query: str, limit: int, category: str | None, now: datetime
    ) -> list[KnowledgeEntry]:
        """Hybrid recall: the index's lexical scores fused with the embedder's
        similarity and the context of each entry (see :meth:`fused_scores`); live
        entries missing a vector are embedded first, in batches."""
        if not words(query):
            return index.most_important(limit, category, now)
        terms = query_terms(query)  # none for stopwords only: matched as typed
        query_vector = self.embed([query])[0]
        seen = (index.row_epoch, index.generation, index.rows, index.live_count())
        if seen != self._filled_for:
            self._embed_missing(index, now)  # adds vectors, never index rows
            self._filled_for = seen
        else:
            self._sync_rows(index)
        fused = self.fused_scores(
            query_vector,
            index.lexical_rows(_numpy(), query, terms),
            self.context_of(index, now) if self.context else None,
        )
        found = self.top_rows(fused, limit, index.row_acceptor(category, now), index.row_priority)
        return [index.row_entry(row) for _, row in found]

    def context_of(self, index: MemoryIndex, now: datetime) -> tuple[Any, Any]:
        """The vector rows of the entries live at ``now``, in the order they were
        written (creation time, then row), and their creation times (microseconds): what
        :func:`context_scores` takes. The row maps must be current (:meth:`_sync_rows`)."""
        np = _numpy()
        order, stamps, rows = self._timeline(index)
        keep = index.live_mask(np, now)[rows]
        return order[keep], stamps[keep]

    def _timeline(self, index: MemoryIndex) -> tuple[Any, Any, Any]:
        """The vector rows that have an index row, in the order their entries were
        written (creation time, then row), with those times and index rows; built
        again when the row maps change."""
        key = (self._map_epoch, self._mapped_rows, self._mapped_vecs)
        if key != self._timeline_key:
            np = _numpy()
            rows = self._row_of_vec[: len(self._ids)]
            held = np.flatnonzero(rows >= 0)
            held_rows = rows[held]
            created = index.created_array(np)[held_rows]
            by_time = np.lexsort((held_rows, created))
            self._timeline_of = (held[by_time], created[by_time], held_rows[by_time])
            self._timeline_key = key
        return self._timeline_of

    def fused_scores(
        self,
        query_vector: Any,
        lexical: Any,
        context: tuple[Any, Any] | None = None,
    ) -> Any:
        """The hybrid score of every vector row: ``0.3 * z(lexical) + 0.7 * z(dense)``,
        plus the context share when ``context`` is given.

        ``lexical`` holds the BM25 score of every index row; ``dense`` is
        :meth:`dense_scores`. Both are taken per stored vector (the row maps of
        :meth:`_sync_rows`) and ``z`` standardises a score over all stored vectors.
        ``context`` is what :meth:`context_of` returns (the live entries' vector rows
        in the order they were written, and when): each row then gains
        :data:`CONTEXT_WEIGHT` times the best positive score of an entry written next
        to it (:func:`context_scores`)."""
        np = _numpy()
        dense = self.dense_scores(query_vector)
        n = dense.shape[0]
        # Lexical scores by vector row (vectors without an index row take the last slot).
        lex = np.append(lexical, 0.0)[self._row_of_vec[:n]]
        fused = LEXICAL_WEIGHT * _standardise(np, lex) + (1 - LEXICAL_WEIGHT) * _standardise(
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
        limit: int,
        accept: Callable[[int], bool],
        priority: Callable[[int], tuple[Any, ...]],
    ) -> list[tuple[float, int]]:
        """The ``limit`` accepted index rows of best score in ``fused`` (one score per
        vector row, :meth:`fused_scores`), equal scores ordered by ``priority``."""
        np = _numpy()
        n = fused.shape[0]
        if not n:
            return []
        rows = self._row_of_vec
        want = min(n, max(limit * 4, 16))
        while True:
            top = np.argpartition(-fused, want - 1)[:want] if want < n else np.arange(n)
            # Only accepted rows reach the tie-break: a vector may outlive its entry
            # (forgotten, or not yet in this index).
            scores = {
                row: float(fused[v])
                for v, row in zip(top.tolist(), rows[top].tolist(), strict=True)
                if row >= 0 and accept(row)
            }
            found = top_accepted(scores, limit, _always, priority)
            if len(found) >= limit or want >= n:
                return found
            want = min(n, want * 4)


def context_scores(
    np: Any,
    fused: Any,
    order: Any,
    stamps: Any,
    span: int = CONTEXT_SPAN,
    gap: timedelta = CONTEXT_GAP,
) -> Any:
    """Per row of ``fused``, the best positive score among the rows written up to
    ``span`` places before or after it in ``order`` and at most ``gap`` apart (0 when
    there is none; rows not in ``order`` get 0 and pass nothing on).

    Args:
        np: the NumPy module.
        fused: a score per vector row.
        order: vector rows in the order their entries were written.
        stamps: the creation time of each row of ``order`` (microseconds), ascending.
        span: how many places before and after count.
        gap: the longest time between two entries that still count.
    """
    gap_us = gap // timedelta(microseconds=1)
    scores = fused[order]
    best = np.zeros_like(scores)  # the floor: a negative score passes nothing on
    for k in range(1, min(span, len(order) - 1) + 1):
        close = stamps[k:] - stamps[:-k] <= gap_us
        np.maximum(best[:-k], np.where(close, scores[k:], 0.0), out=best[:-k])
        np.maximum(best[k:], np.where(close, scores[:-k], 0.0), out=best[k:])
    out = np.zeros_like(fused)
    out[order] = best
    return out


def _grown(np: Any, arr: Any, size: int) -> Any:
    """``arr`` extended with -1 to at least ``size`` items (capacity doubles)."""
    if len(arr) >= size:
        return arr
    out = np.full(max(size, 2 * len(arr), 64), -1, dtype=np.intp)
    out[: len(arr)] = arr
    return out


def _always(_key: str) -> bool:
    return True


def _standardise(np: Any, x: Any) -> Any:
    std = float(x.std())
    if std == 0.0:
        return np.zeros_like(x)
    return (x - float(x.mean())) / std
