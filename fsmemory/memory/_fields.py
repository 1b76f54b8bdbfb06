"""The fields and row methods of :class:`~fsmemory.memory._index.MemoryIndex`, declared
once for the parts it is assembled from (:class:`~fsmemory.memory._claims.Claims`,
:class:`~fsmemory.memory._feed.Feeding`, :class:`~fsmemory.memory._index_state.IndexState`).

Declarations only: the index sets every field (a cache-loaded index builds some on first
use) and defines every method; nothing here exists at run time but the class itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from array import array
    from collections import Counter
    from datetime import datetime

    from fsmemory.memory._claims import Key
    from fsmemory.memory._index_state import _ColdParts, _Strings
    from fsmemory.memory._rank import BM25Index
    from fsmemory.memory._tail import FileCursor
    from fsmemory.memory.markdown import MemoryDocument

__all__ = ["IndexFields"]


class IndexFields:
    """What the index's parts may read and call of one another (see the module)."""

    # -- rows: flat columns, one value per row
    _ids: list[str] | _Strings
    _contents: list[str] | _Strings
    _cats: list[str]
    _created: array[int]
    _expires: array[int]
    _importance: array[float]
    _flags: bytearray
    _extras: dict[int, tuple[float | None, dict[str, Any] | None]]
    _row_of: dict[str, int]
    _interned: dict[str, str]
    _n_dead: int
    _n_hidden: int
    # -- files
    _file_rows: dict[str, list[int]]
    _forgotten: dict[str, str]
    _logs: dict[str, FileCursor]
    _md: FileCursor | None
    _doc: MemoryDocument
    _corrupt: dict[str, int]
    # -- the timeline
    _tl_stamp: array[int]
    _tl_row: array[int]
    # -- MEMORY.md's bullets and the records that claim them
    _fact_counts: Counter[Key]  # bullets per key
    _claimed: dict[int, Key]  # row -> the key of the bullet it claims
    _n_claimed: Counter[Key]
    _pending: dict[Key, list[int]]  # records no bullet claims (hidden)
    _md_rows: dict[Key, list[int]]  # md- entries: bullets no record claims
    # -- search and eviction
    _ranker: BM25Index | None
    _unranked: list[int]
    _evict_heap: list[tuple[float, int, str, int]] | None
    _content_counts: dict[str, int] | None
    generation: int
    # -- a cache-loaded index's parts not built yet
    _cold: _ColdParts | None
    _cold_doc: MemoryDocument | None
    _cold_sections: list[tuple[str, list[str | int], list[datetime | None] | None]]

    if TYPE_CHECKING:  # defined by the index and its parts

        def reset(self) -> None: ...

        def _new_row(
            self,
            entry_id: str,
            content: str,
            category: str,
            created_us: int,
            expires_us: int | None,
            importance: float,
            persistent: bool,
        ) -> int: ...

        def _kill(self, row: int) -> None: ...

        def _row_id(self, row: int) -> str: ...

        def _add_log_row(self, row: int) -> None: ...

        def _evict_item(self, row: int) -> tuple[float, int, str, int]: ...

        def forget(self, entry_id: str, path: str) -> None: ...

        def _drop_file(self, path: str) -> None: ...

        def _rebalance(self, key: Key) -> None: ...

        def _claim_fresh(self) -> None: ...

        def _ranked(self) -> BM25Index: ...
