"""Near-duplicate detection with an exact LCS (Indel) similarity.

Metric
======

``similarity(a, b) = 2 * LCS(a, b) / (len(a) + len(b))``, and ``1.0`` when both strings
are empty.  ``LCS`` is the length of the longest common subsequence of the two strings,
counted in code points.  ``1 - similarity`` is the normalized Indel distance (edit
distance with insertions and deletions only).

Why it is at least as strict as difflib
=======================================

``difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()`` is ``2 * M / T`` with
``T = len(a) + len(b)`` and ``M`` the total size of its matching blocks.  The blocks
do not overlap and come in the same order in both strings, so joined together they
form a common subsequence: ``M <= LCS``.  Both ratios are computed with the same
floating-point expression ``2.0 * n / T``, which never decreases when ``n`` grows, so
``difflib_ratio >= threshold`` implies ``similarity >= threshold`` for every
threshold: any text difflib would reject as a near-duplicate is rejected here too.
The converse does not hold; texts that share most characters in order but not in long
blocks score higher here than in difflib.

How it stays fast
=================

Deciding ``similarity >= threshold`` is the same as deciding ``LCS >= need``, where
``need`` is the smallest integer with ``2.0 * need / T >= threshold``.  Candidates go
through cheap upper bounds first, each of which is an upper bound of LCS:

1. exact duplicates, found with a hash lookup;
2. the length bound ``LCS <= min(len(a), len(b))``;
3. the character-count bound ``LCS <= sum over characters c of min(count_a(c),
   count_b(c))``.

Candidates that pass are checked with the bit-parallel LCS algorithm of Allison and
Dix / Hyyrö (Python big integers as bit vectors): one loop step per character of one
string, each step four big-integer operations on a vector as wide as the other string.
The loop stops early as soon as an upper bound proves ``LCS < need``: after ``i`` rows
(characters of ``b``), every common subsequence crosses row ``i`` at some column ``j``
and gains at most ``min(len(b) - i, len(a) - j)`` more matches; since
``LCS(a[:j], b[:i])`` grows by at most one per column, the sum is largest at
``j = i + len(a) - len(b)``, hence ``LCS <= LCS(a[:j], b[:i]) + len(b) - i``.  For
unrelated text, or word shuffles of the same text, this drops below ``need`` after a
fifth to a third of the rows.  The loop also stops as soon as ``LCS(a, b[:i]) >= need``.

When many stored texts pass the cheap bounds (a window of same-distribution text, the
adversarial case), their bit vectors are packed side by side into one integer with
guard bits between them, and the loop runs over the characters of the query once for
all of them; lanes are dropped as their bound fails and the last few survivors finish
on their own.  A stored text's masks are built once and cached.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from itertools import repeat

from fsmemory.errors import InvalidInputError

__all__ = ["NearDuplicateIndex", "check_threshold", "is_near_duplicate", "similarity"]

# Rows between two checks of the early-exit bound once a bound can first succeed.
_CHECK_EVERY = 16
# Rows between two truncations of the bit vector in the unbounded LCS loop.
_TRIM_EVERY = 256
# Packed checks: the minimum number of candidates packed into one vector (packing
# pays off from two, as cached lanes spare building the query's masks), the rows
# between two checks of the lanes, the zero bits on top of each lane (also the rows
# between two clean-ups of those bits), and when the survivors are finished one by
# one: fewer than four, or at most 1/8 of the batch.
_PACK_MIN = 2
_PACKED_CHECK_EVERY = 32
_GUARD_BITS = 8
_FINISH_ALONE_BELOW = 4
_PACKED_MIN_SHARE = 8
# Memory caps of the packed path: texts longer than this, or with more distinct
# characters, are checked one by one (their cached lanes would cost length x distinct
# bits); queries with more distinct characters are not packed (one packed mask each);
# a packed vector holds at most this many bytes of lanes, further lanes go to another
# batch.
_PACK_MAX_LENGTH = 4096
_PACK_MAX_CHARS = 128
_PACK_MAX_BYTES = 1 << 17


def check_threshold(threshold: float) -> float:
    """Validate a similarity threshold and return it as a float.

    Raises:
        InvalidInputError: If ``threshold`` is not a real number in ``[0, 1]``.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InvalidInputError(f"threshold must be a number, got {type(threshold).__name__}")
    value = float(threshold)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise InvalidInputError(f"threshold must be between 0 and 1, got {threshold!r}")
    return value


