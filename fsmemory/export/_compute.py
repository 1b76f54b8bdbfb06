"""The Arrow compute kernels the export calls, each through ``call_function``.

Every wrapper of ``pyarrow.compute`` ends in ``call_function(name, args, options)``,
and so do the functions here, with the same default options. ``call_function`` and the
option classes come from :func:`fsmemory._speedups.arrow_compute`: from
``pyarrow._compute`` (which spares the process ``pyarrow.compute``'s generated
wrappers), or from the public ``pyarrow.compute`` when ``FSMEMORY_NO_SPEEDUPS=1``; both
are the same objects, so the results are too. Methods of Arrow objects that would
import ``pyarrow.compute`` on first use (``Array.cast``, ``RecordBatch.filter``,
``Array.is_valid`` ...) have their counterpart here.

Kernels whose names are Python keywords or builtins end in ``_`` (``and_``, ``any_``,
``filter_``, ``sum_``), so the module never shadows a builtin.

Import this module only where pyarrow is needed: it imports pyarrow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from fsmemory._speedups import arrow_compute

_arrow = arrow_compute()
call_function: Callable[..., Any] = _arrow.call_function
CastOptions: Any = _arrow.CastOptions
IndexOptions: Any = _arrow.IndexOptions
SplitPatternOptions: Any = _arrow.SplitPatternOptions
StrftimeOptions: Any = _arrow.StrftimeOptions

__all__ = [
    "add",
    "add_checked",
    "and_",
    "any_",
    "binary_length",
    "cast",
    "coalesce",
    "cumulative_sum",
    "equal",
    "fill_null",
    "fill_null_forward",
    "filter_",
    "greater",
    "greater_equal",
    "if_else",
    "index",
    "invert",
    "is_inf",
    "is_nan",
    "is_null",
    "is_valid",
    "less_equal",
    "max_element_wise",
    "min_element_wise",
    "multiply",
    "or_",
    "or_kleene",
    "split_pattern",
    "strftime",
    "subtract",
    "sum_",
    "take",
    "trunc",
    "unique",
    "utf8_trim_whitespace",
]


def _kernel(name: str) -> Callable[..., Any]:
    """The kernel ``name`` with its default options (Python values become scalars)."""

    def call(*args: Any) -> Any:
        return call_function(name, list(args))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Arrow's ``{name}`` kernel with its default options."
    return call


add = _kernel("add")
add_checked = _kernel("add_checked")
and_ = _kernel("and")
any_ = _kernel("any")
binary_length = _kernel("binary_length")
coalesce = _kernel("coalesce")
cumulative_sum = _kernel("cumulative_sum")
equal = _kernel("equal")
fill_null_forward = _kernel("fill_null_forward")
filter_ = _kernel("filter")
greater = _kernel("greater")
greater_equal = _kernel("greater_equal")
if_else = _kernel("if_else")
invert = _kernel("invert")
is_inf = _kernel("is_inf")
is_nan = _kernel("is_nan")
is_null = _kernel("is_null")
is_valid = _kernel("is_valid")
less_equal = _kernel("less_equal")
max_element_wise = _kernel("max_element_wise")
min_element_wise = _kernel("min_element_wise")
multiply = _kernel("multiply")
or_ = _kernel("or")
or_kleene = _kernel("or_kleene")
subtract = _kernel("subtract")
sum_ = _kernel("sum")
take = _kernel("take")
trunc = _kernel("trunc")
unique = _kernel("unique")
utf8_trim_whitespace = _kernel("utf8_trim_whitespace")


def cast(values: Any, target: Any) -> Any:
    """``values`` as type ``target``, checked for overflow and truncation (``safe``)."""
    return call_function("cast", [values], CastOptions.safe(target))


def _scalar_of(values: Any, value: Any) -> Any:
    """``value`` as a scalar of the type of ``values``."""
    if not isinstance(value, pa.Scalar):
        return pa.scalar(value, type=values.type)
    if value.type != values.type:
        return pa.scalar(value.as_py(), type=values.type)
    return value


def fill_null(values: Any, fill: Any) -> Any:
    """``values`` with every null replaced by ``fill`` (of ``values``' type)."""
    return call_function("coalesce", [values, _scalar_of(values, fill)])


def index(values: Any, value: Any) -> Any:
    """The position of the first ``value`` in ``values`` (-1 when absent), a scalar."""
    return call_function("index", [values], IndexOptions(_scalar_of(values, value)))


def split_pattern(values: Any, pattern: str) -> Any:
    """Each string of ``values`` split on the literal ``pattern`` (a list array)."""
    return call_function("split_pattern", [values], SplitPatternOptions(pattern))


def strftime(values: Any, format: str) -> Any:
    """Timestamps formatted by ``format`` (the C locale)."""
    return call_function("strftime", [values], StrftimeOptions(format))
