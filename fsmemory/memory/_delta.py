"""Snapshot deltas of a memory folder, as pure functions on ``{path: bytes}``: the
delta document (see :mod:`fsmemory.memory._replica` for its fields), applying deltas
to a base (:func:`fold_state`, the merge of concurrent writers), and the delta that
adds a folder's content to a snapshot's (:func:`merge_delta`).

:class:`~fsmemory.memory._replica.SnapshotReplica` keeps a folder in sync with a
snapshot by these.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from fsmemory import _jsonutil
from fsmemory.errors import SnapshotError
from fsmemory.memory.layout import MEMORY_FILE, log_date
from fsmemory.memory.markdown import (
    decode_md,
    encode_md,
    escape_line,
    fact_text_of,
    insert_fact,
    outline,
    remove_fact,
)
from fsmemory.snapshot import SnapshotState, decode_file, encode_file, unpack_archive
from fsmemory.snapshot.archive import check_archive_path

__all__ = [
    "DELTA_FORMAT",
    "Folder",
    "apply_delta",
    "fold_state",
    "is_utf8",
    "make_delta",
    "merge_delta",
]

DELTA_FORMAT = "fsmemory-delta"
#: up to this many appended lines are looked up in the log's bytes, not in a line set
_FEW_LINES = 16


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


class Folder:
    """Files being folded: bytes per path, plus the set of lines of appended logs.

    A log that deltas append to grows in place (a ``bytearray``) until :attr:`files` is
    read, so that applying many small deltas to a large log costs each delta its own
    lines, not a copy of the log.
    """

    def __init__(self, files: dict[str, bytes]) -> None:
        self._files = files
        self._grown: dict[str, bytearray] = {}
        self.lines: dict[str, set[bytes]] = {}

    @property
    def files(self) -> dict[str, bytes]:
        """The files as they stand (the logs grown in place made bytes again)."""
        for path, grown in self._grown.items():
            self._files[path] = bytes(grown)
        self._grown.clear()
        return self._files

    def get(self, path: str) -> bytes | bytearray:
        """File ``path`` as it stands (empty when absent)."""
        grown = self._grown.get(path)
        return grown if grown is not None else self._files.get(path, b"")

    def append_lines(self, path: str, chunk: bytes) -> None:
        """Append the lines of ``chunk`` that log ``path`` does not hold yet."""
        existing = self.get(path)
        lines = [ln for ln in chunk.split(b"\n") if ln.strip()]
        seen = self.lines.get(path)
        if seen is None and len(lines) <= _FEW_LINES:
            # A few lines (one save's worth): search the file instead of indexing it.
            new = [ln for ln in lines if not _holds_line(existing, ln)]
        else:
            if seen is None:
                seen = self.lines[path] = set(bytes(existing).split(b"\n"))
            new = [ln for ln in lines if ln not in seen]
            seen.update(new)
        if not new:
            return
        grown = self._grown.get(path)
        if grown is None:
            grown = self._grown[path] = bytearray(existing)
        if grown and not grown.endswith(b"\n"):
            grown += b"\n"
        grown += b"\n".join(new)
        grown += b"\n"

    def put(self, path: str, data: bytes) -> None:
        """Replace file ``path`` with ``data``."""
        self._files[path] = data
        self._grown.pop(path, None)
        self.lines.pop(path, None)

    def delete(self, path: str) -> None:
        """Remove file ``path`` (no-op when absent)."""
        self._files.pop(path, None)
        self._grown.pop(path, None)
        self.lines.pop(path, None)


def _holds_line(data: bytes | bytearray, line: bytes) -> bool:
    """True when ``line`` (no newline in it) is a whole line of ``data``: the same as
    ``b"\\n" + line + b"\\n" in b"\\n" + data + b"\\n"``, without copying ``data``."""
    end_of_data = len(data)
    at = data.find(line)
    while at >= 0:
        end = at + len(line)
        if (at == 0 or data[at - 1] == 10) and (end == end_of_data or data[end] == 10):
            return True
        at = data.find(line, at + 1)
    return False


def apply_delta(folder: Folder, delta: dict[str, Any]) -> None:
    """Apply one parsed delta to the files being folded (see the module docstring).

    Order: deletes, puts, appends, then MEMORY.md bullet additions and removals. Bytes of
    MEMORY.md that are not valid UTF-8 are kept as they are.
    """
    for path in delta.get("delete", []):
        folder.delete(path)
    for path, spec in delta.get("put", {}).items():
        folder.put(path, decode_file(path, spec))
    for path, text in delta.get("append", {}).items():
        folder.append_lines(path, text.encode("utf-8"))
    md_add = delta.get("md_add", [])
    md_remove = delta.get("md_remove", [])
    if md_add or md_remove:
        # Every bullet added is inserted, equal ones included: a fact remembered twice
        # has two bullets, as in a plain folder (a delta is applied once: the head
        # records folded deltas, and a delta stored twice carries one id).
        text = decode_md(bytes(folder.get(MEMORY_FILE)))
        for category, line in md_add:
            text = insert_fact(text, category, line)
        for category, line in md_remove:
            new = remove_fact(text, category, fact_text_of(line)) if text else None
            if new is not None:
                text = new
        folder.put(MEMORY_FILE, encode_md(text))


def fold_state(state: SnapshotState, base: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Base + deltas -> the folder's files. Validates everything; writes nothing.

    Args:
        state: the snapshot read.
        base: ``state.base`` already unpacked (it is then not parsed again).

    Raises:
        SnapshotError: the base or a delta is corrupt or unsafe.
    """
    if base is None:
        base = unpack_archive(state.base) if state.base is not None else {}
    folder = Folder(base)
    applied: set[str] = set()
    for name, data in state.deltas:
        delta = _parse_delta(name, data)
        ident = delta.get("id")
        if isinstance(ident, str):
            if ident in applied:
                continue  # the same save stored twice (a retried push): applied once
            applied.add(ident)
        apply_delta(folder, delta)
    return folder.files


