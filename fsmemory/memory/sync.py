"""Deprecated: the former home of the snapshot replica (``SnapshotSync``).

A memory folder keeps itself in sync with a snapshot through
``KnowledgeMemory(url, backend=...)`` (see :mod:`fsmemory.snapshot`); the machinery behind
it is private. Importing this module emits a :class:`DeprecationWarning`; its names still
work until it is removed in a future release.
"""

from __future__ import annotations

import warnings

from fsmemory.memory._replica import DELTA_FORMAT, SnapshotReplica, apply_delta, fold_state

warnings.warn(
    "fsmemory.memory.sync is deprecated and will be removed in a future release: keep a "
    "folder in sync with a snapshot through fsmemory.KnowledgeMemory(url, backend=...) "
    "with a backend from fsmemory.snapshot (e.g. FsspecBackend)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["DELTA_FORMAT", "SnapshotSync", "apply_delta", "fold_state"]

#: the former name of the snapshot replica behind ``KnowledgeMemory(backend=...)``
SnapshotSync = SnapshotReplica
