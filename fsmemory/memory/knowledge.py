"""KnowledgeMemory: long-term memory for an agent, as plain files on any fsspec URL
(the layout is :mod:`fsmemory.memory.layout`'s). Orchestration only: the index, the
MEMORY.md writer and the context renderer live in their own modules.

``remember()`` appends one line to today's log (and, for persistent entries, one bullet
to MEMORY.md): it never re-reads or rewrites the memory. Reads are served from an
in-process index that is refreshed from one listing of the root when files changed, so
other processes' writes become visible to a long-lived instance.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from fsmemory import _jsonutil
from fsmemory.errors import InvalidInputError
from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs.base import FileInfo

# The embedded default root (a local folder), imported with the memory layer, as every
# other module the local path needs; remote roots still load on first use.
from fsmemory.fs.local import LocalRoot as _LocalRoot  # noqa: F401
from fsmemory.memory import _index_cache
from fsmemory.memory._context import PLAIN_CACHE, Contexts
from fsmemory.memory._facts_file import FactsFile
from fsmemory.memory._index import MemoryIndex
from fsmemory.memory._vectors import Embedder, VectorStore
from fsmemory.memory.entry import KnowledgeEntry, RememberResult, forget_records
from fsmemory.memory.layout import DAILY_LOG_DIR, MEMORY_FILE, log_date, log_name_for
from fsmemory.memory.validation import (
    DEFAULT_MAX_CONTENT_BYTES,
    check_category,
    check_content,
    check_importance,
    check_metadata,
    check_non_negative_int,
    check_ttl_days,
)

if TYPE_CHECKING:  # the snapshot and sanitizer modules load only when used
    from fsmemory.memory._replica import SnapshotReplica
    from fsmemory.sanitizers import PreSaveHook
    from fsmemory.snapshot import IncrementalBackend, KnowledgeBackend

__all__ = ["KnowledgeMemory", "RememberResult"]

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]


class KnowledgeMemory:
    """Cross-session knowledge: persistent facts in MEMORY.md plus daily JSONL logs.

    Args:
        storage_dir: a local path or any fsspec URL (``memory://u1``, ``s3://b/users/1``,
            ``gs://...``, ``redis://host:6379/0/users/1``). Default ``./agent_memory``.
        max_log_days: daily logs older than this many days are pruned.
        max_context_entries: recent entries shown by :meth:`build_context`.
        directory: alias of ``storage_dir`` (selectools compatibility).
        storage_options: passed to the fsspec filesystem (credentials, endpoint, ...).
        max_entries: when set, the lowest-importance non-persistent entries are evicted
            (chosen among all live entries) to keep at most this many.
        max_context_chars: when set, :meth:`build_context` output is bounded by it.
        max_content_bytes: the largest ``content`` accepted (UTF-8 bytes).
        pre_save: a hook ``(text) -> str | None`` or a sequence of them, run in order on
            the content before anything is written: a returned string replaces the text
            everywhere it is persisted; None rejects the entry (nothing is written and
            ``remember()`` returns ``""``). See :mod:`fsmemory.sanitizers`.
        dedupe: reject near-duplicates: exact duplicates of any live entry (a hash
            lookup), and texts whose similarity to one of the ``dedupe_window`` most
            recent live entries reaches ``dedupe_threshold``. The similarity is the LCS
            (Indel) ratio, never below difflib's ``SequenceMatcher`` ratio, so it is at
            least as strict as the seed's check. Runs after ``pre_save``.
        dedupe_threshold: similarity in [0, 1] at which a text counts as a duplicate.
        dedupe_window: how many recent entries the near-duplicate check compares with.
        backend: a snapshot backend (:class:`~fsmemory.snapshot.FsspecBackend`,
            :class:`~fsmemory.snapshot.RedisKnowledgeBackend`, or any object with
            ``load_bytes``/``save_bytes``). The folder is restored from it on
            construction and every mutation is saved back (incrementally, merging
            concurrent writers, for incremental backends). Nothing already in the folder
            is lost: an empty snapshot starts from the folder, a non-empty one is merged
            with it. None: files only.
        on_corrupt_snapshot: ``"raise"`` (default) or ``"reset"`` (move the corrupt
            snapshot aside and start again from the folder).
        snapshot_compact_after: a save folds the snapshot's waiting deltas into a new
            base once this many are waiting (default: the backend's ``compact_after``,
            32 for the built-in backends).
        clock: a function returning the current aware UTC datetime (for tests).
        embedder: ``fn(texts) -> vectors``, batched, for hybrid recall: ``recall()``
            fuses BM25 with the cosine similarity of the embeddings (and, with
            ``recall_context``, the scores of the entries written next to each one).
            Each ``remember()`` embeds its content before writing (an
            :class:`EmbedderError` stores nothing) and appends the vector to
            ``vectors/<name>-<dim>.jsonl``;
            entries without a vector (older ones, other writers, another embedder) are
            embedded at the next ``recall()``. Identity: the embedder's ``name`` and
            ``dimension`` attributes when present. Needs numpy.
        recall_context: with an embedder, each entry also gains a quarter of the best
            score among the live entries written up to two places before or after it,
            at most an hour apart: facts noted in one sitting lean on each other, and
            a question that matches one often needs the next. False ranks every entry
            on its own text alone (say, for facts bulk-imported from unrelated
            sources). Without an embedder it changes nothing.
        index_cache: keep the search index in the root's cache file
            ``.fsmemory-cache.index`` (written after a ``recall()`` once at least 256
            entries are not in it, for memories of 128 KiB or more), so a fresh process
            loads it instead of parsing and analysing every entry again. Changes by
            other writers or by hand are detected from the listing; the file is never
            listed, snapshotted or exported, and deleting it changes no answer. The
            same goes for ``.fsmemory-cache.context``, which a local folder's fresh
            ``build_context()`` keeps for a MEMORY.md of 64 KiB or more: where its
            sections are, checked against the file's size, change token and CRC-32.
            False: never read or write either.

    Raises:
        InvalidInputError: an option is out of range.
        SnapshotError: the backend's snapshot is corrupt (with ``"raise"``).
        BackendError: the backend could not be read (never silently starts empty).
    """

    def __init__(
        self,
        storage_dir: str | os.PathLike[str] | StorageRoot | None = None,
        max_log_days: int = 30,
        max_context_entries: int = 50,
        *,
        directory: str | os.PathLike[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        max_entries: int | None = None,
        max_context_chars: int | None = None,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        pre_save: PreSaveHook | Sequence[PreSaveHook] | None = None,
        dedupe: bool = False,
        dedupe_threshold: float = 0.9,
        dedupe_window: int = 200,
        backend: KnowledgeBackend | IncrementalBackend | None = None,
        on_corrupt_snapshot: Literal["raise", "reset"] = "raise",
        snapshot_compact_after: int | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        recall_context: bool = True,
        index_cache: bool = True,
    ) -> None:
        if storage_dir is not None and directory is not None:
            raise InvalidInputError("pass storage_dir or directory, not both")
        location = storage_dir if storage_dir is not None else directory
        if location is None:
            location = "./agent_memory"
        check_non_negative_int("max_log_days", max_log_days)
        check_non_negative_int("max_context_entries", max_context_entries)
        if max_entries is not None:
            check_non_negative_int("max_entries", max_entries)
        if max_context_chars is not None:
            check_non_negative_int("max_context_chars", max_context_chars)
        if not isinstance(recall_context, bool):
            raise InvalidInputError("recall_context must be a bool")
        self.root: StorageRoot = open_root(location, storage_options)
        self.max_log_days = max_log_days
        self.max_context_entries = max_context_entries
        self.max_entries = max_entries
        self.max_context_chars = max_context_chars
        self.max_content_bytes = max_content_bytes
        self._clock: Clock = clock or partial(datetime.now, UTC)
        self._index = MemoryIndex()
        self.index_cache = index_cache
        self._cache_checked = not index_cache
        self._cache_rows = 0  # rows of the index the cache file holds
        self._cache_loaded = False  # the index was filled from the cache file
        self._facts_file = FactsFile(self.root, self._index)
        self._lock = threading.RLock()
        self._listing: list[FileInfo] = []
        self._contexts = Contexts(use_cache=index_cache)
        self.pre_save = pre_save
        self.dedupe = dedupe
        self.dedupe_window = dedupe_window
        self._dedupe_hook: PreSaveHook | None = None
        if dedupe:
            check_non_negative_int("dedupe_window", dedupe_window)
            from fsmemory.sanitizers import dedupe_against

            self._dedupe_hook = dedupe_against(self._dedupe_candidates, dedupe_threshold)
        self._vectors = (
            VectorStore(self.root, embedder, context=recall_context)
            if embedder is not None
            else None
        )
        self.backend = backend
        self._replica: SnapshotReplica | None = None
        if backend is not None:
            from fsmemory.memory._replica import SnapshotReplica

            self._replica = SnapshotReplica(
                self.root,
                backend,
                on_corrupt=on_corrupt_snapshot,
                compact_after=snapshot_compact_after,
            )
            self._replica.restore()

    # -- properties ----------------------------------------------------------------------
    @property
    def storage_dir(self) -> str:
        """The URL (or path) of the memory root."""
        return self.root.url

    @property
    def directory(self) -> str:
        """Alias of :attr:`storage_dir`."""
        return self.root.url

    def __repr__(self) -> str:
        return f"KnowledgeMemory({self.root.url!r})"

    # -- writes --------------------------------------------------------------------------
    def remember(
        self,
        content: str,
        category: str = "general",
        persistent: bool = False,
        importance: float = 0.5,
        ttl_days: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Store a fact and return its id (``""`` when a pre-save hook or dedupe rejected it).

        Args:
            content: the text to remember (any Unicode; newlines and markdown are kept
                exactly and can never forge structure in MEMORY.md or the logs).
            category: a short label (letters, digits, `` _-./:@+&',``).
            persistent: also keep it in MEMORY.md, which is never pruned.
            importance: 0.0 - 1.0; ranks recall and decides eviction.
            ttl_days: expire after this many days (None: never).
            metadata: JSON-compatible extra data stored with the record.

        Returns:
            The new entry's id, or ``""`` when the entry was rejected.

        Raises:
            InvalidInputError (a ValueError): bad content, category, importance, ttl or
                metadata; nothing is written.
            ContentTooLargeError: content larger than ``max_content_bytes``.
        """
        return self.try_remember(content, category, persistent, importance, ttl_days, metadata).id

    def try_remember(
        self,
        content: str,
        category: str = "general",
        persistent: bool = False,
        importance: float = 0.5,
        ttl_days: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> RememberResult:
        """Like :meth:`remember`, but says why an entry was not stored.

        Returns:
            A :class:`RememberResult`: ``stored``, the ``id`` (``""`` if rejected) and
            ``rejected_by`` (the hook's name, ``"duplicate"`` or None).
        """
        if not isinstance(content, str):
            raise InvalidInputError(f"content must be a str, not {type(content).__name__}")
        cat = check_category(category)
        weight = check_importance(importance)
        ttl = check_ttl_days(ttl_days)
        meta = check_metadata(metadata)
        if not isinstance(persistent, bool):
            raise InvalidInputError("persistent must be a bool")
        text: str | None = content
        if self.pre_save is not None:
            from fsmemory.sanitizers import run_pre_save

            text, rejected_by = run_pre_save(self.pre_save, content)
            if text is None:
                return RememberResult("", False, rejected_by)
        assert text is not None
        text = check_content(text, self.max_content_bytes)
        with self._lock:
            if self._dedupe_hook is not None:
                self._refresh()
                if self._index.has_content(text) or self._dedupe_hook(text) is None:
                    logger.debug("remember() rejected a duplicate")
                    return RememberResult("", False, "duplicate")
            now = self._clock()
            entry = KnowledgeEntry.new(text, cat, persistent, weight, ttl, meta, now)
            # Embedded before anything is written: a failing embedder stores nothing.
            vector = self._vectors.embed([text]) if self._vectors is not None else None
            self._write_entry(entry)
            if self._vectors is not None:
                self._vectors.store([entry.id], vector, [text])
            if self.max_entries is not None:
                self._evict(now)
            self._saved()
            return RememberResult(entry.id, True, None)

    def _dedupe_candidates(self) -> list[str]:
        texts = self._index.newest_texts(self._clock())
        return [text for _, _, text, _ in itertools.islice(texts, self.dedupe_window)]

    def _write_entry(self, entry: KnowledgeEntry) -> None:
        line = _jsonutil.dumps_line(entry.to_dict())
        log_path = log_name_for(entry.created_at)
        synced = self._facts_file.add(entry) if entry.persistent else True
        try:
            offset = self.root.append(log_path, line, line_safe=True, unique=True)
        except BaseException:
            if entry.persistent:
                self._facts_file.undo(entry)
            raise
        # An index that has read nothing yet reads everything (this line too) on first use.
        if self._index.loaded and (
            not self._index.note_append(log_path, offset, line, None) or not synced
        ):
            self._refresh()

    def forget(self, entry_id: str) -> bool:
        """Forget an entry by id. Returns False when no such entry exists.

        A persistent entry's bullet is removed from MEMORY.md; a forget record is
        appended to today's log (the original line is never rewritten).
        """
        if not isinstance(entry_id, str) or not entry_id:
            return False
        with self._lock:
            self._refresh()
            entry = self._index.find(entry_id)
            if entry is None:
                return False
            if entry.persistent:
                self._facts_file.remove(entry)
            if not entry_id.startswith("md-"):
                self._append_forgets([entry_id], reason="forget")
            self._refresh()
            self._saved()
            return True

    def _append_forgets(self, ids: list[str], *, reason: str) -> None:
        now = self._clock()
        data = forget_records(ids, reason, now)
        path = log_name_for(now)
        offset = self.root.append(path, data, line_safe=True, unique=True)
        if self._index.loaded and not self._index.note_append(path, offset, data, None):
            self._refresh()

    def _evict(self, now: datetime) -> None:
        assert self.max_entries is not None
        if not self._index.loaded:
            self._refresh()
        excess = self._index.live_count() - self.max_entries
        victims = self._index.eviction_candidates(excess) if excess > 0 else []
        if victims:
            self._append_forgets(victims, reason="evicted")

    def prune_logs(self, max_days: int | None = None) -> int:
        """Delete daily logs older than ``max_days`` (default ``max_log_days``) days.

        MEMORY.md is never pruned, but bullets whose TTL has run out are removed from it.

        Returns:
            The number of log files deleted.
        """
        days = self.max_log_days if max_days is None else max_days
        check_non_negative_int("max_days", days)
        with self._lock:
            self._refresh()
            now = self._clock()
            cutoff = (now - timedelta(days=days)).strftime("%Y-%m-%d")
            dates = {i.path: log_date(i.path) for i in self.root.list(DAILY_LOG_DIR)}
            stale = [path for path, date in dates.items() if date is not None and date < cutoff]
            deleted = sum(1 for path in stale if self.root.delete(path))
            self._facts_file.drop_expired(now)
            self._refresh()
            if deleted:
                self._saved()
            return deleted

    def clear(self) -> None:
        """Remove all knowledge: MEMORY.md and every daily log."""
        with self._lock:
            self.root.delete(MEMORY_FILE)
            self.root.delete_tree(DAILY_LOG_DIR)
            _index_cache.delete(self.root)
            _index_cache.delete(self.root, PLAIN_CACHE)
            self._cache_rows = 0
            self._index.reset()
            self._refresh()
            self._saved()

    def clear_logs(self) -> None:
        """Remove the daily logs only; MEMORY.md is kept."""
        with self._lock:
            self.root.delete_tree(DAILY_LOG_DIR)
            self._refresh()
            self._saved()

    def _saved(self) -> None:
        if self._replica is not None:
            self._replica.save()

    def flush(self) -> int:
        """Save the folder to the backend now (e.g. after editing files by hand).

        Returns:
            Bytes uploaded (0 without a backend or when nothing changed).
        """
        with self._lock:
            return 0 if self._replica is None else self._replica.save()

    # -- reads ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        if self._cache_checked or self._index.log_infos():
            self._listing = self.root.list("", recursive=True)
        else:
            # Before any log is read (a first persistent remember() may have read
            # MEMORY.md alone, and the cache, refreshed below, replaces that too): the
            # listing and the cache file, together where the root can send both.
            self._listing, loaded = _index_cache.list_and_load(self.root, self._index)
            if loaded:
                stale, total = self._index.bytes_to_reread(self.root, self._listing)
                if 2 * stale > total:
                    # Mostly rewritten or replaced since (a copied folder): dropping
                    # what the cache holds would cost more than parsing afresh.
                    self._index.reset()
                else:
                    self._cache_rows = self._index.rows
                    self._cache_loaded = True
        self._cache_checked = True
        self._index.refresh(self.root, self._listing)

    def _save_index_cache(self) -> None:
        """Persist the index once it holds enough rows the cache file does not (or the
        loaded cache turned out damaged: it is replaced)."""
        index = self._index
        if index.cache_damaged:
            index.cache_damaged = self._cache_loaded = False
            self._cache_rows = -_index_cache.MIN_NEW_ROWS
        if (
            self.index_cache
            and index.ranked
            and index.rows - self._cache_rows >= _index_cache.MIN_NEW_ROWS
            and _index_cache.worth_it(self._listing)
        ):
            self._cache_rows = index.rows
            _index_cache.save(self.root, index)

    def refresh(self) -> None:
        """Re-read whatever changed on storage (reads call this themselves)."""
        with self._lock:
            self._refresh()

    def get(self, entry_id: str) -> KnowledgeEntry | None:
        """The live entry with this id, or None (missing, forgotten or expired)."""
        with self._lock:
            self._refresh()
            return self._index.live_entry(entry_id, self._clock())

    def recall(
        self, query: str, limit: int = 5, category: str | None = None
    ) -> list[KnowledgeEntry]:
        """Ranked search over all live entries (their content and category).

        Lexical ranking is BM25 over stemmed words (``painted`` finds ``paint``;
        stopwords alone are matched word for word; see :mod:`fsmemory.memory._rank`); with an
        ``embedder`` it is fused with vector similarity. Equal scores rank by
        importance, then recency. A query without any word returns the most
        important entries. Expired and forgotten entries never appear.

        Raises:
            InvalidInputError: ``query`` is not a str or ``limit`` is not a positive int.
        """
        if not isinstance(query, str):
            raise InvalidInputError("query must be a str")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError("limit must be a positive int")
        with self._lock:
            self._refresh()
            if self._vectors is None:
                found = self._index.search(query, limit, category, self._clock())
            else:
                found = self._vectors.search(self._index, query, limit, category, self._clock())
            self._save_index_cache()
            return found

    def get_persistent_facts(self) -> dict[str, list[str]]:
        """All live facts of MEMORY.md by category (expired ones left out)."""
        with self._lock:
            self._refresh()
            return self._index.live_facts(self._clock())

    def get_recent_entries(self, days: int = 7, limit: int = 50) -> list[dict[str, Any]]:
        """Live log entries of the last ``days`` days, newest first, as dicts with
        ``id``, ``timestamp``, ``category``, ``content``, ``persistent``, ``importance``,
        ``ttl_days``, ``expires_at`` and ``metadata``."""
        with self._lock:
            self._refresh()
            now = self._clock()
            since = now - timedelta(days=days)
            recent = itertools.takewhile(lambda e: e.created_at >= since, self._index.newest(now))
            return [dict(e.to_dict(), metadata=e.metadata) for e in itertools.islice(recent, limit)]

    def entries(self) -> list[KnowledgeEntry]:
        """Every live entry (log entries oldest first, then MEMORY.md-only facts)."""
        with self._lock:
            self._refresh()
            return self._index.every_live_entry(self._clock())

    def build_context(self) -> str:
        """The prompt block: ``[Long-term Memory]`` (MEMORY.md facts by category) and
        ``[Recent Memory]`` (the last ``max_context_entries`` entries, oldest first,
        ``- [YYYY-MM-DD HH:MM] (<category>) <content>`` in UTC).

        Stale logs are pruned first. Empty sections are omitted; an empty memory gives
        ``""``. Content is rendered on one line (newlines escaped), so remembered text
        cannot open a section or forge a bullet. With ``max_context_chars`` the oldest
        recent entries, then the last facts, are dropped to fit.
        """
        with self._lock:
            entries, chars = self.max_context_entries, self.max_context_chars
            if not self._index.loaded:
                self._listing = self.root.list("", recursive=True)
                now = self._clock()
                if not self._has_stale_logs(now):
                    text = self._contexts.cold(
                        self.root, self._listing, now, max_entries=entries, max_chars=chars
                    )
                    if text is not None:
                        return text
            self._refresh()
            now = self._clock()
            if self._has_stale_logs(now):
                self.prune_logs()
            return self._contexts.indexed(self._index, now, max_entries=entries, max_chars=chars)

    def _has_stale_logs(self, now: datetime) -> bool:
        cutoff = (now - timedelta(days=self.max_log_days)).strftime("%Y-%m-%d")
        return any((d := log_date(i.path)) is not None and d < cutoff for i in self._listing)

    def stats(self) -> dict[str, Any]:
        """Counts for monitoring: live entries, persistent facts, categories, log files
        and bytes, corrupt lines (log lines skipped, plus MEMORY.md lines that are not
        valid UTF-8, also counted alone as ``memory_md_invalid_lines``: they are kept
        byte for byte and read with U+FFFD in place of the bad bytes), and the URL."""
        with self._lock:
            self._refresh()
            now = self._clock()
            facts = self._index.live_facts(now)
            logs = [i for i in self._listing if log_date(i.path) is not None]
            count, categories = self._index.live_categories(now)
            md = next((i for i in self._listing if i.path == MEMORY_FILE), None)
            invalid = self._index.document.invalid_lines
            return {
                "storage": self.root.url,
                "entries": count,
                "persistent_facts": sum(len(v) for v in facts.values()),
                "categories": sorted(categories),
                "log_files": len(logs),
                "log_bytes": sum(i.size for i in logs),
                "memory_md_bytes": md.size if md else 0,
                "corrupt_lines": self._index.corrupt_lines + invalid,
                "memory_md_invalid_lines": invalid,
            }
