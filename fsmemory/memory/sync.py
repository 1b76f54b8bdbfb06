"""Keep a memory folder in sync with a snapshot backend (restore, save, merge, compact).

The folder (usually local scratch space in a serverless function) is restored from the
backend once, then every mutation saves a **delta**: the log lines appended since the
last save, MEMORY.md bullets added or removed, and whole files put or deleted (hand
edits). Deltas are stored under unique names, so concurrent functions never overwrite
each other: a restore folds the base and all deltas together, which is the merge:

* log lines are unioned (a line already present is not added twice), so every entry of
  every writer survives, and forget records apply whatever their order;
* MEMORY.md bullets are unioned by category; a removal removes one matching bullet;
* other files: the last delta (by time) wins.

When deltas pile up (more than ``compact_after`` or more bytes than a quarter of the
base), the restorer writes a new base and moves the head with compare-and-swap.

Delta document::

    {"format": "fsmemory-delta", "version": 1,
     "append": {"logs/2026-03-13.jsonl": "<lines>"},
     "md_add": [["preferences", "- Dark mode"]], "md_remove": [["context", "Old fact"]],
     "put": {"notes.txt": {"encoding": "utf-8", "content": "..."}}, "delete": ["x.txt"]}

With a plain :class:`~fsmemory.snapshot.KnowledgeBackend` (``load_bytes``/``save_bytes``)
every save uploads the whole folder and the last writer wins, as in the seed.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Literal

from fsmemory import _jsonutil
from fsmemory.errors import KeyNotFoundError, SnapshotError
from fsmemory.fs import FileInfo, StorageRoot
from fsmemory.memory.index import MEMORY_FILE, log_date
from fsmemory.memory.markdown import fact_text_of, insert_fact, outline, remove_fact
from fsmemory.snapshot import (
    IncrementalBackend,
    KnowledgeBackend,
    SnapshotState,
    decode_file,
    encode_file,
    pack_archive,
    unpack_archive,
)
from fsmemory.snapshot.archive import check_archive_path

__all__ = ["DELTA_FORMAT", "SnapshotSync", "apply_delta", "fold_state"]

logger = logging.getLogger(__name__)

DELTA_FORMAT = "fsmemory-delta"
_TAIL = 64
OnCorrupt = Literal["raise", "reset"]


def _parse_delta(name: str, data: bytes) -> dict[str, Any]:
    try:
        delta = _jsonutil.loads(data)
    except ValueError as exc:
        raise SnapshotError(f"snapshot delta {name} is not valid JSON") from exc
    if not isinstance(delta, dict) or delta.get("format") != DELTA_FORMAT:
        raise SnapshotError(f"snapshot delta {name} is not an fsmemory delta")
    for key in ("append", "put"):
        section = delta.get(key, {})
        if not isinstance(section, dict):
            raise SnapshotError(f"snapshot delta {name}: {key!r} is not an object")
        for path in section:
            check_archive_path(path)
    for path in delta.get("delete", []):
        check_archive_path(path)
    for key in ("md_add", "md_remove"):
        for item in delta.get(key, []):
            if not (
                isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)
            ):
                raise SnapshotError(f"snapshot delta {name}: malformed {key} item")
            if "\n" in item[0] or "\n" in item[1]:
                raise SnapshotError(f"snapshot delta {name}: multi-line {key} item")
    for path, text in delta.get("append", {}).items():
        if not isinstance(text, str):
            raise SnapshotError(f"snapshot delta {name}: append to {path!r} is not text")
    return delta


class _Folder:
    """Files being folded: bytes per path, plus the set of lines of appended logs."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.lines: dict[str, set[bytes]] = {}

    def append_lines(self, path: str, chunk: bytes) -> None:
        existing = self.files.get(path, b"")
        seen = self.lines.get(path)
        if seen is None:
            seen = self.lines[path] = set(existing.split(b"\n"))
        new = [ln for ln in chunk.split(b"\n") if ln.strip() and ln not in seen]
        if not new:
            return
        seen.update(new)
        if existing and not existing.endswith(b"\n"):
            existing += b"\n"
        self.files[path] = existing + b"\n".join(new) + b"\n"

    def put(self, path: str, data: bytes) -> None:
        self.files[path] = data
        self.lines.pop(path, None)

    def delete(self, path: str) -> None:
        self.files.pop(path, None)
        self.lines.pop(path, None)


