"""Where snapshots live: the seed's two-method protocol, and incremental backends.

Two protocols:

* :class:`KnowledgeBackend` (the seed's): ``load_bytes() -> bytes | None`` and
  ``save_bytes(data)``. Any object with these two methods works. Each save uploads the
  whole folder and the last writer wins.
* :class:`IncrementalBackend` (fsmemory's): a snapshot is a **base** archive plus small
  **delta** objects. A save uploads only a delta under a fresh, unique name, so
  concurrent savers never overwrite each other; a restore folds the base and every delta
  together; a **fold** (compaction) writes a new base and moves the **head** to it with
  compare-and-swap, then removes what earlier folds retired at least
  :data:`RETIRED_GRACE` seconds ago (one batched request where the service has one).
  When to fold is the memory layer's decision (a save folds once ``compact_after``
  deltas are waiting or their bytes pass a quarter of the base's, see
  :mod:`fsmemory.memory._replica`); a backend only offers ``compact_after`` as its
  default.

:class:`FsspecBackend` implements both on any fsspec URL; :class:`RedisKnowledgeBackend`
implements both natively in Redis (with an optional server-side TTL).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from fsmemory import _jsonutil
from fsmemory.errors import (
    ConflictError,
    FsMemoryError,
    InvalidInputError,
    KeyNotFoundError,
    SnapshotError,
)
from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs.errors import translated
from fsmemory.fs.redis import redis_client
from fsmemory.snapshot._head import HEAD_FORMAT, plan_fold, read_records
from fsmemory.snapshot.archive import is_framed

__all__ = [
    "DEFAULT_COMPACT_AFTER",
    "HEAD_FORMAT",
    "RETIRED_GRACE",
    "FsspecBackend",
    "IncrementalBackend",
    "KnowledgeBackend",
    "RedisKnowledgeBackend",
    "SnapshotState",
    "supabase_backend",
]

logger = logging.getLogger(__name__)

#: a save folds the waiting deltas into a new base once this many are waiting
DEFAULT_COMPACT_AFTER = 32
#: seconds a fold keeps the objects it retires (the base it replaces, the deltas it folds)
#: before a later fold may delete them: the longest a single read attempt may take and
#: still be sure to find everything its head named, however many folds complete meanwhile
#: (a folded delta's name also stays recorded this long after its object is known gone).
#: Measured on the retiring writer's clock and the deleting writer's clock: a skewed clock
#: only shortens or lengthens retention (a reader slower than what is left retries), it
#: never lets a folded delta be applied again.
RETIRED_GRACE = 120.0
#: a restore fetches the base and the waiting deltas with up to this many requests in
#: flight, so with the default ``compact_after`` they all travel in one round trip
FETCH_THREADS = 64
#: seconds the fetching threads wait for each other to start before sending anyway
_START_WAIT = 2.0
#: a read that finds objects removed under it tries again this many times in all (what it
#: fetched is kept across attempts; an attempt fails only when it takes longer than
#: :data:`RETIRED_GRACE`)
_READ_ATTEMPTS = 20


@runtime_checkable
class KnowledgeBackend(Protocol):
    """The seed's single-blob protocol: any object with these two methods works."""

    def load_bytes(self) -> bytes | None:
        """The last saved blob, or None when nothing was saved yet."""

    def save_bytes(self, data: bytes) -> None:
        """Replace the stored blob."""


