"""The index cache codec of :class:`fsmemory.memory._index.MemoryIndex`.

:meth:`IndexState.state` turns the index into JSON-able values and byte strings (the
form :mod:`fsmemory.memory._index_cache` stores) and :meth:`IndexState.load_state`
rebuilds an equal index from them. A cache-loaded index keeps entry ids and contents
as bytes (:class:`_Strings`) until a row is read, and builds the parts only changes and
other reads need (id lookup, files' rows, the timeline, MEMORY.md's facts and claims) on
first use (:class:`_OnFirstUse`, ``_LAZY``). What those parts are built from is checked
on load; row lists stored as runs or bit sets by their counts and bounds, not row by
row (:func:`rows_of`).

:class:`IndexState` is a part of :class:`~fsmemory.memory._index.MemoryIndex` (a
mixin), as :class:`~fsmemory.memory._claims.Claims` is: the index owns the rows.
"""

from __future__ import annotations

import operator
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import accumulate, chain, pairwise, repeat
from typing import Any

import orjson

from fsmemory.fs.base import FileInfo
from fsmemory.memory._claims import Key, expiry_us, fact_keys
from fsmemory.memory._fields import IndexFields
from fsmemory.memory._rank import BM25Index
from fsmemory.memory._rowlists import (
    RowList,
    as_array,
    gather,
    listed,
    rows_blob,
    rows_of,
)
from fsmemory.memory._tail import TAIL, FileCursor
from fsmemory.memory.entry import parse_timestamp
from fsmemory.memory.layout import MEMORY_FILE, log_date
from fsmemory.memory.markdown import Fact, MemoryDocument

__all__ = ["IndexState"]


class _Strings:
    """A column of strings kept as UTF-8 bytes with offsets, as the index cache stores
    it: a string is made only for a row that is read (a cold ``recall`` reads a few).
    Rows appended later are held as strings."""

    __slots__ = ("_blob", "_more", "_n", "_off")

    def __init__(self, blob: bytes | memoryview, offsets: array[int]) -> None:
        if not offsets or offsets[0] != 0 or offsets[-1] != len(blob):
            raise ValueError("string offsets do not fit their bytes")
        self._blob, self._off, self._n = blob, offsets, len(offsets) - 1
        self._more: list[str] = []

    def __len__(self) -> int:
        return self._n + len(self._more)

    def __getitem__(self, row: int) -> str:
        if 0 <= row < self._n:
            off = self._off
            # "replace": offsets that do not cut at characters (a hostile file) give
            # odd text, never an error.
            return str(self._blob[off[row] : off[row + 1]], "utf-8", "replace")
        return self._more[row - self._n]

    def __iter__(self) -> Iterator[str]:
        return map(self.__getitem__, range(len(self)))

    def append(self, text: str) -> None:
        """Add a row."""
        self._more.append(text)

    def extend(self, texts: Iterable[str]) -> None:
        """Add rows."""
        self._more.extend(texts)

    def tolist(self) -> list[str]:
        """Every row as a list of strings."""
        blob, off = self._blob, self._off
        data = bytes(blob)
        if data.isascii():  # byte offsets are character offsets
            text = data.decode("ascii")
            out = list(map(text.__getitem__, map(slice, off, off[1:])))
        else:
            out = [str(blob[a:b], "utf-8", "replace") for a, b in pairwise(off)]
        out.extend(self._more)
        return out


def _pack(strings: list[str] | _Strings) -> tuple[bytes, bytes]:
    """``strings`` as UTF-8 bytes and their offsets (the form :class:`_Strings` reads).

    Raises:
        UnicodeEncodeError: a string holds a lone surrogate.
        OverflowError: 4 GiB of text or more.
    """
    items = strings if isinstance(strings, list) else list(strings)
    text = "".join(items)
    data = text.encode()
    sizes: Iterable[int] = (
        map(len, items) if len(data) == len(text) else (len(s.encode()) for s in items)
    )
    return data, array("I", accumulate(sizes, initial=0)).tobytes()


