"""Storage primitives over fsspec: the only layer that knows backend quirks.

Open a root with :func:`open_root`; every root offers versioned reads, atomic writes,
compare-and-swap, append, listing and delete with the same semantics on every backend.
"""

from __future__ import annotations

import typing

from fsmemory import _lazy
from fsmemory.fs.base import Capabilities, FileInfo, StorageRoot, Versioned, content_version
from fsmemory.fs.errors import translate_error, translated
from fsmemory.fs.open import open_root, split_protocol
from fsmemory.fs.paths import RESERVED_PREFIX, is_reserved_name, join_path, validate_path

if typing.TYPE_CHECKING:
    from fsmemory.fs.retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy

__all__ = [
    "DEFAULT_RETRY",
    "NO_RETRY",
    "RESERVED_PREFIX",
    "Capabilities",
    "FileInfo",
    "RetryPolicy",
    "StorageRoot",
    "Versioned",
    "content_version",
    "is_reserved_name",
    "join_path",
    "open_root",
    "split_protocol",
    "translate_error",
    "translated",
    "validate_path",
]

# Retries serve network roots only: a local folder never loads the retry machinery.
__getattr__, __dir__ = _lazy.lazy_exports(
    __name__, dict.fromkeys(("DEFAULT_RETRY", "NO_RETRY", "RetryPolicy"), "fsmemory.fs.retry")
)
