"""The block parsers: the fast (pyarrow.json) path gives exactly the reference rows."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsmemory import _jsonutil
from fsmemory.export._parse import EventParser, MemoryParser
from fsmemory.memory.entry import stable_id

from .conftest import lines, record

MISSING = object()

FIELD_VALUES: dict[str, list[Any]] = {
    "id": [MISSING, None, "", "01ABC", 5, True],
    "timestamp": [
        MISSING, None, "2026-03-13T10:15:00.123456Z", "2026-03-13T10:15:00+02:00",
        "2026-03-13", "2026-03-13 10:15", "not a time", 1_700_000_000,
        "2026-03-13T10:15:00.123456789Z", "20260313T101500Z",
    ],
    "category": [MISSING, None, "facts", "", 3],
    "content": [MISSING, None, "text", "uni \u2603 \U0001f600 \"q\" \\ back", 1, ""],
    "persistent": [MISSING, None, True, False, 1, "yes"],
    "importance": [MISSING, None, 0.3, 1, 5, -2.5, True, "0.5", 10**30],
    "ttl_days": [MISSING, None, 7, 0.5, -1, 1e200, 4e6, "x", True],
    "expires_at": [MISSING, None, "2026-04-01T00:00:00Z", "bad", 5],
    "metadata": [MISSING, None, {}, {"a": 1}, {"nested": {"metadata": 2}}, [1], "x",
                 {"s": "}\"metadata\":{"}],
    "op": [MISSING, MISSING, MISSING, "forget", "remember", "other", 1, None],
    "reason": [MISSING, "evicted", 3],
    "extra": [MISSING, MISSING, {"k": [1, {"z": None}]}, "NaN-free text"],
}  # fmt: skip


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, values in FIELD_VALUES.items():
        value = draw(st.sampled_from(values))
        if value is not MISSING:
            out[name] = value
    if draw(st.booleans()):
        items = list(out.items())
        draw(st.randoms()).shuffle(items)
        out = dict(items)
    return out


TYPED_VALUES: dict[str, list[Any]] = {
    "id": ["01ABC", "01ABC", "01XYZ", MISSING, None, ""],
    "timestamp": [
        "2026-03-13T10:15:00.123456Z", "2026-03-13T10:15:00+02:00", "2026-03-13",
        MISSING, None,
    ],
    "category": ["facts", "facts", "", MISSING, None],
    "content": ["text", "uni \u2603 \U0001f600", "", None],
    "persistent": [True, False, MISSING, None],
    "importance": [0.3, 1, 5, -2.5, MISSING, None],
    "ttl_days": [MISSING, None, 7, 0.5, -1, 4e6, 1e12],
    "expires_at": [MISSING, None, "2026-04-01T00:00:00Z"],
    "op": [MISSING, MISSING, MISSING, MISSING, "forget", "remember", "other", None],
    "reason": [MISSING, "evicted", None],
    "metadata": [MISSING, MISSING, None, {}, {"a": 1, "b": [1, {"c": None}]}, [1], "x"],
}  # fmt: skip


@st.composite
def typed_records(draw: st.DrawFn) -> dict[str, Any]:
    """Records whose values all have the types pyarrow expects (the fast path's domain)."""
    out: dict[str, Any] = {}
    for name, values in TYPED_VALUES.items():
        value = draw(st.sampled_from(values))
        if value is not MISSING:
            out[name] = value
    return out


FAST_SEEN: list[bool] = []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(typed_records(), min_size=1, max_size=6))
def test_fast_path_matches_reference_on_typed_records(recs: list[dict[str, Any]]) -> None:
    fast, ref = _both(lines(recs), first_line=3, base=50)
    assert _rows(fast) == _rows(ref)
    assert fast.corrupt == ref.corrupt
    FAST_SEEN.append(fast.fast)


def test_typed_records_exercised_the_fast_path() -> None:
    if FAST_SEEN:  # the property test above ran first (same module)
        assert any(FAST_SEEN) and not all(FAST_SEEN)


def _both(data: bytes, first_line: int = 1, base: int = 0) -> tuple[Any, Any]:
    fast = MemoryParser("r", "logs/2026-03-13.jsonl").parse(data, first_line, base)
    ref = MemoryParser("r", "logs/2026-03-13.jsonl", fast=False).parse(data, first_line, base)
    return fast, ref