class _OnFirstUse:
    """A field of a cache-loaded index that is built when first read.

    A non-data descriptor: once the field is built it is a plain instance attribute
    (which takes precedence), so reading it costs nothing more afterwards.
    """

    def __init__(self, name: str, build: Callable[[IndexState], None]) -> None:
        self._name = name
        self._build = build

    def __get__(self, obj: IndexState | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        self._build(obj)
        try:
            return obj.__dict__[self._name]
        except KeyError:
            raise AttributeError(self._name) from None


#: MEMORY.md's sections as the index cache stores them, checked: category, number of
#: bullets, the texts of bullets not stored as a row number and their places, expiry
#: times (None: no bullet has one).
_MdSection = tuple[str, int, list[str], list[int], list[datetime | None] | None]


class _ColdParts:
    """What a cache-loaded index builds its lazy fields from (see ``_LAZY``)."""

    __slots__ = (
        "claimed",
        "claimed_texts",
        "file_paths",
        "file_rows",
        "file_sizes",
        "md_refs",
        "md_sections",
        "row_of",
        "tl_row",
        "tl_stamp",
    )

    def __init__(self, cols: _Columns, file_paths: list[str]) -> None:
        self.row_of, self.file_paths = cols.row_of, file_paths
        self.file_sizes, self.file_rows = cols.file_sizes, cols.file_rows
        self.claimed, self.claimed_texts = cols.claimed, cols.claimed_texts
        self.tl_row, self.tl_stamp = cols.tl_row, cols.tl_stamp
        self.md_sections: list[_MdSection] | None = None
        self.md_refs: RowList = ()


#: Fields a cache-loaded index builds on first use, and what builds them.
_LAZY = {
    "_row_of": "_build_row_of",
    "_file_rows": "_build_file_rows",
    "_claimed": "_build_claims",
    "_n_claimed": "_build_claims",
    "_fact_counts": "_build_fact_counts",
    "_doc": "_load_doc",
    "_tl_stamp": "_build_timeline",
    "_tl_row": "_build_timeline",
}


class IndexState(IndexFields):
    """The cache codec of :class:`~fsmemory.memory._index.MemoryIndex`.

    It holds no state of its own: its fields are the index's (a cache-loaded index
    builds some of them on first use), and so are the methods it calls (all declared
    by :class:`~fsmemory.memory._fields.IndexFields`).
    """

    # -- the codec ---------------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, bytes]]:
        """Everything the index knows, as JSON-able values and byte strings.

        The BM25 index is brought up to date first. :meth:`load_state` rebuilds an equal
        index; a later :meth:`refresh` then reads only what changed since, exactly as
        it would in the process that wrote the state.

        Raises:
            ValueError: text that cannot be stored (a lone surrogate from a hand edit).
            OverflowError: 4 GiB of text or more.
        """
        ranker = self._ranked() if self._ranker is not None else None
        if ranker is not None and not ranker.verify():
            ranker = self._ranked()  # rebuilt from the rows
        meta = self._meta_state()
        meta["encoded"], blobs = self._row_blobs()
        blobs.update(self._text_blobs(meta["encoded"]))
        if ranker is not None:
            rank_meta, rank_blobs = ranker.state()
            meta["ranker"] = rank_meta
            blobs.update({"bm25_" + k: v for k, v in rank_blobs.items()})
        return meta, blobs

    def _meta_state(self) -> dict[str, Any]:
        """The small structures of :meth:`state` (its JSON part)."""
        doc = self._doc
        return {
            "cat_names": list(self._interned),
            "extras": [[row, ttl, md] for row, (ttl, md) in self._extras.items()],
            "n_dead": self._n_dead,
            "n_hidden": self._n_hidden,
            "file_paths": list(self._file_rows),
            "forgotten": self._forgotten,
            "logs": [_cursor_state(c) for c in self._logs.values()],
            "md": None if self._md is None else _cursor_state(self._md),
            "doc": {
                "last_category": doc.last_category,
                "header_count": doc.header_count,
                "invalid_lines": doc.invalid_lines,
            },
            "pending": [[*key, rows] for key, rows in self._pending.items()],
            "md_rows": [[*key, rows] for key, rows in self._md_rows.items()],
            "corrupt": self._corrupt,
            "ranker": None,
        }

    def _text_blobs(self, encoded: dict[str, Any]) -> dict[str, bytes]:
        """The texts of :meth:`state`: entry ids and contents packed, MEMORY.md's
        bullets and the claims' texts (read only when first needed).

        A bullet whose text is the content of the record it claims (most bullets) is
        stored as that row's number, in one row list (``md_refs``) for all sections, and
        only the other texts as JSON with their places (``md_sections``); likewise a
        claim's text only where it is not its row's content (``claimed_other``: JSON
        ``[place in claimed, text]`` pairs). A load then checks row numbers in bulk.
        """
        contents = self._contents
        ids, ids_off = _pack(self._ids)
        texts, texts_off = _pack(contents)
        same = {key: row for row, key in self._claimed.items() if key[1] == contents[row]}
        sections: list[list[Any]] = []
        refs: list[int] = []
        for cat, facts in self._doc.sections.items():
            own: list[str] = []
            places: list[int] = []
            for at, fact in enumerate(facts):
                row = same.get((cat, fact.text, expiry_us(fact)))
                if row is None:
                    own.append(fact.text)
                    places.append(at)
                else:
                    refs.append(row)
            sections.append([cat, len(facts), own, places, _expiries(facts)])
        other = [
            [at, key[1]]
            for at, (row, key) in enumerate(self._claimed.items())
            if key[1] != contents[row]
        ]
        return {
            "ids": ids,
            "ids_off": ids_off,
            "contents": texts,
            "contents_off": texts_off,
            "md_sections": orjson.dumps(sections),
            "md_refs": rows_blob("md_refs", refs, encoded),
            "claimed_other": orjson.dumps(other),
        }

    def _row_blobs(self) -> tuple[dict[str, Any], dict[str, bytes]]:
        """The columns and row lists of :meth:`state`, and how they are encoded.

        Row lists are stored as runs of consecutive rows where that is much smaller (a
        memory indexed in one go: one run each), else as bit sets of ascending rows
        where that is much smaller (see :func:`bits_of`), and columns a load can
        rebuild for less than their bytes cost are left out: fewer bytes to fetch, fewer
        rows to check on load. Category codes take a byte each when they fit in one.
        """
        encoded: dict[str, Any] = {"runs": [], "bits": {}}
        code = {name: i for i, name in enumerate(self._interned)}
        tl_row = rows_blob("tl_row", self._tl_row, encoded)
        tl_from_created = "tl_row" in encoded["runs"] and self._tl_stamp == gather(
            self._created, self._tl_row
        )
        expires = self._expires
        fill = expires[0] if expires and expires.count(expires[0]) == len(expires) else None
        codes = map(code.__getitem__, self._cats)
        blobs = {
            "created": self._created.tobytes(),
            "importance": self._importance.tobytes(),
            "flags": bytes(self._flags),
            "row_of": rows_blob("row_of", self._row_of.values(), encoded),
            "file_sizes": array("q", map(len, self._file_rows.values())).tobytes(),
            "file_rows": rows_blob(
                "file_rows", chain.from_iterable(self._file_rows.values()), encoded
            ),
            "tl_row": tl_row,
            "claimed": rows_blob("claimed", self._claimed, encoded),
        }
        if len(code) <= 256:
            blobs["cat_codes"] = bytes(codes)
        else:
            blobs["cats"] = array("I", codes).tobytes()
        if fill is None:
            blobs["expires"] = expires.tobytes()
        if not tl_from_created:
            blobs["tl_stamp"] = self._tl_stamp.tobytes()
        encoded.update(tl_stamp=tl_from_created, expires=fill)
        return encoded, blobs

    def load_state(self, meta: dict[str, Any], blobs: dict[str, bytes | memoryview]) -> None:
        """Replace everything with a :meth:`state` (``ValueError`` when it does not hold
        together; the index is then reset).

        Only what a search reads is built now: the flat columns and the BM25 arrays.
        Entry ids and contents stay bytes until a row is read, and the parts that only
        changes and other reads need (id lookup, files' rows, MEMORY.md's facts and
        claims) are built when first used. Everything they rely on is checked here.
        """
        try:
            self._load_state(meta, blobs)
        except (KeyError, TypeError, IndexError, ValueError, OverflowError) as exc:
            self.reset()
            raise ValueError(f"unusable index state: {exc}") from exc

    def _load_state(self, meta: dict[str, Any], blobs: dict[str, bytes | memoryview]) -> None:
        self.reset()
        names, paths = meta["cat_names"], meta["file_paths"]
        if type(names) is not list or type(paths) is not list:
            raise ValueError("bad columns")
        ids = _Strings(blobs["ids"], as_array("I", blobs["ids_off"]))
        contents = _Strings(blobs["contents"], as_array("I", blobs["contents_off"]))
        n = len(ids)
        cols = _Columns(meta["encoded"], blobs, n)
        if (
            set(map(type, names)) - {str}
            or set(map(type, paths)) - {str}
            or len(contents) != n
            or len(cols.file_sizes) != len(paths)
            or not cols.fit(n)
        ):
            raise ValueError("columns of different lengths or rows out of range")
        cold = _ColdParts(cols, paths)
        if "md_sections" in blobs:
            cold.md_refs = cols.rows_of("md_refs")
            cold.md_sections = _checked_md(orjson.loads(blobs["md_sections"]), len(cold.md_refs))
        else:  # as written before the texts of bullets were stored apart
            self._cold_sections = _checked_sections(orjson.loads(blobs["sections"]), n)
        self._ids, self._contents = ids, contents
        # (a category code out of range fails here: IndexError)
        self._cats = _categories(names, cols.codes)
        self._interned = {name: name for name in names}
        self._created, self._expires = cols.created, cols.expires
        self._importance, self._flags = cols.importance, cols.flags
        self._extras = {int(row): (ttl, md) for row, ttl, md in meta["extras"]}
        self._n_dead, self._n_hidden = int(meta["n_dead"]), int(meta["n_hidden"])
        self._forgotten = {str(k): str(v) for k, v in dict(meta["forgotten"]).items()}
        self._logs = _log_cursors(meta["logs"])
        self._md = None if meta["md"] is None else _cursor_of(meta["md"])
        if self._md is not None and self._md.info.path != MEMORY_FILE:
            raise ValueError("bad MEMORY.md cursor")
        doc = _doc_of(meta["doc"])
        self._pending = _waiting_rows(meta["pending"], n, "pending")
        self._md_rows = _waiting_rows(meta["md_rows"], n, "md_rows")
        self._corrupt = {str(path): int(n) for path, n in dict(meta["corrupt"]).items()}
        if meta["ranker"] is not None:
            self._ranker = _ranker_of(meta["ranker"], blobs, n, n - self._n_dead)
        # Built on first use: MEMORY.md's facts, the timeline, then everything else at
        # once.
        self._cold = cold
        self._cold_doc = doc
        for name in _LAZY:
            del self.__dict__[name]
        self.generation += 1

    def _load_doc(self) -> None:
        """Build MEMORY.md's facts of a cache-loaded index (on first use)."""
        doc, self._cold_doc = self._cold_doc, None
        if doc is None:
            return
        contents, sections, cold = self._contents, self._cold_sections, self._cold
        if cold is not None and cold.md_sections is not None:
            sections = _md_sections(cold.md_sections, cold.md_refs)
            cold.md_sections, cold.md_refs = None, ()
        for cat, stored, expiries in sections:
            texts = [contents[t] if isinstance(t, int) else t for t in stored]
            if expiries is None:
                facts = list(map(tuple.__new__, repeat(Fact), zip(texts, repeat(None))))
            else:
                facts = list(map(Fact, texts, expiries))
            doc.sections[cat] = facts
        self._cold_sections = []
        self._doc = doc

    def _unbuilt(self) -> list[str]:
        """The fields of a cache-loaded index not built yet (empty once all are)."""
        return [name for name in _LAZY if name not in self.__dict__]

    def _build_row_of(self) -> None:
        """The id -> row lookup of a cache-loaded index (on first use)."""
        cold = self._cold
        if cold is None or "_row_of" in self.__dict__:
            return
        ids = self._ids if isinstance(self._ids, list) else self._ids.tolist()
        self._ids = ids
        rows = listed(cold.row_of)
        self._row_of = dict(zip(map(ids.__getitem__, rows), rows, strict=True))

    def _build_file_rows(self) -> None:
        """Each log's rows, of a cache-loaded index (on first use)."""
        cold = self._cold
        if cold is None or "_file_rows" in self.__dict__:
            return
        file_rows: dict[str, list[int]] = {}
        at = 0
        rows = listed(cold.file_rows)
        for path, size in zip(cold.file_paths, cold.file_sizes, strict=True):
            file_rows[path] = list(rows[at : at + size])
            at += size
        self._file_rows = file_rows

    def _build_claims(self) -> None:
        """Which records MEMORY.md's bullets claim, of a cache-loaded index (on first
        use)."""
        cold = self._cold
        if cold is None or "_claimed" in self.__dict__:
            return
        cats, contents, claimed = self._cats, self._contents, listed(cold.claimed)
        other = cold.claimed_texts
        # A record claims only a bullet of its own expiry: the key's is the row's.
        keys = list(
            zip(
                map(cats.__getitem__, claimed),
                (
                    contents[row] if (text := other.get(at)) is None else text
                    for at, row in enumerate(claimed)
                ),
                map(self._expires.__getitem__, claimed),
                strict=True,
            )
        )
        self._claimed = dict(zip(claimed, keys, strict=True))
        self._n_claimed = Counter(keys)

    def _build_timeline(self) -> None:
        """The time order of log rows, of a cache-loaded index (on first use)."""
        cold = self._cold
        if cold is None or "_tl_row" in self.__dict__:
            return
        rows = listed(cold.tl_row)
        stamps = gather(self._created, rows) if cold.tl_stamp is None else cold.tl_stamp
        self._tl_stamp, self._tl_row = stamps, array("q", rows)  # (a copy: it grows)

    def _build_fact_counts(self) -> None:
        """How many bullets hold each (category, text), of a cache-loaded index."""
        if self._cold is None or "_fact_counts" in self.__dict__:
            return
        doc = self._doc
        self._fact_counts = Counter(fact_keys(doc.sections))


class _Columns:
    """The columns and row lists of a stored :meth:`IndexState.state`, decoded (each
    row list checked to be below the number of rows ``n``; :meth:`fit` checks the
    rest). The timeline's stamps are None when they are to be taken from ``created``."""

    __slots__ = (
        "_bits",
        "_blobs",
        "_n",
        "_runs",
        "claimed",
        "claimed_texts",
        "codes",
        "created",
        "expires",
        "file_rows",
        "file_sizes",
        "flags",
        "importance",
        "row_of",
        "tl_row",
        "tl_stamp",
    )

    def __init__(self, encoded: Any, blobs: dict[str, bytes | memoryview], n: int) -> None:
        runs, fill = encoded["runs"], encoded["expires"]
        bits = encoded.get("bits", {})  # (not written before row lists as bit sets)
        if (
            type(runs) is not list
            or type(bits) is not dict
            or not (fill is None or type(fill) is int)
        ):
            raise ValueError("bad encodings")
        self._runs, self._bits, self._blobs, self._n = runs, bits, blobs, n
        rows_of = self.rows_of
        codes = blobs.get("cat_codes")  # one byte a row (before: "cats", four)
        self.codes: Sequence[int] = as_array("I", blobs["cats"]) if codes is None else codes
        self.created = as_array("q", blobs["created"])
        self.expires = as_array("q", blobs["expires"]) if fill is None else array("q", [fill]) * n
        self.tl_row = rows_of("tl_row")
        self.tl_stamp = None if encoded["tl_stamp"] is True else as_array("q", blobs["tl_stamp"])
        self.importance = array("d")
        self.importance.frombytes(blobs["importance"])
        self.flags = bytearray(blobs["flags"])
        self.row_of, self.claimed = rows_of("row_of"), rows_of("claimed")
        self.file_sizes, self.file_rows = as_array("q", blobs["file_sizes"]), rows_of("file_rows")
        self.claimed_texts = _claim_texts(blobs, len(self.claimed))

    def rows_of(self, name: str) -> RowList:
        """The stored row list ``name``, every row checked to be below ``n``."""
        return rows_of(self._blobs[name], name in self._runs, self._bits.get(name), self._n)

    def fit(self, n: int) -> bool:
        """Whether the columns are of ``n`` rows and the other parts agree."""
        return (
            len(self.codes)
            == len(self.created)
            == len(self.expires)
            == len(self.importance)
            == len(self.flags)
            == n
            and (self.tl_stamp is None or len(self.tl_stamp) == len(self.tl_row))
            and min(self.file_sizes, default=0) >= 0
            and sum(self.file_sizes) == len(self.file_rows)
        )


def _claim_texts(blobs: dict[str, bytes | memoryview], n_claimed: int) -> dict[int, str]:
    """The texts of claims that are not their rows' contents, by place in the claimed
    rows (``ValueError`` when they do not fit)."""
    if "claimed_other" in blobs:
        pairs = orjson.loads(blobs["claimed_other"])
        if type(pairs) is not list:
            raise ValueError("bad claim texts")
        other = {}
        for at, text in pairs:
            if type(at) is not int or not 0 <= at < n_claimed or type(text) is not str:
                raise ValueError("bad claim texts")
            other[at] = text
        return other
    texts = orjson.loads(blobs["claimed_texts"])  # as written before: one per claim
    if type(texts) is not list or len(texts) != n_claimed:
        raise ValueError("bad claim texts")
    if set(map(type, texts)) - {str, type(None)}:
        raise ValueError("bad claim texts")
    return {at: text for at, text in enumerate(texts) if text is not None}


def _categories(names: list[str], codes: Sequence[int]) -> list[str]:
    """The category column of ``codes`` (``IndexError``: a code out of range)."""
    if len(codes) < 2:  # (one key: itemgetter gives the value itself)
        return [names[code] for code in codes]
    return list(operator.itemgetter(*codes)(names))


def _expiries(facts: Sequence[Fact]) -> list[str | None] | None:
    """The expiry times of a section's facts as stored (None: none has one)."""
    if all(f.expires_at is None for f in facts):
        return None
    return [None if f.expires_at is None else f.expires_at.isoformat() for f in facts]


def _log_cursors(stored: Any) -> dict[str, FileCursor]:
    """The daily logs' cursors of a stored state, checked (``ValueError``)."""
    logs: dict[str, FileCursor] = {}
    for state in stored:
        cur = _cursor_of(state)
        if log_date(cur.info.path) is None:
            raise ValueError(f"not a log: {cur.info.path!r}")
        logs[cur.info.path] = cur
    return logs


def _doc_of(state: Any) -> MemoryDocument:
    """MEMORY.md's header fields of a stored state, its facts still to come."""
    doc = MemoryDocument(
        last_category=state["last_category"],
        header_count=int(state["header_count"]),
        invalid_lines=int(state["invalid_lines"]),
    )
    if doc.last_category is not None and type(doc.last_category) is not str:
        raise ValueError("bad MEMORY.md state")
    return doc


def _waiting_rows(stored: Any, n: int, field: str) -> dict[Key, list[int]]:
    """The ``pending`` or ``md_rows`` of a stored state: ``[category, text, expiry,
    rows]`` entries, every row checked to be below ``n`` (``ValueError``)."""
    out: dict[Key, list[int]] = {}
    for cat, text, expires, rows in stored:
        if (
            type(cat) is not str
            or type(text) is not str
            or type(expires) is not int
            or not rows
            or set(map(type, rows)) != {int}
            or min(rows) < 0
            or max(rows) >= n
        ):
            raise ValueError(f"bad {field} entry")
        out[(cat, text, expires)] = rows
    return out


def _ranker_of(meta: Any, blobs: dict[str, bytes | memoryview], n: int, n_live: int) -> BM25Index:
    """The stored BM25 index, checked to rank the ``n_live`` live rows of ``n``."""
    ranker = BM25Index.from_state(
        meta, {k[5:]: v for k, v in blobs.items() if k.startswith("bm25_")}
    )
    # Every row not removed was ranked when the state was taken.
    if ranker.key_space > n or len(ranker) != n_live:
        raise ValueError("ranked rows do not match the rows")
    return ranker


def _cursor_state(cur: FileCursor) -> list[Any]:
    info = cur.info
    return [
        info.path,
        info.size,
        info.mtime,
        info.token,
        cur.parsed_upto,
        cur.tail.hex(),
        cur.complete,
        cur.crc,
    ]


def _cursor_of(state: list[Any]) -> FileCursor:
    path, size, mtime, token, upto, tail, complete, crc = state
    # MEMORY.md or a daily log, exactly (cheaper than the general path check).
    if (
        not isinstance(path, str)
        or not isinstance(token, str)
        or not path.isascii()
        or (path != MEMORY_FILE and path != f"logs/{log_date(path)}.jsonl")
    ):
        raise ValueError("bad cursor")
    info = FileInfo(path, int(size), None if mtime is None else float(mtime), token)
    tail_bytes = bytes.fromhex(tail)
    if not 0 <= int(upto) <= info.size or len(tail_bytes) > min(TAIL, int(upto)):
        raise ValueError("bad cursor offsets")
    if crc is not None and (type(crc) is not int or not 0 <= crc < 1 << 32):
        raise ValueError("bad cursor checksum")
    return FileCursor(info, int(upto), tail_bytes, bool(complete), crc)


def _checked_sections(
    stored: Any, n: int
) -> list[tuple[str, list[str | int], list[datetime | None] | None]]:
    """MEMORY.md's sections as the index cache stores them, checked: texts or row
    numbers below ``n``, expiry times parsed (``ValueError`` otherwise)."""
    if type(stored) is not list:
        raise ValueError("bad MEMORY.md sections")
    out: list[tuple[str, list[str | int], list[datetime | None] | None]] = []
    for section in stored:
        cat, texts, expiries = section
        if type(cat) is not str or type(texts) is not list or set(map(type, texts)) - {str, int}:
            raise ValueError("bad MEMORY.md section")
        refs = [t for t in texts if type(t) is int]
        if refs and (min(refs) < 0 or max(refs) >= n):
            raise ValueError("bad MEMORY.md section")
        times: list[datetime | None] | None = None
        if expiries is not None:
            if type(expiries) is not list or len(expiries) != len(texts):
                raise ValueError("bad MEMORY.md expiries")
            times = [None if exp is None else parse_timestamp(exp) for exp in expiries]
        out.append((cat, texts, times))
    return out


def _checked_md(stored: Any, n_refs: int) -> list[_MdSection]:
    """MEMORY.md's sections as the index cache stores them (``md_sections``), checked:
    each ``[category, bullets, texts, places, expiries]``, the places distinct and
    below ``bullets``, the row numbers of the other bullets all of the ``n_refs`` of
    ``md_refs`` (checked when read), expiry times parsed (``ValueError`` otherwise)."""
    if type(stored) is not list:
        raise ValueError("bad MEMORY.md sections")
    out: list[_MdSection] = []
    refs = 0
    for section in stored:
        cat, count, texts, places, expiries = section
        if (
            type(cat) is not str
            or type(count) is not int
            or count < 0
            or type(texts) is not list
            or type(places) is not list
            or len(places) != len(texts)
            or set(map(type, texts)) - {str}
            or set(map(type, places)) - {int}
            or len(set(places)) != len(places)
            or (places and (min(places) < 0 or max(places) >= count))
        ):
            raise ValueError("bad MEMORY.md section")
        times: list[datetime | None] | None = None
        if expiries is not None:
            if type(expiries) is not list or len(expiries) != count:
                raise ValueError("bad MEMORY.md expiries")
            times = [None if exp is None else parse_timestamp(exp) for exp in expiries]
        refs += count - len(texts)
        out.append((cat, count, texts, places, times))
    if refs != n_refs:
        raise ValueError("bad MEMORY.md sections")
    return out


def _md_sections(
    stored: list[_MdSection], refs: RowList
) -> list[tuple[str, list[str | int], list[datetime | None] | None]]:
    """Checked ``md_sections`` and ``md_refs`` in the form :func:`_checked_sections`
    gives: each bullet a text or the row whose content it is."""
    rows = iter(listed(refs))
    out: list[tuple[str, list[str | int], list[datetime | None] | None]] = []
    for cat, count, texts, places, times in stored:
        own = dict(zip(places, texts, strict=True))
        bullets: list[str | int] = [own[at] if at in own else next(rows) for at in range(count)]
        out.append((cat, bullets, times))
    return out
