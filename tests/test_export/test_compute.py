"""The export's compute shim gives what ``pyarrow.compute`` gives, on the inputs and
options the export uses (nulls, empty arrays, scalars given as Python values)."""

from __future__ import annotations

from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")

from fsmemory.export import _compute  # noqa: E402 - after the skip without pyarrow

TS = pa.timestamp("us", tz="UTC")


def _cases() -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    days = pa.array(["2026-03-10", None, "2026-03-12", "2026-03-12"])
    floats = pa.array([0.25, None, float("nan"), float("inf"), -3.5])
    mask = pa.array([True, None, False, True])
    stamps = pa.array([0, None, 1_700_000_000_000_000], pa.int64())
    batch = pa.record_batch({"day": days, "n": pa.array([1, 2, 3, 4])})
    return [
        ("cast", (stamps, TS), {}),
        ("cast", (pa.array(["2026-03-10T10:00:00Z", None]), TS), {}),
        ("cast", (mask, pa.int64()), {}),
        ("fill_null", (days, "2026-01-01"), {}),
        ("fill_null", (floats, 0.5), {}),
        ("fill_null", (pa.array([None, True], pa.bool_()), False), {}),
        ("index", (pa.array([False, False, True, True]), True), {}),
        ("index", (pa.array([False, False]), True), {}),
        ("split_pattern", (pa.array(["a\nb\n\nc"]), "\n"), {}),
        ("strftime", (pa.array([0, None], pa.int64()).cast(TS), "%Y-%m-%d"), {}),
        ("filter", (batch, mask), {}),
        ("filter", (days, mask), {}),
        ("unique", (days,), {}),
        ("take", (days, pa.array([3, None, 0], pa.int64())), {}),
        ("cumulative_sum", (pa.array([1, 0, 1, 1], pa.int64()),), {}),
        ("sum", (pa.array([1, None, 2], pa.int64()),), {}),
        ("any", (mask,), {}),
        ("equal", (days, "2026-03-12"), {}),
        ("is_nan", (floats,), {}),
        ("is_inf", (floats,), {}),
        ("is_null", (floats,), {}),
        ("is_valid", (floats,), {}),
        ("max_element_wise", (floats, 0.0), {}),
        ("min_element_wise", (floats, 1.0), {}),
        ("trunc", (floats,), {}),
        ("multiply", (floats, 86_400_000_000), {}),
        ("if_else", (mask, days, pa.nulls(4, pa.string())), {}),
        ("or_kleene", (mask, pa.array([False, True, None, False])), {}),
        ("utf8_trim_whitespace", (pa.array([" a ", "\tb", None]),), {}),
        ("binary_length", (pa.array(["ab", "", None]),), {}),
    ]


#: Our names of kernels named like a builtin.
_OURS = {"any": "any_", "filter": "filter_", "sum": "sum_"}


@pytest.mark.parametrize(("name", "args", "kwargs"), _cases())
def test_same_result_as_pyarrow_compute(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    ours = getattr(_compute, _OURS.get(name, name))(*args, **kwargs)
    theirs = getattr(pc, name)(*args, **kwargs)
    assert type(ours) is type(theirs)
    assert _described(ours) == _described(theirs)


def _described(value: Any) -> tuple[str, str]:
    """Type and values (``repr`` keeps NaN equal to itself, unlike ``equals``)."""
    kind = str(value.schema if isinstance(value, pa.RecordBatch) else value.type)
    values = value.to_pylist() if hasattr(value, "to_pylist") else value.as_py()
    return kind, repr(values)


def test_no_builtin_is_shadowed() -> None:
    import builtins

    assert not set(_compute.__all__) & set(dir(builtins))


def test_kernels_named_with_an_underscore() -> None:
    a, b = pa.array([True, False, None]), pa.array([True, True, False])
    assert _compute.and_(a, b).equals(pc.and_(a, b))
    assert _compute.or_(a, b).equals(pc.or_(a, b))
    assert _compute.invert(a).equals(pc.invert(a))


def test_a_lossy_cast_is_refused_as_by_pyarrow_compute() -> None:
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(pa.array([1.5]), pa.int64())
    with pytest.raises(pa.ArrowInvalid):
        _compute.cast(pa.array([1.5]), pa.int64())
