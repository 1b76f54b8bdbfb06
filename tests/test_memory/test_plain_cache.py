"""The plain-MEMORY.md cache of a fresh ``build_context()`` is only a cache.

A local fresh process that found MEMORY.md plain (64 KiB or more) keeps where its
sections are in ``.fsmemory-cache.context``, tied to the file's size, change token and
CRC-32, so the next fresh process checks one CRC instead of every line. These tests
prove that the cache never changes an answer: with it, without it, after edits by hand
that keep the size and the change token, and with damaged or hostile cache files.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory._context import PLAIN_CACHE, PLAIN_CACHE_MIN_BYTES

Make = Callable[..., KnowledgeMemory]
_MAGIC = b"fsmemory-plain 1\n"


def _big_plain_file() -> bytes:
    lines = ["# Agent Memory", "", "## prefs"]
    lines += [f"- likes tea number {i:05d} caf\u00e9 \u2615" for i in range(1500)]
    lines += ["", "## work"]
    lines += [f"- ships release {i:05d}" for i in range(1500)]
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) >= PLAIN_CACHE_MIN_BYTES
    return data


def _indexed_context(make_km: Make) -> str:
    indexed = make_km(index_cache=False)
    indexed.refresh()  # indexed: the full parser, never the shortcut
    return indexed.build_context()


@pytest.fixture(params=["local", "memory"])
def backend(request: pytest.FixtureRequest) -> str:
    """Local roots only by default: remote ones never use the cache (tested below)."""
    return str(request.param)


@pytest.fixture
def writer(make_km: Make) -> KnowledgeMemory:
    km = make_km()
    km.remember("a recent note", category="work")
    km.root.write("MEMORY.md", _big_plain_file())
    return km


def test_a_fresh_process_reuses_the_verdict_and_gets_the_same_answer(
    writer: KnowledgeMemory, make_km: Make
) -> None:
    expected = _indexed_context(make_km)
    assert "ships release 01499" in expected
    assert writer.root.read_cache(PLAIN_CACHE) is None
    assert make_km().build_context() == expected  # checks every line, writes the cache
    cached = writer.root.read_cache(PLAIN_CACHE)
    assert cached is not None and cached.startswith(_MAGIC)
    record = orjson.loads(cached[len(_MAGIC) :])
    assert record["crc32"] == zlib.crc32(_big_plain_file())
    assert [name for name, _, _ in record["spans"]] == ["prefs", "work"]
    assert make_km().build_context() == expected  # from the cache
    assert (
        make_km(max_context_chars=300).build_context()
        == make_km(index_cache=False, max_context_chars=300).build_context()
    )
    assert writer.root.read_bytes("MEMORY.md") == _big_plain_file()  # never rewritten
    # A reserved name: never listed, so never snapshotted or exported.
    assert all("fsmemory" not in info.path for info in writer.root.list("", recursive=True))


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) without changing the file's inode, size
    or modification time: the change token stays the same, only the bytes differ."""
    assert len(old) == len(new)
    before = path.stat()
    data = path.read_bytes()
    assert data.count(old) == 1
    with path.open("r+b") as f:
        f.seek(data.index(old))
        f.write(new)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


@pytest.mark.parametrize("backend", ["local"], indirect=True)
@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"- likes tea number 00007", b"- loves tea number 00007"),  # still plain
        (b"- ships release 00010\n", b"- ships release 0001 \n"),  # trailing space
        (b"## work\n", b"## w#rk\n"),  # a renamed section
        (b"\n## work\n", b"\n\n- work\n"),  # the header becomes a bullet
        (b"00100 caf\xc3\xa9 \xe2\x98\x95", b"00100 caf\xc3\xa9 \xe2\x98\x94"),  # another character
    ],
)
def test_an_edit_that_keeps_size_and_change_token_is_seen(
    writer: KnowledgeMemory, make_km: Make, old: bytes, new: bytes
) -> None:
    path = Path(writer.root.full_path("MEMORY.md"))  # type: ignore[attr-defined]
    first = make_km().build_context()  # writes the cache
    assert writer.root.read_cache(PLAIN_CACHE) is not None
    token = next(i.token for i in writer.root.list("") if i.path == "MEMORY.md")
    _edit_in_place(path, old, new)
    assert next(i.token for i in writer.root.list("") if i.path == "MEMORY.md") == token
    expected = _indexed_context(make_km)
    assert expected != first
    assert make_km().build_context() == expected


_FILE = _big_plain_file()


def _record(**changes: object) -> bytes:
    data = _FILE
    start = data.index(b"- likes")
    end = data.index(b"\n\n## work")
    work = data.index(b"- ships")
    record = {
        "size": len(data),
        "crc32": zlib.crc32(data),
        "spans": [["prefs", start, end], ["work", work, len(data) - 1]],
    }
    record.update(changes)
    return _MAGIC + json.dumps(record).encode()  # (json: one number is over 64 bits)


