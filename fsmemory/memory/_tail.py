"""Read only what was appended to a file since it was last read, once proven so.

A reader keeps a :class:`FileCursor` per file: the listing entry it last saw, how many
bytes it has consumed, the last :data:`TAIL` bytes before that point and, for readers
that must never trust a stale prefix (the index), a CRC-32 of every consumed byte.

When a new listing shows the file changed:

:func:`read_verified` fetches the whole file and compares the CRC-32 of its first
``parsed_upto`` bytes with the cursor's: equal, and only the bytes after the cursor are
new; different (an edit in place, even one that kept the length, a truncation, a file of
another history), and the caller parses the bytes it was handed as the whole file.
Reading the prefix is the price of the proof; parsing it again is what it saves. (A
check of the last :data:`TAIL` bytes alone would miss a same-length edit before them.)
"""

from __future__ import annotations

import zlib

from fsmemory._records import NamedTuple
from fsmemory.fs.base import FileInfo, StorageRoot

__all__ = ["TAIL", "FileCursor", "Verified", "must_read_whole", "read_verified"]

#: Bytes before the cursor that must be unchanged for an append to be trusted.
TAIL = 64


class FileCursor:
    """How far a reader has consumed one file.

    Attributes:
        info: the listing entry seen when the file was last read.
        parsed_upto: bytes consumed from the start of the file.
        tail: the last (up to :data:`TAIL`) bytes before ``parsed_upto``.
        complete: False when the file was read whole without ending on a line break
            (a hand edit): such a file is read whole again on its next change.
        crc: CRC-32 of the first ``parsed_upto`` bytes (None: not kept, and
            :func:`read_verified` then reads the file as new).
    """

    # A plain class, not a dataclass: Python 3.11 compiles a dataclass's generated
    # methods when the module is imported, part of every process's first line.
    __slots__ = ("complete", "crc", "info", "parsed_upto", "tail")

    def __init__(
        self,
        info: FileInfo,
        parsed_upto: int,
        tail: bytes,
        complete: bool = True,
        crc: int | None = None,
    ) -> None:
        self.info = info
        self.parsed_upto = parsed_upto
        self.tail = tail
        self.complete = complete
        self.crc = crc

    @classmethod
    def after(cls, info: FileInfo, data: bytes, upto: int, complete: bool = True) -> FileCursor:
        """A cursor at offset ``upto`` of ``data``, the file's content read whole."""
        prefix = memoryview(data)[:upto]
        return cls(info, upto, data[max(0, upto - TAIL) : upto], complete, zlib.crc32(prefix))

    def advance(self, chunk: bytes, info: FileInfo | None = None) -> None:
        """Move past ``chunk``, bytes that follow the cursor directly."""
        self.parsed_upto += len(chunk)
        self.tail = (self.tail + chunk)[-TAIL:]
        if self.crc is not None:
            self.crc = zlib.crc32(chunk, self.crc)
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


class Verified(NamedTuple):
    """What :func:`read_verified` found (an immutable record).

    Attributes:
        data: the bytes after the cursor when ``appended``, else the whole file (None:
            not fetched yet; the caller reads it, e.g. with other files in one batch).
        appended: True when the cursor's prefix was proven unchanged.
        upto: the offset after ``data`` when ``appended``.
        whole: the whole file when it was fetched (None otherwise).
    """

    data: bytes | None
    appended: bool
    upto: int = 0
    whole: bytes | None = None


def read_verified(
    root: StorageRoot,
    cursor: FileCursor | None,
    info: FileInfo,
    *,
    grows_only: bool = True,
    whole_lines: bool = True,
) -> Verified:
    """The bytes appended to ``info.path`` since ``cursor``, once the bytes before it
    are proven unchanged (the cursor's CRC-32 over the file's prefix); otherwise the
    whole file, to parse afresh.

    Args:
        root: where the file lives.
        cursor: the reader's position (None: never read).
        info: the file's entry in a fresh listing (changed since ``cursor.info``).
        grows_only: the file is append-only (a daily log); see :func:`must_read_whole`.
            False (MEMORY.md): a same-size change is a rewrite too.
        whole_lines: return only complete appended lines (up to the last line break);
            the rest is left for the next read. False: every appended byte.

    Returns:
        ``Verified(bytes after the cursor, True, offset after them)``; or
        ``Verified(whole file, False)``; or ``Verified(None, False)`` when the listing
        alone shows the file must be read whole (the caller fetches it).
    """
    if (
        cursor is None
        or cursor.crc is None
        or must_read_whole(root, cursor, info, grows_only=grows_only)
    ):
        return Verified(None, False)
    if info.size == cursor.parsed_upto and not grows_only:
        return Verified(None, False)  # changed without growing: rewritten
    try:
        data = root.read_bytes(info.path)
    except FileNotFoundError:
        return Verified(b"", False)
    upto = cursor.parsed_upto
    if len(data) < upto or zlib.crc32(memoryview(data)[:upto]) != cursor.crc:
        return Verified(data, False, 0, data)
    body = data[upto:]
    if whole_lines:
        body = body[: body.rfind(b"\n") + 1]
    return Verified(body, True, upto + len(body), data)