@dataclass(frozen=True, slots=True)
class SnapshotState:
    """What a restore reads: the base archive, the deltas to fold on top (in order), and
    the head version that a fold must compare-and-swap against.

    Attributes:
        base: the base archive (None: nothing was folded yet).
        deltas: ``(name, data)`` of every delta not folded into ``base``, in order.
        version: the head's version token (None: no head yet).
        base_name: the base object's name, when the backend stores it apart.
        folded: names of deltas the head records as folded into its base (a fold adds
            the ones it folds). A name leaves the record only once its object is known
            to be gone (and :data:`RETIRED_GRACE` seconds more), so a delta left behind
            is never applied again.
        stale: objects the next fold removes (paths inside the snapshot's folder):
            recorded deltas still there and bases the head no longer names.
        gone: names in ``folded`` whose objects are known to be gone (the next fold
            drops them from the record).
        retired: when (epoch seconds, the retiring writer's clock) each object in
            ``stale`` retired within the last :data:`RETIRED_GRACE` seconds was retired;
            a stale object missing from it was retired longer ago. None: the head keeps
            no such record (written before fsmemory recorded it), so every stale object
            is treated as retired just now.
        gone_at: when (epoch seconds) each name in ``folded`` was first known gone, for
            names known gone within the last :data:`RETIRED_GRACE` seconds; None: the
            head keeps no such record (every name in ``gone`` counts as gone just now).
    """

    base: bytes | None
    deltas: list[tuple[str, bytes]] = field(default_factory=list)
    version: str | None = None
    base_name: str | None = None
    folded: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    gone: frozenset[str] = frozenset()
    retired: Mapping[str, float] | None = None
    gone_at: Mapping[str, float] | None = None

    @property
    def delta_bytes(self) -> int:
        """Total size of the deltas."""
        return sum(len(d) for _, d in self.deltas)


@runtime_checkable
class IncrementalBackend(Protocol):
    """A backend that stores a base plus deltas (see the module docstring)."""

    def load_state(self, known: SnapshotState | None = None) -> SnapshotState:
        """Read the head, the base and every delta not yet folded.

        Args:
            known: a state this process read before. What is unchanged since (the base
                when the head still names it, deltas by name) is taken from it instead of
                being downloaded again, so revalidating costs a head read and a listing.
        """

    def save_delta(self, data: bytes) -> str:
        """Store one delta under a new unique name and return the name."""

    def save_base(
        self, archive: bytes, *, folded: Sequence[str], expected: SnapshotState
    ) -> SnapshotState | None:
        """Fold: make ``archive`` the new base if the head is still ``expected``.

        ``folded`` names the deltas ``archive`` includes; they are removed afterwards.

        Returns:
            The new state (the new base, no deltas, the new head version), or None (and
            nothing visible changed) when another writer moved the head first.
        """


