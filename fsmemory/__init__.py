"""fsmemory: long-term memory for LLM agents as plain, human-readable files on any
fsspec URL (a local folder, ``memory://``, ``s3://``, ``gs://``, ``redis://``).

Start with :class:`KnowledgeMemory`::

    from fsmemory import KnowledgeMemory

    km = KnowledgeMemory("./agent_memory")
    km.remember("Prefers dark mode", category="preferences", persistent=True)
    print(km.build_context())
"""

from __future__ import annotations

import sys
import typing

from fsmemory import _lazy, _log
from fsmemory.errors import (
    BackendError,
    BucketNotFoundError,
    ConflictError,
    ContentTooLargeError,
    EmbedderError,
    FsMemoryError,
    InvalidInputError,
    InvalidPathError,
    KeyNotFoundError,
    LockTimeoutError,
    MissingDependencyError,
    SnapshotError,
)

if typing.TYPE_CHECKING:
    from fsmemory.fs import StorageRoot, open_root
    from fsmemory.memory import KnowledgeEntry, KnowledgeMemory


__version__ = "0.1.0"

# A library logs, its host decides where records go: the package logger gets a
# NullHandler (else Python's last-resort handler prints this package's warnings on stderr
# of any host that has not configured logging) now if `logging` is loaded, otherwise when
# fsmemory first logs (fsmemory._log: a memory that never logs never imports `logging`).
# See the README's Logging section.
if "logging" in sys.modules:
    _log.package_logger()

__all__ = [
    "BackendError",
    "BucketNotFoundError",
    "ConflictError",
    "ContentTooLargeError",
    "EmbedderError",
    "FsMemoryError",
    "InvalidInputError",
    "InvalidPathError",
    "KeyNotFoundError",
    "KnowledgeEntry",
    "KnowledgeMemory",
    "LockTimeoutError",
    "MissingDependencyError",
    "SnapshotError",
    "StorageRoot",
    "__version__",
    "open_root",
]

_EXPORTS = {
    "StorageRoot": "fsmemory.fs",
    "open_root": "fsmemory.fs",
    "KnowledgeEntry": "fsmemory.memory",
    "KnowledgeMemory": "fsmemory.memory",
}
__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS)
