"""Pre-save sanitizers: hooks that clean or reject entry text before it is stored.

Remembered text comes from users, tools and web pages, and it is later pasted into a
system prompt, which makes the memory a prompt-injection channel.  A pre-save hook is
any ``Callable[[str], str | None]``: it returns the text to store (possibly rewritten)
or ``None`` to reject the entry.  Hooks compose with :func:`run_pre_save`::

    from fsmemory.sanitizers import (
        dedupe_against, defang_delimiters, run_pre_save, strip_surrogates,
    )

    hooks = [strip_surrogates, defang_delimiters, dedupe_against(recent_texts)]
    text, rejected_by = run_pre_save(hooks, raw_text)
    if text is None:
        ...  # rejected_by names the hook, e.g. "dedupe_against"

Built-in hooks:

* :func:`strip_surrogates` drops code points that cannot be written as UTF-8.
* :func:`defang_delimiters` neutralizes section headers, chat-template role markers,
  speaker labels and code fences.
* :func:`dedupe_against` rejects near-duplicates of existing entries.

Run :func:`strip_surrogates` before :func:`defang_delimiters` (deleting characters after
defanging could reassemble a marker) and dedupe last, on the cleaned text.
:func:`similarity`, :func:`is_near_duplicate` and :class:`NearDuplicateIndex` expose the
near-duplicate test on its own.  All sanitizers are deterministic and idempotent.
"""

from __future__ import annotations

import typing

from fsmemory import _lazy

if typing.TYPE_CHECKING:
    from fsmemory.sanitizers._dedupe import dedupe_against
    from fsmemory.sanitizers._defang import defang_delimiters
    from fsmemory.sanitizers._hooks import PreSaveHook, run_pre_save
    from fsmemory.sanitizers._similarity import NearDuplicateIndex, is_near_duplicate, similarity
    from fsmemory.sanitizers._surrogates import strip_surrogates


__all__ = [
    "NearDuplicateIndex",
    "PreSaveHook",
    "dedupe_against",
    "defang_delimiters",
    "is_near_duplicate",
    "run_pre_save",
    "similarity",
    "strip_surrogates",
]

_EXPORTS = {
    "dedupe_against": "fsmemory.sanitizers._dedupe",
    "defang_delimiters": "fsmemory.sanitizers._defang",
    "PreSaveHook": "fsmemory.sanitizers._hooks",
    "run_pre_save": "fsmemory.sanitizers._hooks",
    "NearDuplicateIndex": "fsmemory.sanitizers._similarity",
    "is_near_duplicate": "fsmemory.sanitizers._similarity",
    "similarity": "fsmemory.sanitizers._similarity",
    "strip_surrogates": "fsmemory.sanitizers._surrogates",
}
__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS)