def _required(total: int, threshold: float) -> int:
    """Smallest LCS length ``n`` with ``2.0 * n / total >= threshold`` (``total > 0``)."""
    need = max(0, math.floor(threshold * total / 2) - 1)
    while 2.0 * need / total < threshold:
        need += 1
    return need


def _char_masks(text: str) -> dict[str, int]:
    """Map each character to a bit mask of its positions in ``text`` (bit i = text[i])."""
    positions: dict[str, list[int]] = {}
    for index, ch in enumerate(text):
        found = positions.get(ch)
        if found is None:
            positions[ch] = [index]
        else:
            found.append(index)
    masks: dict[str, int] = {}
    for ch, where in positions.items():
        mask = 0
        for index in where:
            mask |= 1 << index
        masks[ch] = mask
    return masks


def _lcs(masks: dict[str, int], width: int, rows: str) -> int:
    """LCS length of ``rows`` and the string of length ``width`` that ``masks`` encodes."""
    full = (1 << width) - 1
    get = masks.get
    vector = full
    # Bits above ``width`` collect carries but never flow back down (additions carry
    # upwards only), so they are trimmed now and then instead of on every row.
    for start in range(0, len(rows), _TRIM_EVERY):
        for ch in rows[start : start + _TRIM_EVERY]:
            match = vector & get(ch, 0)
            vector = (vector + match) | (vector ^ match)
        vector &= full
    return width - vector.bit_count()


def _lcs_reaches(
    masks: dict[str, int],
    width: int,
    rows: str,
    need: int,
    *,
    done: int = 0,
    vector: int | None = None,
) -> bool:
    """Whether the LCS of ``rows`` and the masked string reaches ``need`` (``0 < need``).

    ``masks`` encodes a string of length ``width``; ``need`` must not exceed
    ``min(width, len(rows))``.  The loop stops as soon as the bound described in the
    module docstring settles the answer.  ``done`` and ``vector`` resume a computation
    whose first ``done`` rows are already folded into ``vector``.
    """
    height = len(rows)
    shift = width - height
    full = (1 << width) - 1
    get = masks.get
    if vector is None:
        vector = full
    # Before row ``height - need + 1`` the bound is at least ``need`` whatever the data;
    # checking from there on also keeps ``column`` below strictly positive.
    stop = max(height - need + 1, min(done + _CHECK_EVERY, height))
    while True:
        for ch in rows[done:stop]:
            match = vector & get(ch, 0)
            vector = (vector + match) | (vector ^ match)
        done = stop
        vector &= full
        if done >= height:
            return width - vector.bit_count() >= need
        if width - vector.bit_count() >= need:
            return True
        column = done + shift  # 0 < column < width here
        reached = column - (vector & ((1 << column) - 1)).bit_count()
        if reached + height - done < need:
            return False
        stop = min(done + _CHECK_EVERY, height)


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (in code points)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    return _lcs(_char_masks(a), len(a), b)


def similarity(a: str, b: str) -> float:
    """Indel similarity ``2 * LCS(a, b) / (len(a) + len(b))`` of two strings.

    ``LCS`` is the length of the longest common subsequence (code points).  The value is
    in ``[0, 1]``: ``1.0`` exactly when ``a == b`` (including two empty strings) and
    ``0.0`` when the strings share no character.  It is never below
    ``difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()``.

    Runs in ``O(len(a) * len(b) / w)`` big-integer word operations.
    """
    total = len(a) + len(b)
    if a == b:
        return 1.0
    return 2.0 * lcs_length(a, b) / total