def _rows(parsed: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = parsed.batch.to_pylist()
    return rows


def _stdlib_lines(recs: list[dict[str, Any]], ascii_only: bool) -> bytes:
    """JSONL as Python's json module writes it (big ints; \\u escapes when ascii_only)."""
    return b"".join((json.dumps(r, ensure_ascii=ascii_only) + "\n").encode() for r in recs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(), min_size=1, max_size=8), st.booleans(), st.booleans())
def test_fast_path_matches_reference(
    recs: list[dict[str, Any]], uniform: bool, ascii_only: bool
) -> None:
    if uniform:  # a block every fsmemory writer could produce: the fast path must take it
        recs = [record(f"fact {i}", n=i, metadata={"i": i}) if i % 2 else record("x", n=i)
                for i in range(len(recs))]  # fmt: skip
        data = lines(recs)
    else:
        data = _stdlib_lines(recs, ascii_only)
    fast, ref = _both(data, first_line=7, base=100)
    assert _rows(fast) == _rows(ref)
    assert fast.corrupt == ref.corrupt
    assert fast.lines == ref.lines == len(recs)
    if uniform:
        assert fast.fast


def test_normalization_rules() -> None:
    recs = [
        {"content": "seed style", "category": "facts", "timestamp": "2026-03-13T10:00:00Z"},
        record("ttl", n=1, ttl_days=2, importance=7),
        {"op": "forget", "id": "x1", "timestamp": "2026-03-13T11:00:00Z", "reason": "evicted"},
        record("meta", n=3, metadata={"b": [1, 2], "a": "z"}),
    ]
    fast, ref = _both(lines(recs), base=10)
    rows = _rows(ref)
    assert _rows(fast) == rows
    seed, ttl, forget, meta = rows
    offset = 10
    assert seed["id"] == stable_id("log", "logs/2026-03-13.jsonl", str(offset))
    assert (seed["op"], seed["importance"], seed["persistent"]) == ("remember", 0.5, False)
    assert seed["timestamp"] == datetime(2026, 3, 13, 10, tzinfo=UTC)
    assert ttl["importance"] == 1.0
    assert ttl["expires_at"] == ttl["timestamp"] + timedelta(days=2)
    assert forget["op"] == "forget" and forget["id"] == "x1" and forget["reason"] == "evicted"
    assert forget["content"] is None and forget["category"] is None
    assert forget["importance"] is None and forget["persistent"] is None
    assert _jsonutil.loads(meta["metadata"]) == {"b": [1, 2], "a": "z"}
    assert [r["line"] for r in rows] == [1, 2, 3, 4]


def test_corrupt_lines_are_counted_with_reasons() -> None:
    data = b"".join(
        [
            lines([record("ok", n=0)]),
            b"{not json\n",
            b'{"content": "bad utf8 \xff"}\n',
            b"[1, 2]\n",
            b'{"category": "x"}\n',
            b'{"op": "forget"}\n',
            b"\n   \n",
            b'{"content": "fine"}\n',
            b'{"content": "x", "timestamp": "yesterday"}\n',
        ]
    )
    fast, ref = _both(data)
    assert _rows(fast) == _rows(ref)
    assert [n for n, _ in ref.corrupt] == [2, 3, 4, 5, 6, 10]
    assert "invalid JSON" in ref.corrupt[0][1]
    assert "not a JSON object" in ref.corrupt[2][1]
    assert [r["line"] for r in _rows(ref)] == [1, 9]
    assert ref.lines == 10


def test_nan_and_huge_numbers_match_reference() -> None:
    data = (
        b'{"content":"a","importance":NaN}\n'
        b'{"content":"b","importance":Infinity}\n'
        b'{"content":"c","ttl_days":1e300,"timestamp":"2026-01-01T00:00:00Z"}\n'
    )
    fast, ref = _both(data)
    assert _rows(fast) == _rows(ref)
    assert fast.corrupt == ref.corrupt
    assert [n for n, _ in ref.corrupt] == [1, 2]
    assert _rows(ref)[0]["expires_at"] is None


