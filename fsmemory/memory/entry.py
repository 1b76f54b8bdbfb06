"""The value types of the knowledge memory: entries, log records, ids and timestamps."""

from __future__ import annotations

import hashlib
import math
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "KnowledgeEntry",
    "format_timestamp",
    "new_entry_id",
    "parse_timestamp",
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

        Raises:
            ValueError: a required field is missing or has the wrong type.
        """
        content = record.get("content")
        if not isinstance(content, str):
            raise ValueError("record has no string 'content'")
        category = record.get("category", "general")
        if not isinstance(category, str):
            raise ValueError("record 'category' is not a string")
        entry_id = record.get("id") or default_id
        if not isinstance(entry_id, str) or not entry_id:
            raise ValueError("record has no id")
        stamp = record.get("timestamp")
        created = parse_timestamp(stamp) if isinstance(stamp, str) else datetime.now(tz=UTC)
        importance = record.get("importance", 0.5)
        if isinstance(importance, bool) or not isinstance(importance, int | float):
            importance = 0.5
        importance = float(importance)
        if math.isnan(importance):
            importance = 0.5
        ttl = record.get("ttl_days")
        ttl_days = (
            float(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) else None
        )
        expires_raw = record.get("expires_at")
        expires: datetime | None = None
        if isinstance(expires_raw, str):
            expires = parse_timestamp(expires_raw)
        elif ttl_days is not None:
            expires = created + timedelta(days=ttl_days)
        metadata = record.get("metadata")
        return cls(
            id=entry_id,
            content=content,
            category=category,
            persistent=bool(record.get("persistent", False)),
            importance=min(1.0, max(0.0, importance)),
            ttl_days=ttl_days,
            created_at=created,
            metadata=metadata if isinstance(metadata, dict) else {},
            expires_at=expires,
        )