def apply_delta(folder: _Folder, delta: dict[str, Any]) -> None:
    """Apply one parsed delta to the files being folded (see the module docstring)."""
    for path in delta.get("delete", []):
        folder.delete(path)
    for path, spec in delta.get("put", {}).items():
        folder.put(path, decode_file(path, spec))
    for path, text in delta.get("append", {}).items():
        folder.append_lines(path, text.encode("utf-8"))
    md_add = delta.get("md_add", [])
    md_remove = delta.get("md_remove", [])
    if md_add or md_remove:
        text = folder.files.get(MEMORY_FILE, b"").decode("utf-8", errors="replace")
        present = Counter(outline(text)[0])
        for category, line in md_add:
            if present[(category, line)]:
                continue
            text = insert_fact(text, category, line)
            present[(category, line)] += 1
        for category, line in md_remove:
            new = remove_fact(text, category, fact_text_of(line)) if text else None
            if new is not None:
                text = new
        folder.put(MEMORY_FILE, text.encode())


def fold_state(state: SnapshotState) -> dict[str, bytes]:
    """Base + deltas -> the folder's files. Validates everything; writes nothing.

    Raises:
        SnapshotError: the base or a delta is corrupt or unsafe.
    """
    folder = _Folder(unpack_archive(state.base) if state.base is not None else {})
    for name, data in state.deltas:
        apply_delta(folder, _parse_delta(name, data))
    return folder.files


