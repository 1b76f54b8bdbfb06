"""Which log records MEMORY.md's bullets claim: the one home of that rule.

A persistent entry lives in two places: its log record and a bullet in MEMORY.md. A
person may delete the bullet (the fact is then forgotten) or add one (a new fact with a
content-derived ``md-`` id). Records and bullets are matched as multisets by
``(category, escaped text, expiry)`` (:func:`fact_key`):

* a persistent record is live while a bullet claims it; one no bullet claims is hidden;
* a record claims only a bullet of its own expiry: a fact remembered with a TTL and
  again without one are two keys, so an expired record never takes the bullet of the
  fact remembered again after its own was tidied away, and a person who removes a
  bullet's expiry comment keeps the fact (as a MEMORY.md fact) past the record's expiry;
* the newest records (by creation time, then id) hold the claims: a record whose bullet
  was deleted never takes the bullet of the same fact remembered again later, and every
  process makes the same claims whatever order it read the files in;
* a bullet no record claims is an entry of its own (an ``md-`` id from its category,
  text, occurrence and expiry), created at :data:`MD_CREATED`, the Unix epoch: MEMORY.md
  records no time, and a value derived from the files alone is the same in every
  process, with or without the index cache.

:class:`Claims` is a part of :class:`fsmemory.memory._index.MemoryIndex` (a mixin): it
keeps these counts balanced as records and bullets come and go; the index owns the rows.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence

from fsmemory.memory._fields import IndexFields
from fsmemory.memory.entry import stable_id, us_of
from fsmemory.memory.markdown import Fact, escape_line

__all__ = [
    "DEAD",
    "HIDDEN",
    "MD_CREATED",
    "NEVER",
    "PERSISTENT",
    "Claims",
    "Key",
    "expiry_us",
    "fact_key",
    "fact_keys",
]

#: Row flags of the index: a persistent entry; a removed row (forgotten, its file
#: dropped, or a replaced md- entry); a persistent record no bullet claims.
PERSISTENT, DEAD, HIDDEN = 1, 2, 4
#: ``expires_us`` of an entry without expiry.
NEVER = (1 << 63) - 1
#: ``created_at`` of a MEMORY.md-only fact, in microseconds since the epoch.
MD_CREATED = 0

#: (category, escaped text, expiry in microseconds since the epoch or :data:`NEVER`)
Key = tuple[str, str, int]


def fact_key(category: str, content: str, expires_us: int = NEVER) -> Key:
    """The key matching a persistent record to its MEMORY.md bullet (``expires_us``:
    the expiry in microseconds since the epoch, the default for none)."""
    return (category, escape_line(content.strip()), expires_us)


def expiry_us(fact: Fact) -> int:
    """The expiry of a bullet as a key holds it."""
    return NEVER if fact.expires_at is None else us_of(fact.expires_at)


def fact_keys(sections: Mapping[str, Sequence[Fact]]) -> Iterator[Key]:
    """The key of every bullet of ``sections``."""
    for cat, facts in sections.items():
        for text, expires in facts:
            yield (cat, text, NEVER if expires is None else us_of(expires))


class Claims(IndexFields):
    """The bullet/record multiset of :class:`~fsmemory.memory._index.MemoryIndex`.

    It holds no state of its own: its fields are the index's (a cache-loaded index
    builds some of them on first use), and so are the row methods it calls (all
    declared by :class:`~fsmemory.memory._fields.IndexFields`).
    """

    # -- claims ------------------------------------------------------------------------------
    def _age(self, row: int) -> tuple[int, str]:
        """The order in which records hold claims: creation time, then id (the same in
        every process, whatever order it read the files in)."""
        return (self._created[row], self._row_id(row))

    def _set_hidden(self, row: int, hidden: bool) -> None:
        flags = self._flags
        if hidden and not flags[row] & HIDDEN:
            flags[row] |= HIDDEN
            self._n_hidden += 1
        elif not hidden and flags[row] & HIDDEN:
            flags[row] &= ~HIDDEN
            self._n_hidden -= 1

    def _claim(self, row: int, key: Key) -> None:
        self._pending[key].remove(row)
        self._claimed[row] = key
        self._n_claimed[key] += 1
        self._set_hidden(row, False)

    def _unclaim(self, row: int, key: Key) -> None:
        del self._claimed[row]
        self._n_claimed[key] -= 1
        self._pending.setdefault(key, []).append(row)
        self._set_hidden(row, True)

    def _claim_fresh(self) -> None:
        """A first document over records no bullet claimed yet (a cold start): claim the
        newest waiting records of each bullet directly; what is left (more bullets than
        records) is balanced key by key."""
        pending, claimed, n_claimed = self._pending, self._claimed, self._n_claimed
        flags = self._flags
        simple: list[Key] = []  # one bullet, one record: the common case, done in bulk
        simple_rows: list[int] = []
        for key, bullets in self._fact_counts.items():
            waiting = pending.pop(key, None)
            if bullets == 1 and waiting is not None and len(waiting) == 1:
                simple.append(key)
                simple_rows.append(waiting[0])
                continue
            if waiting is None:
                self._rebalance(key)
                continue
            if len(waiting) > bullets:
                waiting = sorted(waiting, key=self._age, reverse=True)
                pending[key] = waiting[bullets:]
                waiting = waiting[:bullets]
            for row in waiting:
                claimed[row] = key
                flags[row] ^= HIDDEN  # waiting rows are hidden
            self._n_hidden -= len(waiting)
            n_claimed[key] = len(waiting)
            if len(waiting) < bullets:
                self._rebalance(key)
        claimed.update(zip(simple_rows, simple, strict=True))
        n_claimed.update(dict.fromkeys(simple, 1))
        for row in simple_rows:
            flags[row] ^= HIDDEN
        self._n_hidden -= len(simple_rows)

    def _rebalance(self, key: Key) -> None:
        """Make claims + md- entries for ``key`` equal the number of bullets, the
        newest records holding the claims."""
        waiting = self._pending.setdefault(key, [])
        md = self._md_rows.setdefault(key, [])
        bullets = self._fact_counts[key]
        n_claimed = self._n_claimed
        age = self._age
        while n_claimed[key] < bullets and waiting:
            self._claim(max(waiting, key=age), key)
        if n_claimed[key] > bullets or (waiting and n_claimed[key]):
            held = sorted((r for r, k in self._claimed.items() if k == key), key=age)
            while n_claimed[key] > bullets:
                self._unclaim(held.pop(0), key)
            # A waiting record newer than a claiming one takes its bullet (a record
            # whose bullet was deleted before the fact was remembered again).
            while waiting and held:
                newest = max(waiting, key=age)
                if age(newest) <= age(held[0]):
                    break
                self._unclaim(held.pop(0), key)
                self._claim(newest, key)
                bisect.insort(held, newest, key=age)
        while md and n_claimed[key] + len(md) > bullets:
            self._kill(md.pop())
        while n_claimed[key] + len(md) < bullets:
            self._add_md_entry(key, len(md))
        if not md:
            self._md_rows.pop(key, None)
        if not waiting:
            self._pending.pop(key, None)
        if not n_claimed[key]:
            n_claimed.pop(key, None)

    def _add_md_entry(self, key: Key, occurrence: int) -> None:
        category, text, expires = key
        fact = self._find_fact(key)
        parts = [category, text, str(occurrence)]
        if expires != NEVER:  # a bullet of the same text without expiry has its own ids
            parts.append(str(expires))
        row = self._new_row(
            stable_id("md", *parts),
            fact.content if fact else text,
            category,
            MD_CREATED,
            None if expires == NEVER else expires,
            0.5,
            True,
        )
        self._md_rows.setdefault(key, []).append(row)

    def _find_fact(self, key: Key) -> Fact | None:
        for fact in self._doc.sections.get(key[0], ()):
            if fact.text == key[1] and expiry_us(fact) == key[2]:
                return fact
        return None
