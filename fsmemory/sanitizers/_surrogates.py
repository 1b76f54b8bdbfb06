"""``strip_surrogates``: make text safe to encode as UTF-8 before it is written."""

from __future__ import annotations

import re

__all__ = ["strip_surrogates"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def strip_surrogates(text: str) -> str:
    """Remove the code points that cannot be written as UTF-8.

    A Python ``str`` can hold UTF-16 surrogate code points (U+D800 to U+DFFF), which
    arrive from webhooks, broken client encodings or ``surrogateescape`` decoding.
    Writing such a string as UTF-8 raises ``UnicodeEncodeError``, so one bad emoji
    would make an entry (or a whole shared file) unwritable.  Surrogates are the only
    code points UTF-8 cannot encode.

    * A lone surrogate is dropped.
    * A high surrogate directly followed by a low surrogate (a UTF-16 pair that was
      never joined, as some JavaScript bridges and hand-rolled JSON decoders produce)
      is replaced by the character it encodes, so the emoji survives.
    * Everything else, including well-formed emoji, ZWJ sequences, NUL and other
      control characters, is returned unchanged.

    The result always encodes as UTF-8, and the function is idempotent.

    Args:
        text: The entry text to sanitize.

    Returns:
        The text without unencodable code points; text that has none is returned as is.

    Raises:
        TypeError: If ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"strip_surrogates expects str, got {type(text).__name__}")
    if _SURROGATE.search(text) is None:
        return text
    # Round-tripping through UTF-16 joins valid pairs; the decoder's "ignore" handler
    # then drops each unit that is left unpaired.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")