def merge_delta(local: dict[str, bytes], remote: dict[str, bytes]) -> dict[str, Any] | None:
    """The delta that adds a folder's content (``local``) to a snapshot's (``remote``),
    as if the folder were a concurrent writer that started from nothing; None when the
    snapshot already holds all of it.

    A MEMORY.md bullet of an entry that either side's logs record as forgotten is not
    brought back (and is removed from the snapshot's MEMORY.md).

    Raises:
        SnapshotError: a file differs on both sides in a way no merge can keep whole
            (a non-log file, MEMORY.md prose, a log that is not UTF-8).
    """
    append: dict[str, str] = {}
    put: dict[str, dict[str, str]] = {}
    md_add: list[list[str]] = []
    conflicts: list[str] = []
    forgotten = _forgotten_facts(local) | _forgotten_facts(remote)
    for path in sorted(local):
        data, theirs = local[path], remote.get(path)
        if theirs == data:
            continue
        if theirs is None:
            put[path] = encode_file(data)
        elif path == MEMORY_FILE:
            merged = _merge_md(data, theirs, forgotten)
            if isinstance(merged, list):
                md_add += merged
            elif merged is not None:
                put[path] = encode_file(merged)
            else:
                conflicts.append(path)
        elif log_date(path) is not None and is_utf8(data) and is_utf8(theirs):
            append[path] = data.decode("utf-8")
        else:
            conflicts.append(path)
    if conflicts:
        raise SnapshotError(
            "the folder and the snapshot both hold different versions of "
            f"{', '.join(conflicts)}; nothing was changed. Move one side away (or restore "
            "into an empty folder) and merge these files by hand"
        )
    # (a MEMORY.md put whole replaces the snapshot's, forgotten bullets left out)
    md_remove = [] if MEMORY_FILE in put else _forgotten_bullets(remote.get(MEMORY_FILE), forgotten)
    return make_delta(append=append, put=put, md_add=md_add, md_remove=md_remove)


def _merge_md(
    mine: bytes, theirs: bytes, forgotten: set[tuple[str, str]]
) -> list[list[str]] | bytes | None:
    """How the folder's MEMORY.md (``mine``) joins the snapshot's (``theirs``), bullets
    of ``forgotten`` facts left out: the bullets to add to theirs (when their file keeps
    all of the folder's prose), else the folder's file with their bullets added (when it
    keeps all of theirs), else None (a conflict)."""
    mine_bullets, mine_prose = outline(decode_md(mine))
    their_bullets, their_prose = outline(decode_md(theirs))
    if not Counter(mine_prose) - Counter(their_prose) and is_utf8(mine):
        kept = [b for b in mine_bullets if (b[0], fact_text_of(b[1])) not in forgotten]
        extra = Counter(kept) - Counter(their_bullets)
        return [[c, ln] for (c, ln), n in extra.items() for _ in range(n)]
    if not Counter(their_prose) - Counter(mine_prose) and is_utf8(theirs):
        # the folder's file keeps its own bytes and gets their bullets
        text = decode_md(mine)
        for (cat, line), n in (Counter(their_bullets) - Counter(mine_bullets)).items():
            for _ in range(n):
                text = insert_fact(text, cat, line)
        for cat, line in mine_bullets:
            if (cat, fact_text_of(line)) in forgotten:
                text = remove_fact(text, cat, fact_text_of(line)) or text
        return encode_md(text)
    return None


def _forgotten_bullets(md: bytes | None, forgotten: set[tuple[str, str]]) -> list[list[str]]:
    """The bullets of MEMORY.md ``md`` (None: there is none) of ``forgotten`` facts."""
    if not md:
        return []
    return [
        [cat, line]
        for cat, line in outline(decode_md(md))[0]
        if (cat, fact_text_of(line)) in forgotten
    ]


def _forgotten_facts(files: dict[str, bytes]) -> set[tuple[str, str]]:
    """``(category, escaped fact text)`` of the persistent entries the logs in ``files``
    record as forgotten (a ``forget`` record after the entry's own record)."""
    facts: dict[str, tuple[str, str]] = {}
    forgotten: set[str] = set()
    for path in sorted(files):
        if log_date(path) is None:
            continue
        for line in files[path].split(b"\n"):
            if not (
                b'"forget"' in line or b'"persistent": true' in line or b'"persistent":true' in line
            ):
                continue
            try:
                record = _jsonutil.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                continue
            if record.get("op") == "forget":
                forgotten.add(record["id"])
            elif record.get("persistent") is True and isinstance(record.get("content"), str):
                category = record.get("category")
                facts[record["id"]] = (
                    category if isinstance(category, str) else "general",
                    escape_line(record["content"].strip()),
                )
    return {facts[i] for i in forgotten if i in facts}


def is_utf8(data: bytes) -> bool:
    """True when ``data`` is valid UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def make_delta(**sections: Any) -> dict[str, Any] | None:
    """A delta document of the non-empty ``sections`` (None when all are empty)."""
    if not any(sections.values()):
        return None
    delta: dict[str, Any] = {"format": DELTA_FORMAT, "version": 1, "id": uuid.uuid4().hex}
    # "derived" (vector parts, see fsmemory.memory._vectravel): readers that do not know
    # it ignore it, as they ignore any key they do not know
    for key in ("append", "put", "md_add", "md_remove", "delete", "derived"):
        if sections.get(key):
            delta[key] = sections[key]
    return delta
