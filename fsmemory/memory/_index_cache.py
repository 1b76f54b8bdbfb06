"""The persisted index: a cache file that lets a fresh process skip re-parsing.

A fresh ``KnowledgeMemory`` must know every entry before its first ``recall``: parse
every log line, match MEMORY.md's bullets to their records, analyse every entry for
BM25. That costs far more than reading the bytes. So after a search has built the
index, :func:`save` writes its whole state (columns, cursors, BM25 postings: flat
arrays, not pickles) to the root's cache file ``.fsmemory-cache.index``, and the next
fresh process loads it (:func:`list_and_load`, with the listing) and then refreshes
from that listing exactly as a warm process would: a changed MEMORY.md or log is
fetched whole and, when the CRC-32 of the bytes the cache was built from still matches
(:func:`fsmemory.memory._tail.read_verified`), only what was appended after them is
parsed; otherwise (an edit in place, even one keeping the length) it is parsed afresh. A
deleted one is dropped.

It is a cache and nothing more:

* deleting it changes no answer (``KnowledgeMemory(..., index_cache=False)`` never
  reads or writes it);
* a stale one is detected by the listing (sizes and change tokens of every file) and the
  checksums of the bytes it was built from, exactly as a warm process detects changes;
* a damaged, foreign or hostile one is checked (magic, version, byte order, lengths,
  every row and term number in range) and ignored, never trusted to run code;
* it lives in the reserved ``.fsmemory*`` namespace, so it is never listed or
  exported, and works on every backend (one whole-object write).

Beside the rows it carries what other modules derive from them per row
(:data:`DERIVED_WIDTHS`: hybrid recall's text hashes), written with the rows under the
same checksum, so that a fresh process with an embedder need not hash every text again
to match its vectors.

It is a derived file a snapshot carries (as are the vectors): a fold packs it into
the base beside the folder's files (:func:`travelling`), and a restore into an empty
folder installs it (:func:`prefixes`, :func:`rebased`). The change tokens it recorded
name files of the folder that wrote it, so the restore proves each cursor against the
restored bytes (the CRC-32 of the prefix it parsed) and writes a proven file in two
steps, that prefix then the rest, so the cursor can take the file's own listing entry
after the first: the index then reads only what deltas appended (proven again by the
CRC-32, as always), and a cursor that did not prove is given a token no file has, so
its file is read and parsed afresh. A stale, damaged or hand-edited base's cache
changes no answer: at worst the first ``recall`` parses what it would without it.

File format: ``MAGIC``, one JSON header line (version, byte order, the length of the
JSON part and of each binary part, the XXH3-64 of the rest), the JSON part
(small structures), then the binary parts back to back: native ``array`` bytes,
strings as UTF-8 bytes with an offsets array, and the larger JSON structures. Row
lists are stored as ``(first, count)`` runs of consecutive rows where that is much
smaller (a memory indexed in one go has one run per list), else as bit sets, one per
stretch of ascending rows, where that is (see :mod:`fsmemory.memory._rowlists`); a
bullet of MEMORY.md whose text is its record's content is stored as that row. A
column a load can rebuild for less than its bytes cost (the timeline's stamps, an
expiry column of one value) is left out; the JSON part says which (``encoded``).
The BM25 part carries lookup tables beside its term list and stem list (where each
line starts, and the terms' order; the stems are stored sorted): a loaded index finds
a query's words by bisection, without scanning either list or building a dictionary.

A fresh process fetches this file together with the root's listing where the root can
send both at once (:func:`list_and_load`; the obstore roots of S3 and Azure), so a cached cold open
is one round trip and the file is decoded while the listing is still on its way.

Loading costs what a first ``recall`` needs, not what the whole index holds: the flat
columns and BM25 arrays are copied out, entry ids and contents stay bytes (a string is
made only for a row that is read), and the rest (id lookup, MEMORY.md's facts and
claims, the term dictionary) is built on first use (see
:meth:`fsmemory.memory._index.MemoryIndex.load_state`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import orjson

from fsmemory._log import get_logger
from fsmemory.errors import FsMemoryError
from fsmemory.fs.base import CacheData, FileInfo, StorageRoot
from fsmemory.memory._index import MemoryIndex
from fsmemory.memory.layout import MEMORY_FILE, log_date

__all__ = [
    "CACHE_NAME",
    "DERIVED_WIDTHS",
    "MIN_BYTES",
    "MIN_NEW_ROWS",
    "decode",
    "delete",
    "encode",
    "fill",
    "list_and_load",
    "prefixes",
    "rebased",
    "save",
    "travelling",
    "worth_it",
]

logger = get_logger(__name__)

#: The cache file's name (``StorageRoot.read_cache`` adds the reserved prefix).
CACHE_NAME = "index"
#: A cache is (re)written after a search once this many rows are not in it.
MIN_NEW_ROWS = 256
#: Memories smaller than this (bytes of MEMORY.md and logs) parse faster than a cache
#: round trip pays for: no cache is looked for or written.
MIN_BYTES = 128 * 1024
MAGIC = b"fsmemory-index\n"
VERSION = 8


#: Per-row values derived from the rows that the cache carries beside them
#: (:attr:`MemoryIndex.derived`), by name: bytes per row. Stored only when they cover
#: every row, loaded only when they cover every row of the loaded state, as parts
#: ``derived_<name>`` that readers without them ignore. They are as proven as the rows
#: themselves: written with the rows they were computed from, under the same checksum.
DERIVED_WIDTHS = {"text_hash": 8}


def encode(index: MemoryIndex) -> bytes | None:
    """The cache file for ``index``; None when its state cannot be stored (e.g. text
    holding lone surrogates from a hand-edited file)."""
    try:
        meta, state_blobs = index.state()
        body = orjson.dumps(meta)
    except (TypeError, ValueError, OverflowError):
        return None
    blobs: dict[str, bytes | memoryview] = dict(state_blobs)
    for name, width in DERIVED_WIDTHS.items():
        values = index.derived.get(name)
        if values is not None and len(values) == width * index.rows:
            blobs["derived_" + name] = values
    return _assemble(body, blobs)


def _assemble(body: bytes, blobs: Mapping[str, Any]) -> bytes:
    """A cache file of the JSON part ``body`` and the binary parts ``blobs``."""
    import xxhash

    parts = list(blobs.items())
    state = xxhash.xxh3_64(body)
    for _, data in parts:
        state.update(data)
    header = orjson.dumps(
        {
            "version": VERSION,
            "byteorder": sys.byteorder,
            "meta": len(body),
            "blobs": [[name, len(data)] for name, data in parts],
            "xxh3": state.intdigest(),
        }
    )
    return b"".join([MAGIC, header, b"\n", body, *(data for _, data in parts)])


def decode(data: CacheData) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a cache file into the JSON part and the binary parts.

    Raises:
        ValueError: not a cache file of this version and byte order, or truncated.
    """
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError("not an fsmemory index cache")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise ValueError("no header")
    header = orjson.loads(data[len(MAGIC) : end])
    if not isinstance(header, dict) or header.get("version") != VERSION:
        raise ValueError("another cache version")
    if header.get("byteorder") != sys.byteorder:
        raise ValueError("another byte order")
    at = end + 1
    import xxhash  # (its import costs 2 ms: only a process that reads a cache pays it)

    if header.get("xxh3") != xxhash.xxh3_64_intdigest(memoryview(data)[at:]):
        raise ValueError("checksum mismatch (a damaged file)")
    view = memoryview(data)  # the parts are views: no copy of a large file
    size = header["meta"]
    if type(size) is not int or size < 0:
        raise ValueError("bad header")
    meta = orjson.loads(view[at : at + size])
    if not isinstance(meta, dict):
        raise ValueError("bad cache body")
    at += size
    blobs: dict[str, Any] = {}
    for name, length in header["blobs"]:
        if not isinstance(name, str) or type(length) is not int or length < 0:
            raise ValueError("bad header")
        blobs[name] = view[at : at + length]
        at += length
    if at != len(data):
        raise ValueError("truncated or padded cache")
    return meta, blobs


