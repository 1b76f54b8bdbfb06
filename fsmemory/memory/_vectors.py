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

NumPy is imported only here, and only when an embedder is used.
"""

from __future__ import annotations

import base64
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
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
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
# Weight of the lexical score in the fusion (both scores are standardised first).
LEXICAL_WEIGHT = 0.3


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
    """

    def __init__(self, root: StorageRoot, embedder: Embedder) -> None:
        if not callable(embedder):
            raise TypeError("embedder must be callable: texts -> vectors")
        self.root = root
        self.embedder = embedder
        self.name = embedder_name(embedder)
        dim = getattr(embedder, "dimension", None)
        self.dimension: int | None = dim if isinstance(dim, int) and dim > 0 else None
        self._rows: dict[str, int] = {}
        self._ids: list[str] = []
        self._buffer: Any = None  # (capacity, dimension) float32; rows [0, len(_ids))
        self._loaded_upto = -1
        self._filled_for: tuple[int, int] = (-1, -1)  # index (generation, live count)
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
        fresh = [(i, n) for n, i in enumerate(ids) if i not in self._rows]
        if not fresh:
            return
        np = _numpy()
        start = len(self._ids)
        end = start + len(fresh)
        buffer = self._buffer
        if buffer is None or end > buffer.shape[0]:
            grown = np.empty((max(end, 2 * start, 64), vectors.shape[1]), dtype=np.float32)
            if buffer is not None:
                grown[:start] = buffer[:start]
            self._buffer = buffer = grown
        buffer[start:end] = vectors[[n for _, n in fresh]]
        for i, _ in fresh:
            self._rows[i] = len(self._ids)
            self._ids.append(i)

    def load(self) -> None:
        """Read vectors appended to the file since the last load (by any writer)."""
        np = _numpy()
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
        if info.size <= start:
            return
        data = self.root.read_range(self.path, start, info.size)
        end = data.rfind(b"\n") + 1
        ids: list[str] = []
        rows: list[Any] = []
        for line in data[:end].split(b"\n"):
            if not line.strip():
                continue
            try:
                record = _jsonutil.loads(line)
                vec = np.frombuffer(base64.b64decode(record["v"]), dtype="<f4")
                entry_id = record["id"]
            except Exception:
                logger.warning("skipping a corrupt line in %s", self.path)
                continue
            if vec.shape[0] != self.dimension or not isinstance(entry_id, str):
                continue
            ids.append(entry_id)
            rows.append(vec)
        self._loaded_upto = start + end
        if rows:
            arr = np.vstack(rows).astype(np.float32)
            norms = np.linalg.norm(arr, axis=1, keepdims=True)
            self._add(ids, arr / np.where(norms > 0, norms, 1.0))

    def missing(self, entries: Mapping[str, str]) -> list[str]:
        """Ids of ``entries`` (id -> content) without a vector."""
        rows = self._rows
        return [i for i in entries if i not in rows]

    def fill(self, entries: Mapping[str, str]) -> None:
        """Embed and store the entries (id -> content) that have no vector yet."""
        self.load()
        todo = self.missing(entries)
        for start in range(0, len(todo), _BATCH):
            ids = todo[start : start + _BATCH]
            self.store(ids, self.embed([entries[i] for i in ids]))

    # -- ranking -------------------------------------------------------------------------
    def _stacked(self) -> Any:
        """The stored vectors, one row per id of ``_ids`` (a view, grown by doubling)."""
        if self._buffer is None:
            return _numpy().zeros((0, self.dimension or 0), dtype="float32")
        return self._buffer[: len(self._ids)]

    def search(
        self, index: MemoryIndex, query: str, limit: int, category: str | None, now: datetime
    ) -> list[KnowledgeEntry]:
        """Hybrid recall: the index's lexical scores fused with the embedder's
        similarity (see :meth:`fused_search`); live entries missing a vector are
        embedded first, in batches."""
        if not words(query):
            return index.most_important(limit, category, now)
        terms = query_terms(query)
        if not terms:
            return []
        query_vector = self.embed([query])[0]
        seen = (index.generation, index.live_count())
        if seen != self._filled_for:
            self.fill(index.live_texts(now))
            self._filled_for = seen
        found = self.fused_search(
            query_vector,
            index.lexical_scores(query, terms),
            limit,
            index.acceptor(category, now),
            index.priority,
        )
        return [e for _, k in found if (e := index.find(k)) is not None]

    def fused_search(
        self,
        query_vector: Any,
        lexical: Mapping[str, float],
        limit: int,
        accept: Callable[[str], bool],
        priority: Callable[[str], tuple[Any, ...]],
    ) -> list[tuple[float, str]]:
        """Top ``limit`` accepted ids by ``0.3 * z(lexical) + 0.7 * z(cosine)``, where
        ``z`` standardises a score over all stored entries (an entry without a lexical
        match scores 0 there)."""
        np = _numpy()
        matrix = self._stacked()
        n = matrix.shape[0]
        if not n:
            return []
        # einsum runs in this thread: a BLAS matrix-vector product may start a thread
        # pool, which costs more than it saves at this size and stalls on a busy machine.
        dense = np.einsum("ij,j->i", matrix, query_vector)
        # Lexical scores by row (entries without a vector land in a spare last slot).
        lex = np.zeros(n + 1, dtype=np.float32)
        if lexical:
            count = len(lexical)
            at = np.fromiter(map(self._rows.get, lexical, repeat(n)), dtype=np.intp, count=count)
            lex[at] = np.fromiter(lexical.values(), dtype=np.float32, count=count)
        lex = lex[:n]
        fused = LEXICAL_WEIGHT * _standardise(np, lex) + (1 - LEXICAL_WEIGHT) * _standardise(
            np, dense
        )
        ids = self._ids
        want = min(n, max(limit * 4, 16))
        while True:
            top = np.argpartition(-fused, want - 1)[:want] if want < n else np.arange(n)
            # Only accepted ids reach the tie-break: a vector may outlive its entry
            # (forgotten, or not yet in this index), and ``priority`` knows indexed ids only.
            scores = {k: float(fused[i]) for i in top.tolist() if accept(k := ids[i])}
            found = top_accepted(scores, limit, _always, priority)
            if len(found) >= limit or want >= n:
                return found
            want = min(n, want * 4)


def _always(_key: str) -> bool:
    return True


def _standardise(np: Any, x: Any) -> Any:
    std = float(x.std())
    if std == 0.0:
        return np.zeros_like(x)
    return (x - float(x.mean())) / std
