"""read_verified: the bytes after a cursor are used only once the bytes before it are
proven unchanged (a CRC-32 of all of them), on real roots (local folder, memory://)."""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path

import pytest

from fsmemory import open_root
from fsmemory.fs.base import FileInfo, StorageRoot
from fsmemory.memory._tail import TAIL, FileCursor, read_verified

LOG = "logs/2026-03-13.jsonl"
BODY = b"".join(
    b'{"n":%d,"text":"the same ending for every line of this log file"}\n' % i for i in range(20)
)


@pytest.fixture(params=["local", "memory"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> StorageRoot:
    if request.param == "local":
        return open_root(str(tmp_path / "root"))
    return open_root(f"memory://tail-{uuid.uuid4().hex[:8]}")


def _in_place(root: StorageRoot, data: bytes) -> None:
    """Overwrite the log in place where the root allows it (same inode locally)."""
    full = Path(root.full_path(LOG))
    if full.exists():
        with open(full, "r+b") as f:
            f.write(data)
    else:
        root.write(LOG, data)


def _cursor(root: StorageRoot) -> FileCursor:
    root.write(LOG, BODY)
    info = root.stat(LOG)
    assert info is not None
    return FileCursor.after(info, BODY, len(BODY))


def test_an_append_is_read_alone(root: StorageRoot) -> None:
    cur = _cursor(root)
    root.append(LOG, b'{"n":20}\n{"n":2')
    info = root.stat(LOG)
    assert info is not None
    got = read_verified(root, cur, info)
    assert got.appended and got.data == b'{"n":20}\n'
    assert got.upto == len(BODY) + len(b'{"n":20}\n')


@pytest.mark.parametrize("where", [0, len(BODY) // 2, len(BODY) - TAIL - 1, len(BODY) - 2])
def test_a_same_length_edit_anywhere_before_the_cursor_is_seen(
    root: StorageRoot, where: int
) -> None:
    cur = _cursor(root)
    edited = bytearray(BODY)
    edited[where] = ord("X") if edited[where] != ord("X") else ord("Y")
    _in_place(root, bytes(edited) + b'{"n":20}\n')
    info = root.stat(LOG)
    assert info is not None
    got = read_verified(root, cur, info)
    assert not got.appended
    assert got.data in (None, bytes(edited) + b'{"n":20}\n')  # None: the listing told


def test_an_edit_the_tail_alone_would_miss_is_seen(root: StorageRoot) -> None:
    """An edit before the cursor's last TAIL bytes leaves them as they were (a check of
    the tail alone is fooled); the checksum sees it."""
    cur = _cursor(root)
    edited = BODY.replace(b'"n":3,', b'"n":9,')
    _in_place(root, edited + b'{"n":20}\n')
    info = root.stat(LOG)
    assert info is not None
    assert edited != BODY and edited[len(BODY) - TAIL :] == cur.tail
    assert not read_verified(root, cur, info).appended


def test_a_cursor_without_checksum_is_read_whole(root: StorageRoot) -> None:
    cur = _cursor(root)
    cur.crc = None
    root.append(LOG, b'{"n":20}\n')
    info = root.stat(LOG)
    assert info is not None
    assert read_verified(root, cur, info).data is None


def test_a_vanished_or_truncated_file_is_read_whole(root: StorageRoot) -> None:
    cur = _cursor(root)
    root.write(LOG, BODY[:10])
    info = root.stat(LOG)
    assert info is not None
    assert not read_verified(root, cur, info).appended


def test_advancing_keeps_the_checksum_of_every_byte() -> None:
    cur = FileCursor.after(FileInfo(LOG, len(BODY), None, "t"), BODY, 100)
    assert cur.crc == zlib.crc32(BODY[:100])
    cur.advance(BODY[100:300])
    assert cur.crc == zlib.crc32(BODY[:300]) and cur.tail == BODY[300 - TAIL : 300]
    assert FileCursor(FileInfo(LOG, 0, None, "t"), 0, b"").crc is None  # old callers