def is_memory_file(path: str) -> bool:
    """MEMORY.md or a daily log."""
    return path == MEMORY_FILE or log_date(path) is not None


def worth_it(listing: list[FileInfo]) -> bool:
    """True when the memory in ``listing`` is large enough for a cache to pay."""
    return sum(info.size for info in listing if is_memory_file(info.path)) >= MIN_BYTES


def fill(root: StorageRoot, index: MemoryIndex, data: CacheData | None) -> bool:
    """Fill a fresh ``index`` from ``data``, the content of the root's cache file;
    False (index untouched) when it is empty or unusable (logged)."""
    if not data:
        return False
    try:
        meta, blobs = decode(data)
        index.load_state(meta, blobs)
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring the index cache of %s: %s", root, exc)
        return False
    for name, width in DERIVED_WIDTHS.items():
        values = blobs.get("derived_" + name)
        if values is not None and len(values) == width * index.rows:
            index.derived[name] = values
    return True


def list_and_load(root: StorageRoot, index: MemoryIndex) -> tuple[list[FileInfo], bool]:
    """One listing of the root, and the root's cache file loaded into the fresh
    ``index``: ``(listing, loaded)``. On remote roots the two requests may travel
    together, the cache being decoded while the listing is on its way
    (:meth:`~fsmemory.fs.base.StorageRoot.list_with_cache`); the caller refreshes from
    the listing next, which tells what changed since the cache was written (or, when
    the cache was written after the listing was taken, makes the refresh read again
    what the two disagree on).

    Raises:
        Whatever the listing raises (the index is then reset).
    """
    try:
        listing, loaded = root.list_with_cache(
            CACHE_NAME, lambda data: fill(root, index, data), worth_it
        )
    except BaseException:
        index.reset()
        raise
    return listing, bool(loaded)


