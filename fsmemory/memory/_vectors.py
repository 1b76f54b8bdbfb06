"""Embedding vectors for hybrid recall, stored beside the memory as derived data.

An embedder is any callable ``fn(texts: Sequence[str]) -> Sequence[Sequence[float]]``
that embeds a batch at once (OpenAI embeddings, fastembed, sentence-transformers...).
Its identity is its ``name`` attribute (else its qualified name) and its dimension (its
``dimension`` attribute, else the length of the first vector it returns). Vectors of one
identity live in one binary file, ``<root>/vectors/<name>-<dimension>.i8v``
(:mod:`fsmemory.memory._vecfile` has the layout): a header naming the format version,
the embedder and the dimension, then appended blocks of rows, each row an entry id, the
hash of the text it was made from and the vector as int8 codes with a power-of-two
scale (a quarter of float32, without changing a LoCoMo ranking), each block with
checksums (CRC32 of its head, XXH3 of its body). A vector serves an entry only when
both its id and the hash of its text match (a log line a person fixed is embedded
again). On a local folder the file is
memory-mapped (a pass over it gives the pages it has read back as it goes: a few MB of
the file count in resident memory, not its size); elsewhere it is read in one request,
and what was appended since in one more. A block that does not verify (a flipped
byte, a block torn by a killed writer) is never served, and a file whose header is
damaged or names another embedder or dimension is not read at all: the entries
concerned are embedded again and the file is written again whole (only if nobody
appended meanwhile). Two models never share a file;
a file may be deleted at any time: entries without a vector are embedded again, in
batches of ``embed_batch_size`` texts, by the next ``recall()``. The JSONL file older
versions wrote (``<name>-<dimension>.jsonl``) is converted once, when the binary file is
created; so is the float16 file of the first binary format (``<name>-<dimension>.f16v``).
Both are left in place, for earlier versions that may still run: a recall may be what
creates the binary file, and a read never deletes. The vectors are never needed to read
the memory, never appear in MEMORY.md or the logs, and are left out of a snapshot's
files: they travel beside them as verified derived parts, a save's delta carrying the
blocks appended since the last sync (see :mod:`fsmemory.memory._vectravel`).

Vectors are kept as stored rows in memory too (a vector just embedded is rounded as the
file rounds it), so a memory ranks exactly the same from its file, without it, or after
a restore; products widen a few hundred rows to float32 at a time.

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

import contextlib
import math
import operator
import os
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fsmemory._log import get_logger
from fsmemory._speedups import blake2b
from fsmemory.errors import EmbedderError, require
from fsmemory.fs.base import StorageRoot
from fsmemory.memory._rank import query_terms, words
from fsmemory.memory._settings import (  # (defined there, still exported here)
    DEFAULT_EMBED_BATCH,
    DEFAULT_VECTOR_CACHE_BYTES,
)
from fsmemory.memory._vecfile import Rows, VectorFile, row_bytes
from fsmemory.memory._vecmath import quantize
from fsmemory.memory._vecrank import (
    CONTEXT_GAP,
    CONTEXT_SPAN,
    CONTEXT_WEIGHT,
    context_scores,
    grown,
)
from fsmemory.memory._vecscore import LEXICAL_WEIGHT, VectorScoring
from fsmemory.memory.validation import check_non_negative_int, check_positive_int

if TYPE_CHECKING:
    from datetime import datetime

    from fsmemory.memory._index import MemoryIndex
    from fsmemory.memory.entry import KnowledgeEntry

__all__ = [
    "CONTEXT_GAP",
    "CONTEXT_SPAN",
    "CONTEXT_WEIGHT",
    "DEFAULT_EMBED_BATCH",
    "LEXICAL_WEIGHT",
    "MAX_DIMENSION",
    "VECTOR_DIR",
    "VECTOR_SUFFIX",
    "Embedder",
    "EmbedderError",
    "VectorStore",
    "auto_cache_bytes",
    "context_scores",
    "is_derived",
    "memory_limit",
    "text_hash",
]

logger = get_logger(__name__)

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]

VECTOR_DIR = "vectors"
# The vector file's suffix (int8 rows: see fsmemory.memory._vecfile).
VECTOR_SUFFIX = ".i8v"
#: The largest dimension stored (a row's sum of squared codes must fit its 32 bits;
#: the largest embedding models give 4,096).
MAX_DIMENSION = 65536
# A block of the file with at least this many rows is used where it lies (mapped or
# read); smaller ones are copied into one buffer (each piece costs every product a step).
_VIEW_ROWS = 256
# Index rows whose ids and texts are read at once when they are matched to vectors.
_MAP_ROWS = 8192
# Up to this many keys, which are held is found by scanning the hashes (a remember's
# vector); more are looked up in the hashes sorted once.
_SCAN_KEYS = 16
# Text hashes in memory: the 8 bytes of each as one unsigned integer (native order, so
# equal bytes are equal numbers; never stored as numbers).
_DIGEST = "=u8"
# The name of the index rows' text hashes among the values the index cache carries.
TEXT_HASHES = "text_hash"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


# Where a cgroup states the memory its processes may use (v2, then v1).
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_limit() -> int | None:
    """The memory (bytes) this process may use, as far as the system says: the smaller
    of the physical memory (a function's configured memory on AWS Lambda) and the limit
    of a cgroup (a container's); None when neither is known."""
    known: list[int] = []
    with contextlib.suppress(AttributeError, ValueError, OSError):
        known.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    for path in _CGROUP_LIMITS:
        try:
            with open(path, "rb") as f:
                text = f.read(64).strip()
        except OSError:
            continue
        if text.isdigit():
            known.append(int(text))
        break  # "max": no limit
    known = [k for k in known if k > 0]
    return min(known) if known else None


def auto_cache_bytes() -> int:
    """``vector_cache_bytes`` when none is given: a quarter of :func:`memory_limit`, at
    most :data:`~fsmemory.memory._settings.DEFAULT_VECTOR_CACHE_BYTES` (all of that when
    the limit is unknown), so that a small function keeps no copy it has no room for."""
    limit = memory_limit()
    if limit is None:
        return DEFAULT_VECTOR_CACHE_BYTES
    return min(DEFAULT_VECTOR_CACHE_BYTES, limit // 4)


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


class VectorStore(VectorScoring):
    """The vectors of one embedder for one memory root, loaded lazily.

    Args:
        root: the memory root.
        embedder: the batched embedding function.
        context: rank with context (see :meth:`fused_scores`).
        batch_size: how many texts one embedder call is given.
        cache_bytes: the most bytes a float32 copy of the vectors, kept between recalls
            from the second on, may take (0: none; every recall widens the stored
            rows a few hundred at a time); None: :func:`auto_cache_bytes`, found when
            the copy is first wanted (the second recall).

    Raises:
        InvalidInputError: ``cache_bytes`` is not None or an int >= 0 (the check and
            message of ``KnowledgeMemory(vector_cache_bytes)``, for a direct caller).
    """

    def __init__(
        self,
        root: StorageRoot,
        embedder: Embedder,
        *,
        context: bool = True,
        batch_size: int = DEFAULT_EMBED_BATCH,
        cache_bytes: int | None = None,
    ) -> None:
        if not callable(embedder):
            raise TypeError("embedder must be callable: texts -> vectors")
        check_positive_int("embed_batch_size", batch_size)
        if cache_bytes is not None:
            check_non_negative_int("vector_cache_bytes", cache_bytes)
        self.root = root
        self.embedder = embedder
        self.context = context
        self.batch_size = batch_size
        self.name = embedder_name(embedder)
        dim = getattr(embedder, "dimension", None)
        self.dimension: int | None = dim if isinstance(dim, int) and dim > 0 else None
        # Vector rows: the entry id and the hash of the text each vector was made from
        # (8 bytes, as a uint64; the array has room for more rows). Each (id, hash)
        # pair is held once.
        self._ids: list[str] = []
        self._digests: Any = None
        # The vector rows ordered by their text hashes (see _sorted), for a row count.
        self._by_digest: tuple[int, Any, Any] = (-1, None, None)
        # The vectors (stored rows, see _vecmath.quantize), vector row order: pieces used
        # where they lie (views of the mapped or read file), then rows copied into _tail
        # from _tail_start on.
        self._pieces: list[tuple[int, Any]] = []  # (first vector row, array)
        self._piece_sums: dict[int, Any] = {}  # first vector row -> sum the file gave
        self._tail: Any = None  # (capacity, row_bytes(dimension)) int8
        self._tail_start = 0
        self._file: VectorFile | None = None
        # What the index looked like when its live rows were last all embedded: the
        # file is read again when it changes (or when a live row lacks a vector).
        self._filled_for: tuple[int, ...] = ()
        # Index rows -> vector rows (see _sync_rows), the text hash of every index row
        # (uint64, the first _hashed_rows), and the vector row after the last one
        # matched in order.
        self._map_epoch = -1
        self._vec_of: Any = None
        self._mapped_rows = self._mapped_vecs = 0
        self._row_digests: Any = None
        self._hashed_rows = 0
        self._next_vec = 0
        # The live rows last found (see live_rows): (row epoch, rows, vector rows).
        self._live: tuple[int, Any, Any] = (-1, None, None)
        self._init_scoring(cache_bytes)
        self.calls = 0
        if self.dimension is not None:  # the file is read with the root's first listing
            root.fetch_with_listing(self.path)

    def _default_cache_bytes(self) -> int:
        return auto_cache_bytes()

    @property
    def path(self) -> str:
        """The vector file of this embedder (its dimension must be known)."""
        return f"{VECTOR_DIR}/{self.name}-{self.dimension}{VECTOR_SUFFIX}"

    @property
    def legacy_path(self) -> str:
        """The JSONL vector file older versions wrote (converted once)."""
        return f"{VECTOR_DIR}/{self.name}-{self.dimension}.jsonl"

    @property
    def float16_path(self) -> str:
        """The float16 vector file of the first binary format (converted once)."""
        return f"{VECTOR_DIR}/{self.name}-{self.dimension}.f16v"

    def _vector_file(self) -> VectorFile | None:
        if self._file is None and self.dimension is not None:
            self._file = VectorFile(
                self.root,
                self.path,
                self.legacy_path,
                self.name,
                self.dimension,
                float16_path=self.float16_path,
            )
        return self._file

    # -- embedding -----------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> Any:
        """Embed ``texts`` in one call; an (n, dimension) float32 array, rows L2-normed.

        Raises:
            EmbedderError: the embedder raised, or returned the wrong number of vectors,
                a vector of another dimension or of more than :data:`MAX_DIMENSION`,
                or a non-finite value.
        """
        np = _numpy()
        self.calls += 1
        try:
            raw = self.embedder(list(texts))
        except Exception as exc:
            raise EmbedderError(f"embedder {self.name!r} failed: {exc}") from exc
        arr = _well_formed(np, raw, len(texts), self.dimension)
        if arr is None:
            arr = self._checked(np, raw, len(texts))
        if arr.shape[1] > MAX_DIMENSION:
            raise EmbedderError(
                f"embedder {self.name!r} returned vectors of dimension {arr.shape[1]}: "
                f"at most {MAX_DIMENSION} are stored"
            )
        if self.dimension is None:
            self.dimension = int(arr.shape[1])
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.where(norms > 0, norms, 1.0)

    def _checked(self, np: Any, raw: Any, count: int) -> Any:
        """The vectors ``raw`` an embedder returned for ``count`` texts as a float32
        array, each value checked (what :func:`_well_formed` does not take).

        Raises:
            EmbedderError: as :meth:`embed` says.
        """
        try:
            vectors = [list(map(float, v)) for v in raw]
        except (TypeError, ValueError) as exc:
            raise EmbedderError(
                f"embedder {self.name!r} must return a sequence of float sequences"
            ) from exc
        if len(vectors) != count:
            raise EmbedderError(
                f"embedder {self.name!r} returned {len(vectors)} vectors for {count} texts"
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
        return np.asarray(vectors, dtype=np.float32).reshape(len(vectors), self.dimension or 0)

    # -- storage -------------------------------------------------------------------------
    def store(self, ids: Sequence[str], vectors: Any, texts: Sequence[str]) -> None:
        """Append the vectors of ``ids``, made from ``texts``, to the file (one block,
        one append) and keep them; on a file this process has not read yet they are
        kept by the load that reads it whole, in the file's order. Each row names its
        entry and the hash of the text (:func:`text_hash`): a vector serves an entry
        only while its text is the same. Vectors are rounded to stored rows first (see
        :func:`~fsmemory.memory._vecmath.quantize`), in memory as in the file."""
        if not ids:
            return
        hashes = [text_hash(t) for t in texts]
        np = _numpy()
        half = quantize(np, vectors)
        digests = np.frombuffer(bytes.fromhex("".join(hashes)), _DIGEST)
        file = self._vector_file()
        if file is not None:
            unread = file.end < 0
            try:
                converted = file.append(ids, hashes, half)
            except Exception as exc:  # derived data: another instance embeds them again
                logger.warning("could not store %d vectors (%s)", len(ids), exc)
            else:
                if converted is not None:
                    self._take([converted])
                if unread and file.end < 0:
                    # A file this process has not read yet (a restored memory's first
                    # remember): the next load reads it whole, these rows in their
                    # place after the others. Held now, they would come first and every
                    # later match of the index's rows with the vector rows would take a
                    # join instead of a compare.
                    return
        self._add(ids, digests, half)

    def _take(self, found: Sequence[Rows]) -> None:
        """Keep the rows read from the file: a large block whose rows are all new is
        used where it lies (no copy), other rows are copied (room made once; the small
        blocks between two large ones are looked up together)."""
        np = _numpy()
        small = sum(len(rows.ids) for rows in found if len(rows.ids) < _VIEW_ROWS)
        if small and self.dimension:
            self._room(small, row_bytes(self.dimension))
        waiting: list[tuple[list[str], Any, Any]] = []
        for rows in found:
            digests = np.frombuffer(rows.digests, _DIGEST)
            if len(rows.ids) < _VIEW_ROWS:
                waiting.append((rows.ids, digests, rows.vectors))
                continue
            self._add_all(waiting)
            if _distinct(np, rows.ids, digests) and not self._known(rows.ids, digests).any():
                start = len(self._ids)
                self._seal()
                self._pieces.append((start, rows.vectors))
                if rows.sums is not None:
                    self._piece_sums[start] = rows.sums
                self._keep_keys(rows.ids, digests)
                self._tail_start = len(self._ids)
            else:
                self._add(rows.ids, digests, rows.vectors)
        self._add_all(waiting)

    def _add_all(self, waiting: list[tuple[list[str], Any, Any]]) -> None:
        """:meth:`_add` the ``(ids, digests, vectors)`` of ``waiting`` in one step, in
        order, and empty it."""
        if len(waiting) > 1:
            np = _numpy()
            ids = [key for part in waiting for key in part[0]]
            self._add(
                ids,
                np.concatenate([p[1] for p in waiting]),
                np.concatenate([p[2] for p in waiting]),
            )
        elif waiting:
            self._add(*waiting[0])
        waiting.clear()

    def _keep_keys(self, ids: list[str], digests: Any) -> None:
        """Add the keys of new vector rows (their vectors are added by the caller)."""
        np = _numpy()
        n = len(self._ids)
        held = self._digests
        if held is None or len(held) < n + len(ids):
            room = np.empty(max(n + len(ids), 2 * n, 64), dtype=_DIGEST)
            if held is not None:
                room[:n] = held[:n]
            self._digests = held = room
        held[n : n + len(ids)] = digests
        self._ids += ids

    def hash_of(self, vector_row: int) -> str:
        """The text hash (hex, as :func:`text_hash` gives it) of a vector row."""
        if not 0 <= vector_row < len(self._ids):
            raise IndexError(vector_row)
        digest: bytes = self._digests[vector_row : vector_row + 1].tobytes()
        return digest.hex()

    def _known(self, ids: Sequence[str], digests: Any) -> Any:
        """Which of the keys ``(ids[i], digests[i])`` a vector row holds (a bool
        array)."""
        np = _numpy()
        n = len(self._ids)
        if not n or not len(ids):
            return np.zeros(len(ids), dtype=np.bool_)
        if len(ids) > _SCAN_KEYS:
            return self._find(ids, digests) >= 0
        held, held_ids = self._digests[:n], self._ids
        return np.array(
            [
                any(held_ids[v] == key for v in np.flatnonzero(held == digest).tolist())
                for key, digest in zip(ids, digests, strict=True)
            ],
            dtype=np.bool_,
        )

    def _sorted(self) -> tuple[Any, Any]:
        """The vector rows in the order of their text hashes (stable), and those
        hashes in that order; kept while no row is added."""
        n = len(self._ids)
        if self._by_digest[0] != n:
            np = _numpy()
            order = np.argsort(self._digests[:n], kind="stable")
            self._by_digest = (n, order, self._digests[:n][order])
        return self._by_digest[1], self._by_digest[2]

    def _find(self, ids: Sequence[str], digests: Any) -> Any:
        """The vector row of each key ``(ids[i], digests[i])``, -1 where there is none
        (intp): a join on the text hash, the ids compared where the hash matches."""
        np = _numpy()
        n = len(self._ids)
        out = np.full(len(ids), -1, dtype=np.intp)
        if not n or not len(ids):
            return out
        order, keys = self._sorted()
        at = np.searchsorted(keys, digests)
        hit = np.flatnonzero(keys[np.minimum(at, n - 1)] == digests)
        if not hit.size:
            return out
        cand = order[at[hit]]
        held_ids = self._ids
        same = np.fromiter(
            map(
                operator.eq,
                map(held_ids.__getitem__, cand.tolist()),
                map(ids.__getitem__, hit.tolist()),
            ),
            dtype=np.bool_,
            count=len(hit),
        )
        out[hit[same]] = cand[same]
        # Texts that several entries share: the vector of this id further along.
        for i in hit[~same].tolist():
            j = int(at[i]) + 1
            while j < n and keys[j] == digests[i]:
                if held_ids[order[j]] == ids[i]:
                    out[i] = order[j]
                    break
                j += 1
        return out

    def _seal(self) -> None:
        """End the copied rows where they are: what is added next comes after them."""
        held = len(self._ids) - self._tail_start
        if held:
            self._pieces.append((self._tail_start, self._tail[:held]))
        self._tail = None
        self._tail_start = len(self._ids)

    def _add(self, ids: Sequence[str], digests: Any, vectors: Any) -> None:
        """Copy in the vectors (stored rows) not held yet, one row per (id, text hash): the
        first vector of a pair wins (two writers that embedded the same entry at once
        append it twice; a second row of an entry would stand next to it in ranking's
        written order). An entry whose text was changed by hand gets a row of its own.
        ``digests`` holds the text hashes as uint64."""
        known = self._known(ids, digests).tolist()
        fresh: list[int] = []
        taken: set[tuple[str, int]] = set()
        for n, key in enumerate(zip(ids, digests.tolist(), strict=True)):
            if not known[n] and key not in taken:
                taken.add(key)
                fresh.append(n)
        if not fresh:
            return
        start = len(self._ids) - self._tail_start
        end = start + len(fresh)
        tail = self._room(len(fresh), vectors.shape[1])
        everything = len(fresh) == len(ids)
        tail[start:end] = vectors if everything else vectors[fresh]
        if everything:
            self._keep_keys(list(ids), digests)
        else:
            self._keep_keys([ids[n] for n in fresh], digests[fresh])

    def _room(self, rows: int, width: int) -> Any:
        """The copied rows' buffer, with room for ``rows`` more (capacity doubles)."""
        held = len(self._ids) - self._tail_start
        tail = self._tail
        if tail is None or held + rows > tail.shape[0]:
            grown = _numpy().empty((max(held + rows, 2 * held, 64), width), dtype="int8")
            if tail is not None:
                grown[:held] = tail[:held]
            self._tail = tail = grown
        return tail

    def _held(self) -> Rows:
        """Every row held (for writing the file again)."""
        np = _numpy()
        parts = [array for _, array in self._parts()]
        width = row_bytes(self.dimension or 0)
        vectors = np.concatenate(parts) if parts else np.zeros((0, width), dtype="int8")
        n = len(self._ids)
        digests = b"" if not n else self._digests[:n].tobytes()
        return Rows(list(self._ids), digests, vectors)

    def _parts(self) -> list[tuple[int, Any]]:
        """The vectors as ``(first vector row, stored rows)`` pieces, in order."""
        held = len(self._ids) - self._tail_start
        if not held:
            return self._pieces
        return [*self._pieces, (self._tail_start, self._tail[:held])]

    def load(self) -> None:
        """Read the vectors appended to the file since the last load (by any writer):
        the whole file at the first load (memory-mapped on a local folder; on a root
        that sends requests at once, the copy read with its first listing; one read
        elsewhere), then what was appended, in one request. A file that cannot be
        served as it is (damaged bytes, a foreign or damaged header, too many blocks)
        is written again whole from the rows held and those that verify."""
        file = self._vector_file()
        if file is None:
            return
        try:
            self._take(file.read_new())
            if file.needs_rewrite is not None:
                logger.warning("%s is written again: %s", self.path, file.needs_rewrite)
                self._take(file.rewrite(self._held()))
        except Exception as exc:  # derived data: what is missing is embedded again
            logger.warning("could not read %s (%s)", self.path, exc)

    # -- index rows -> vector rows -------------------------------------------------------
    def _sync_rows(self, index: MemoryIndex) -> None:
        """Bring ``_vec_of`` up to date with ``index`` and the stored vectors.

        ``_vec_of[row]`` is the vector row of index row ``row``: the stored vector of
        the row's entry id *and* the hash of the row's text, -1 where there is none (a
        vector of the same id made from another text, before a person fixed the log
        line, never serves). Extended by what was added since the last call; built
        again when the index numbers its rows afresh (a reset or a cache load:
        ``row_epoch``).

        Rows are matched a slice at a time: first against the vector rows that follow
        the last ones matched, compared whole (ids and hashes: a file written in the
        index's order matches at once), else by a join on the text hash."""
        np = _numpy()
        if self._map_epoch != index.row_epoch:
            self._map_epoch = index.row_epoch
            self._vec_of = np.full(0, -1, dtype=np.intp)
            self._mapped_rows = self._mapped_vecs = self._hashed_rows = self._next_vec = 0
            self._row_digests = None
        n_rows, n_vecs = index.rows, len(self._ids)
        vec_of = self._vec_of = grown(np, self._vec_of, n_rows)
        mapped, before = self._mapped_rows, self._mapped_vecs
        row_digests = self._text_digests(index, n_rows)
        held = self._digests
        at = self._next_vec
        # Read in bulk, a slice at a time (the strings of every row at once would add
        # tens of MB to the peak resident memory of a large memory's first recall).
        for start in range(mapped, n_rows, _MAP_ROWS):
            end = min(start + _MAP_ROWS, n_rows)
            want = row_digests[start:end]
            count = end - start
            if (
                at + count <= n_vecs
                and np.array_equal(held[at : at + count], want)
                and self._same_ids(index, start, end, at)
            ):
                vec_of[start:end] = np.arange(at, at + count)
                at += count
                continue
            found = vec_of[start:end] = self._find(index.row_id_column(start, end), want)
            if found[-1] >= 0:
                at = int(found[-1]) + 1
        self._next_vec = at
        if mapped and n_vecs > before:
            # Vectors stored since the last call that no new row took: rows mapped
            # before may take them (ours, or another writer's read by load).
            taken = np.zeros(n_vecs - before, dtype=np.bool_)
            new = vec_of[mapped:n_rows]
            taken[new[new >= before] - before] = True
            for v in (np.flatnonzero(~taken) + before).tolist():
                row = index.row_of(self._ids[v])
                if (
                    row is not None
                    and row < mapped
                    and vec_of[row] < 0
                    and row_digests[row] == held[v]
                ):
                    vec_of[row] = v
        self._mapped_vecs = n_vecs
        self._mapped_rows = max(mapped, n_rows)

    def _same_ids(self, index: MemoryIndex, start: int, end: int, at: int) -> bool:
        """True when index rows ``start`` to ``end`` hold the entry ids of the vector
        rows from ``at`` on, in order: compared as bytes where the index holds its ids
        so (ASCII ids, the usual kind), else as strings."""
        mine = self._ids[at : at + end - start]
        packed = index.row_id_bytes(start, end)
        if packed is not None and mine:
            # The ids joined by NUL: where the NULs fall says where each id ends, found
            # by NumPy rather than by a len() per id (unless an id holds a NUL).
            joined = "\0".join(mine)
            if joined.isascii():
                np = _numpy()
                blob, offsets = packed
                raw = joined.encode("ascii")
                cuts = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0)
                if len(cuts) == len(mine) - 1:
                    if raw.replace(b"\0", b"") != blob:
                        return False
                    ends = np.frombuffer(offsets, dtype=np.uintc).astype(np.int64)
                    cuts -= np.arange(len(cuts))  # the length of the ids before each cut
                    return bool(np.array_equal(cuts, ends[1:-1] - ends[0]))
        return mine == index.row_id_column(start, end)

    def _text_digests(self, index: MemoryIndex, n_rows: int) -> Any:
        """The text hash of every index row (uint64, at least ``n_rows``): those the
        index holds (:attr:`MemoryIndex.derived`: computed earlier in this row epoch,
        or loaded with the index cache, which proves them with the texts), the others
        computed now, and given to the index for its cache."""
        np = _numpy()
        done = self._hashed_rows
        if done >= n_rows:
            return self._row_digests
        out = self._row_digests
        if out is None or len(out) < n_rows:
            room = np.zeros(max(n_rows, 2 * done, 64), dtype=_DIGEST)
            if out is not None:
                room[:done] = out[:done]
            self._row_digests = out = room
        stored = index.derived.get(TEXT_HASHES)
        if stored is not None and len(stored) // 8 > done:
            upto = min(len(stored) // 8, n_rows)
            out[done:upto] = np.frombuffer(stored, _DIGEST, count=upto - done, offset=8 * done)
            done = upto
        if done < n_rows:
            for start in range(done, n_rows, _MAP_ROWS):
                end = min(start + _MAP_ROWS, n_rows)
                texts = index.row_columns(start, end)[1]
                out[start:end] = np.frombuffer(b"".join(map(_digest, texts)), _DIGEST)
            index.derived[TEXT_HASHES] = out[:n_rows].tobytes()
        self._hashed_rows = n_rows
        return out

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
            file = self._file
            if not loaded or (file is not None and file.read_ahead):
                # (a copy read ahead with the listing may predate vectors stored since)
                self.load()
                self._sync_rows(index)
            todo = np.flatnonzero(live & (self._vec_of[:n] < 0)).tolist()
            self._embed_missing(index, todo)
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

    def _embed_missing(self, index: MemoryIndex, rows: list[int]) -> None:
        """Embed the texts of index ``rows`` in batches of :attr:`batch_size`, storing
        each batch as it comes back: when the embedder fails or times out, what it
        embedded before stays stored and served.

        Raises:
            EmbedderError: naming how many of the missing vectors were embedded first.
        """
        size = self.batch_size
        done = 0
        for start in range(0, len(rows), size):
            batch = rows[start : start + size]
            texts = [index.row_content(r) for r in batch]
            try:
                vectors = self.embed(texts)
            except EmbedderError as exc:
                self._sync_rows(index)
                raise EmbedderError(
                    f"{exc} (after embedding {done} of {len(rows)} missing vectors, in "
                    f"batches of {size}: those are stored and used; the next recall() "
                    f"embeds the other {len(rows) - done})"
                ) from exc.__cause__
            self.store(index.row_ids(batch), vectors, texts)
            done += len(batch)

    # -- ranking (the arithmetic: VectorScoring) --------------------------------------
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


def text_hash(text: str) -> str:
    """The hash a vector is keyed by beside its entry id: 8 bytes of BLAKE2b of the
    UTF-8 text, in hex."""
    return blake2b()(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _well_formed(np: Any, raw: Any, count: int, dimension: int | None) -> Any:
    """The vectors ``raw`` an embedder returned for ``count`` texts as a float32 array
    when they are a list, tuple or array of ``count`` rows of ``dimension`` finite
    numbers (checked in NumPy, not value by value); else None, and the caller checks
    them one by one (and says what is wrong)."""
    if not isinstance(raw, (list, tuple, np.ndarray)):
        return None
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    if (
        arr.ndim != 2
        or arr.shape[0] != count
        or not arr.shape[1]
        or arr.shape[1] != (dimension or arr.shape[1])
        or not np.isfinite(arr).all()
    ):
        return None
    return arr.astype(np.float32)


def _digest(text: str) -> bytes:
    """The 8 bytes of :func:`text_hash`."""
    return blake2b()(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _distinct(np: Any, ids: Sequence[str], digests: Any) -> bool:
    """True when no key ``(ids[i], digests[i])`` appears twice."""
    ordered = np.sort(digests)
    twice = ordered[1:][ordered[1:] == ordered[:-1]]
    if not twice.size:
        return True
    rows = np.flatnonzero(np.isin(digests, twice)).tolist()
    keys = {(ids[r], int(digests[r])) for r in rows}
    return len(keys) == len(rows)
