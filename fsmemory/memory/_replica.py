"""Keep a memory folder as a replica of a snapshot (restore, save, merge, fold).

The folder (usually local scratch space in a serverless function) is restored from the
backend, then every mutation saves a **delta**: the log lines appended since the last
save, MEMORY.md bullets added or removed, and whole files put or deleted (hand edits).
Deltas are stored under unique names, so concurrent functions never overwrite each
other: a restore folds the base and all deltas together, which is the merge:

* log lines are unioned (a line already present is not added twice), so every entry of
  every writer survives, and forget records apply whatever their order;
* MEMORY.md bullets added are inserted in their category (a fact remembered twice keeps
  two bullets, as in a plain folder); a removal removes one matching bullet;
* other files: the last delta (by time) wins.

**Uploads are proportional to the change; folds are size-tiered.** A save uploads one
delta: what changed since the last save, nothing else. It writes a new base instead (its
own change included; a later fold removes folded objects once they were retired
``RETIRED_GRACE`` seconds ago, see :mod:`fsmemory.snapshot.backends`) only when the
deltas waiting, its own included, would

* number ``compact_after`` (32 by default), or
* add up to more than a quarter of the base's bytes (:data:`FOLD_FRACTION`), and more
  than :data:`FOLD_MIN_BYTES` (64 KiB),

as the levels of an LSM tree are merged once a level outgrows a fraction of the next.
That is the only rule: a restore that found deltas does not make the next save fold (a
serverless invocation would then upload a whole base each time), so the bytes a writer
uploads are its deltas plus, amortised, one base per ``compact_after`` saves or per
growth of a quarter of the base. A restore reads a bounded number of deltas (fewer
than ``compact_after``, fetched together with the base in one round trip). A fold that
loses the compare-and-swap race to another writer's fold saves a delta instead
(nothing is lost) and this instance stops folding until its next restore.

**Derived files: the search index's cache and the vectors travel, verified.**
Snapshots hold the memory's files; what is derived from them (the vector folder, see
:func:`~fsmemory.memory._vectors.is_derived`) is left out of the files, but travels
beside them as derived parts that a restore checks before it uses them.

*Vectors* (:mod:`fsmemory.memory._vectravel`): a save's delta carries, under
``"derived"``, the rows appended to each vector file since the last sync that the
snapshot does not hold yet (one block: the vector's bytes and its id and text hash); a
fold's base carries every row of its base, of the deltas it folds and of the folder,
each ``(id, text hash)`` once, rows of forgotten, expired or edited entries dropped. A
restore into an empty folder installs each vector file from the base's and the
deltas' parts (only blocks whose checksums hold, each row once), so that ``recall``
embeds only the query. A damaged part costs embeddings, never an answer; a snapshot
without parts restores as before, and readers that do not know the key ignore it.

*The index cache*: a base that a fold writes carries the folder's index cache file
(``.fsmemory-cache.index``, compressed, beside the files; see
:mod:`fsmemory.snapshot.archive`), so that a restored memory's first ``recall`` costs
what a local cached open costs instead of parsing every entry. A restore into an empty
folder installs it, proving each of its cursors against the restored bytes (see
:func:`fsmemory.memory._index_cache.rebased`); the index then verifies it as it
verifies any cache file, so a stale, damaged or foreign one changes no answer. Deltas
never carry it (a save uploads what changed), so a base's cache lags by the rows added
since the folder's cache was last written (at most a few hundred: see
:data:`~fsmemory.memory._index_cache.MIN_NEW_ROWS`), which the first ``recall`` parses.

**Nothing in the folder is ever lost.** A restore never deletes or replaces a file this
process did not sync itself:

* the folder is empty: it becomes the snapshot's content;
* the snapshot is empty: the folder becomes the first snapshot (saved as the base);
* both hold data and the folder was not restored by this process: they are merged the
  way concurrent writers are (the folder's log lines and MEMORY.md bullets are added to
  the snapshot's, files only the folder has are saved). When a file exists on both
  sides with different content that cannot be merged (a non-log file, MEMORY.md prose,
  a log that is not UTF-8), the restore raises :class:`~fsmemory.errors.SnapshotError`
  naming those files, and neither the folder nor the snapshot is touched;
* this process restored the folder before (a warm serverless container constructing
  ``KnowledgeMemory`` again): the changes made since its last save are kept and saved,
  and the snapshot is revalidated (a head read and a listing; the base and known deltas
  are not downloaded again). The folder is known by a file unchanged since, or grown
  from the bytes last synced.

**Diffs are proven against the synced bytes.** A save sends only an append when the
file starts with exactly the bytes last synced (MEMORY.md is compared whole; a log's
prefix by its CRC-32); anything else (a same-length fix of an earlier line included) is
sent as bullet changes or as the whole file.

Delta document::

    {"format": "fsmemory-delta", "version": 1, "id": "<unique per save>",
     "append": {"logs/2026-03-13.jsonl": "<lines>"},
     "md_add": [["preferences", "- Dark mode"]], "md_remove": [["context", "Old fact"]],
     "put": {"notes.txt": {"encoding": "utf-8", "content": "..."}}, "delete": ["x.txt"]}

A plain :class:`~fsmemory.snapshot.KnowledgeBackend` (``load_bytes``/``save_bytes``) is
adapted by :class:`_WholeSnapshot`: every save folds (uploads the whole folder) and the
last writer wins, as in the seed.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from fsmemory import _jsonutil
from fsmemory.errors import FsMemoryError, KeyNotFoundError, SnapshotError
from fsmemory.fs import FileInfo, StorageRoot
from fsmemory.fs.base import content_version
from fsmemory.memory import _index_cache
from fsmemory.memory import _vectravel as vt
from fsmemory.memory._delta import DELTA_FORMAT, apply_delta, fold_state, merge_delta
from fsmemory.memory._delta import Folder as _Folder
from fsmemory.memory._delta import is_utf8 as _is_utf8
from fsmemory.memory._delta import make_delta as _delta
from fsmemory.memory._vecfile import HEADER_SIZE, read_header
from fsmemory.memory._vectors import is_derived
from fsmemory.memory.layout import MEMORY_FILE, log_date
from fsmemory.memory.markdown import decode_md, outline
from fsmemory.snapshot import (
    IncrementalBackend,
    KnowledgeBackend,
    SnapshotState,
    encode_file,
    pack_archive,
)
from fsmemory.snapshot.archive import encode_derived, unpack_archive_parts, unpack_derived
from fsmemory.snapshot.backends import DEFAULT_COMPACT_AFTER, check_compact_after

__all__ = ["DELTA_FORMAT", "SnapshotReplica", "apply_delta", "fold_state"]

logger = logging.getLogger(__name__)

#: a fold is also due once the waiting deltas' bytes exceed this fraction of the base's
#: bytes (and :data:`FOLD_MIN_BYTES`)
FOLD_FRACTION = 0.25
#: deltas smaller than this in all never make a fold due by their size
FOLD_MIN_BYTES = 64 * 1024
#: how many restored folders a process remembers for warm revalidation, and how many
#: bytes of snapshot bases it keeps for them (least recently used are forgotten first)
_MEMO_LIMIT = 32
_MEMO_BYTES = 32 * 1024 * 1024
OnCorrupt = Literal["raise", "reset"]


class _WholeSnapshot:
    """Adapts the seed's two-method :class:`~fsmemory.snapshot.KnowledgeBackend` to
    :class:`~fsmemory.snapshot.IncrementalBackend`: the snapshot is only ever a base, so
    every save folds (``compact_after = 1``) and the last writer wins."""

    compact_after = 1

    def __init__(self, backend: KnowledgeBackend) -> None:
        self.backend = backend

    def __repr__(self) -> str:
        return repr(self.backend)

    def load_state(self, known: SnapshotState | None = None) -> SnapshotState:
        """The blob as a base without deltas; its digest is the version (two methods
        allow no conditional read)."""
        blob = self.backend.load_bytes()
        return SnapshotState(blob, version=None if blob is None else content_version(blob))

    def save_delta(self, data: bytes) -> str:
        """Never called: with ``compact_after = 1`` every save folds."""
        raise SnapshotError(f"{self.backend!r} stores whole snapshots only")

    def save_base(
        self, archive: bytes, *, folded: Sequence[str], expected: SnapshotState
    ) -> SnapshotState:
        """``save_bytes(archive)``: the last writer wins."""
        self.backend.save_bytes(archive)
        return SnapshotState(archive, version=content_version(archive))


@dataclass(slots=True)
class _Memo:
    """What a replica knew after its last save, kept per (folder, snapshot) so a warm
    process that opens the same folder again revalidates instead of downloading."""

    state: SnapshotState
    synced: dict[str, FileInfo]
    logs: dict[str, tuple[int, int]]
    md: bytes
    vectors: vt.VectorSync


_MEMOS: OrderedDict[tuple[str, str], _Memo] = OrderedDict()
_MEMOS_LOCK = threading.Lock()


class SnapshotReplica:
    """A root kept as a replica of a snapshot: restored once, saved after each mutation.

    Args:
        root: the working folder (usually local scratch space).
        backend: an :class:`~fsmemory.snapshot.IncrementalBackend` (deltas, merge on
            restore) or a plain :class:`~fsmemory.snapshot.KnowledgeBackend`.
        on_corrupt: ``"raise"`` (default): a corrupt snapshot raises
            :class:`SnapshotError` and nothing is touched; ``"reset"``: the corrupt objects
            are moved aside (backends with ``quarantine()``) and the snapshot starts again
            from the folder.
        compact_after: a save folds once this many deltas would be waiting (default: the
            backend's ``compact_after``, else 32; always 1 for a two-method backend).
        index_cache: carry the folder's search-index cache in the bases this replica
            folds, and install a base's cache when restoring into an empty folder (see
            "Derived files" above); False: never read or write it (as
            ``KnowledgeMemory(index_cache=False)``).

    Raises:
        InvalidInputError: a bad option.
    """

    def __init__(
        self,
        root: StorageRoot,
        backend: KnowledgeBackend | IncrementalBackend,
        *,
        on_corrupt: OnCorrupt = "raise",
        compact_after: int | None = None,
        index_cache: bool = True,
    ) -> None:
        if on_corrupt not in ("raise", "reset"):
            raise ValueError("on_corrupt must be 'raise' or 'reset'")
        self.root = root
        self.backend: IncrementalBackend = (
            backend if isinstance(backend, IncrementalBackend) else _WholeSnapshot(backend)
        )
        self.on_corrupt = on_corrupt
        # two-method backends upload the whole folder on every save: no cache rides along
        self.index_cache = index_cache and not isinstance(self.backend, _WholeSnapshot)
        self.vectors = not isinstance(self.backend, _WholeSnapshot)
        if compact_after is None:
            compact_after = getattr(self.backend, "compact_after", DEFAULT_COMPACT_AFTER)
        self.compact_after = check_compact_after(compact_after)
        if isinstance(self.backend, _WholeSnapshot):
            self.compact_after = 1  # a whole-snapshot backend stores no deltas
        key = getattr(backend, "replica_key", None)
        self._memo_key = (root.url, key) if isinstance(key, str) else None
        # the snapshot as this replica knows it: base, deltas not folded yet (restored
        # and its own), head version
        self._state = SnapshotState(None)
        self._can_fold = True
        self._synced: dict[str, FileInfo] = {}
        # per log: (size, CRC-32 of its content) as last synced, which an append must
        # start with exactly
        self._logs: dict[str, tuple[int, int]] = {}
        # MEMORY.md as last synced (raw bytes; parsed only when it was rewritten)
        self._md: bytes = b""
        self._vec = vt.VectorSync({}, {}, {})
        # the vector files of the last listing (derived: not in the synced files)
        self._vec_listing: dict[str, FileInfo] = {}
        self.bytes_uploaded = 0
        self.saves = 0
        self.folds = 0

    # -- restore -------------------------------------------------------------------------
    def restore(self) -> None:
        """Bring the folder and the snapshot together without losing either side.

        Raises:
            SnapshotError: the snapshot is corrupt (``on_corrupt="raise"``), or the
                folder and the snapshot hold conflicting versions of a file; nothing was
                written in either case.
        """
        memo = None
        if self._memo_key is not None:
            with _MEMOS_LOCK:
                memo = _MEMOS.get(self._memo_key)
        if memo is not None and _recognised(memo, self._list(), self.root):
            self._restore_warm(memo)
        else:
            # Never restored here, or the folder was emptied or replaced since (a handler
            # that cleans its scratch space): its files are not "deleted by hand".
            self._restore_cold()
        self._remember()

    def _load(
        self, known: SnapshotState | None
    ) -> tuple[SnapshotState, dict[str, bytes], dict[str, Any]]:
        """(state, the folded files, the base's derived entries as stored)."""
        try:
            state = self.backend.load_state(known)
            base: dict[str, bytes] = {}
            derived: dict[str, Any] = {}
            if state.base is not None:
                base, derived = unpack_archive_parts(state.base)
            return state, fold_state(state, base), derived
        except SnapshotError:
            if self.on_corrupt == "raise":
                raise
            quarantine = getattr(self.backend, "quarantine", None)
            if quarantine is None:
                raise
            quarantine()
            return self.backend.load_state(), {}, {}

    def _restore_cold(self) -> None:
        for _ in range(10):
            state, remote, derived = self._load(None)
            self._state = state
            listing = self._list()
            local = {path: self.root.read_bytes(path) for path in listing}
            fold = self._remote_vectors(state, derived)
            if not local:
                self._write_restored(remote, derived.get(_index_cache.CACHE_NAME))
                self._install_vectors(fold)
                self._mark_synced(remote)
                return
            if state.base is None and not state.deltas:
                # An empty snapshot: the folder becomes its first base, untouched.
                first = self._derived(local)
                archive = pack_archive(local, first)
                new = self.backend.save_base(archive, folded=(), expected=state)
                if new is None:
                    continue  # another writer created it meanwhile: merge with theirs
                self._state = new
                self._folded_vectors(first)
                self._count(len(new.base or b""), fold=True)
                self._mark_synced(local)
                return
            # the folder's own vectors are saved by the next save (or this fold)
            self._vec = vt.VectorSync({}, {p: fold.keys(p) for p in fold.files}, self._vec.base)
            delta = merge_delta(local, remote)
            merged = _Folder(dict(remote))
            if delta is not None:
                apply_delta(merged, delta)
            if delta is not None:
                self._upload(delta, merged.files)
            self._write_folder(merged.files, deletable=set())
            self._mark_synced(merged.files)
            return
        raise SnapshotError(f"{self.backend!r} keeps changing under the restore")

    def _restore_warm(self, memo: _Memo) -> None:
        self._state = memo.state
        self._vec = memo.vectors.copy()
        self._synced = dict(memo.synced)
        self._logs = dict(memo.logs)
        self._md = memo.md
        listing = self._list()
        diff = self._diff(listing)
        local = diff.delta
        state, remote, derived = self._load(memo.state)
        if state.base is None and not state.deltas and listing:
            # The snapshot is gone (deleted, expired, moved aside): never let that empty
            # the folder. It starts again from the folder, as a cold restore would.
            self._restore_cold()
            return
        if state.version == memo.state.version and sorted(_names(state)) == sorted(
            _names(memo.state)
        ):
            if local is not None:  # changes made after the last save: keep and save them
                vectors, ends, fold = self._vector_changes()
                if vectors:
                    diff = replace(diff, delta={**local, "derived": vectors})
                self._save_delta(diff, listing)
                self._vectors_synced(ends, fold)
            return
        # The snapshot moved on: its content plus the folder's unsaved changes. Files
        # the result lacks were synced unchanged (local changes are all in ``local``).
        merged = _Folder(dict(remote))
        if local is not None:
            apply_delta(merged, local)
        if self.vectors:
            self._vec.base = vt.vector_parts(derived)
        self._state = state
        self._can_fold = True
        if local is not None:
            self._upload(local, merged.files)
        self._write_folder(merged.files, deletable=set(listing))
        self._mark_synced(merged.files)

    def _write_restored(self, files: dict[str, bytes], cache_entry: object) -> None:
        """Write ``files`` into the empty folder, with the index cache the base carried
        (``cache_entry``, as stored; None: none) installed for it.

        A file the cache's cursor parsed a prefix of (proven by the prefix's CRC-32) is
        written as that prefix, its listing entry taken, then the rest appended: the
        cursor takes that entry, so the index reads only what deltas appended (proven
        again by the CRC-32). Every other cursor gets a token no file has (its file is
        parsed afresh)."""
        cache = unpack_derived(cache_entry) if self.index_cache and cache_entry else None
        parsed = _index_cache.prefixes(cache) if cache is not None else None
        if cache is None or parsed is None:
            self._write_folder(files, deletable=set())
            return
        infos: dict[str, FileInfo] = {}
        for path, data in files.items():
            upto, crc = parsed.get(path, (-1, 0))
            if 0 <= upto <= len(data) and zlib.crc32(memoryview(data)[:upto]) == crc:
                self.root.write(path, data[:upto])
                info = self.root.stat(path)
                if info is not None and info.size == upto:
                    infos[path] = info
                if upto < len(data):
                    self.root.append(path, data[upto:])
            else:
                self.root.write(path, data)
        installed = _index_cache.rebased(cache, infos)
        if installed is not None:
            try:
                self.root.write_cache(_index_cache.CACHE_NAME, installed)
            except (OSError, FsMemoryError) as exc:
                logger.info("index cache of %s not installed: %s", self.root, exc)

    def _derived(self, files: dict[str, bytes] | None = None) -> dict[str, bytes] | None:
        """The derived files a base folded now carries: the index cache (see the
        module docstring), when this replica carries it and the folder holds one, and
        the vector parts (with ``files``, the folded content: rows of entries it no
        longer holds alive are dropped)."""
        derived: dict[str, bytes] = {}
        if self.index_cache:
            cache = _index_cache.travelling(self.root)
            if cache is not None:
                derived[_index_cache.CACHE_NAME] = cache
        if self.vectors:
            derived.update(self._vector_base(files))
        return derived or None

    # -- vectors (see the module docstring and fsmemory.memory._vectravel) --------------
    def _remote_vectors(self, state: SnapshotState, derived: dict[str, Any]) -> vt.VectorFold:
        """The vector rows the snapshot ``state`` holds (its base's parts, whose raw
        parts are kept for the next fold, then its deltas')."""
        fold = vt.VectorFold()
        if not self.vectors:
            return fold
        self._vec.base = vt.vector_parts(derived)
        try:
            for path, part in self._vec.base.items():
                fold.add(path, part)
            fold.add_deltas(state.deltas)
        except Exception as exc:  # derived data: what is missing is embedded again
            logger.warning("vectors of the snapshot not read (%s)", exc)
            return vt.VectorFold()
        return fold

    def _install_vectors(self, fold: vt.VectorFold) -> None:
        """Write the vector files of ``fold`` into the (empty) folder
        (:meth:`~fsmemory.memory._vectravel.VectorFold.install`): a fresh header, then
        the blocks of the rows that verified; each reader checks them again."""
        self._vec.synced.clear()
        self._vec.keys = {p: fold.keys(p) for p in fold.files}
        for path in sorted(fold.files):
            try:
                installed = fold.install(self.root, path)
            except Exception as exc:  # derived data: what is missing is embedded again
                logger.warning("vectors of %s not installed (%s)", path, exc)
                continue
            if installed is not None:
                self._vec.synced[path] = installed

    def _vector_changes(self) -> tuple[dict[str, Any], dict[str, tuple[bytes, int]], vt.VectorFold]:
        """The vector parts a delta carries now (path -> derived entry): per vector file
        of the folder, the rows appended since the last sync (the whole file, when it
        was written again since) that the snapshot does not hold; with the files'
        (generation, end) to record once uploaded, and the rows read."""
        fold = vt.VectorFold()
        ends: dict[str, tuple[bytes, int]] = {}
        if not self.vectors:
            return {}, ends, fold
        for path, info in self._vec_listing.items():
            known = self._vec.synced.get(path)
            if known is not None and known[1] == info.size:
                continue
            try:
                data: bytes | None = None
                if known is not None:
                    first, rest = self.root.read_ranges(
                        [(path, 0, HEADER_SIZE), (path, known[1], None)]
                    )
                    header = read_header(first) if first is not None else None
                    if header is not None and header.generation == known[0] and rest is not None:
                        data, offset = bytes(first or b"") + bytes(rest), known[1] - HEADER_SIZE
                if data is None:
                    data, offset = self.root.read_bytes(path), 0
                    header = read_header(data)
                if header is None:
                    continue
                end = fold.add(path, data, known=self._vec.keys.get(path))
            except Exception as exc:  # derived data: what is not sent is embedded again
                logger.warning("vectors of %s not saved (%s)", path, exc)
                continue
            if end >= 0:
                ends[path] = (header.generation, offset + end)
        parts = fold.encode_all()
        return {p: encode_derived(d) for p, d in parts.items()}, ends, fold

    def _folded_vectors(self, derived: dict[str, bytes] | None) -> None:
        """Record the vector parts of a base just written (``derived``) as the base's,
        and their rows as the snapshot's (the folder's rows were all read into it)."""
        if not self.vectors:
            return
        self._vec.base = {p: d for p, d in (derived or {}).items() if vt.is_vector_file(p)}
        fold = vt.VectorFold()
        for path, part in self._vec.base.items():
            fold.add(path, part)
        self._vec.keys = {p: fold.keys(p) for p in fold.files}

    def _vectors_synced(self, ends: dict[str, tuple[bytes, int]], fold: vt.VectorFold) -> None:
        """Record the rows of ``fold`` (read up to ``ends``) as held by the snapshot."""
        self._vec.synced.update(ends)
        for path in fold.files:
            self._vec.keys.setdefault(path, set()).update(fold.keys(path))

    def _vector_base(self, files: dict[str, bytes] | None) -> dict[str, bytes]:
        """The vector parts of a base folded now: the current base's, the waiting
        deltas' and the folder's rows, each once, those of entries ``files`` no longer
        holds alive left out. The parts become the base's, their keys the snapshot's."""
        try:
            fold = vt.VectorFold()
            for path, part in self._vec.base.items():
                fold.add(path, part)
            fold.add_deltas(self._state.deltas)
            for path in sorted(self._vec_listing):
                try:
                    data = self.root.read_bytes(path)
                except KeyNotFoundError:
                    continue
                fold.add(path, data)
            parts = fold.encode_all(vt.live_keys(files) if files is not None else None)
        except Exception as exc:  # derived data: what is missing is embedded again
            logger.warning("vectors not folded into the base (%s)", exc)
            return {}
        return parts

    def _write_folder(self, files: dict[str, bytes], *, deletable: set[str]) -> None:
        """Make the folder hold ``files``; only paths in ``deletable`` may be removed."""
        existing = self._list()
        for path, data in files.items():
            info = existing.get(path)
            if info is not None and info.size == len(data):
                try:
                    if self.root.read_bytes(path) == data:
                        continue
                except KeyNotFoundError:
                    pass
            self.root.write(path, data)
        for path in existing:
            if path not in files and path in deletable:
                self.root.delete(path)

    def _list(self) -> dict[str, FileInfo]:
        """The root's files that snapshots hold: all but derived data (vectors); the
        vector files are noted apart (:attr:`_vec_listing`)."""
        listing: dict[str, FileInfo] = {}
        vectors: dict[str, FileInfo] = {}
        for info in self.root.list("", recursive=True):
            if not is_derived(info.path):
                listing[info.path] = info
            elif vt.is_vector_file(info.path):
                vectors[info.path] = info
        self._vec_listing = vectors
        return listing

    def _mark_synced(self, files: dict[str, bytes]) -> None:
        """Record ``files`` (now on disk) as the synced state."""
        self._synced = self._list()
        self._logs = {
            path: (len(data), zlib.crc32(data))
            for path, data in files.items()
            if log_date(path) is not None
        }
        self._md = files.get(MEMORY_FILE, b"")

    def _remember(self) -> None:
        if self._memo_key is None:
            return
        # (the vector sync is shared, not copied: a warm restore copies it)
        memo = _Memo(self._state, self._synced, dict(self._logs), self._md, self._vec)
        with _MEMOS_LOCK:
            _MEMOS[self._memo_key] = memo
            _MEMOS.move_to_end(self._memo_key)
            held = sum(_memo_bytes(m) for m in _MEMOS.values())
            while len(_MEMOS) > 1 and (len(_MEMOS) > _MEMO_LIMIT or held > _MEMO_BYTES):
                held -= _memo_bytes(_MEMOS.popitem(last=False)[1])

    # -- save ----------------------------------------------------------------------------
    def save(self) -> int:
        """Upload what changed since the last save; returns the bytes uploaded."""
        listing = self._list()
        diff = self._diff(listing)
        vectors, ends, fold = self._vector_changes()
        if vectors:
            delta = {**(diff.delta or _delta(derived=vectors) or {}), "derived": vectors}
            diff = replace(diff, delta=delta)
        if diff.delta is None:
            return 0
        size = self._save_delta(diff, listing)
        self._vectors_synced(ends, fold)
        self._remember()
        return size

    def _save_delta(self, diff: _Diff, listing: dict[str, FileInfo]) -> int:
        """Upload ``diff.delta`` (a diff of the folder against the synced state) and
        record ``listing`` (and the contents the diff read) as synced."""
        assert diff.delta is not None
        synced_md = diff.md if diff.md is not None else self._md

        def content() -> dict[str, bytes]:
            # MEMORY.md as the diff read it (a bullet appended since is the next diff's:
            # in the base already, it would be added twice)
            files = {p: self.root.read_bytes(p) for p in listing if p != MEMORY_FILE}
            if MEMORY_FILE in listing:
                files[MEMORY_FILE] = synced_md
            return files

        size = self._upload(diff.delta, content)
        self._synced = listing
        self._logs.update(diff.logs)
        for path in diff.delta.get("delete", []):
            self._logs.pop(path, None)
        if diff.md is not None:
            self._md = diff.md
        return size

    def _fold_due(self, delta_size: int) -> bool:
        """True when a save of ``delta_size`` bytes should fold (see the module
        docstring: ``compact_after`` deltas, or their bytes past a quarter of the base)."""
        if not self._can_fold:
            return False
        if len(self._state.deltas) + 1 >= self.compact_after:
            return True
        waiting = self._state.delta_bytes + delta_size
        return waiting > max(FOLD_MIN_BYTES, FOLD_FRACTION * len(self._state.base or b""))

    def _upload(
        self, delta: dict[str, Any], files: dict[str, bytes] | Callable[[], dict[str, bytes]]
    ) -> int:
        """Save ``delta``: as one more delta, or as a fold of ``files`` (the folder's
        content with ``delta`` applied) when one is due."""
        data = _jsonutil.dumps(delta)
        if self._fold_due(len(data)):
            content = files() if callable(files) else files
            derived = self._derived(content)
            archive = pack_archive(content, derived)
            folded = [name for name, _ in self._state.deltas]
            new = self.backend.save_base(archive, folded=folded, expected=self._state)
            if new is not None:
                logger.debug("folded %d snapshot deltas into a new base", len(folded))
                self._state = new
                self._folded_vectors(derived)
                return self._count(len(archive), fold=True)
            # Another writer folded first: keep this change as a delta; this instance
            # knows no current head any more, so it leaves folding to the next restore.
            self._can_fold = False
        name = self.backend.save_delta(data)
        self._state = replace(self._state, deltas=[*self._state.deltas, (name, data)])
        return self._count(len(data), fold=False)

    def _count(self, size: int, *, fold: bool) -> int:
        self.saves += 1
        self.folds += fold
        self.bytes_uploaded += size
        return size

    def _md_changes(
        self, old: FileInfo | None
    ) -> tuple[list[list[str]], list[list[str]], bytes, bool]:
        """(bullets added, bullets removed, new content, needs a whole-file put).

        MEMORY.md is read whole and compared with the bytes last synced: only a file
        that starts with exactly those bytes was appended to (a same-length fix of an
        earlier line is a change, whatever else grew)."""
        synced = self._md
        new = self.root.read_bytes(MEMORY_FILE)
        if old is not None and len(new) > len(synced) and new.startswith(synced):
            appended = new[len(synced) :]
            # Appended bullets: parse them in the section the synced file ends in.
            cut = synced.rfind(b"\n## ")
            if cut < 0 and synced.startswith(b"## "):
                cut = -1
            elif cut < 0:
                cut = len(synced)
            context = synced[cut + 1 :].split(b"\n", 1)[0]
            added, prose = outline(decode_md(context + b"\n" + appended))
            if not prose and _is_utf8(appended):
                return [[c, ln] for c, ln in added], [], new, False
        before_bullets, before_prose = outline(decode_md(synced))
        after_bullets, after_prose = outline(decode_md(new))
        now, then = Counter(after_bullets), Counter(before_bullets)
        adds = [[c, ln] for (c, ln), n in (now - then).items() for _ in range(n)]
        removes = [[c, ln] for (c, ln), n in (then - now).items() for _ in range(n)]
        # bullets are compared as readers see them: added ones must be valid UTF-8 to
        # travel as text, or the whole file is saved (its bytes exactly)
        if before_prose != after_prose or (adds and not _is_utf8(new)):
            return [], [], new, True
        return adds, removes, new, False

    def _diff(self, listing: dict[str, FileInfo]) -> _Diff:
        """The delta from the synced state to ``listing``, with MEMORY.md's new bytes
        and the logs' new (size, CRC-32)."""
        append: dict[str, str] = {}
        put: dict[str, dict[str, str]] = {}
        md_add: list[list[str]] = []
        md_remove: list[list[str]] = []
        md_text: bytes | None = None
        logs: dict[str, tuple[int, int]] = {}
        for path, info in listing.items():
            old = self._synced.get(path)
            if old is not None and old.token == info.token and old.size == info.size:
                continue
            if path == MEMORY_FILE:
                adds, removes, md_text, whole = self._md_changes(old)
                if whole:
                    put[path] = encode_file(md_text)
                md_add += adds
                md_remove += removes
                continue
            data = self.root.read_bytes(path)
            if log_date(path) is not None:
                appended, crc = self._appended(path, old, data)
                logs[path] = (len(data), crc)
                if appended == b"":
                    continue  # the same bytes (only the file's token moved)
                if appended is not None:
                    try:
                        append[path] = appended.decode("utf-8")
                        continue
                    except UnicodeDecodeError:
                        pass
            put[path] = encode_file(data)
        delete = sorted(p for p in self._synced if p not in listing)
        if MEMORY_FILE in delete:
            md_text = b""
        delta = _delta(append=append, put=put, md_add=md_add, md_remove=md_remove, delete=delete)
        return _Diff(delta, md_text, logs)

    def _appended(self, path: str, old: FileInfo | None, data: bytes) -> tuple[bytes | None, int]:
        """What was appended to a log (its content now: ``data``) since the last save,
        None when it is not a pure append; and the CRC-32 of ``data``. The synced
        prefix is proven by its CRC-32 (as the index proves its parsed prefix), so an
        edit of an earlier line (same length or not) is a change, never missed."""
        synced = self._logs.get(path) if old is not None else None
        if old is None:
            return data, zlib.crc32(data)
        if synced is None or len(data) < synced[0]:
            return None, zlib.crc32(data)
        size, crc = synced
        view = memoryview(data)
        prefix = zlib.crc32(view[:size])
        whole = zlib.crc32(view[size:], prefix)
        return (data[size:] if prefix == crc else None), whole


@dataclass(frozen=True, slots=True)
class _Diff:
    """A folder's changes since the last save: the delta to upload (None: nothing
    changed), MEMORY.md's bytes as read (None: not read), and ``(size, CRC-32)`` of the
    logs read."""

    delta: dict[str, Any] | None
    md: bytes | None
    logs: dict[str, tuple[int, int]]


def _recognised(memo: _Memo, listing: dict[str, FileInfo], root: StorageRoot) -> bool:
    """True when ``listing`` still holds a file as ``memo`` synced it: unchanged (the
    same token and size), or grown from the synced bytes (MEMORY.md starting with them,
    a log whose synced prefix has the same CRC-32), so a folder whose every file was
    edited by hand is still known as the one this process synced."""
    if any(
        (old := memo.synced.get(path)) is not None
        and (old.token, old.size) == (info.token, info.size)
        for path, info in listing.items()
    ):
        return True
    for path, info in listing.items():
        if path == MEMORY_FILE and memo.md and info.size >= len(memo.md):
            try:
                if root.read_range(path, 0, len(memo.md)) == memo.md:
                    return True
            except KeyNotFoundError:
                continue
        synced = memo.logs.get(path)
        if synced is not None and 0 < synced[0] <= info.size:
            try:
                if zlib.crc32(root.read_range(path, 0, synced[0])) == synced[1]:
                    return True
            except KeyNotFoundError:
                continue
    return False


def _memo_bytes(memo: _Memo) -> int:
    held = len(memo.state.base or b"") + memo.state.delta_bytes + len(memo.md)
    return held + sum(len(part) for part in memo.vectors.base.values())


def _names(state: SnapshotState) -> list[str]:
    return [name for name, _ in state.deltas]
