"""``dedupe_against``: a pre-save hook that rejects near-duplicates of existing entries."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from fsmemory.sanitizers._hooks import PreSaveHook
from fsmemory.sanitizers._similarity import _Entry, _first_match, _Query, check_threshold

__all__ = ["dedupe_against"]


def dedupe_against(
    existing_fetcher: Callable[[], Iterable[str]], threshold: float = 0.9
) -> PreSaveHook:
    """Build a pre-save hook that rejects text too similar to existing entries.

    The hook calls ``existing_fetcher()`` on every invocation, so it always compares
    against the current entries, and returns ``None`` (reject) when the new text's
    similarity to any fetched text reaches ``threshold``; otherwise it returns the text
    unchanged.

    The similarity is the Indel ratio ``2 * LCS(a, b) / (len(a) + len(b))`` (see
    :func:`fsmemory.sanitizers.similarity`).  It is never below difflib's
    ``SequenceMatcher(None, a, b, autojunk=False).ratio()``, so every text that a
    difflib-based check would reject at the same threshold is rejected here too.
    ``threshold=1.0`` rejects exact duplicates only; ``threshold=0.0`` rejects every
    text as soon as the fetcher returns anything.

    Cost: exact duplicates are found with one hash lookup.  Other fetched texts go
    through a length bound, a character-count bound and, if still possible, an LCS
    computation that stops as soon as the outcome is known (packed for all candidates
    at once when there are many).  What each fetched text needs (length, character
    counts, bit masks) is cached between calls, for the texts of the latest fetch
    only, so a fetcher that returns a bounded window, such as the 200 most recent
    entries, keeps each check in the low milliseconds even for adversarial text; the
    first call pays for preparing the window.  The fetcher's cost is the caller's.

    Args:
        existing_fetcher: Zero-argument callable returning the texts to compare
            against; called once per hook invocation.
        threshold: Similarity in ``[0, 1]`` at or above which the text is rejected.

    Returns:
        A :data:`PreSaveHook` named ``dedupe_against``.

    Raises:
        InvalidInputError: If ``threshold`` is not in ``[0, 1]``.
    """
    limit = check_threshold(threshold)
    cache: dict[str, _Entry] = {}

    def dedupe_hook(text: str) -> str | None:
        nonlocal cache
        fresh: dict[str, _Entry] = {}
        for existing in existing_fetcher():
            if existing not in fresh:
                fresh[existing] = cache.get(existing) or _Entry(existing)
        cache = fresh
        if text in fresh:
            return None
        if _first_match(_Query(text), fresh.values(), limit) is not None:
            return None
        return text

    dedupe_hook.__name__ = dedupe_hook.__qualname__ = "dedupe_against"
    return dedupe_hook