_DAMAGED: list[bytes | Callable[[int], bytes]] = [
    b"",
    b"\x00" * 64,
    _MAGIC,
    _MAGIC + b"{not json",
    _MAGIC + b"[1, 2, 3]",
    b"fsmemory-plain 9\n" + _record()[len(_MAGIC) :],
    _record(size=12),
    _record(crc32=0),
    _record(crc32="x"),
    _record(spans="prefs"),
    _record(spans=[["prefs", 0, 10]]),  # does not start after a line break
    _record(spans=[["prefs", 5, 10**30]]),
    _record(spans=[["prefs", -5, 10]]),
    _record(spans=[["prefs", 31, 40, 50]]),
    _record(spans=[[None, 31, 40]]),
    _record(spans=[["prefs", 31.0, 40]]),
    _record(spans=[["prefs", 9000, 10]]),  # end before start
    _record(spans=[["prefs", 200, 900], ["work", 150, 300]]),  # overlapping
    # Mid-line, and cutting a three-byte character in two.
    _record(spans=[["prefs", _FILE.index(b"- likes") + 3, _FILE.index(b"\n\n## work")]]),
    _record(spans=[["prefs", _FILE.index(b"- likes"), _FILE.index(b"\xe2\x98\x95") + 1]]),
]


@pytest.mark.parametrize("blob", range(len(_DAMAGED)))
def test_a_damaged_or_foreign_cache_file_changes_no_answer(
    writer: KnowledgeMemory, make_km: Make, blob: int
) -> None:
    token = next(i.token for i in writer.root.list("") if i.path == "MEMORY.md")
    raw = _DAMAGED[blob]
    if raw.startswith(_MAGIC) and b'"size":' in raw and b"token" not in raw:
        # Give it the file's own change token, so only the broken field is wrong.
        record = json.loads(raw[len(_MAGIC) :])
        raw = _MAGIC + json.dumps({**record, "token": token}).encode()
    writer.root.write_cache(PLAIN_CACHE, raw)
    assert make_km().build_context() == _indexed_context(make_km)
    assert writer.root.read_bytes("MEMORY.md") == _big_plain_file()


def test_the_record_with_the_right_spans_is_used(writer: KnowledgeMemory, make_km: Make) -> None:
    """The fixture records of the damaged cases differ from a good one in one field only:
    the good one itself is accepted (so the cases above test what they claim)."""
    token = next(i.token for i in writer.root.list("") if i.path == "MEMORY.md")
    record = orjson.loads(_record()[len(_MAGIC) :])
    # Same bytes and token, but the spans name the sections the other way round: only a
    # reader that trusted the record would show the wrong names.
    (_, s0, e0), (_, s1, e1) = record["spans"]
    swapped = [["work", s0, e0], ["prefs", s1, e1]]
    writer.root.write_cache(PLAIN_CACHE, _MAGIC + orjson.dumps({**record, "token": token}))
    assert make_km().build_context() == _indexed_context(make_km)
    writer.root.write_cache(
        PLAIN_CACHE, _MAGIC + orjson.dumps({**record, "token": token, "spans": swapped})
    )
    assert make_km().build_context() != _indexed_context(make_km)
    assert make_km(index_cache=False).build_context() == _indexed_context(make_km)


def test_index_cache_false_never_reads_or_writes_it(writer: KnowledgeMemory, make_km: Make) -> None:
    assert make_km(index_cache=False).build_context() == _indexed_context(make_km)
    assert writer.root.read_cache(PLAIN_CACHE) is None


def test_a_small_file_has_no_cache(make_km: Make) -> None:
    km = make_km()
    km.remember("tea", category="prefs", persistent=True)
    assert "tea" in make_km().build_context()
    assert km.root.read_cache(PLAIN_CACHE) is None


def test_clear_deletes_it(writer: KnowledgeMemory, make_km: Make) -> None:
    make_km().build_context()
    assert writer.root.read_cache(PLAIN_CACHE) is not None
    writer.clear()
    assert writer.root.read_cache(PLAIN_CACHE) is None
    assert make_km().build_context() == ""


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("s3", marks=pytest.mark.s3),
        pytest.param("gcs", marks=pytest.mark.gcs),
        pytest.param("redis", marks=pytest.mark.redis),
    ],
    indirect=True,
)
def test_remote_roots_never_use_it(writer: KnowledgeMemory, make_km: Make) -> None:
    assert make_km().build_context() == _indexed_context(make_km)
    assert writer.root.read_cache(PLAIN_CACHE) is None
