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
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from fsmemory import _jsonutil
from fsmemory._log import get_logger
from fsmemory.errors import FsMemoryError, InvalidInputError
from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs.base import FileInfo

# The embedded default root (a local folder), imported with the memory layer, as every
# other module the local path needs; remote roots still load on first use.
from fsmemory.fs.local import LocalRoot as _LocalRoot  # noqa: F401
from fsmemory.memory import _index_cache, _settings
from fsmemory.memory._context import Contexts
from fsmemory.memory._facts_file import FactsFile
from fsmemory.memory._index import MemoryIndex
from fsmemory.memory.entry import KnowledgeEntry, RememberResult, forget_records
from fsmemory.memory.layout import (
    DAILY_LOG_DIR,
    MEMORY_FILE,
    SETTINGS_FILE,
    log_date,
    log_name_for,
)
from fsmemory.memory.validation import (
    DEFAULT_MAX_CONTENT_BYTES,
    check_category,
    check_content,
    check_importance,
    check_metadata,
    check_non_negative_int,
    check_positive_int,
    check_ttl_days,
)

if TYPE_CHECKING:  # the snapshot, sanitizer and vector modules load only when used
    from fsmemory.memory._replica import SnapshotReplica
    from fsmemory.memory._stats import MemoryStats
    from fsmemory.memory._vectors import Embedder, VectorStore
    from fsmemory.sanitizers import PreSaveHook
    from fsmemory.snapshot import IncrementalBackend, KnowledgeBackend

__all__ = ["KnowledgeMemory", "RememberResult"]

logger = get_logger(__name__)

Clock = Callable[[], datetime]

# The cache file old versions kept for a plain MEMORY.md's sections (no longer read or
# written; clear() still removes a leftover one).
_OLD_CONTEXT_CACHE = "context"


