"""Snapshots for ephemeral infrastructure: a memory folder kept as blobs at any URL.

This layer moves blobs (archives, deltas, heads) with compare-and-swap; merging two
versions of a memory folder belongs to :mod:`fsmemory.memory`, which owns the layout.
"""

from __future__ import annotations

from fsmemory.snapshot.archive import (
    ARCHIVE_FORMAT,
    ARCHIVE_VERSION,
    decode_file,
    encode_file,
    pack_archive,
    unpack_archive,
)
from fsmemory.snapshot.backends import (
    DEFAULT_COMPACT_AFTER,
    FsspecBackend,
    IncrementalBackend,
    KnowledgeBackend,
    RedisKnowledgeBackend,
    SnapshotState,
    supabase_backend,
)

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "DEFAULT_COMPACT_AFTER",
    "FsspecBackend",
    "IncrementalBackend",
    "KnowledgeBackend",
    "RedisKnowledgeBackend",
    "SnapshotState",
    "decode_file",
    "encode_file",
    "pack_archive",
    "supabase_backend",
    "unpack_archive",
]