def test_event_parser_paths_agree_and_fill_days() -> None:
    events: list[dict[str, Any]] = [
        {"type": "user", "timestamp": "2026-03-13T23:59:59Z", "text": "hi"},
        {"type": "tool", "payload": {"x": [1, 2]}},
        {"type": 5, "timestamp": 1773446400.5},
        {"timestamp": "2026-03-15T00:00:00+01:00"},
    ]
    data = lines(list(events))
    out = []
    for fast in (True, False):
        parser = EventParser(
            "", "log/s1.jsonl", carry_date=None, default_date="2026-01-01", fast=fast
        )
        out.append(parser.parse(data, 1, 0))
    fast_p, ref_p = out
    assert _rows(fast_p) == _rows(ref_p)
    assert fast_p.dates.to_pylist() == ref_p.dates.to_pylist()
    rows = _rows(ref_p)
    assert [r["stream_id"] for r in rows] == ["s1"] * 4
    assert [r["type"] for r in rows] == ["user", "tool", None, None]
    assert [_jsonutil.loads(r["data"]) for r in rows] == events
    assert ref_p.dates.to_pylist() == ["2026-03-13", "2026-03-13", "2026-03-14", "2026-03-14"]
    assert rows[2]["timestamp"] == datetime(2026, 3, 14, 0, 0, 0, 500000, tzinfo=UTC)


def test_event_parser_fast_path_is_used_for_clean_blocks() -> None:
    events = [{"type": "m", "timestamp": f"2026-03-13T10:00:{i:02d}Z", "n": i} for i in range(50)]
    parser = EventParser("", "log/s.jsonl", carry_date=None, default_date="2026-01-01")
    parsed = parser.parse(lines(events), 1, 0)
    assert parsed.fast and parsed.batch.num_rows == 50 and not parsed.corrupt


def test_event_window() -> None:
    events = [{"type": "e", "timestamp": f"2026-03-{d:02d}T12:00:00Z"} for d in (9, 10, 11, 12)]
    data = lines(events)
    for fast in (True, False):
        parser = EventParser(
            "", "log/s.jsonl", carry_date=None, default_date="2026-01-01",
            since="2026-03-10", until="2026-03-11", fast=fast,
        )  # fmt: skip
        parsed = parser.parse(data, 1, 0)
        assert parsed.out_of_window == 1
        assert [r["line"] for r in _rows(parsed)] == [2, 3]
        first_len = len(_jsonutil.dumps_line(events[0]))
        assert parsed.stop == (3 * first_len, 4)


def test_importance_clamped_and_nan_free() -> None:
    rows = _rows(_both(lines([record("a", importance=-3), record("b", n=1, importance=0.25)]))[0])
    assert [r["importance"] for r in rows] == [0.0, 0.25]
    assert not any(math.isnan(r["importance"]) for r in rows)


@pytest.mark.parametrize(
    "line",
    [
        b'{"content":"a","metadata":{"x":1},"id":"later"}\n',
        b'{"content":"a","nested":{"metadata":{"x":1}}}\n',
        b'{"content":"a", "metadata" : {"x": 1} }\n',
        b'{"content":"a","metadata":{"x":1},"metadata":{"y":2}}\n',
        b'{"content":"metadata","category":"metadata"}\n',
        b'{"content":"a","x\\"metadata":{"x":1}}\n',
        b'{"content":"a","metadata":null}\n',
        b'{"content":"a","metadata":null,"x":{"metadata":{"y":1}}}\n',
        b'{"content":"a","x":{"metadata":null},"metadata":{"y":1}}\n',
    ],
)
def test_unusual_metadata_layouts(line: bytes) -> None:
    fast, ref = _both(lines([record("first")]) + line)
    assert _rows(fast) == _rows(ref)
    expected = _jsonutil.loads(line).get("metadata")
    got = _rows(ref)[1]["metadata"]
    if isinstance(expected, dict):
        assert _jsonutil.loads(got) == expected
    else:
        assert got is None


def test_event_with_nan_literal_is_corrupt_on_both_paths() -> None:
    data = b'{"type":"a","x":NaN}\n{"type":"b","text":"Information: NaN"}\n'
    out = []
    for fast in (True, False):
        parser = EventParser("", "log/s.jsonl", carry_date=None, default_date="2026-01-01",
                             fast=fast)  # fmt: skip
        out.append(parser.parse(data, 1, 0))
    assert _rows(out[0]) == _rows(out[1])
    assert [n for n, _ in out[0].corrupt] == [1]
    assert [r["type"] for r in _rows(out[0])] == ["b"]
