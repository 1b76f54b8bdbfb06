"""How the index cache stores row lists and MEMORY.md's bullets, and caches written in
the layout before (still read).

Row lists of ascending stretches are stored as bit sets, checked in bulk on load; the
bullets that are their records' contents are one row list; a claim's text is stored
only where it is not its row's content; the timeline is built on first use.
"""

from __future__ import annotations

import importlib.util
import random
from array import array
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache, _index_state, _rowlists
from fsmemory.memory._claims import expiry_us
from fsmemory.memory._index import MemoryIndex

from .conftest import FakeClock
from .test_index_cache import _answers, _cache, _seed


def _listed(data: bytes, layout: Any, n: int) -> list[int]:
    return list(_rowlists.listed(_rowlists.rows_of(data, False, layout, n)))


@pytest.mark.parametrize(
    ("rows", "as_bits"),
    [
        ([5], False),  # a few rows: plain is smaller
        (list(range(0, 40, 3)), False),
        (list(range(0, 3000, 3)) + list(range(1, 3000, 3)), True),  # two stretches
        (sorted(random.Random(1).sample(range(5000), 2000)), True),
        ([7, 7, 7, 9] * 300, False),  # repeated rows: a stretch each, too many
        (random.Random(2).sample(range(5000), 2000), False),  # no order
    ],
)
def test_row_bits_give_back_the_rows_in_their_order(rows: list[int], as_bits: bool) -> None:
    packed = _rowlists.bits_of(array("I", rows))
    assert (packed is not None) == as_bits
    if packed is None:
        return
    layout, data = packed
    assert len(data) < 2 * len(rows)
    assert _listed(data, layout, max(rows) + 1) == rows
    with pytest.raises(ValueError, match="out of range"):
        _rowlists.rows_of(data, False, layout, max(rows))  # a row past the end


def test_the_bit_table_is_built_on_first_use_and_once() -> None:
    """Importing the module builds no table of byte bits; reading a bit set builds it,
    and every later read uses the same one: byte b's flags are its bits, lowest first."""
    spec = importlib.util.find_spec(_rowlists.__name__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    assert fresh._bit_flags.cache_info().currsize == 0
    layout, data = fresh.bits_of(array("I", range(0, 3000, 3))) or ([], b"")
    assert list(fresh.listed(fresh.rows_of(data, False, layout, 3000))) == [*range(0, 3000, 3)]
    assert fresh._bit_flags.cache_info()[:2] == (0, 1)  # built by the read, once
    table = fresh._bit_flags()
    assert fresh._bit_flags() is table and fresh._bit_flags.cache_info()[:2] == (2, 1)
    assert len(table) == 256
    for b, flags in enumerate(table):
        assert flags == bytes(int(bit) for bit in reversed(f"{b:08b}"))


def test_row_bits_that_do_not_hold_together_are_refused() -> None:
    layout, data = _rowlists.bits_of(array("I", range(0, 1000, 2))) or ([], b"")
    assert layout == [[0, 500, 125]]
    bad = [
        (data, [[0, 499, 125]]),  # a count that is not the bits'
        (data, [[0, 500, 124], [992, 1, 1]]),  # sizes that cut the bits elsewhere
        (data + b"\x01", layout),  # bytes left over
        (data[:-1], layout),  # too few
        (data, [[-1, 500, 125]]),
        (data, [[0.0, 500, 125]]),
        (data, {"claimed": layout}),
    ]
    for blob, lay in bad:
        with pytest.raises(ValueError):
            _rowlists.rows_of(blob, False, lay, 1000)
    with pytest.raises(ValueError):  # a list named both runs and bits
        _rowlists.rows_of(data, True, layout, 1000)


def _written_before(index: MemoryIndex) -> bytes:
    """The cache file of ``index`` in the previous layout: no bit sets, category codes
    of four bytes, MEMORY.md's sections and every claim's text as JSON."""
    meta, blobs = index.state()
    encoded = meta["encoded"]
    for name, layout in encoded.pop("bits").items():
        blobs[name] = array("I", _listed(blobs[name], layout, index.rows)).tobytes()
    encoded["runs"] = [name for name in encoded["runs"] if name != "md_refs"]
    blobs["cats"] = array("I", list(blobs.pop("cat_codes"))).tobytes()
    for name in ("md_sections", "md_refs", "claimed_other"):
        del blobs[name]
    contents = index._contents
    same = {key: row for row, key in index._claimed.items() if key[1] == contents[row]}
    blobs["sections"] = orjson.dumps(
        [
            [
                cat,
                [same.get((cat, f.text, expiry_us(f)), f.text) for f in facts],
                _index_state._expiries(facts),
            ]
            for cat, facts in index.document.sections.items()
        ]
    )
    blobs["claimed_texts"] = orjson.dumps(
        [None if key[1] == contents[row] else key[1] for row, key in index._claimed.items()]
    )
    return _index_cache._assemble(orjson.dumps(meta), blobs)


def _folder(tmp_path: Path, clock: FakeClock) -> tuple[Path, KnowledgeMemory]:
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock)
    _seed(km, clock=clock)
    # A bullet that is not its record's content, and one no record claims.
    km.root.write("MEMORY.md", km.root.read_bytes("MEMORY.md") + b"- a hand-written note\n")
    km.recall("tea")
    return folder, km