class _Entry:
    """A stored text with what the bounds need, computed once.

    ``counts`` is built eagerly for cached entries.  The lane used when the entry is
    checked in a packed batch is built on first use and kept.
    """

    __slots__ = ("_lane", "counts", "length", "text")

    def __init__(self, text: str, *, count: bool = True) -> None:
        self.text = text
        self.length = len(text)
        self.counts: dict[str, int] | None = dict(Counter(text)) if count else None
        self._lane: _Lane | None = None

    @property
    def packable(self) -> bool:
        """Whether the entry may join a packed batch (cached and small enough)."""
        return (
            self.counts is not None
            and self.length <= _PACK_MAX_LENGTH
            and len(self.counts) <= _PACK_MAX_CHARS
        )

    @property
    def lane(self) -> _Lane:
        if self._lane is None:
            self._lane = _Lane(self.text)
        return self._lane


class _Lane:
    """An entry's bit masks as little-endian bytes, ready to be packed side by side.

    A lane is ``len(text)`` bits wide plus at least ``_GUARD_BITS`` zero bits on top,
    where the carries leaving the lane during a step land without reaching the next
    lane.
    """

    __slots__ = ("mask_bytes", "ones", "size", "zeros")

    def __init__(self, text: str) -> None:
        self.size = (len(text) + _GUARD_BITS) // 8 + 1
        self.mask_bytes = {
            ch: mask.to_bytes(self.size, "little") for ch, mask in _char_masks(text).items()
        }
        self.ones = ((1 << len(text)) - 1).to_bytes(self.size, "little")
        self.zeros = bytes(self.size)

    def masks(self) -> dict[str, int]:
        """The bit masks as integers, for finishing a lane on its own."""
        return {ch: int.from_bytes(raw, "little") for ch, raw in self.mask_bytes.items()}


