"""A LangGraph ``BaseStore`` keeping one plain JSON file per item on any fsspec URL.

::

    from fsmemory.integrations.langgraph import FsspecStore

    store = FsspecStore("s3://bucket/agents/support", storage_options={"anon": False})
    store.put(("users", "42"), "prefs", {"theme": "dark", "language": "en"})
    store.get(("users", "42"), "prefs").value        # {'theme': 'dark', 'language': 'en'}
    store.search(("users",), filter={"theme": "dark"}, query="language")
    store.list_namespaces(prefix=("users",), max_depth=2)
    graph = builder.compile(store=store)              # long-term memory of a StateGraph

Layout: a namespace is a folder path and an item is ``<key>.json`` inside it, so
``("users", "42")`` / ``"prefs"`` is ``<url>/users/42/prefs.json``::

    {
      "namespace": ["users", "42"],
      "key": "prefs",
      "value": {"theme": "dark", "language": "en"},
      "created_at": "2026-03-13T10:15:00.123456+00:00",
      "updated_at": "2026-03-13T10:15:00.123456+00:00"
    }

(``ttl_minutes``/``expires_at`` are added for items with a TTL, ``index`` for items put
with one.) A person can read and edit these files; the store notices the change. A key
is written as is when it is made of letters, digits and ``- _ . @ + = ,``; any other
character becomes ``~XX`` (its UTF-8 bytes in hex) and a leading ``.`` does too, so no
key can leave its folder or name a hidden file. Keys longer than about 200 bytes end in
``~~`` and a digest. The JSON inside is the truth for the key and the namespace.

Semantics follow LangGraph's ``BaseStore`` (and match ``InMemoryStore`` on the same
operations, which the test suite checks with hypothesis):

* ``batch``/``abatch`` run ``GetOp``, ``PutOp`` (``value=None`` deletes), ``SearchOp`` and
  ``ListNamespacesOp`` in the order given. ``abatch`` runs local and ``memory://`` stores
  inline and network stores in a worker thread.
* Writes are atomic (a reader never sees a torn file) and compare-and-swap: a put keeps the
  item's ``created_at`` from the version it replaced, and a TTL refresh never overwrites a
  concurrent put.
* Namespace labels are validated as LangGraph does (non-empty strings without ``.`` or NUL)
  and also must be plain folder names: ``/``, ``\\``, control characters and over-long
  labels raise :class:`~langgraph.store.base.InvalidNamespaceError`. ``("users", "1")``
  never sees ``("users", "10")``: a prefix is a whole folder. The root label
  ``"langgraph"`` is reserved as LangGraph reserves it: the public ``put``/``aput`` refuse
  it, ``batch``/``abatch`` (LangGraph's internal entry) accept it, as ``InMemoryStore`` does.
* ``search`` filters with LangGraph's filter language (equality, nested objects, lists,
  ``$eq $ne $gt $gte $lt $lte``). Without a ``query`` results are ordered newest update
  first (``InMemoryStore`` uses insertion order; LangGraph specifies none). With a
  ``query`` only items that match it are returned, ranked by a keyword score in [0, 1]
  (see :func:`keyword_score`), then newest first; the text searched is the item's
  ``index`` fields (LangGraph's path syntax), else the store's ``index_fields``, else every
  string in the value; ``index=False`` items are not searched by ``query``. A query of
  stopwords only (``"before"``, ``"not"``) matches those words whole, as typed.
* TTL as LangGraph defines it: ``ttl`` in minutes on put (or ``ttl={"default_ttl": ...}``),
  refreshed by reads unless ``refresh_ttl=False`` (or ``refresh_on_read: False``);
  expired items are deleted by :meth:`FsspecStore.sweep_ttl` (or the sweeper thread of
  :meth:`FsspecStore.start_ttl_sweeper`, started by ``sweep_interval_minutes``) and are
  hidden before that when ``omit_expired`` is true.

Reads of many items are served from an in-process cache checked against one listing of
the folder (size/mtime/etag tokens), so a warm search of 1,000 items on a local folder
costs a directory scan, not 1,000 reads.

Needs ``pip install 'fsmemory[langgraph]'``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from fsmemory.errors import (
    ConflictError,
    InvalidInputError,
    KeyNotFoundError,
    MissingDependencyError,
)
from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs.base import FileInfo
from fsmemory.memory.text import analyze, typed_words, words

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        get_text_at_path,
        tokenize_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependencyError("langgraph", "langgraph") from exc

from fsmemory.integrations._langgraph_files import (
    SUFFIX,
    Record,
    check_json,
    item_path,
    namespace_dir,
    namespace_of,
    string_leaves,
)
from fsmemory.integrations._langgraph_search import (
    condition_holds,
    keyword_score,
    matches,
    query_terms,
    recency_key,
    score_words,
)

__all__ = ["FsspecStore", "item_path", "keyword_score", "query_terms"]

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]

_READ_WORKERS = 8
_FOLDER_MEMOS = 64


def _utcnow() -> datetime:
    return datetime.now(tz=UTC)


# -- the store ---------------------------------------------------------------------------
class FsspecStore(BaseStore):
    """LangGraph long-term memory as plain JSON files on any fsspec URL.

    Args:
        url: a local folder or any fsspec URL (``memory://``, ``s3://``, ``gs://``,
            ``redis://``), or an open :class:`~fsmemory.fs.StorageRoot`.
        storage_options: passed to the fsspec filesystem (credentials, endpoint, ...).
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes), ``refresh_on_read``
            (default True), ``omit_expired`` (default False) and
            ``sweep_interval_minutes`` (starts the sweeper thread).
        index_fields: the value fields searched by ``query`` when a put gives no
            ``index`` (LangGraph path syntax, e.g. ``["text", "tags[*]"]``); default:
            every string in the value.
        clock: returns the current aware UTC datetime (for tests).

    Raises:
        InvalidPathError: the URL is malformed.
        MissingDependencyError: the backend's extra is not installed.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        url: str | os.PathLike[str] | StorageRoot,
        *,
        storage_options: Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        index_fields: Sequence[str] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.root: StorageRoot = open_root(url, storage_options)
        self.ttl_config = ttl
        self.index_fields = None if index_fields is None else list(index_fields)
        self._clock: Clock = clock or _utcnow
        self._inline = self.root.capabilities.cheap_lock
        self._cache: dict[str, tuple[str, Record | None]] = {}
        self._folders: dict[str, tuple[list[tuple[str, str]], list[Record]]] = {}
        self._cache_lock = threading.Lock()
        self._sweeper: threading.Thread | None = None
        self._stop_sweeper = threading.Event()
        if ttl and ttl.get("sweep_interval_minutes"):
            self.start_ttl_sweeper()

    def __repr__(self) -> str:
        return f"FsspecStore({self.root.url!r})"

    @property
    def url(self) -> str:
        """The URL of the store's root."""
        return self.root.url

    # -- batches ---------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order and return one result per operation.

        Raises:
            InvalidNamespaceError: a namespace label is not acceptable.
            InvalidInputError: a key or value cannot be stored, or a bad filter operator.
            BackendError: the storage service failed.
        """
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInputError(f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` for async code: inline on local and memory stores (a thread hop
        costs more than the work), in a worker thread on network stores."""
        todo = list(ops)
        if self._inline:
            return self.batch(todo)
        return await asyncio.to_thread(self.batch, todo)

    # -- operations ------------------------------------------------------------------------
    def _omit_expired(self) -> bool:
        return bool(self.ttl_config and self.ttl_config.get("omit_expired", False))

    def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None
        path = item_path(op.namespace, op.key)
        try:
            current = self.root.read(path)
        except KeyNotFoundError:
            return None
        record = self._parse(path, current.data)
        if record is None:
            return None
        now = self._clock()
        if record.expired(now) and self._omit_expired():
            return None
        if op.refresh_ttl and record.ttl_minutes is not None:
            refreshed = replace(record, expires_at=now + timedelta(minutes=record.ttl_minutes))
            try:
                self.root.write(path, refreshed.to_bytes(), if_version=current.version)
            except ConflictError:
                logger.debug("TTL refresh of %s lost to a concurrent write", path)
        return record.item()

    def _put(self, op: PutOp) -> None:
        path = item_path(op.namespace, op.key)
        if op.value is None:
            self.root.delete(path)
            with self._cache_lock:
                self._cache.pop(path, None)
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInputError(f"value must be a mapping, not {type(op.value).__name__}")
        value = dict(op.value)
        check_json(value, "value")
        if (
            op.index is not None
            and op.index is not False
            and (not isinstance(op.index, list) or not all(isinstance(f, str) for f in op.index))
        ):
            raise InvalidInputError("index must be False, None or a list of field paths")
        ttl = op.ttl
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise InvalidInputError("ttl must be a number of minutes or None")
        if ttl is not None and (not math.isfinite(ttl) or ttl < 0):
            raise InvalidInputError(f"ttl must be a finite number of minutes >= 0, got {ttl!r}")
        now = self._clock()
        fresh = Record(
            tuple(op.namespace),
            op.key,
            value,
            now,
            now,
            None if ttl is None else float(ttl),
            None if ttl is None else now + timedelta(minutes=float(ttl)),
            None if op.index is None else (False if op.index is False else list(op.index)),
        )
        encoded_fresh = fresh.to_bytes()

        def change(old: bytes | None) -> bytes:
            if old is None:
                return encoded_fresh
            previous = self._parse(path, old, quiet=True)
            if previous is None:
                return encoded_fresh
            # Another host's clock may be ahead: updated_at never precedes created_at.
            created = previous.created_at
            return replace(
                fresh, created_at=created, updated_at=max(now, created), memo={}
            ).to_bytes()

        self.root.update(path, change)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        folder = namespace_dir(op.namespace_prefix)
        records = self._folder(folder)
        now = self._clock()
        omit = self._omit_expired()
        candidates = [
            r
            for r in records
            if not (omit and r.expired(now)) and (not op.filter or matches(r.value, op.filter))
        ]
        scored: list[tuple[float | None, Record]]
        if op.query:
            terms = query_terms(op.query)
            # Stopwords only (no index term): the words as typed, matched whole in the
            # item's words with stopwords kept, as KnowledgeMemory.recall does.
            typed = not terms
            if typed:
                terms = typed_words(op.query)
            kind = "typed" if typed else "words"
            scored = []
            for record in candidates:
                seen = record.memo.get(kind)
                if seen is None:
                    text = self._searchable_text(record)
                    seen = record.memo[kind] = words(text) if typed else analyze(text)
                    record.memo[kind + "-vocabulary"] = set(seen)
                score = score_words(terms, seen, record.memo[kind + "-vocabulary"], not typed)
                if score > 0.0:
                    scored.append((score, record))
            scored.sort(key=lambda s: (-(s[0] or 0.0), *recency_key(s[1])))
        else:
            scored = [(None, r) for r in candidates]  # _folder sorted them newest first
        offset = max(op.offset, 0)
        page = scored[offset : offset + max(op.limit, 0)]
        if op.refresh_ttl:
            for _, record in page:
                if record.ttl_minutes is not None:
                    self._refresh_ttl(record, now)
        return [record.search_item(score) for score, record in page]

    def _searchable_text(self, record: Record) -> str:
        fields = record.index if record.index is not None else self.index_fields
        if fields is False:
            return ""
        texts: list[str] = []
        if fields is None:
            string_leaves(record.value, texts)
        else:
            for field in fields:
                for text in get_text_at_path(record.value, tokenize_path(field)):
                    texts.append(text)
        return "\n".join(texts)

    def _refresh_ttl(self, record: Record, now: datetime) -> None:
        path = item_path(record.namespace, record.key)
        ttl = record.ttl_minutes
        assert ttl is not None

        def change(old: bytes | None) -> bytes | None:
            current = None if old is None else self._parse(path, old, quiet=True)
            if current is None or current.ttl_minutes is None:
                return None
            expires = now + timedelta(minutes=current.ttl_minutes)
            return replace(current, expires_at=expires).to_bytes()

        try:
            self.root.update(path, change, attempts=3)
        except ConflictError:
            logger.debug("TTL refresh of %s lost to concurrent writes", path)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        infos = self.root.list("", recursive=True)
        if self._omit_expired():
            now = self._clock()
            found = {r.namespace for r in self._load(infos) if not r.expired(now)}
        else:
            found = {ns for info in infos if (ns := namespace_of(info.path)) is not None}
        namespaces = [
            ns for ns in found if all(condition_holds(c, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        else:
            namespaces.sort()
        return namespaces[op.offset : op.offset + op.limit]

    # -- files and the cache ---------------------------------------------------------------
    def _parse(self, path: str, data: bytes, *, quiet: bool = False) -> Record | None:
        try:
            record = Record.from_bytes(data)
        except ValueError as exc:
            if not quiet:
                logger.warning("skipping %s: not a store item (%s)", path, exc)
            return None
        if not record.namespace:
            return None
        try:
            expected = item_path(record.namespace, record.key)
        except (InvalidNamespaceError, InvalidInputError):
            expected = ""
        if expected != path:
            if not quiet:
                logger.warning(
                    "skipping %s: it holds %r/%r, whose file is %r",
                    path,
                    record.namespace,
                    record.key,
                    expected,
                )
            return None
        return record

    def _folder(self, folder: str) -> list[Record]:
        """The items under ``folder``, newest update first, from one listing: reused as
        they are when no file changed since the last look."""
        infos = self.root.list(folder, recursive=True)
        signature = [(i.path, i.token) for i in infos]
        with self._cache_lock:
            memo = self._folders.get(folder)
        if memo is not None and memo[0] == signature:
            return memo[1]
        records = self._load(infos)
        records.sort(key=recency_key)
        with self._cache_lock:
            self._folders[folder] = (signature, records)
            if len(self._folders) > _FOLDER_MEMOS:
                self._folders.pop(next(iter(self._folders)))
        return records

    def _load(self, infos: Iterable[FileInfo]) -> list[Record]:
        """Parsed records of the item files in a listing, read only when changed."""
        wanted = [i for i in infos if i.path.endswith(SUFFIX)]
        with self._cache_lock:
            cache = self._cache
            misses = [i for i in wanted if (hit := cache.get(i.path)) is None or hit[0] != i.token]
        if misses:
            loaded = self._read_many(misses)
            with self._cache_lock:
                for info, record in zip(misses, loaded, strict=True):
                    self._cache[info.path] = (info.token, record)
        out: list[Record] = []
        with self._cache_lock:
            for info in wanted:
                hit = self._cache.get(info.path)
                if hit is not None and hit[1] is not None:
                    out.append(hit[1])
        return out

    def _read_one(self, info: FileInfo) -> Record | None:
        try:
            data = self.root.read_bytes(info.path)
        except KeyNotFoundError:
            return None
        return self._parse(info.path, data)

    def _read_many(self, infos: list[FileInfo]) -> list[Record | None]:
        if self._inline or len(infos) == 1:
            return [self._read_one(i) for i in infos]
        with ThreadPoolExecutor(max_workers=min(_READ_WORKERS, len(infos))) as pool:
            return list(pool.map(self._read_one, infos))

    # -- TTL sweeping ----------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Delete the expired items; returns how many were deleted.

        Each expired item is read again right before it is deleted and kept when it
        changed (a put or a refresh). On local folders and ``memory://`` the check and
        the delete hold the root's lock, which compare-and-swap writes take too, so a
        concurrent put is never lost; on object stores and Redis a put landing within
        the one round trip between the check and the delete can be.
        """
        now = self._clock()
        deleted = 0
        for record in self._load(self.root.list("", recursive=True)):
            if not record.expired(now):
                continue
            path = item_path(record.namespace, record.key)
            with self.root.lock("langgraph-ttl"):
                try:
                    current = self._parse(path, self.root.read_bytes(path), quiet=True)
                except KeyNotFoundError:
                    continue
                if current is None or not current.expired(now):
                    continue
                if self.root.delete(path):
                    deleted += 1
            with self._cache_lock:
                self._cache.pop(path, None)
        return deleted

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Run :meth:`sweep_ttl` every ``sweep_interval_minutes`` (default: the
        ``ttl`` config's, else 5) in a daemon thread until :meth:`stop_ttl_sweeper`."""
        if self._sweeper is not None and self._sweeper.is_alive():
            return
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        minutes = sweep_interval_minutes or configured or 5
        self._stop_sweeper.clear()

        def loop() -> None:
            while not self._stop_sweeper.wait(float(minutes) * 60):
                try:
                    swept = self.sweep_ttl()
                except Exception:  # the sweeper must outlive one failed pass
                    logger.exception("TTL sweep of %s failed", self.root.url)
                else:
                    logger.debug("TTL sweep of %s deleted %d item(s)", self.root.url, swept)

        self._sweeper = threading.Thread(target=loop, name="fsmemory-ttl-sweeper", daemon=True)
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; returns True when it has stopped."""
        self._stop_sweeper.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    def close(self) -> None:
        """Stop the sweeper and release the root's connections."""
        self.stop_ttl_sweeper(timeout=5)
        self.root.close()

    def __enter__(self) -> FsspecStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
