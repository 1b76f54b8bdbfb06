"""Read only what was appended to a file since it was last read ("tail-checked").

A reader keeps a :class:`FileCursor` per file: the listing entry it last saw, how many
bytes it has consumed and the last :data:`TAIL` bytes before that point. When a new
listing shows the file changed, :func:`read_appended` fetches the bytes from just before
the cursor and checks that the remembered tail is still there: if so the file was only
appended to and the new bytes are returned; if not (truncated, rewritten, replaced by a
file of another history) the caller must read the whole file again. One ranged read per
changed file, on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from fsmemory.fs.base import FileInfo, StorageRoot

__all__ = ["TAIL", "FileCursor", "must_read_whole", "read_appended"]

#: Bytes before the cursor that must be unchanged for an append to be trusted.
TAIL = 64


@dataclass(slots=True)
class FileCursor:
    """How far a reader has consumed one file.

    Attributes:
        info: the listing entry seen when the file was last read.
        parsed_upto: bytes consumed from the start of the file.
        tail: the last (up to :data:`TAIL`) bytes before ``parsed_upto``.
        complete: False when the file was read whole without ending on a line break
            (a hand edit): such a file is read whole again on its next change.
    """

    info: FileInfo
    parsed_upto: int
    tail: bytes
    complete: bool = True

    @classmethod
    def after(cls, info: FileInfo, data: bytes, upto: int, complete: bool = True) -> FileCursor:
        """A cursor at offset ``upto`` of ``data``, the file's content read whole."""
        return cls(info, upto, data[max(0, upto - TAIL) : upto], complete)

    def advance(self, chunk: bytes, info: FileInfo | None = None) -> None:
        """Move past ``chunk``, bytes that follow the cursor directly."""
        self.parsed_upto += len(chunk)
        self.tail = (self.tail + chunk)[-TAIL:]
        if info is not None:
            self.info = info


def must_read_whole(
    root: StorageRoot, cursor: FileCursor | None, info: FileInfo, *, grows_only: bool = True
) -> bool:
    """True when ``info`` (a fresh listing entry) shows a file that cannot be read from
    ``cursor`` on (never read, shrunk or rewritten), judged from the listing alone."""
    return (
        cursor is None
        or not cursor.complete
        or info.size < cursor.parsed_upto
        or root.rewritten(cursor.info, info)
        # An append-only file that shrank, or changed without growing, was rewritten.
        or (grows_only and info.token != cursor.info.token and info.size <= cursor.info.size)
    )


def read_appended(
    root: StorageRoot,
    cursor: FileCursor | None,
    info: FileInfo,
    *,
    grows_only: bool = True,
    whole_lines: bool = True,
) -> tuple[bytes, int] | None:
    """The bytes appended to ``info.path`` since ``cursor``, or None to read it whole.

    Args:
        root: where the file lives.
        cursor: the reader's position (None: never read, so read it whole).
        info: the file's entry in a fresh listing.
        grows_only: the file is append-only (a daily log): every append makes it
            longer, so a change that does not (a shrink, an edit in place) is a rewrite,
            and None. False (MEMORY.md, any file that may be rewritten): a same-size
            change is a rewrite too, so None.
        whole_lines: return only complete lines (up to the last line break); the rest
            is left for the next read. False: every appended byte.

    Returns:
        ``(new bytes, offset after them)``, or None when the file must be read whole
        (never read, shrunk, rewritten, the tail changed, or the file vanished).
    """
    if cursor is None or must_read_whole(root, cursor, info, grows_only=grows_only):
        return None
    if info.size == cursor.parsed_upto:
        return (b"", cursor.parsed_upto) if grows_only else None
    start = cursor.parsed_upto - len(cursor.tail)
    try:
        data = root.read_range(info.path, start)
    except FileNotFoundError:
        return None
    if data[: len(cursor.tail)] != cursor.tail:
        return None
    body = data[len(cursor.tail) :]
    if whole_lines:
        body = body[: body.rfind(b"\n") + 1]
    return body, cursor.parsed_upto + len(body)