class _Query:
    """The text being checked; its bit masks are built only if a candidate needs them."""

    __slots__ = ("_masks", "counts", "length", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.length = len(text)
        self.counts: dict[str, int] = dict(Counter(text))
        self._masks: dict[str, int] | None = None

    @property
    def masks(self) -> dict[str, int]:
        if self._masks is None:
            self._masks = _char_masks(self.text)
        return self._masks


def _counts_allow(query: _Query, entry: _Entry, need: int) -> bool:
    """Whether the character-count bound still allows ``LCS >= need``."""
    if entry.counts is not None:
        small, large = query.counts, entry.counts
        if len(small) > len(large):
            small, large = large, small
        common = 0
        for ch, count in small.items():
            other = large.get(ch)
            if other:
                common += count if count < other else other
        return common >= need
    # No cached counts: count only the query's characters, and stop as soon as more of
    # them are missing from the candidate than the threshold tolerates.
    spare = query.length - need
    text = entry.text
    for ch, count in query.counts.items():
        other = text.count(ch)
        if other < count:
            spare -= count - other
            if spare < 0:
                return False
    return True


def _screen(query: _Query, entry: _Entry, threshold: float) -> int:
    """Apply the cheap bounds: 0 rejects, -1 accepts, ``n > 0`` means "needs LCS >= n"."""
    total = query.length + entry.length
    if total == 0:
        return -1
    need = _required(total, threshold)
    if need == 0:
        return -1
    if need > min(query.length, entry.length):
        return 0
    if query.text == entry.text:
        return -1
    if not _counts_allow(query, entry, need):
        return 0
    return need


def _packed_first_match(query: _Query, batch: list[tuple[_Entry, int]]) -> _Entry | None:
    """Run the bit-parallel LCS of ``query`` against many entries at once.

    The entries' bit vectors sit side by side in one big integer (one lane each), and
    each step processes one character of the query for every lane, so the Python loop
    runs once per query character instead of once per character per entry.  Lanes are
    checked against the early-exit bound every ``_PACKED_CHECK_EVERY`` rows; once few
    are left, each survivor continues alone from its current state.
    """
    text, height = query.text, query.length
    entries = [entry for entry, _ in batch]
    needs = [need for _, need in batch]
    lanes = [entry.lane for entry in entries]
    offsets: list[int] = []
    total = 0
    for lane in lanes:
        offsets.append(total)
        total += lane.size
    tables = [lane.mask_bytes for lane in lanes]
    blanks = [lane.zeros for lane in lanes]
    packed: dict[str, int] = {}
    for ch in query.counts:
        pieces = map(dict.get, tables, repeat(ch, len(lanes)), blanks)
        packed[ch] = int.from_bytes(b"".join(pieces), "little")
    full = int.from_bytes(b"".join(lane.ones for lane in lanes), "little")
    vector = full
    alive = list(range(len(entries)))
    done = 0
    stop = max(min(height - need + 1 for need in needs), 1)
    while True:
        for start in range(done, stop, _GUARD_BITS):
            for ch in text[start : min(start + _GUARD_BITS, stop)]:
                match = vector & packed[ch]
                vector = (vector + match) | (vector ^ match)
            # Each row may push one carry into a lane's guard bits; clear them before
            # they could overflow into the next lane.
            vector &= full
        done = stop
        raw = vector.to_bytes(total, "little")
        survivors: list[tuple[int, int]] = []
        for index in alive:
            entry, need, offset = entries[index], needs[index], offsets[index]
            state = int.from_bytes(raw[offset : offset + lanes[index].size], "little")
            if entry.length - state.bit_count() >= need:
                return entry
            column = done + entry.length - height
            if 0 < column < entry.length:
                reached = column - (state & ((1 << column) - 1)).bit_count()
                if reached + height - done < need:
                    continue
            survivors.append((index, state))
        if done >= height or not survivors:
            return None
        if len(survivors) < _FINISH_ALONE_BELOW or len(survivors) * _PACKED_MIN_SHARE <= len(
            entries
        ):
            for index, state in survivors:
                entry = entries[index]
                masks = lanes[index].masks()
                if _lcs_reaches(masks, entry.length, text, needs[index], done=done, vector=state):
                    return entry
            return None
        alive = [index for index, _ in survivors]
        stop = min(done + _PACKED_CHECK_EVERY, height)


def _first_match(
    query: _Query, entries: Iterable[_Entry], threshold: float, *, pack: bool = True
) -> _Entry | None:
    """Return an entry whose similarity to ``query`` reaches ``threshold``, or ``None``."""
    pending: list[tuple[_Entry, int]] = []
    for entry in entries:
        need = _screen(query, entry, threshold)
        if need < 0:
            return entry
        if need:
            pending.append((entry, need))
    if pack and len(pending) >= _PACK_MIN and len(query.counts) <= _PACK_MAX_CHARS:
        alone: list[tuple[_Entry, int]] = []
        batch: list[tuple[_Entry, int]] = []
        size = 0
        for entry, need in pending:
            if not entry.packable:
                alone.append((entry, need))
                continue
            batch.append((entry, need))
            size += entry.lane.size
            if size >= _PACK_MAX_BYTES:
                found = _packed_first_match(query, batch)
                if found is not None:
                    return found
                batch, size = [], 0
        if len(batch) >= _PACK_MIN:
            found = _packed_first_match(query, batch)
            if found is not None:
                return found
        else:
            alone.extend(batch)
        pending = alone
    for entry, need in pending:
        if _lcs_reaches(query.masks, query.length, entry.text, need):
            return entry
    return None


def is_near_duplicate(text: str, candidates: Iterable[str], threshold: float = 0.9) -> bool:
    """Whether ``similarity(text, c) >= threshold`` for some candidate ``c``.

    The similarity is the LCS (Indel) ratio of :func:`similarity`, so the answer is
    ``True`` whenever difflib's ``SequenceMatcher(autojunk=False).ratio()`` would reach
    the threshold.  With ``threshold=0`` any candidate matches; with ``threshold=1``
    only an identical one does.  Nothing is cached between calls; to check many texts
    against the same candidates, a :class:`NearDuplicateIndex` prepares each candidate
    once and checks many of them in one packed pass.

    Args:
        text: The text to check.
        candidates: Texts to compare against.
        threshold: Similarity in ``[0, 1]`` at or above which ``text`` counts as a
            near-duplicate.

    Returns:
        ``True`` if some candidate is a near-duplicate of ``text``.

    Raises:
        InvalidInputError: If ``threshold`` is not in ``[0, 1]``.
    """
    limit = check_threshold(threshold)
    query = _Query(text)
    entries = (_Entry(candidate, count=False) for candidate in candidates)
    return _first_match(query, entries, limit, pack=False) is not None


class NearDuplicateIndex:
    """A window of texts that answers "is this a near-duplicate of one of them?".

    Each added text is prepared once (length, character counts and, on first use, its
    bit masks), so a check costs a hash lookup for exact duplicates, the cheap bounds
    per stored text, and one early-exiting bit-parallel LCS pass for the stored texts
    the bounds cannot rule out (see :func:`similarity` for the metric).  For a window of
    200 texts of about 1,000 characters that all pass the bounds (word shuffles of one
    text), a check takes a few milliseconds.
    With ``maxlen`` the index keeps only the most recent texts, like a
    ``collections.deque``.  Not thread-safe: guard it with a lock when shared.

    Example::

        index = NearDuplicateIndex(threshold=0.9, maxlen=200)
        if not index.is_near_duplicate(text):
            index.add(text)

    Args:
        texts: Initial texts, oldest first.
        threshold: Default similarity in ``[0, 1]`` at or above which a text counts as
            a near-duplicate.
        maxlen: Keep at most this many texts, dropping the oldest; ``None`` keeps all.

    Raises:
        InvalidInputError: If ``threshold`` is not in ``[0, 1]`` or ``maxlen`` is
            negative.
    """

    __slots__ = ("_entries", "_exact", "_threshold")

    def __init__(
        self,
        texts: Iterable[str] = (),
        *,
        threshold: float = 0.9,
        maxlen: int | None = None,
    ) -> None:
        if maxlen is not None and maxlen < 0:
            raise InvalidInputError(f"maxlen must be >= 0, got {maxlen!r}")
        self._threshold = check_threshold(threshold)
        self._entries: deque[_Entry] = deque(maxlen=maxlen)
        self._exact: Counter[str] = Counter()
        self.extend(texts)

    @property
    def threshold(self) -> float:
        """The default threshold of :meth:`find` and :meth:`is_near_duplicate`."""
        return self._threshold

    @property
    def maxlen(self) -> int | None:
        """The maximum number of texts kept, or ``None`` for no limit."""
        return self._entries.maxlen

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        """Iterate over the stored texts, oldest first."""
        return (entry.text for entry in self._entries)

    def __contains__(self, text: object) -> bool:
        """Whether an identical text is stored (exact match, O(1))."""
        return text in self._exact

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(len={len(self)}, threshold={self._threshold!r}, "
            f"maxlen={self.maxlen!r})"
        )

    def add(self, text: str) -> None:
        """Store ``text`` as the newest entry, dropping the oldest one if full."""
        entries = self._entries
        if entries.maxlen == 0:
            return
        if entries.maxlen is not None and len(entries) == entries.maxlen:
            self._forget(entries[0].text)
        entries.append(_Entry(text))
        self._exact[text] += 1

    def extend(self, texts: Iterable[str]) -> None:
        """Add each of ``texts`` in order (oldest first)."""
        for text in texts:
            self.add(text)

    def discard(self, text: str) -> bool:
        """Remove the oldest stored copy of ``text``; return whether one was found."""
        if text not in self._exact:
            return False
        for entry in self._entries:
            if entry.text == text:
                self._entries.remove(entry)
                break
        self._forget(text)
        return True

    def clear(self) -> None:
        """Remove every stored text."""
        self._entries.clear()
        self._exact.clear()

    def find(self, text: str, threshold: float | None = None) -> str | None:
        """Return a stored text whose similarity to ``text`` reaches the threshold.

        An identical stored text is found with a hash lookup and returned; otherwise any
        one matching text is returned (which one, when several match, is unspecified).

        Args:
            text: The text to check.
            threshold: Overrides the index's default threshold for this call.

        Returns:
            The matching stored text, or ``None`` if there is none.

        Raises:
            InvalidInputError: If ``threshold`` is not in ``[0, 1]``.
        """
        limit = self._threshold if threshold is None else check_threshold(threshold)
        if text in self._exact:
            return text
        found = _first_match(_Query(text), reversed(self._entries), limit)
        return None if found is None else found.text

    def is_near_duplicate(self, text: str, threshold: float | None = None) -> bool:
        """Whether some stored text reaches the threshold; see :meth:`find`."""
        return self.find(text, threshold) is not None

    def _forget(self, text: str) -> None:
        left = self._exact[text] - 1
        if left > 0:
            self._exact[text] = left
        else:
            del self._exact[text]
