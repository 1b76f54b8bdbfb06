"""The MEMORY.md writer: how a bullet gets in and out of the hand-editable file.

Every change keeps what a person wrote byte for byte (text is decoded and encoded with
:func:`~fsmemory.memory.markdown.decode_md`/:func:`~fsmemory.memory.markdown.encode_md`).
Strategies for adding a bullet (:meth:`FactsFile.add`):

* roots without a cheap lock and native append (S3, GCS, Redis, ...): insert the bullet
  into its section with compare-and-swap (:meth:`StorageRoot.update`);
* local folders and memory, under the root's lock: append the bullet when its category
  is the section the file ends in; else rewrite a small file with the bullet inserted,
  or append a repeated ``## category`` header to a large one (O(1); the parser merges
  repeated headers, and a tidy rewrite merges them once they pile up).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from fsmemory._log import get_logger
from fsmemory.fs.base import StorageRoot
from fsmemory.memory._index import MemoryIndex
from fsmemory.memory.entry import KnowledgeEntry
from fsmemory.memory.layout import MEMORY_FILE, TITLE
from fsmemory.memory.markdown import (
    decode_md,
    encode_md,
    escape_line,
    fact_line,
    insert_fact,
    remove_fact,
    rewrite_memory_md,
)

__all__ = ["FactsFile"]

logger = get_logger(__name__)

Change = Callable[[bytes | None], bytes | None]

# MEMORY.md is tidied (repeated headers merged) once appends have produced this many
# more section headers than there are categories.
_EXTRA_HEADERS_BEFORE_TIDY = 32
# Up to this size MEMORY.md is rewritten to insert a fact into its section; beyond it a
# fact whose section is not last is appended under a repeated header (O(1)).
_REWRITE_LIMIT = 64 * 1024


class FactsFile:
    """Adds and removes MEMORY.md bullets of one root.

    Args:
        root: the memory root.
        index: the root's index; :meth:`add` keeps it informed of appended bullets and
            asks it which section the file ends in.
    """

    def __init__(self, root: StorageRoot, index: MemoryIndex) -> None:
        self.root = root
        self.index = index

    def add(self, entry: KnowledgeEntry) -> bool:
        """Add the entry's bullet; True when the index saw the change too (no re-read)."""
        bullet = fact_line(entry.content, entry.expires_at)
        root = self.root
        if not (root.capabilities.native_append and root.capabilities.cheap_lock):
            root.update(MEMORY_FILE, _insert_once(entry.category, bullet))
            return False
        index = self.index
        with root.lock("memory-md"):
            info = root.stat(MEMORY_FILE)
            if info is None:
                chunk = f"{TITLE}\n\n## {entry.category}\n{bullet}\n"
            else:
                if not index.md_seen(info):
                    index.refresh(root, [info, *index.log_infos()])
                if index.last_category == entry.category:
                    chunk = f"{bullet}\n"
                elif info.size <= _REWRITE_LIMIT:
                    root.update(MEMORY_FILE, _insert_once(entry.category, bullet))
                    return False
                else:
                    chunk = f"\n## {entry.category}\n{bullet}\n"
            data = chunk.encode()
            offset = root.append(MEMORY_FILE, data, line_safe=True)
            # Still under the lock: this stat's token is the one our append produced, so
            # the next refresh knows MEMORY.md is unchanged since.
            after = root.stat(MEMORY_FILE)
            synced = index.note_append(MEMORY_FILE, offset, data, after)
        return self._maybe_tidy() and synced

    def undo(self, entry: KnowledgeEntry) -> None:
        """Remove the bullet of an entry whose log record could not be written, so a
        failed remember() leaves no trace (best effort: the original error is raised)."""
        try:
            self.remove(entry)
        except Exception:  # the caller gets the append's error; this one is secondary
            logger.warning("could not remove the MEMORY.md bullet of a failed remember()")
        self.index.reset()

    def remove(self, entry: KnowledgeEntry) -> None:
        """Remove the last bullet of ``entry`` (its category, text and expiry) from
        MEMORY.md."""
        key_text = escape_line(entry.content.strip())
        self.root.update(
            MEMORY_FILE, lambda old: _remove(old, entry.category, key_text, entry.expires_at)
        )

    def drop_expired(self, now: datetime) -> None:
        """Rewrite MEMORY.md without the bullets expired at ``now`` (when there are any)."""
        if any(
            f.expires_at is not None and f.expires_at <= now
            for facts in self.index.document.sections.values()
            for f in facts
        ):
            self.root.update(
                MEMORY_FILE,
                lambda old: encode_md(rewrite_memory_md(decode_md(old), now)) if old else None,
            )

    def _maybe_tidy(self) -> bool:
        """Merge repeated headers when appends produced many; False if it rewrote."""
        doc = self.index.document
        extra = doc.header_count - len(doc.sections)
        # Proportional threshold: the O(n) tidy runs every ~n/8 appends, O(1) amortized.
        if extra < max(_EXTRA_HEADERS_BEFORE_TIDY, doc.fact_count() // 8):
            return True
        self.root.update(MEMORY_FILE, _tidy)
        return False


def _tidy(old: bytes | None) -> bytes | None:
    if not old:
        return None
    return encode_md(rewrite_memory_md(decode_md(old)))


def _insert(old: bytes | None, category: str, bullet: str) -> bytes:
    text = decode_md(old) if old else None
    return encode_md(insert_fact(text, category, bullet))


def _insert_once(category: str, bullet: str) -> Change:
    """A compare-and-swap change inserting ``bullet`` once: when a retry finds one more
    copy of the line than the first attempt saw, the earlier (ambiguous) write landed."""
    line = bullet.encode()
    first_count: list[int] = []

    def change(old: bytes | None) -> bytes | None:
        count = (old or b"").split(b"\n").count(line)
        if not first_count:
            first_count.append(count)
        elif count > first_count[0]:
            return None
        return _insert(old, category, bullet)

    return change


def _remove(
    old: bytes | None, category: str, key_text: str, expires: datetime | None
) -> bytes | None:
    if not old:
        return None
    # Only a bullet of the entry's own expiry: the same text remembered with another
    # TTL (or none) is another record's bullet.
    new = remove_fact(decode_md(old), category, key_text, expires=expires)
    return None if new is None else encode_md(new)