def save(root: StorageRoot, index: MemoryIndex) -> bool:
    """Write the cache file for ``index``; False when it could not be (logged: a
    read-only root or a full disk never fails the caller's ``recall``)."""
    data = encode(index)
    if data is None:
        return False
    try:
        root.write_cache(CACHE_NAME, data)
    except (OSError, FsMemoryError) as exc:
        logger.info("index cache of %s not written: %s", root, exc)
        return False
    return True


def travelling(root: StorageRoot) -> bytes | None:
    """The root's cache file for a snapshot's base to carry; None when there is none
    or it does not decode (a damaged one is not worth the bytes)."""
    try:
        data = root.read_cache(CACHE_NAME)
    except (OSError, FsMemoryError):
        return None
    if not data:
        return None
    try:
        decode(data)
    except (ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, bytes) else bytes(data)


def prefixes(data: bytes) -> dict[str, tuple[int, int]] | None:
    """``path -> (bytes parsed, CRC-32 of them)`` of the cache file ``data``'s cursors
    (MEMORY.md and each log); None when it does not decode."""
    try:
        meta, _ = decode(data)
        cursors = [*meta["logs"], *([meta["md"]] if meta["md"] is not None else [])]
        out: dict[str, tuple[int, int]] = {}
        for cursor in cursors:
            path, upto, crc = cursor[0], cursor[4], cursor[7]
            if isinstance(path, str) and type(upto) is int and type(crc) is int:
                out[path] = (upto, crc)
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return out


def rebased(data: bytes, infos: Mapping[str, FileInfo]) -> bytes | None:
    """The cache file ``data`` for another folder: the cursor of each path in ``infos``
    (whose file there held exactly the bytes the cursor parsed when ``infos`` was taken)
    takes that listing entry; every other cursor a token no file has, so its file is
    read whole. None when ``data`` does not decode."""
    try:
        meta, blobs = decode(data)
        meta = dict(meta)

        def moved(cursor: list[Any]) -> list[Any]:
            info = infos.get(cursor[0])
            if info is None:
                return [cursor[0], cursor[1], None, "", *cursor[4:]]
            return [info.path, info.size, info.mtime, info.token, *cursor[4:]]

        meta["logs"] = [moved(c) for c in meta["logs"]]
        if meta["md"] is not None:
            meta["md"] = moved(meta["md"])
        return _assemble(orjson.dumps(meta), blobs)
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def delete(root: StorageRoot, name: str = CACHE_NAME) -> None:
    """Remove the root's cache file ``name`` (missing is fine)."""
    try:
        root.delete_cache(name)
    except (OSError, FsMemoryError) as exc:
        logger.info("index cache of %s not deleted: %s", root, exc)