class _DeltaNamer:
    """Unique delta names that sort by time across writers and strictly by save order
    within one writer (same millisecond included): ``<ms>-<writer>-<seq>.json``."""

    def __init__(self) -> None:
        self.writer = uuid.uuid4().hex[:12]
        self.seq = 0
        self.last_ms = 0

    def __call__(self) -> str:
        self.last_ms = max(self.last_ms, time.time_ns() // 1_000_000)
        self.seq += 1
        return f"{self.last_ms:013d}-{self.writer}-{self.seq:08d}.json"


class FsspecBackend:
    """A snapshot at any fsspec URL: ``s3://bucket/users/123.snapshot``, ``gs://...``,
    ``redis://host:6379/0/users/123.snapshot``, ``memory://...``, or a local file path.

    Objects: the head at the URL itself, and ``<url>.d/base-*.json`` (``base-*.bin``:
    a version-3 archive, see :mod:`fsmemory.snapshot.archive`) and
    ``<url>.d/delta/*.json`` beside it. A head that holds a seed (version 1) archive is
    read as a base with no deltas, so existing snapshots migrate on their next fold.

    Requests (S3; GCS and Redis alike): a restore is one listing, one head read, then the
    base and every waiting delta fetched at once (up to :data:`FETCH_THREADS` in flight),
    so three sequential round trips whatever the number of deltas; a save is one ``PUT``
    of a delta; a fold is a ``PUT`` of the base, a conditional ``PUT`` of the head and
    one batched delete.

    The head names its base and records the deltas folded into it (``"folded"``). A
    name stays in the record until a fold knows its object is gone (its own delete
    succeeded, or a listing younger than the record lacks it) and :data:`RETIRED_GRACE`
    seconds more (``"gone"`` dates it), so a delta that a killed fold left behind, or
    that a role without delete permission cannot remove, is never applied again, however
    many folds pass; every fold removes the leftovers it sees once older than the grace.

    The head also records when each object was retired (``"retired"``: object name ->
    UTC time, on the folding writer's clock): the base a fold replaces and the deltas it
    folds. A fold deletes a retired object only once it was retired at least
    :data:`RETIRED_GRACE` seconds ago, so a read attempt shorter than that finds every
    object its head named, whatever the number of folds meanwhile, and never lists a
    deleted delta its head no longer records. An entry leaves ``"retired"`` or
    ``"gone"`` once older than the grace, so the head holds at most what was retired or
    deleted within the last :data:`RETIRED_GRACE` seconds (and what cannot be deleted).
    A head without these records (written by an older fsmemory, which ignores them)
    counts every object it retired as retired now, and every name known gone as gone
    now: the safe choice, which only delays a deletion by the grace (counting them as
    retired long ago could delete what a reader of that head is fetching).

    Attributes:
        clock: the time in epoch seconds, used to date retirements (``time.time``;
            replaceable, e.g. in tests).

    Args:
        url: where the snapshot lives.
        storage_options: fsspec options of the URL's filesystem (credentials, endpoint,
            ``retry``, ...), e.g. ``{"key": ..., "secret": ..., "client_kwargs":
            {"endpoint_url": "http://127.0.0.1:9000"}}`` for S3.
        compact_after: a save folds the waiting deltas into a new base once this many
            are waiting (see :class:`~fsmemory.KnowledgeMemory`'s
            ``snapshot_compact_after``, which overrides it); at least 1.
        **legacy_options: the old spelling of ``storage_options`` (deprecated).

    Raises:
        InvalidInputError: a URL without a parent folder and a name, or a bad option.
    """

    def __init__(
        self,
        url: str | os.PathLike[str],
        storage_options: Mapping[str, Any] | None = None,
        *,
        compact_after: int = DEFAULT_COMPACT_AFTER,
        **legacy_options: Any,
    ) -> None:
        text = os.fspath(url).rstrip("/")
        parent, sep, name = text.rpartition("/")
        if not sep or not name or (parent.endswith(":/") or parent.endswith(":")):
            raise InvalidInputError(f"snapshot URL needs a parent folder and a name: {text!r}")
        options = _storage_options(storage_options, legacy_options, "FsspecBackend")
        self.url = text
        self.compact_after = check_compact_after(compact_after)
        self.root: StorageRoot = open_root(parent, options)
        self.head = name
        self.objects = f"{name}.d"
        self._names = _DeltaNamer()
        self.clock: Callable[[], float] = time.time
        #: identifies this snapshot within the process (URL and options)
        self.replica_key = f"fsspec:{self.root.url}/{name}:{sorted(options.items())!r}"

    def __repr__(self) -> str:
        return f"FsspecBackend({self.url!r})"

    # -- reading -------------------------------------------------------------------------
    def _read_head(self) -> tuple[dict[str, Any] | None, bytes | None, str | None]:
        """(head document, inline seed archive, version) of the head object."""
        try:
            current = self.root.read(self.head)
        except KeyNotFoundError:
            return None, None, None
        try:
            document = _jsonutil.loads(current.data)
        except ValueError as exc:
            raise SnapshotError(f"snapshot head {self.url} is not valid JSON") from exc
        if not isinstance(document, dict):
            raise SnapshotError(f"snapshot head {self.url} is not a JSON object")
        if "files" in document:
            return None, current.data, current.version
        if document.get("format") != HEAD_FORMAT:
            raise SnapshotError(f"{self.url} is not an fsmemory snapshot")
        return document, None, current.version

    def load_state(self, known: SnapshotState | None = None) -> SnapshotState:
        """Read head, base and the unfolded deltas: one listing, one head read, then the
        base and deltas all at once (three sequential round trips). What ``known``
        already holds (the same base, deltas by name) is not downloaded again.

        A fold keeps the base it replaces and the deltas it folds for at least
        :data:`RETIRED_GRACE` seconds, so a read attempt fails (and is tried again) only
        when it takes longer than that, however many folds complete during it; what an
        attempt fetched is kept for the next one, which then costs a listing, a head read
        and the objects that are new.
        """
        fetched: dict[str, bytes] = {}
        for _ in range(_READ_ATTEMPTS):
            state = self._load_state_once(known, fetched)
            if state is not None:
                return state
        raise SnapshotError(f"snapshot {self.url} keeps changing under the reader")

    def _load_state_once(
        self, known: SnapshotState | None, fetched: dict[str, bytes]
    ) -> SnapshotState | None:
        """One read attempt; None when objects its head names were removed meanwhile
        (what it fetched stays in ``fetched`` for the next attempt)."""
        # List before reading the head: a fold that completes in between then shows
        # up in the head (its deltas are skipped as folded), never as deltas missing.
        # The listing holds the bases too: the head's own base in it proves the listing
        # younger than every record of the head (see ``_stale_and_gone``).
        listed = {i.path for i in self.root.list(self.objects, recursive=True)}
        head, inline, version = self._read_head()
        records = read_records(head, self.clock())
        base_name = records.base_name
        base_path = f"{self.objects}/{base_name}" if base_name else None
        waiting = self._waiting_deltas(listed, records.folded)
        # Content already read is reused by name (names are never reused), but only when
        # the listing is younger than the head's record: otherwise a delta listed here
        # may have been removed and dropped from the record since (folded long ago), and
        # only reading it now proves it is still waiting.
        have: dict[str, bytes] = {}
        if base_path is None or base_path in listed:
            have = self._known_deltas(known, fetched)
        reuse_base = known is not None and base_name is not None and known.base_name == base_name
        fetches = [path for path, name in waiting if name not in have]
        if base_path is not None and not reuse_base and base_path not in fetched:
            fetches.append(base_path)
        if not self._fetch_into(fetched, fetches):
            return None  # folded and removed by later folds meanwhile: read again
        base = inline
        if base_path is not None:
            base = known.base if reuse_base and known is not None else fetched[base_path]
        deltas = [(name, have[name] if name in have else fetched[path]) for path, name in waiting]
        stale, gone = self._stale_and_gone(listed, base_path, records.folded)
        return SnapshotState(
            base,
            deltas,
            version,
            base_name,
            records.folded,
            stale,
            gone,
            records.retired,
            records.gone_at,
        )

    def _waiting_deltas(self, listed: set[str], folded: Sequence[str]) -> list[tuple[str, str]]:
        """``(path, name)`` of the listed deltas the head does not record as folded, in
        name order."""
        prefix = f"{self.objects}/delta/"
        record = set(folded)
        paths = sorted(p for p in listed if p.startswith(prefix) and p[len(prefix) :] not in record)
        return [(p, p[len(prefix) :]) for p in paths]

    def _known_deltas(
        self, known: SnapshotState | None, fetched: Mapping[str, bytes]
    ) -> dict[str, bytes]:
        """Delta content by name that an earlier read (``known``) or an earlier attempt
        of this read (``fetched``) already holds."""
        prefix = f"{self.objects}/delta/"
        have = dict(known.deltas) if known is not None else {}
        have.update({p[len(prefix) :]: b for p, b in fetched.items() if p.startswith(prefix)})
        return have

    def _fetch_into(self, fetched: dict[str, bytes], paths: Sequence[str]) -> bool:
        """Fetch ``paths`` in parallel into ``fetched``; False when one no longer exists."""
        blobs = _fetch_all(self.root, paths)
        got = {p: b for p, b in zip(paths, blobs, strict=True) if b is not None}
        fetched.update(got)
        return len(got) == len(paths)

    def _stale_and_gone(
        self, listed: set[str], base_path: str | None, folded: Sequence[str]
    ) -> tuple[tuple[str, ...], frozenset[str]]:
        """What a listing taken before reading a head tells the next fold.

        Stale: recorded deltas still listed (folded, left behind by a fold that was
        killed or could not delete) and bases other than the head's.

        Gone: recorded deltas the listing lacks, when the listing shows the head's own
        base. Every recorded delta was written before the fold that folded it listed it,
        so before the head's base was written, so before this listing: not listed means
        deleted, and a deleted name never comes back. Without the head's base in the
        listing (a fold completed between the listing and the head read), nothing is
        known gone.
        """
        delta_prefix = f"{self.objects}/delta/"
        stale = [f"delta/{n}" for n in folded if f"{delta_prefix}{n}" in listed]
        for path in sorted(listed):
            rest = path[len(self.objects) + 1 :]
            if "/" not in rest and rest.startswith("base-") and path != base_path:
                stale.append(rest)
        gone: frozenset[str] = frozenset()
        if base_path is not None and base_path in listed:
            gone = frozenset(n for n in folded if f"{delta_prefix}{n}" not in listed)
        return tuple(stale), gone

    def load_bytes(self) -> bytes | None:
        """The seed protocol: the base archive (None if nothing was saved).

        Raises:
            SnapshotError: deltas are waiting to be folded; a KnowledgeMemory restore
                folds them (merging is the memory layer's job, which owns the layout).
        """
        return _single_blob(self.load_state(), self)

    # -- writing -------------------------------------------------------------------------
    def save_delta(self, data: bytes) -> str:
        """One create-only PUT of a uniquely named delta.

        The name is unique to this call, so a conflict can only mean that an earlier try
        of this very PUT landed although its reply was lost: when the object holds
        ``data`` it is the delta, saved once.
        """
        name = self._names()
        path = f"{self.objects}/delta/{name}"
        try:
            self.root.write(path, data, create_only=True)
        except ConflictError:
            try:
                landed = self.root.read_bytes(path) == data
            except KeyNotFoundError:
                landed = False
            if not landed:
                raise
        return name

    def save_base(
        self, archive: bytes, *, folded: Sequence[str], expected: SnapshotState
    ) -> SnapshotState | None:
        """Write a new base and move the head to it with compare-and-swap (against
        ``expected.version``); then remove, in one batched delete, what ``expected``
        knows is stale (the deltas folded before ``expected`` that are still there and
        the bases before ``expected``'s) and was retired at least :data:`RETIRED_GRACE`
        seconds ago.

        The head records every folded delta whose object may still exist (a name leaves
        the record only once its object is known gone), so a delta left behind by a
        fold that was killed or could not delete is skipped by every reader and removed
        by a later fold, however many folds pass. The base being replaced and the deltas
        folded now are recorded as retired now, and the stale objects retired less than
        the grace ago keep their time; a later fold removes them once they are older, so
        a reader that read any head of the last :data:`RETIRED_GRACE` seconds can still
        fetch what it names."""
        # (a version-3 archive is a binary frame, not JSON: named for what it holds)
        base_name = f"base-{uuid.uuid4().hex}{'.bin' if is_framed(archive) else '.json'}"
        base_path = f"{self.objects}/{base_name}"
        self.root.write(base_path, archive)
        plan = plan_fold(expected, folded, base_name, self.clock(), RETIRED_GRACE)
        version = self._swap_head(plan.document(time.time()), expected.version)
        if version is None:
            _delete_all(self.root, [base_path])
            return None
        removed = _delete_all(self.root, [f"{self.objects}/{s}" for s in plan.ripe])
        left, gone = plan.left_after(removed)
        return SnapshotState(
            archive, [], version, base_name, plan.record, left, gone, plan.retired, plan.gone_at
        )

    def _swap_head(self, document: Mapping[str, Any], expected: str | None) -> str | None:
        """Write the head if it is still at version ``expected`` (None: if there is no
        head yet); its new version, or None when another writer moved it first."""
        data = _jsonutil.dumps(document)
        try:
            if expected is None:
                return self.root.write(self.head, data, create_only=True)
            return self.root.write(self.head, data, if_version=expected)
        except ConflictError:
            return None

    def save_bytes(self, data: bytes) -> None:
        """The seed protocol: replace the whole snapshot (last writer wins)."""
        for _ in range(20):
            state = self.load_state()
            if self.save_base(data, folded=[n for n, _ in state.deltas], expected=state):
                return
        raise ConflictError(f"could not replace snapshot {self.url}: too many concurrent writers")

    def quarantine(self) -> str:
        """Move every object of this snapshot aside (to ``<name>.corrupt-<ts>``) so a fresh
        one can start; returns the quarantine prefix. Nothing is deleted."""
        stamp = datetime.now(tz=UTC).strftime("%Y%m%dT%H%M%S")
        target = f"{self.head}.corrupt-{stamp}-{uuid.uuid4().hex[:6]}"
        moves = [(self.head, f"{target}/head")]
        moves += [
            (i.path, f"{target}/{i.path[len(self.objects) + 1 :]}")
            for i in self.root.list(self.objects, recursive=True)
        ]
        for src, dst in moves:
            try:
                self.root.write(dst, self.root.read_bytes(src))
            except KeyNotFoundError:
                continue
            self.root.delete(src)
        logger.warning("moved corrupt snapshot %s aside to %s", self.url, target)
        return target


def _fetch_all(root: StorageRoot, paths: Sequence[str]) -> list[bytes | None]:
    """Read ``paths`` all at once (one round trip: a thread each, up to
    :data:`FETCH_THREADS`); None for a path that no longer exists.

    The threads wait for one another before sending (a barrier): none sends its request
    while others are still starting, so a fast reply never frees a thread to take a
    second path the pool would otherwise send later, one after the other.

    Raises:
        Whatever a read raises other than ``KeyNotFoundError`` (the first such error).
    """

    def fetch(path: str) -> bytes | None:
        try:
            return root.read_bytes(path)
        except KeyNotFoundError:
            return None

    if len(paths) <= 1:
        return [fetch(p) for p in paths]
    count = min(FETCH_THREADS, len(paths))
    results: list[bytes | None] = [None] * len(paths)
    errors: list[BaseException] = []
    ready = threading.Barrier(count)

    def run(first: int) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):  # slow to start: send
            ready.wait(timeout=_START_WAIT)
        for i in range(first, len(paths), count):
            try:
                results[i] = fetch(paths[i])
            except BaseException as exc:  # handed to the caller below
                errors.append(exc)
                return

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def _delete_all(root: StorageRoot, paths: Sequence[str]) -> bool:
    """Remove objects nothing references any more, best effort (a leftover is skipped by
    readers and removed by a later fold), in as few requests as the root allows
    (:meth:`~fsmemory.fs.base.StorageRoot.delete_many`: one ``DeleteObjects`` on S3).

    Returns:
        True only when the root reports every object deleted (nothing was left to
        delete included); False when the delete failed or reported fewer objects.
    """
    if not paths:
        return True
    try:
        count = root.delete_many(paths)
    except (FsMemoryError, OSError) as exc:
        logger.warning("could not remove %d folded snapshot object(s): %s", len(paths), exc)
        return False
    return count == len(paths)


