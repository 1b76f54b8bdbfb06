"""Embedding vectors for hybrid recall, stored beside the memory as derived data.

An embedder is any callable ``fn(texts: Sequence[str]) -> Sequence[Sequence[float]]``
that embeds a batch at once (OpenAI embeddings, fastembed, sentence-transformers...).
Its identity is its ``name`` attribute (else its qualified name) and its dimension (its
``dimension`` attribute, else the length of the first vector it returns). Vectors of one
identity live in one append-only file::

    <root>/vectors/<name>-<dimension>.jsonl

one line per vector, ``{"id": ..., "h": <text_hash of the text>, "v": <base64 of
little-endian float32>}``. A vector serves an entry only when both its id and the hash
of its text match (a log line a person fixed is embedded again); a line without ``h``
(written by an older version) cannot be checked and is skipped, its entry embedded again
once. Two models never share a file; a file may be deleted at any time: entries without
a vector are embedded again, in batches, by the next ``recall()``. The vectors are never
needed to read the memory, never appear in MEMORY.md or the logs, and are left out of
snapshots (they are rebuilt from the logs, which is cheaper to ship than 1.5 KB per
entry).

Ranking (:meth:`VectorStore.fused_scores`) is taken over the live entries only (not
forgotten, hidden or expired): the mean vector and the standardisation see nothing else
the file holds, so a memory ranks the same with its vector file, without it, or after a
snapshot restore. It adds three parts: the standardised BM25 score (weight
:data:`LEXICAL_WEIGHT`), the standardised cosine taken about the mean vector (the rest),
and context: an entry gains :data:`CONTEXT_WEIGHT` times the best positive
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
import hashlib
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
    "text_hash",
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
# The mean is summed in fixed point (see _fixed_sum): units of 2**-40, summed
# _FIXED_CHUNK vectors at a time in float64 (whole numbers below 2**52: exact).
_FIXED_ONE = float(1 << 40)
_FIXED_CHUNK = 4096
# A stored vector whose norm is this close to 1 is kept as it is (see _load_lines).
_UNIT_TOLERANCE = 1e-5
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
        # Vector rows: the entry id and the hash of the text each vector was made from.
        self._rows: dict[tuple[str, str], int] = {}
        self._ids: list[str] = []
        self._hashes: list[str] = []
        self._buffer: Any = None  # (capacity, dimension) float32; rows [0, len(_ids))
        self._loaded_upto = -1
        # What the index looked like when its live rows were last all embedded: the
        # file is read again when it changes (or when a live row lacks a vector).
        self._filled_for: tuple[int, ...] = ()
        # Index rows -> vector rows (see _sync_rows).
        self._map_epoch = -1
        self._vec_of: Any = None
        self._mapped_rows = self._mapped_vecs = 0
        # The mean of the live entries' vectors and what each vector row needs of it
        # (see _centring): which vector rows the sum holds, the sum itself (exact, in
        # fixed point), and the vector rows it was last asked for.
        self._counted: Any = None
        self._fixed_sum: Any = None
        self._n_counted = 0
        self._centred_on: Any = None
        self._mu: Any = None
        self._dots: Any = None  # v . mu of every vector row
        self._spread: Any = None  # |v - mu| of every vector row
        # For the vector rows last centred on: v . mu, |v - mu| and |v - mu| > 0, and
        # the dots they were taken from.
        self._live_dots: tuple[Any, Any, tuple[Any, Any, Any]] = (None, None, (0, 0, 0))
        # The live rows last found (see live_rows): (row epoch, rows, vector rows).
        self._live: tuple[int, Any, Any] = (-1, None, None)
        # What context_of last returned, and for which live rows and timeline.
        self._context_for: tuple[Any, Any] = (None, None)
        self._context: tuple[Any, Any] = ((), ())
        # Index rows in the order their entries were written (see _timeline), and the
        # state of the index it was built from.
        self._timeline_key: tuple[int, int] = (-1, -1)
        self._timeline_of: tuple[Any, Any] = ((), ())
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
    def store(self, ids: Sequence[str], vectors: Any, texts: Sequence[str]) -> None:
        """Append the vectors of ``ids``, made from ``texts``, to the file (one append)
        and keep them. Each line names its entry and the hash of the text
        (:func:`text_hash`): a vector serves an entry only while its text is the same."""
        if not ids:
            return
        hashes = [text_hash(t) for t in texts]
        lines = b"".join(
            _jsonutil.dumps_line(
                {"id": i, "h": h, "v": base64.b64encode(v.astype("<f4").tobytes()).decode()}
            )
            for i, h, v in zip(ids, hashes, vectors, strict=True)
        )
        try:
            offset = self.root.append(self.path, lines, line_safe=True, unique=True)
        except Exception as exc:  # derived data: another instance embeds them again
            logger.warning("could not store %d vectors (%s)", len(ids), exc)
            self._add(ids, hashes, vectors)
            return
        self._add(ids, hashes, vectors)
        if offset == self._loaded_upto:
            self._loaded_upto = offset + len(lines)

    def _add(self, ids: Sequence[str], hashes: Sequence[str], vectors: Any) -> None:
        """Keep the vectors not held yet, one row per (id, text hash): the first vector
        of a pair wins (two writers that embedded the same entry at once append it
        twice; a second row of an entry would stand next to it in ranking's written
        order). An entry whose text was changed by hand gets a row of its own."""
        known = self._rows
        fresh: list[tuple[tuple[str, str], int]] = []
        taken: set[tuple[str, str]] = set()
        for n, key in enumerate(zip(ids, hashes, strict=True)):
            if key not in known and key not in taken:
                taken.add(key)
                fresh.append((key, n))
        if not fresh:
            return
        start = len(self._ids)
        end = start + len(fresh)
        if self._buffer is None or end > self._buffer.shape[0]:
            self._reserve(max(end, 2 * start), vectors.shape[1])
        added = vectors if len(fresh) == len(ids) else vectors[[n for _, n in fresh]]
        self._buffer[start:end] = added
        for key, _ in fresh:
            self._rows[key] = len(self._ids)
            self._ids.append(key[0])
            self._hashes.append(key[1])

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
        # The shortest line a vector can have: {"id":"","h":"","v":"<base64>"} and a
        # newline.
        shortest = 24 + 4 * -(-4 * self.dimension // 3)
        at, carried = start, b""  # carried: the start of a line a read cut
        unverified = 0
        while at < info.size:
            piece = self.root.read_range(self.path, at, min(at + _LOAD_CHUNK, info.size))
            if not piece:  # the file shrank meanwhile
                break
            *lines, carried = (carried + piece).split(b"\n")
            if at == start:  # room for as many vectors as the bytes can hold, at once
                self._reserve(len(self._ids) + (info.size - start) // shortest, self.dimension)
            at += len(piece)
            unverified += self._load_lines(lines)
        self._loaded_upto = at - len(carried)
        if unverified:
            logger.info(
                "%d vectors in %s name no text hash (an older format): their entries "
                "are embedded again",
                unverified,
                self.path,
            )

    def _load_lines(self, lines: list[bytes]) -> int:
        """Keep the vectors of whole lines of the vector file (a corrupt line, or one
        of another dimension, is skipped: its entry is embedded again). A line without
        the hash of its text (written by an older version) cannot be checked against
        its entry: it is skipped too; the number of those is returned.

        A vector that is already of unit length is kept as stored, bit for bit (a
        vector read back ranks exactly as the one embedded); others are normalised."""
        np = _numpy()
        dimension = self.dimension or 0
        ids: list[str] = []
        hashes: list[str] = []
        raws: list[bytes] = []
        unverified = 0
        for line in lines:
            if not line.strip():
                continue
            try:
                record = _jsonutil.loads(line)
                raw = base64.b64decode(record["v"])
                entry_id = record["id"]
                digest = record.get("h")
            except Exception:
                logger.warning("skipping a corrupt line in %s", self.path)
                continue
            if len(raw) != 4 * dimension or not isinstance(entry_id, str):
                continue
            if not isinstance(digest, str):
                unverified += 1
                continue
            ids.append(entry_id)
            hashes.append(digest)
            raws.append(raw)
        if ids:
            arr = np.frombuffer(b"".join(raws), dtype="<f4").reshape(len(ids), dimension)
            norms = np.linalg.norm(arr, axis=1, keepdims=True)
            unit = (np.abs(norms - 1.0) <= _UNIT_TOLERANCE) | (norms == 0)
            self._add(ids, hashes, arr / np.where(unit, 1.0, norms).astype(np.float32))
        return unverified

    # -- index rows -> vector rows -------------------------------------------------------
    def _sync_rows(self, index: MemoryIndex) -> None:
        """Bring ``_vec_of`` up to date with ``index`` and the stored vectors.

        ``_vec_of[row]`` is the vector row of index row ``row``: the first stored vector
        of the row's entry id *and* the hash of the row's text, -1 where there is none
        (a vector of the same id made from another text, before a person fixed the log
        line, never serves). Extended by what was added since the last call; built
        again when the index numbers its rows afresh (a reset or a cache load:
        ``row_epoch``)."""
        np = _numpy()
        if self._map_epoch != index.row_epoch:
            self._map_epoch = index.row_epoch
            self._vec_of = np.full(0, -1, dtype=np.intp)
            self._mapped_rows = self._mapped_vecs = 0
        n_rows, n_vecs = index.rows, len(self._ids)
        vec_of = self._vec_of = _grown(np, self._vec_of, n_rows)
        mapped = self._mapped_rows
        if mapped and n_vecs > self._mapped_vecs:
            # Vectors stored since the last call, for rows mapped before (ours, or
            # another writer's read by load).
            ids, hashes = self._ids, self._hashes
            for v in range(self._mapped_vecs, n_vecs):
                row = index.row_of(ids[v])
                if (
                    row is not None
                    and row < mapped
                    and vec_of[row] < 0
                    and text_hash(index.row_content(row)) == hashes[v]
                ):
                    vec_of[row] = v
        self._mapped_vecs = n_vecs
        if n_rows > mapped:
            new = range(mapped, n_rows)
            digests = map(text_hash, map(index.row_content, new))
            keys = zip(index.row_ids(new), digests, strict=True)
            vec_of[mapped:n_rows] = np.fromiter(
                map(self._rows.get, keys, repeat(-1)), dtype=np.intp, count=n_rows - mapped
            )
            self._mapped_rows = n_rows

    def live_rows(self, index: MemoryIndex, now: datetime) -> tuple[Any, Any]:
        """The index rows live at ``now`` (ascending) and their vector rows: what every
        statistic of ranking is taken over. Live rows without a vector are embedded
        first, in batches (after reading the vectors other writers stored).

        While the live rows stay the same, the same two arrays are returned (what is
        derived from them is kept until they change); never change them."""
        np = _numpy()
        seen = (index.row_epoch, index.generation, index.rows, index.live_count())
        loaded = seen != self._filled_for
        if loaded:
            self.load()
        self._sync_rows(index)
        n = index.rows
        live = index.live_mask(np, now)
        served = live & (self._vec_of[:n] >= 0)
        if np.count_nonzero(served) != np.count_nonzero(live):
            if not loaded:
                self.load()
                self._sync_rows(index)
            todo = np.flatnonzero(live & (self._vec_of[:n] < 0)).tolist()
            for start in range(0, len(todo), _BATCH):
                batch = todo[start : start + _BATCH]
                texts = [index.row_content(r) for r in batch]
                self.store(index.row_ids(batch), self.embed(texts), texts)
            self._sync_rows(index)
            served = live & (self._vec_of[:n] >= 0)
        self._filled_for = seen
        rows = np.flatnonzero(served)
        held = self._live
        # Within one row epoch a row's vector never changes once it has one: the same
        # rows have the same vectors.
        if held[0] == self._map_epoch and np.array_equal(held[1], rows):
            return held[1], held[2]
        self._live = (self._map_epoch, rows, self._vec_of[rows])
        return self._live[1], self._live[2]

    # -- ranking -------------------------------------------------------------------------
    def _stacked(self) -> Any:
        """The stored vectors, one row per id of ``_ids`` (a view, grown by doubling)."""
        if self._buffer is None:
            return _numpy().zeros((0, self.dimension or 0), dtype="float32")
        return self._buffer[: len(self._ids)]

    def _centring(self, matrix: Any, vecs: Any) -> tuple[Any, Any, Any, Any]:
        """The mean ``mu`` of the vector rows ``vecs`` (the live entries', shrunk toward
        0 for a small memory), and for each of ``vecs``: ``v . mu``, ``|v - mu|``, and
        whether that is not 0 (see :meth:`dense_scores`).

        A function of the live entries' vectors alone, whatever else the file holds
        (forgotten and expired entries, texts fixed since): every process, with the
        vector file or without it, ranks alike. The sum is kept in fixed point
        (:func:`_fixed_sum`), exact whatever the order vectors come and go in, and
        follows the live set by what joined and left it; ``v . mu`` is taken again (one
        product) when the mean changed."""
        np = _numpy()
        n = matrix.shape[0]
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
                self._fixed_sum = np.zeros(matrix.shape[1], dtype=np.int64)
            if joined.size or left.size:
                self._fixed_sum += _fixed_sum(np, matrix, joined)
                self._fixed_sum -= _fixed_sum(np, matrix, left)
                self._mu = None
            self._counted = want
            self._n_counted = len(vecs)
        self._centred_on = vecs
        if self._mu is None or len(self._dots) != n:
            if self._mu is None:
                total = self._fixed_sum.astype(np.float64) / _FIXED_ONE
                self._mu = (total / (self._n_counted + _CENTRE_PRIOR)).astype(np.float32)
            mu = self._mu
            dots = self._dots = np.einsum("ij,j->i", matrix, mu)
            self._spread = np.sqrt(np.maximum(1.0 - 2.0 * dots + float(mu @ mu), 0.0))
        held = self._live_dots
        if held[0] is not vecs or held[1] is not self._dots:
            spread = self._spread[vecs]
            self._live_dots = (vecs, self._dots, (self._dots[vecs], spread, spread > 1e-6))
        dots, spread, spread_ok = self._live_dots[2]
        return self._mu, dots, spread, spread_ok

    def dense_scores(self, query_vector: Any, vecs: Any = None) -> Any:
        """Cosine of ``query_vector`` with the vector rows ``vecs`` (every stored vector
        when None), both centred on the mean of those rows (float32, one per item of
        ``vecs``).

        Sentence embeddings share a common direction (all of them are alike in it), which
        crowds the cosines of unrelated texts together; taking the mean away spreads them
        (measured on the LoCoMo development split with all-MiniLM-L6-v2: dense recall@5
        0.609 raw, 0.637 centred). Computed from one product with the raw vectors:
        ``(v - mu) . (q - mu) = v . q - v . mu - q . mu + mu . mu``, divided by
        ``|v - mu|`` (the query's own norm is the same for every row)."""
        np = _numpy()
        matrix = self._stacked()
        if vecs is None:
            vecs = np.arange(matrix.shape[0])
        # einsum runs in this thread: a BLAS matrix-vector product may start a thread
        # pool, which costs more than it saves at this size and stalls on a busy machine.
        raw = np.einsum("ij,j->i", matrix, query_vector)[vecs]
        if not len(vecs):
            return raw
        mu, dots, spread, spread_ok = self._centring(matrix, vecs)
        shift = float(mu @ mu) - float(mu @ query_vector)
        centred = raw - dots + np.float32(shift)
        return np.divide(centred, spread, out=np.zeros_like(centred), where=spread_ok)

    def search(
        self, index: MemoryIndex, query: str, limit: int, category: str | None, now: datetime
    ) -> list[KnowledgeEntry]:
        """Hybrid recall: the index's lexical scores fused with the embedder's
        similarity and the context of each entry (see :meth:`fused_scores`), over the
        live entries; those missing a vector are embedded first, in batches."""
        if not words(query):
            return index.most_important(limit, category, now)
        terms = query_terms(query)  # none for stopwords only: matched as typed
        query_vector = self.embed([query])[0]
        live = self.live_rows(index, now)
        fused = self.fused_scores(
            query_vector,
            index.lexical_rows(_numpy(), query, terms),
            live,
            self.context_of(index, live[0]) if self.context else None,
        )
        found = self.top_rows(
            fused, live[0], limit, index.row_acceptor(category, now), index.row_priority
        )
        return [index.row_entry(row) for _, row in found]

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
            found = top_accepted(scores, limit, _always, priority)
            if len(found) >= limit or len(top) >= n:
                return found
            want = min(n, want * 4)


def text_hash(text: str) -> str:
    """The hash a vector is keyed by beside its entry id: 8 bytes of BLAKE2b of the
    UTF-8 text, in hex."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _fixed_sum(np: Any, matrix: Any, rows: Any) -> Any:
    """The sum of ``matrix[rows]`` in units of ``1 / _FIXED_ONE`` (int64), exact: each
    value is rounded to a whole number of units first, so the sum is the same in any
    order and after any additions and subtractions (unit vectors lose nothing a
    float32 mean would keep). Taken :data:`_FIXED_CHUNK` rows at a time: a chunk's
    float64 sum of whole numbers below 2**40 is exact."""
    total = np.zeros(matrix.shape[1], dtype=np.int64)
    scale = np.float32(_FIXED_ONE)
    for start in range(0, len(rows), _FIXED_CHUNK):
        part = matrix[rows[start : start + _FIXED_CHUNK]]
        part *= scale
        np.rint(part, out=part)
        total += part.sum(axis=0, dtype=np.float64).astype(np.int64)
    return total


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
    if not x.size:
        return x
    std = float(x.std())
    if std == 0.0:
        return np.zeros_like(x)
    return (x - float(x.mean())) / std
