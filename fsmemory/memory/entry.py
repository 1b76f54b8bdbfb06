"""The value types of the knowledge memory: entries, log records, ids and timestamps."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fsmemory import _jsonutil
from fsmemory._records import NamedTuple

__all__ = [
    "KnowledgeEntry",
    "Record",
    "RememberResult",
    "datetime_of",
    "decode_record",
    "forget_records",
    "format_timestamp",
    "new_entry_id",
    "number_or_none",
    "parse_timestamp",
    "stable_id",
    "us_of",
]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_entry_id() -> str:
    """A 26-character, time-ordered, globally unique id (ULID layout: 48-bit
    millisecond timestamp + 80 random bits, Crockford base32)."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id derived from ``parts`` (same inputs, same id, any process)."""
    import hashlib  # not needed on most paths; costs a few ms to import

    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=10)
    return f"{prefix}-{digest.hexdigest()}"


def format_timestamp(moment: datetime) -> str:
    """ISO-8601 UTC with microseconds and a ``Z`` suffix: ``2026-03-13T10:15:00.123456Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO-8601 timestamp; naive values are taken as UTC.

    Raises:
        ValueError: not a timestamp.
    """
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    if value.tzinfo is UTC:
        return value
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    """One remembered fact.

    Attributes:
        id: unique id (``remember()`` returns it). Facts found only in ``MEMORY.md``
            (hand-written, or whose daily log was pruned) have a content-derived id
            starting with ``md-``.
        content: the text exactly as remembered.
        category: the category it was filed under.
        persistent: also kept in ``MEMORY.md`` (survives log pruning).
        importance: 0.0 - 1.0; higher is kept longer and ranked first.
        ttl_days: lifetime in days, or None for no expiry.
        created_at: when it was remembered (aware UTC datetime).
        metadata: caller-supplied JSON-compatible data.
    """

    id: str
    content: str
    category: str
    persistent: bool = False
    importance: float = 0.5
    ttl_days: float | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(tz=UTC))
    metadata: dict[str, Any] = field(default_factory=dict)
    expires_at: datetime | None = None

    @classmethod
    def new(
        cls,
        content: str,
        category: str,
        persistent: bool,
        importance: float,
        ttl_days: float | None,
        metadata: dict[str, Any],
        now: datetime,
    ) -> KnowledgeEntry:
        """A new entry created at ``now`` with a fresh id (arguments already checked)."""
        return cls(
            id=new_entry_id(),
            content=content,
            category=category,
            persistent=persistent,
            importance=importance,
            ttl_days=ttl_days,
            created_at=now,
            metadata=metadata,
            expires_at=None if ttl_days is None else now + timedelta(days=ttl_days),
        )

    @property
    def is_expired(self) -> bool:
        """True once the entry's TTL has run out."""
        return self.expired_at(datetime.now(tz=UTC))

    def expired_at(self, now: datetime) -> bool:
        """True when the entry is expired at ``now``."""
        return self.expires_at is not None and now >= self.expires_at

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict (the daily-log record of this entry)."""
        record: dict[str, Any] = {
            "id": self.id,
            "timestamp": format_timestamp(self.created_at),
            "category": self.category,
            "content": self.content,
            "persistent": self.persistent,
            "importance": self.importance,
            "ttl_days": self.ttl_days,
            "expires_at": None if self.expires_at is None else format_timestamp(self.expires_at),
        }
        if self.metadata:
            record["metadata"] = self.metadata
        return record

    @classmethod
    def from_dict(cls, record: dict[str, Any], *, default_id: str = "") -> KnowledgeEntry:
        """Build an entry from a log record (tolerates the seed's minimal records).

        The rules are :func:`decode_record`'s; a record without a timestamp is dated now.

        Raises:
            ValueError: a required field is missing or has the wrong type.
        """
        return decode_record(record, default_id=default_id).entry()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_US_PER_DAY = 86_400_000_000
#: The microsecond range of datetime (years 1 - 9999), relative to the epoch.
_MIN_US = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _US
_MAX_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // _US


def us_of(moment: datetime) -> int:
    """Microseconds since the epoch of an aware datetime."""
    return (moment - _EPOCH) // _US


def datetime_of(us: int) -> datetime:
    """The aware UTC datetime ``us`` microseconds after the epoch (exact)."""
    return _EPOCH + timedelta(microseconds=us)


class RememberResult(NamedTuple):
    """The outcome of :meth:`KnowledgeMemory.try_remember` (an immutable record).

    Attributes:
        id: the new entry's id, or ``""`` when it was not stored.
        stored: whether the entry was written.
        rejected_by: why not: the rejecting pre-save hook's name, or ``"duplicate"``.
    """

    id: str
    stored: bool
    rejected_by: str | None = None


class Record(NamedTuple):
    """One daily-log memory record, normalized (see :func:`decode_record`).

    Times are microseconds since the Unix epoch (UTC); ``created_us`` is None when the
    record has no timestamp, ``expires_us`` when it never expires.
    """

    id: str
    content: str
    category: str
    persistent: bool
    importance: float
    ttl_days: float | None
    created_us: int | None
    expires_us: int | None
    metadata: dict[str, Any] | None

    def entry(self) -> KnowledgeEntry:
        """The :class:`KnowledgeEntry` of this record (dated now without a timestamp)."""
        created = datetime.now(tz=UTC) if self.created_us is None else datetime_of(self.created_us)
        return KnowledgeEntry(
            id=self.id,
            content=self.content,
            category=self.category,
            persistent=self.persistent,
            importance=self.importance,
            ttl_days=self.ttl_days,
            created_at=created,
            metadata=self.metadata if self.metadata is not None else {},
            expires_at=None if self.expires_us is None else datetime_of(self.expires_us),
        )


def number_or_none(value: Any) -> float | None:
    """``value`` as a float when it is a JSON number (not a bool, not an overflow)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _timestamp_us(text: str, field_name: str) -> int:
    try:
        return us_of(parse_timestamp(text))
    except (ValueError, OverflowError):
        raise ValueError(f"invalid {field_name} {text[:40]!r}") from None


def forget_records(ids: Sequence[str], reason: str, now: datetime) -> bytes:
    """The log lines that forget ``ids`` (``{"op": "forget", ...}``, one per id)."""
    stamp = format_timestamp(now)
    return b"".join(
        _jsonutil.dumps_line({"op": "forget", "id": i, "timestamp": stamp, "reason": reason})
        for i in ids
    )


def decode_record(record: Mapping[str, Any], *, default_id: str = "") -> Record:
    """Normalize one memory record of a daily log (not a ``forget`` record).

    The one set of rules every reader of the logs applies (the memory's index and
    export's reference parser): ``content`` must be a string; ``category`` defaults to
    ``"general"`` (JSON null counts as absent; a non-string one is invalid); a missing or
    empty ``id`` becomes ``default_id`` (a non-string one is invalid); ``persistent`` is
    ``bool(value)``; ``importance`` is a number clamped to [0, 1] (0.5 when absent, NaN
    or not a number); ``ttl_days`` is a number or None; a string ``timestamp`` or
    ``expires_at`` must be ISO-8601; a missing ``expires_at`` is ``timestamp + ttl_days``
    (None when that falls outside years 1-9999); ``metadata`` is kept when an object.

    Args:
        record: the parsed JSON object of one line.
        default_id: the id of a record without one (readers derive it from the file
            and the line's offset: ``stable_id("log", path, str(offset))``).

    Raises:
        ValueError: the record is invalid (the message says why).
    """
    get = record.get
    content = get("content")
    if type(content) is not str:
        raise ValueError("record has no string 'content'")
    category = get("category")
    if category is None:
        category = "general"
    elif type(category) is not str:
        raise ValueError("record 'category' is not a string")
    entry_id = get("id") or default_id
    if type(entry_id) is not str or not entry_id:
        raise ValueError("record has no string id")
    stamp = get("timestamp")
    created = _timestamp_us(stamp, "timestamp") if type(stamp) is str else None
    importance = get("importance")
    if type(importance) is not float:
        importance = number_or_none(importance)
    if importance is None or importance != importance:
        importance = 0.5
    importance = 0.0 if importance < 0.0 else 1.0 if importance > 1.0 else importance
    ttl = get("ttl_days")
    if ttl is not None:
        ttl = number_or_none(ttl)
    expires_raw = get("expires_at")
    expires: int | None = None
    if type(expires_raw) is str:
        expires = _timestamp_us(expires_raw, "expires_at")
    elif ttl is not None and ttl == ttl:
        base = us_of(datetime.now(tz=UTC)) if created is None else created
        if abs(ttl) < 1e300:
            expires = base + round(ttl * _US_PER_DAY)
            if not _MIN_US <= expires <= _MAX_US:
                expires = None
    metadata = get("metadata")
    return Record(
        entry_id,
        content,
        category,
        bool(get("persistent", False)),
        importance,
        ttl,
        created,
        expires,
        metadata if type(metadata) is dict else None,
    )
