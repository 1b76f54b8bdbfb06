"""The records an :class:`~fsmemory.snapshot.FsspecBackend` head keeps, and a fold's
arithmetic on them.

A head names its base and records the deltas folded into it (``"folded"``), when each
object it retired was retired (``"retired"``) and when each recorded name was first known
gone (``"gone"``). :func:`read_records` reads them from a head document;
:func:`plan_fold` works out what a fold writes into the next head and what it may delete
(see :class:`~fsmemory.snapshot.FsspecBackend` for why the records exist). Pure
functions of a head and a time: nothing here touches storage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsmemory.snapshot.backends import SnapshotState

__all__: list[str] = []

HEAD_FORMAT = "fsmemory-snapshot"
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_DELTA = "delta/"


def format_time(seconds: float) -> str:
    """Epoch seconds as the head's UTC time text."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime(_TIME_FORMAT)


def parse_retired(value: object, now: float) -> dict[str, float] | None:
    """A head's ``"retired"`` (or ``"gone"``) record as epoch seconds per name.

    None when the head has no record (or not a JSON object): every stale object then
    counts as retired now. An entry whose time cannot be read counts as retired now too:
    the safe side, which only delays its deletion.
    """
    if not isinstance(value, dict):
        return None
    retired: dict[str, float] = {}
    for name, text in value.items():
        if not isinstance(name, str):
            continue
        try:
            stamp = datetime.strptime(str(text), _TIME_FORMAT).replace(tzinfo=UTC)
            retired[name] = stamp.timestamp()
        except (ValueError, OverflowError, OSError):
            retired[name] = now
    return retired


@dataclass(frozen=True, slots=True)
class HeadRecords:
    """What a head document says beside its format: see :class:`SnapshotState` for the
    meaning of each field (None/empty: no head, or a head that holds a seed archive)."""

    base_name: str | None = None
    folded: tuple[str, ...] = ()
    retired: dict[str, float] | None = None
    gone_at: dict[str, float] | None = None


def read_records(head: Mapping[str, Any] | None, now: float) -> HeadRecords:
    """The records of a head document (``now`` dates entries whose time is unreadable)."""
    if head is None:
        return HeadRecords()
    return HeadRecords(
        base_name=head.get("base") or None,
        folded=tuple(head.get("folded") or ()),
        retired=parse_retired(head.get("retired"), now),
        gone_at=parse_retired(head.get("gone"), now),
    )


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What a fold that writes base ``base_name`` at time ``now`` records and deletes.

    Attributes:
        base_name: the new base's object name.
        stale: the objects the expected state knew to be stale (the new base aside).
        ripe: the stale objects retired at least the grace ago: deleted after the swap.
        later: the objects this fold retires now (the deltas it folds, the replaced base).
        retired: the next head's ``"retired"`` record (object -> epoch seconds).
        record: the next head's ``"folded"`` record.
        gone_at: the next head's ``"gone"`` record (name -> epoch seconds).
    """

    base_name: str
    stale: list[str]
    ripe: list[str]
    later: list[str]
    retired: dict[str, float]
    record: tuple[str, ...]
    gone_at: dict[str, float]

    def document(self, updated_at: float) -> dict[str, Any]:
        """The next head document."""
        return {
            "format": HEAD_FORMAT,
            "version": 2,
            "base": self.base_name,
            "folded": list(self.record),
            "retired": {s: format_time(t) for s, t in sorted(self.retired.items())},
            "gone": {n: format_time(t) for n, t in sorted(self.gone_at.items())},
            "updated_at": format_time(updated_at),
        }

    def left_after(self, removed: bool) -> tuple[tuple[str, ...], frozenset[str]]:
        """(objects still stale, delta names known gone) once the swap succeeded and the
        delete of :attr:`ripe` did (``removed``) or did not report every object gone."""
        gone: frozenset[str] = frozenset()
        if removed:
            gone = frozenset(s[len(_DELTA) :] for s in self.ripe if s.startswith(_DELTA))
        ripe = set(self.ripe)
        left = [s for s in self.stale if s not in ripe or not removed]
        left += [s for s in self.later if s not in left]
        return tuple(left), gone


def plan_fold(
    expected: SnapshotState,
    folded: Sequence[str],
    base_name: str,
    now: float,
    grace: float,
) -> FoldPlan:
    """Plan a fold of ``folded`` on top of ``expected`` into a new base ``base_name``.

    Args:
        expected: the state the fold swaps the head against.
        folded: the delta names the new base includes.
        base_name: the new base's object name.
        now: the time of the fold (epoch seconds).
        grace: seconds a retired object is kept, and a gone name stays recorded.
    """
    stale = [s for s in dict.fromkeys(expected.stale) if s != base_name]
    ripe, retired = _retirements(expected, stale, now, grace)
    later = [f"{_DELTA}{n}" for n in dict.fromkeys(folded)]
    if expected.base_name and expected.base_name != base_name:
        later.append(expected.base_name)
    retired.update(dict.fromkeys(later, now))
    record, gone_at = _folded_record(expected, folded, now, grace)
    return FoldPlan(base_name, stale, ripe, later, retired, record, gone_at)


def _retirements(
    expected: SnapshotState, stale: Sequence[str], now: float, grace: float
) -> tuple[list[str], dict[str, float]]:
    """(stale objects ripe for deletion, retirements still within the grace)."""
    if expected.retired is None:
        # No record in the head (an older fsmemory wrote it): retired just now.
        when = dict.fromkeys(stale, now)
    else:
        when = {s: min(t, now) for s, t in expected.retired.items()}
    ripe = [s for s in stale if now - when.get(s, now - grace) >= grace]
    retired = {s: t for s, t in when.items() if now - t < grace}
    return ripe, retired


def _folded_record(
    expected: SnapshotState, folded: Sequence[str], now: float, grace: float
) -> tuple[tuple[str, ...], dict[str, float]]:
    """The next head's ``"folded"`` record and its ``"gone"`` dates.

    A name known gone stays recorded ``grace`` seconds more: a reader's listing younger
    than that, which may still show the object, skips it by the record.
    """
    gone_at = {n: min(t, now) for n, t in (expected.gone_at or {}).items()}
    gone_at.update({n: now for n in expected.gone if n not in gone_at})
    forgotten = {n for n, t in gone_at.items() if now - t >= grace}
    kept = [n for n in expected.folded if n not in forgotten]
    known = set(kept)
    gone_at = {n: t for n, t in gone_at.items() if n in known and n not in forgotten}
    record = tuple(kept + [n for n in dict.fromkeys(folded) if n not in known])
    return record, gone_at