class KnowledgeMemory:
    """Cross-session knowledge: persistent facts in MEMORY.md plus daily JSONL logs.

    Args:
        storage_dir: a local path or any fsspec URL (``memory://u1``, ``s3://b/users/1``,
            ``gs://...``, ``redis://host:6379/0/users/1``). Default ``./agent_memory``.
        max_log_days: the retention (days of daily logs kept) this process asks for.
            Retention is a property of the memory, stored in its ``fsmemory.json``
            (carried by snapshots) and honoured by every process: reading
            (:meth:`build_context`, :meth:`recall`, ...) never deletes anything. Logs
            older than the stored retention are deleted by :meth:`prune_logs` and by
            this instance's first :meth:`remember` of each UTC day. None (default): the
            stored retention, or 30 days when none is stored. A value given here is
            stored by this instance's first write when the memory has none yet; a
            stored retention is changed only on purpose, with :meth:`set_retention` (a
            different value here is then ignored, with a warning). A damaged or foreign
            ``fsmemory.json`` stops automatic pruning (logged): nothing is deleted.
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
            Each ``remember()`` embeds its own content only, before writing (an
            :class:`EmbedderError` stores nothing), and appends the vector to
            ``vectors/<name>-<dim>.i8v``;
            entries without a vector (older ones, other writers, another embedder) are
            embedded at the next ``recall()``. Identity: the embedder's ``name`` and
            ``dimension`` attributes when present. Needs numpy.
        embed_batch_size: how many texts one embedder call is given when ``recall()``
            embeds entries that lack a vector (default 64). Each batch is stored as it
            comes back: an embedder that fails or times out mid-way leaves the batches
            before stored and used, and ``recall()`` raises :class:`EmbedderError`
            saying how many were embedded.
        vector_cache_bytes: with an embedder, the most memory (bytes) a float32 copy
            of the stored vectors may take. The copy is made by the second
            ``recall()`` of the instance (which costs about what a cold open costs)
            and kept, so that each later recall takes one float32 product instead of
            widening every stored int8 vector again: at 100k vectors of 384 floats
            the copy takes 154 MB and a warm recall about a third of the time. A
            process that recalls once never makes it. None (the default): a quarter
            of the memory the process may use (the smaller of the physical memory,
            which on AWS Lambda is the function's, and a container's cgroup limit),
            at most 256 MiB (170k vectors of 384 floats); 0 keeps no copy.
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
            listed or exported, and deleting it changes no answer. With a ``backend``
            it travels in the bases a fold writes, and a restore into an empty folder
            installs it, proven against the restored files. False: never read or
            write it.

    Raises:
        InvalidInputError: an option is out of range.
        SnapshotError: the backend's snapshot is corrupt (with ``"raise"``).
        BackendError: the backend could not be read (never silently starts empty).
    """

    def __init__(
        self,
        storage_dir: str | os.PathLike[str] | StorageRoot | None = None,
        max_log_days: int | None = None,
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
        embed_batch_size: int = _settings.DEFAULT_EMBED_BATCH,
        vector_cache_bytes: int | None = None,
    ) -> None:
        if storage_dir is not None and directory is not None:
            raise InvalidInputError("pass storage_dir or directory, not both")
        location = storage_dir if storage_dir is not None else directory
        if location is None:
            location = "./agent_memory"
        if max_log_days is not None:
            _settings.check_retention_days("max_log_days", max_log_days)
        check_non_negative_int("max_context_entries", max_context_entries)
        if max_entries is not None:
            check_non_negative_int("max_entries", max_entries)
        if max_context_chars is not None:
            check_non_negative_int("max_context_chars", max_context_chars)
        if not isinstance(recall_context, bool):
            raise InvalidInputError("recall_context must be a bool")
        check_positive_int("embed_batch_size", embed_batch_size)
        if vector_cache_bytes is not None:
            check_non_negative_int("vector_cache_bytes", vector_cache_bytes)
        self.root: StorageRoot = open_root(location, storage_options)
        self._requested_log_days = max_log_days
        self._retention_day = ""  # the UTC day this instance's writes last applied it
        self.max_context_entries = max_context_entries
        self.max_entries = max_entries
        self.max_context_chars = max_context_chars
        self.max_content_bytes = max_content_bytes
        self._clock: Clock = clock or partial(datetime.now, UTC)
        self._index = MemoryIndex()
        self.index_cache = index_cache
        self._cache_checked = not index_cache
        self._cache_rows = 0  # rows of the index the cache file holds
        # per-row values derived from the rows (text hashes) the cache file holds
        self._cache_derived: frozenset[str] = frozenset()
        self._cache_loaded = False  # the index was filled from the cache file
        self._facts_file = FactsFile(self.root, self._index)
        self._lock = threading.RLock()
        self._listing: list[FileInfo] = []
        self._contexts = Contexts()
        self.pre_save = pre_save
        self.dedupe = dedupe
        self.dedupe_window = dedupe_window
        self._dedupe_hook: PreSaveHook | None = None
        if dedupe:
            check_non_negative_int("dedupe_window", dedupe_window)
            from fsmemory.sanitizers import dedupe_against

            self._dedupe_hook = dedupe_against(self._dedupe_candidates, dedupe_threshold)
        self._vectors: VectorStore | None = None
        if embedder is not None:
            from fsmemory.memory._vectors import VectorStore

            self._vectors = VectorStore(
                self.root,
                embedder,
                context=recall_context,
                batch_size=embed_batch_size,
                cache_bytes=vector_cache_bytes,
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
                index_cache=index_cache,
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
            self._apply_retention(now)
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
        # A cold index would read MEMORY.md alone to add the bullet, matching every
        # bullet without the logs' records (most of a restored serverless memory's first
        # remember()); with a cache file, load it and refresh from it instead.
        if (
            entry.persistent
            and not self._cache_checked
            and not self._index.log_infos()
            and self._list_and_load_cache()
        ):
            self._index.refresh(self.root, self._listing)
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
                self._append_forgets([entry_id], reason="forget", entries=[entry])
            self._refresh()
            self._saved()
            return True

    def _append_forgets(
        self, ids: list[str], *, reason: str, entries: Sequence[KnowledgeEntry] = ()
    ) -> None:
        """Append forget records for ``ids`` (whose entries are ``entries``, when known).

        The records go to today's log, or to the log of the newest of ``entries`` when
        that one is dated later (a writer whose clock ran ahead, however far): a forget
        record is never in an older log than what it forgets, so pruning cannot drop it
        while the entry stays, and a reader going back from the newest log meets it
        before the entry.
        """
        now = self._clock()
        data = forget_records(ids, reason, now)
        path = max([log_name_for(now), *(log_name_for(e.created_at) for e in entries)])
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
            found = [self._index.find(v) for v in victims]
            entries = [e for e in found if e is not None]
            self._append_forgets(victims, reason="evicted", entries=entries)

    @property
    def max_log_days(self) -> int | None:
        """The memory's retention in days (None: logs are kept until an explicit
        prune): the one stored in ``fsmemory.json``, else the ``max_log_days`` this
        instance was given, else 30. Reads the settings file.

        Raises:
            InvalidInputError: the settings file is damaged or not fsmemory's.
        """
        stored = _settings.load(self.root)
        if stored.problem is not None:
            raise InvalidInputError(stored.problem)
        if stored.retention_set:
            return stored.retention_days
        if self._requested_log_days is not None:
            return self._requested_log_days
        return _settings.DEFAULT_RETENTION_DAYS

    def set_retention(self, days: int | None) -> None:
        """Change the memory's stored retention on purpose: every process then keeps
        ``days`` days of daily logs (None: keep them until an explicit prune). Nothing
        is deleted now; pruning (:meth:`prune_logs`, or a later :meth:`remember`) uses
        it. The change is a compare-and-swap write of ``fsmemory.json``.

        Raises:
            InvalidInputError: ``days`` is not a whole number from 0 to 100000, or the
                settings file is not fsmemory's or not JSON (it is left as it is).
        """
        if days is not None:
            _settings.check_retention_days("days", days)
        with self._lock:
            _settings.store_retention(self.root, days, only_if_unset=False)
            self._saved()

    def prune_logs(self, max_days: int | None = None) -> int:
        """Delete daily logs older than ``max_days`` days (default: the memory's
        retention, :attr:`max_log_days`; a memory that keeps its logs loses none).

        MEMORY.md is never pruned, but bullets whose TTL has run out are removed from it.
        When the memory has no stored retention and this instance was given
        ``max_log_days``, that value is stored first.

        Returns:
            The number of log files deleted.

        Raises:
            InvalidInputError: ``max_days`` is not a whole number from 0 to 100000, or
                (without ``max_days``) the settings file is damaged or not fsmemory's:
                nothing is deleted.
        """
        if max_days is not None:
            _settings.check_retention_days("max_days", max_days)
        with self._lock:
            days = max_days
            if days is None:
                stored = self._settle_retention()
                if stored.problem is not None:
                    raise InvalidInputError(stored.problem)
                days = _retention_days(stored)
            self._refresh()
            now = self._clock()
            deleted = 0
            if days is not None:
                deleted = self._delete_logs_before(now, days, self.root.list(DAILY_LOG_DIR))
            self._facts_file.drop_expired(now)
            self._refresh()
            self._saved()  # (the deletions, a rewritten MEMORY.md, a stored retention)
            return deleted

    def _delete_logs_before(self, now: datetime, days: int, logs: Sequence[FileInfo]) -> int:
        """Delete the logs of ``logs`` dated more than ``days`` days before ``now``."""
        cutoff = (now - timedelta(days=days)).strftime("%Y-%m-%d")
        stale = [i.path for i in logs if (date := log_date(i.path)) is not None and date < cutoff]
        return self.root.delete_many(stale) if stale else 0

    def _warn_retention(self, stored: int | None) -> None:
        logger.warning(
            "%s keeps %s (stored in %s); max_log_days=%s is ignored: use set_retention() "
            "to change it",
            self.root.url,
            "every log" if stored is None else f"{stored} days of logs",
            SETTINGS_FILE,
            self._requested_log_days,
        )

    def _settle_retention(self) -> _settings.Settings:
        """The memory's settings, after storing this instance's ``max_log_days`` when
        the memory has no retention yet (a stored one that differs is kept, with a
        warning)."""
        stored = _settings.load(self.root)
        requested = self._requested_log_days
        if stored.problem is None and not stored.retention_set and requested is not None:
            stored = _settings.store_retention(self.root, requested, only_if_unset=True)
        if stored.retention_set and requested not in (None, stored.retention_days):
            self._warn_retention(stored.retention_days)
        return stored

    def _apply_retention(self, now: datetime) -> None:
        """A write's part of retention, once per UTC day per instance: store this
        instance's ``max_log_days`` when the memory has no retention yet, then delete
        the logs older than the memory's retention. A settings file that cannot be
        used deletes nothing (logged)."""
        day = now.strftime("%Y-%m-%d")
        if self._retention_day == day:
            return
        self._retention_day = day
        stored = self._settle_retention()
        if stored.problem is not None:
            logger.warning("%s: logs are not pruned: %s", self.root.url, stored.problem)
            return
        days = _retention_days(stored)
        if days is None:
            return
        try:
            deleted = self._delete_logs_before(now, days, self.root.list(DAILY_LOG_DIR))
        except (OSError, FsMemoryError) as exc:  # (a role without delete permission)
            logger.warning("%s: old logs not pruned: %s", self.root.url, exc)
            return
        if deleted and self._index.loaded:
            self._refresh()

    def clear(self) -> None:
        """Remove all knowledge: MEMORY.md and every daily log."""
        with self._lock:
            self.root.delete(MEMORY_FILE)
            self.root.delete_tree(DAILY_LOG_DIR)
            _index_cache.delete(self.root)
            _index_cache.delete(self.root, _OLD_CONTEXT_CACHE)
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
            self._list_and_load_cache()
        self._cache_checked = True
        self._index.refresh(self.root, self._listing)

    def _list_and_load_cache(self) -> bool:
        """Before any log is read: the listing and the cache file, together where the
        root can send both (a first persistent remember() may have read MEMORY.md
        alone; the cache replaces that too). True when the cache was loaded."""
        self._listing, loaded = _index_cache.list_and_load(self.root, self._index)
        self._cache_checked = True
        if not loaded:
            return False
        stale, total = self._index.bytes_to_reread(self.root, self._listing)
        if 2 * stale > total:
            # Mostly rewritten or replaced since (a copied folder): dropping what the
            # cache holds would cost more than parsing afresh.
            self._index.reset()
            return False
        self._cache_rows = self._index.rows
        self._cache_derived = frozenset(self._index.derived)
        self._cache_loaded = True
        return True

    def _save_index_cache(self) -> None:
        """Persist the index once it holds enough rows the cache file does not, or
        per-row values derived from them that the loaded cache file lacked (the text
        hashes of hybrid recall, computed for every row when a cache written without
        them is loaded: written once, so the next fresh process need not), or when the
        loaded cache turned out damaged (it is replaced)."""
        index = self._index
        if index.cache_damaged:
            index.cache_damaged = self._cache_loaded = False
            self._cache_rows = -_index_cache.MIN_NEW_ROWS
        derived_new = self._cache_loaded and not self._cache_derived.issuperset(index.derived)
        if (
            self.index_cache
            and index.ranked
            and (index.rows - self._cache_rows >= _index_cache.MIN_NEW_ROWS or derived_new)
            and _index_cache.worth_it(self._listing)
        ):
            self._cache_rows = index.rows
            self._cache_derived = frozenset(index.derived)
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
        check_positive_int("limit", limit)
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

        Reading never deletes: logs older than the memory's retention stay visible
        until they are pruned. Empty sections are omitted; an empty memory gives
        ``""``. Content is rendered on one line (newlines escaped), so remembered text
        cannot open a section or forge a bullet. With ``max_context_chars`` the oldest
        recent entries, then the last facts, are dropped to fit.
        """
        with self._lock:
            entries, chars = self.max_context_entries, self.max_context_chars
            if not self._index.loaded:
                self._listing = self.root.list("", recursive=True)
                text = self._contexts.cold(
                    self.root, self._listing, self._clock(), max_entries=entries, max_chars=chars
                )
                if text is not None:
                    return text
            self._refresh()
            now = self._clock()
            return self._contexts.indexed(self._index, now, max_entries=entries, max_chars=chars)

    def stats(self) -> MemoryStats:
        """Counts for monitoring: live entries, persistent facts, categories, log files
        and bytes, corrupt lines (log lines skipped, plus MEMORY.md lines that are not
        valid UTF-8, also counted alone as ``memory_md_invalid_lines``: they are kept
        byte for byte and read with U+FFFD in place of the bad bytes), and the URL.

        A plain dict, typed as :class:`~fsmemory.memory.MemoryStats` (each key's type
        is known to a type checker)."""
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


def _retention_days(stored: _settings.Settings) -> int | None:
    """The retention in days a usable settings file gives (None: keep every log)."""
    return stored.retention_days if stored.retention_set else _settings.DEFAULT_RETENTION_DAYS