def check_compact_after(value: object) -> int:
    """Validate a ``compact_after`` option (a positive int)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"compact_after must be an int >= 1, got {value!r}")
    return value


def _storage_options(
    storage_options: Mapping[str, Any] | None, legacy: Mapping[str, Any], owner: str
) -> dict[str, Any]:
    """One way in: the ``storage_options`` mapping; keyword options still work, with a
    DeprecationWarning."""
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidInputError(
            f"storage_options must be a mapping, not {type(storage_options).__name__}"
        )
    options = dict(storage_options or {})
    if legacy:
        warnings.warn(
            f"{owner}(url, **options) is deprecated; pass storage_options={{...}}",
            DeprecationWarning,
            stacklevel=3,
        )
        clash = sorted(set(options) & set(legacy))
        if clash:
            raise InvalidInputError(f"options given twice: {', '.join(clash)}")
        options.update(legacy)
    return options


class RedisKnowledgeBackend:
    """A snapshot stored natively in Redis (the seed's Redis backend, made incremental).

    Keys: ``<prefix><key>:base`` (the base archive), ``<prefix><key>:deltas`` (a list;
    ``RPUSH`` appends a delta atomically) and ``<prefix><key>:version`` (a counter moved by
    each fold, watched for compare-and-swap). With ``ttl`` every save refreshes a
    server-side expiry on all three keys.

    Args:
        key: the snapshot's name, e.g. a user id.
        url: Redis URL (``redis://[:password@]host:port/db``); ignored when ``client`` is given.
        prefix: key namespace.
        ttl: seconds until the snapshot expires after its last save (None: never).
        client: an existing ``redis.Redis`` client.
        storage_options: keyword arguments of ``redis.Redis.from_url`` (timeouts, TLS
            options, ...); not allowed together with ``client``.
        compact_after: a save folds the waiting deltas into a new base once this many
            are waiting (``KnowledgeMemory(snapshot_compact_after=...)`` overrides it).

    Raises:
        InvalidInputError: a bad key, ttl or option.
        MissingDependencyError: the ``redis`` package is not installed.
    """

    def __init__(
        self,
        key: str,
        url: str = "redis://localhost:6379/0",
        prefix: str = "fsmemory:knowledge:",
        ttl: int | None = None,
        *,
        client: Any = None,
        storage_options: Mapping[str, Any] | None = None,
        compact_after: int = DEFAULT_COMPACT_AFTER,
    ) -> None:
        if not isinstance(key, str) or not key:
            raise InvalidInputError("key must be a non-empty string")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise InvalidInputError("ttl must be a positive number of seconds or None")
        options = _storage_options(storage_options, {}, "RedisKnowledgeBackend")
        if client is not None and options:
            raise InvalidInputError("pass client or storage_options, not both")
        self.compact_after = check_compact_after(compact_after)
        from_url = client is None
        self._redis: Any = redis_client.redis_module()
        if client is None:
            client = redis_client.client_from_url(url, **options)
        self.client = client
        self.ttl = ttl
        self._base = f"{prefix}{key}:base"
        self._deltas = f"{prefix}{key}:deltas"
        self._version = f"{prefix}{key}:version"
        #: identifies this snapshot within the process
        where = url if from_url else f"client-{id(client)}"
        self.replica_key = f"redis:{where}:{prefix}{key}"

    def __repr__(self) -> str:
        return f"RedisKnowledgeBackend({self._base.rsplit(':', 1)[0]!r})"

    def _expire(self, pipe: Any) -> None:
        if self.ttl is not None:
            for k in (self._base, self._deltas, self._version):
                pipe.expire(k, self.ttl)

    def load_state(self, known: SnapshotState | None = None) -> SnapshotState:
        """One round trip (a transaction): the version and the deltas, with the base
        unless ``known`` holds the base of the same version (then only the deltas past
        those ``known`` has are sent)."""
        with translated(self._base):
            if known is not None and known.version is not None:
                counter, _, count = known.version.partition(":")
                have = int(count or 0)
                pipe = self.client.pipeline(transaction=True)
                pipe.get(self._version).lrange(self._deltas, have, -1)
                version, new = pipe.execute()
                if int(version or 0) == int(counter or 0):
                    deltas = [d for _, d in known.deltas[:have]] + list(new)
                    return self._state(known.base, deltas, version)
            pipe = self.client.pipeline(transaction=True)
            pipe.get(self._base).lrange(self._deltas, 0, -1).get(self._version)
            base, deltas, version = pipe.execute()
        return self._state(base, list(deltas), version)

    @staticmethod
    def _state(base: bytes | None, deltas: list[bytes], version: Any) -> SnapshotState:
        names = [f"{i:08d}" for i in range(len(deltas))]
        stamp = f"{int(version or 0)}:{len(deltas)}"
        return SnapshotState(base, list(zip(names, deltas, strict=True)), stamp, None)

    def save_delta(self, data: bytes) -> str:
        """``RPUSH`` one delta (and refresh the TTL) in one transaction."""
        with translated(self._deltas):
            pipe = self.client.pipeline(transaction=True)
            pipe.rpush(self._deltas, data)
            self._expire(pipe)
            length = pipe.execute()[0]
        return f"{int(length) - 1:08d}"

    def save_base(
        self, archive: bytes, *, folded: Sequence[str], expected: SnapshotState
    ) -> SnapshotState | None:
        """Replace the base and drop the folded deltas if no fold happened since
        ``expected`` was read (``WATCH`` on the version counter).

        The list can only be trimmed from its head, so ``folded`` must be its first
        entries (``00000000``, ``00000001``, ...): a delta another writer pushed between
        them is not in ``archive``, and then nothing is changed (None)."""
        if list(folded) != [f"{i:08d}" for i in range(len(folded))]:
            return None
        expected_version = int((expected.version or "0:0").split(":")[0])
        with translated(self._base), self.client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(self._version)
                if int(pipe.get(self._version) or 0) != expected_version:
                    return None
                pipe.multi()
                pipe.set(self._base, archive)
                pipe.ltrim(self._deltas, len(folded), -1)
                pipe.incr(self._version)
                self._expire(pipe)
                pipe.execute()
            except self._redis.WatchError:
                return None
        return self._state(archive, [], expected_version + 1)

    def load_bytes(self) -> bytes | None:
        """The seed protocol: the base archive (None if nothing was saved).

        Raises:
            SnapshotError: deltas are waiting to be folded (restore with KnowledgeMemory).
        """
        return _single_blob(self.load_state(), self)

    def save_bytes(self, data: bytes) -> None:
        """The seed protocol: replace the whole snapshot (last writer wins)."""
        for _ in range(20):
            state = self.load_state()
            if self.save_base(data, folded=[n for n, _ in state.deltas], expected=state):
                return
        raise ConflictError("could not replace the Redis snapshot: too many concurrent writers")


def _single_blob(state: SnapshotState, backend: object) -> bytes | None:
    if state.deltas:
        raise SnapshotError(
            f"{backend!r} holds {len(state.deltas)} unfolded delta(s); restore it through "
            "KnowledgeMemory(backend=...), which folds and compacts them"
        )
    return state.base


def supabase_backend(
    *,
    project_ref: str,
    bucket: str,
    key: str,
    access_key_id: str,
    secret_access_key: str,
    region: str,
    endpoint_url: str | None = None,
) -> FsspecBackend:
    """A snapshot in Supabase Storage through its S3-compatible endpoint.

    Create S3 access keys under Storage -> S3 Connection in the Supabase dashboard.

    Args:
        project_ref: the project reference (the subdomain of ``<ref>.supabase.co``).
        bucket: a Storage bucket.
        key: the snapshot's name inside the bucket, e.g. ``"users/123.snapshot"``.
        access_key_id: the S3 access key id.
        secret_access_key: the S3 secret access key.
        region: the project's region (needed for request signing).
        endpoint_url: override the endpoint (self-hosted Supabase).
    """
    endpoint = endpoint_url or f"https://{project_ref}.supabase.co/storage/v1/s3"
    options: Mapping[str, Any] = {
        "key": access_key_id,
        "secret": secret_access_key,
        "client_kwargs": {"endpoint_url": endpoint, "region_name": region},
    }
    return FsspecBackend(f"s3://{bucket}/{key.strip('/')}", storage_options=options)
