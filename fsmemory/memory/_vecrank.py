"""Pure ranking arithmetic of hybrid recall (NumPy arrays in, arrays out): the context
an entry gains from those written next to it, standardisation, and small helpers of
:mod:`fsmemory.memory._vectors`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

__all__ = [
    "CONTEXT_GAP",
    "CONTEXT_SPAN",
    "CONTEXT_WEIGHT",
    "always",
    "context_scores",
    "grown",
    "standardise",
]

# Context (see context_scores): an entry gains this share of the best fused score among
# the live entries written up to CONTEXT_SPAN places before or after it, no more than
# CONTEXT_GAP apart in time.
CONTEXT_WEIGHT = 0.25
CONTEXT_SPAN = 2
CONTEXT_GAP = timedelta(hours=1)


def context_scores(
    np: Any,
    fused: Any,
    order: Any,
    stamps: Any,
    span: int = CONTEXT_SPAN,
    gap: timedelta = CONTEXT_GAP,
) -> Any:
    """Per row of ``fused``, the best positive score among the rows written up to
    ``span`` places before or after it in ``order`` and at most ``gap`` apart (0 when
    there is none; rows not in ``order`` get 0 and pass nothing on).

    Args:
        np: the NumPy module.
        fused: a score per vector row.
        order: vector rows in the order their entries were written.
        stamps: the creation time of each row of ``order`` (microseconds), ascending.
        span: how many places before and after count.
        gap: the longest time between two entries that still count.
    """
    gap_us = gap // timedelta(microseconds=1)
    scores = fused[order]
    best = np.zeros_like(scores)  # the floor: a negative score passes nothing on
    for k in range(1, min(span, len(order) - 1) + 1):
        close = stamps[k:] - stamps[:-k] <= gap_us
        np.maximum(best[:-k], np.where(close, scores[k:], 0.0), out=best[:-k])
        np.maximum(best[k:], np.where(close, scores[:-k], 0.0), out=best[k:])
    out = np.zeros_like(fused)
    out[order] = best
    return out


def grown(np: Any, arr: Any, size: int) -> Any:
    """``arr`` extended with -1 to at least ``size`` items (capacity doubles)."""
    if len(arr) >= size:
        return arr
    out = np.full(max(size, 2 * len(arr), 64), -1, dtype=np.intp)
    out[: len(arr)] = arr
    return out


def always(_key: str) -> bool:
    """Accept every key (the acceptor of rows already filtered)."""
    return True


def standardise(np: Any, x: Any) -> Any:
    """``x`` less its mean, over its standard deviation (zeros when ``x`` is flat)."""
    if not x.size:
        return x
    std = float(x.std())
    if std == 0.0:
        return np.zeros_like(x)
    return (x - float(x.mean())) / std