def test_a_cache_in_the_previous_layout_is_still_read(tmp_path: Path, clock: FakeClock) -> None:
    folder, km = _folder(tmp_path, clock)
    index = km._index
    meta, _ = _index_cache.decode(_cache(km) or b"")
    assert "claimed" in meta["encoded"]["bits"]  # (the seed's claims: a bit set)
    old = _written_before(index)
    assert old != _cache(km)
    loaded = MemoryIndex()
    loaded.load_state(*_index_cache.decode(old))
    assert "_tl_row" in loaded._unbuilt()
    # Built in full, it states what the index it was written from states.
    assert _index_cache.encode(loaded) == _index_cache.encode(index)
    assert loaded.document.sections == index.document.sections
    # A fresh instance on it loads it and answers as one that reads no cache.
    expected = _answers(KnowledgeMemory(folder, clock=clock, index_cache=False))
    km.root.write_cache(_index_cache.CACHE_NAME, old)
    fresh = KnowledgeMemory(folder, clock=clock)
    assert _answers(fresh) == expected
    assert fresh._cache_loaded


def test_hostile_parts_of_the_previous_layout_are_refused(tmp_path: Path, clock: FakeClock) -> None:
    _, km = _folder(tmp_path, clock)
    meta, blobs = _index_cache.decode(_written_before(km._index))
    bad = [
        dict(blobs, claimed_texts=b"[1,"),
        dict(blobs, claimed_texts=b"[]"),  # fewer texts than claims
        dict(blobs, sections=b"[[1, [2], null]]"),
        dict(blobs, sections=b'[["work", [10000000], null]]'),
        dict(blobs, sections=b'[["work", ["x"], ["not a time"]]]'),
        dict(blobs, cats=b"\x09\x00\x00\x00" * (len(blobs["cats"]) // 4)),
    ]
    MemoryIndex().load_state(meta, blobs)  # the parts as they are do load
    for parts in bad:
        index = MemoryIndex()
        with pytest.raises(ValueError, match="unusable index state"):
            index.load_state(meta, parts)
        assert index.rows == 0


def test_the_timeline_is_built_on_first_use(tmp_path: Path, clock: FakeClock) -> None:
    _, km = _folder(tmp_path, clock)
    index = km._index
    loaded = MemoryIndex()
    loaded.load_state(*_index_cache.decode(_cache(km) or b""))
    assert {"_tl_row", "_tl_stamp"} <= set(loaded._unbuilt())
    assert loaded._tl_row == index._tl_row
    assert loaded._tl_stamp == index._tl_stamp
    assert not {"_tl_row", "_tl_stamp"} & set(loaded._unbuilt())