class SnapshotSync:
    """Restore a root from a backend and save what changed after each mutation.

    Args:
        root: the working folder (usually local scratch space).
        backend: an :class:`~fsmemory.snapshot.IncrementalBackend` (deltas, merge on
            restore) or a plain :class:`~fsmemory.snapshot.KnowledgeBackend`.
        on_corrupt: ``"raise"`` (default): a corrupt snapshot raises
            :class:`SnapshotError` and nothing is touched; ``"reset"``: the corrupt objects
            are moved aside (backends with ``quarantine()``) and the memory starts empty.
        compact_after: fold into a new base once this many deltas are waiting.
    """

    def __init__(
        self,
        root: StorageRoot,
        backend: KnowledgeBackend | IncrementalBackend,
        *,
        on_corrupt: OnCorrupt = "raise",
        compact_after: int = 64,
    ) -> None:
        if on_corrupt not in ("raise", "reset"):
            raise ValueError("on_corrupt must be 'raise' or 'reset'")
        self.root = root
        self.backend = backend
        self.on_corrupt = on_corrupt
        self.compact_after = compact_after
        self.incremental = isinstance(backend, IncrementalBackend)
        self._synced: dict[str, FileInfo] = {}
        self._tails: dict[str, bytes] = {}
        # MEMORY.md as last synced (raw bytes; parsed only when it was rewritten)
        self._md: bytes = b""
        self.bytes_uploaded = 0
        self.saves = 0

    # -- restore -------------------------------------------------------------------------
    def restore(self) -> None:
        """Make the folder equal to the snapshot (validated in full before any write)."""
        state: SnapshotState | None = None
        try:
            if self.incremental:
                state = self._load_state()
                files = fold_state(state)
            else:
                blob = self.backend.load_bytes()  # type: ignore[union-attr]
                files = unpack_archive(blob) if blob is not None else {}
        except SnapshotError:
            if self.on_corrupt == "raise":
                raise
            quarantine = getattr(self.backend, "quarantine", None)
            if quarantine is None:
                raise
            quarantine()
            state, files = SnapshotState(None), {}
        self._write_folder(files)
        self._mark_synced(files)
        if state is not None and self._should_compact(state):
            self._compact(files, state)

    def _load_state(self) -> SnapshotState:
        backend: IncrementalBackend = self.backend  # type: ignore[assignment]
        return backend.load_state()

    def _should_compact(self, state: SnapshotState) -> bool:
        if not state.deltas:
            return False
        base = len(state.base or b"")
        return len(state.deltas) >= self.compact_after or state.delta_bytes > max(
            64 * 1024, base // 4
        )

    def _compact(self, files: dict[str, bytes], state: SnapshotState) -> None:
        backend: IncrementalBackend = self.backend  # type: ignore[assignment]
        folded = [name for name, _ in state.deltas]
        if backend.save_base(pack_archive(files), folded=folded, expected=state):
            logger.debug("compacted %d snapshot deltas", len(folded))

    def _write_folder(self, files: dict[str, bytes]) -> None:
        existing = {i.path: i for i in self.root.list("", recursive=True)}
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
            if path not in files:
                self.root.delete(path)

    def _mark_synced(self, files: dict[str, bytes]) -> None:
        """Record ``files`` (now on disk) as the synced state."""
        self._synced = {i.path: i for i in self.root.list("", recursive=True)}
        self._tails = {
            path: data[-_TAIL:] for path, data in files.items() if log_date(path) is not None
        }
        self._md = files.get(MEMORY_FILE, b"")

    # -- save ----------------------------------------------------------------------------
    def save(self) -> int:
        """Upload what changed since the last save; returns the bytes uploaded."""
        if not self.incremental:
            files = {
                i.path: self.root.read_bytes(i.path) for i in self.root.list("", recursive=True)
            }
            data = pack_archive(files)
            self.backend.save_bytes(data)  # type: ignore[union-attr]
            self._mark_synced(files)
            return self._count(len(data))
        listing = {i.path: i for i in self.root.list("", recursive=True)}
        delta, synced_md = self._diff(listing)
        if delta is None:
            return 0
        data = _jsonutil.dumps(delta)
        backend: IncrementalBackend = self.backend  # type: ignore[assignment]
        backend.save_delta(data)
        self._synced = listing
        for path in list(delta.get("append", {})) + list(delta.get("put", {})):
            info = listing[path]
            if log_date(path) is not None and info.size:
                self._tails[path] = self.root.read_range(path, max(0, info.size - _TAIL))
        for path in delta.get("delete", []):
            self._tails.pop(path, None)
        if synced_md is not None:
            self._md = synced_md
        return self._count(len(data))

    def _count(self, size: int) -> int:
        self.saves += 1
        self.bytes_uploaded += size
        return size

    def _md_changes(
        self, old: FileInfo | None, info: FileInfo
    ) -> tuple[list[list[str]], list[list[str]], bytes, bool]:
        """(bullets added, bullets removed, new content, needs a whole-file put)."""
        synced = self._md
        appended = None
        if old is not None and info.size > old.size and not self.root.rewritten(old, info):
            tail = synced[-_TAIL:]
            data = self.root.read_range(MEMORY_FILE, len(synced) - len(tail))
            if data[: len(tail)] == tail:
                appended = data[len(tail) :]
        if appended is not None:
            # Appended bullets: parse them in the section the synced file ends in.
            cut = synced.rfind(b"\n## ")
            if cut < 0 and synced.startswith(b"## "):
                cut = -1
            elif cut < 0:
                cut = len(synced)
            context = synced[cut + 1 :].split(b"\n", 1)[0]
            added, prose = outline((context + b"\n" + appended).decode("utf-8", "replace"))
            if not prose:
                return [[c, ln] for c, ln in added], [], synced + appended, False
        new = self.root.read_bytes(MEMORY_FILE)
        before_bullets, before_prose = outline(synced.decode("utf-8", "replace"))
        after_bullets, after_prose = outline(new.decode("utf-8", "replace"))
        if before_prose != after_prose:
            return [], [], new, True
        now, then = Counter(after_bullets), Counter(before_bullets)
        adds = [[c, ln] for (c, ln), n in (now - then).items() for _ in range(n)]
        removes = [[c, ln] for (c, ln), n in (then - now).items() for _ in range(n)]
        return adds, removes, new, False

    def _diff(self, listing: dict[str, FileInfo]) -> tuple[dict[str, Any] | None, bytes | None]:
        append: dict[str, str] = {}
        put: dict[str, dict[str, str]] = {}
        md_add: list[list[str]] = []
        md_remove: list[list[str]] = []
        md_text: bytes | None = None
        for path, info in listing.items():
            old = self._synced.get(path)
            if old is not None and old.token == info.token and old.size == info.size:
                continue
            if path == MEMORY_FILE:
                adds, removes, md_text, whole = self._md_changes(old, info)
                if whole:
                    put[path] = encode_file(md_text)
                md_add += adds
                md_remove += removes
                continue
            tail_bytes = self._appended(path, old, info)
            if tail_bytes is not None:
                try:
                    append[path] = tail_bytes.decode("utf-8")
                    continue
                except UnicodeDecodeError:
                    pass
            put[path] = encode_file(self.root.read_bytes(path))
        delete = sorted(p for p in self._synced if p not in listing)
        if MEMORY_FILE in delete:
            md_text = b""
        if not (append or put or md_add or md_remove or delete):
            return None, md_text
        delta: dict[str, Any] = {"format": DELTA_FORMAT, "version": 1}
        for key, value in (
            ("append", append),
            ("put", put),
            ("md_add", md_add),
            ("md_remove", md_remove),
            ("delete", delete),
        ):
            if value:
                delta[key] = value
        return delta, md_text

    def _appended(self, path: str, old: FileInfo | None, info: FileInfo) -> bytes | None:
        """Bytes appended to a log since the last save (None: not a pure append)."""
        if log_date(path) is None:
            return None
        if old is None:
            return self.root.read_bytes(path)
        if info.size <= old.size or self.root.rewritten(old, info):
            return None
        tail = self._tails.get(path, b"")
        data = self.root.read_range(path, old.size - len(tail))
        if data[: len(tail)] != tail:
            return None
        return data[len(tail) :]
