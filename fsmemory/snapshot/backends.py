"""Where snapshots live: the seed's two-method protocol, and incremental backends.

Two protocols:

* :class:`KnowledgeBackend` (the seed's): ``load_bytes() -> bytes | None`` and
  ``save_bytes(data)``. Any object with these two methods works. Each save uploads the
  whole folder and the last writer wins.
* :class:`IncrementalBackend` (fsmemory's): a snapshot is a **base** archive plus small
  **delta** objects. A save uploads only a delta under a fresh, unique name, so
  concurrent savers never overwrite each other; a restore folds the base and every delta
  together; compaction writes a new base and moves the **head** to it with
  compare-and-swap, then deletes the deltas it folded.

:class:`FsspecBackend` implements both on any fsspec URL; :class:`RedisKnowledgeBackend`
implements both natively in Redis (with an optional server-side TTL).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from fsmemory import _jsonutil
from fsmemory.errors import (
    ConflictError,
    InvalidInputError,
    KeyNotFoundError,
    MissingDependencyError,
    SnapshotError,
)
from fsmemory.fs import StorageRoot, open_root

__all__ = [
    "HEAD_FORMAT",
    "FsspecBackend",
    "IncrementalBackend",
    "KnowledgeBackend",
    "RedisKnowledgeBackend",
    "SnapshotState",
    "supabase_backend",
]

logger = logging.getLogger(__name__)

HEAD_FORMAT = "fsmemory-snapshot"
#: how many folded delta names a head remembers (crash leftovers are skipped and removed)
_FOLDED_MEMORY = 256


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
    the head version that a compaction must compare-and-swap against."""

    base: bytes | None
    deltas: list[tuple[str, bytes]] = field(default_factory=list)
    version: str | None = None
    base_name: str | None = None

    @property
    def delta_bytes(self) -> int:
        """Total size of the deltas."""
        return sum(len(d) for _, d in self.deltas)


@runtime_checkable
class IncrementalBackend(Protocol):
    """A backend that stores a base plus deltas (see the module docstring)."""

    def load_state(self) -> SnapshotState:
        """Read the head, the base and every delta not yet folded."""

    def save_delta(self, data: bytes) -> str:
        """Store one delta under a new unique name and return the name."""

    def save_base(self, archive: bytes, *, folded: Sequence[str], expected: SnapshotState) -> bool:
        """Compaction: make ``archive`` the new base if the head is still ``expected``.

        Returns False (and changes nothing visible) when another writer moved the head.
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

    Objects: the head at the URL itself, and ``<url>.d/base-*.json`` /
    ``<url>.d/delta/*.json`` beside it. A head that holds a seed (version 1) archive is
    read as a base with no deltas, so existing snapshots migrate on their next compaction.

    Args:
        url: where the snapshot lives.
        **storage_options: fsspec options (credentials, endpoint, ...).
    """

    def __init__(self, url: str | os.PathLike[str], **storage_options: Any) -> None:
        text = os.fspath(url).rstrip("/")
        parent, sep, name = text.rpartition("/")
        if not sep or not name or (parent.endswith(":/") or parent.endswith(":")):
            raise InvalidInputError(f"snapshot URL needs a parent folder and a name: {text!r}")
        self.url = text
        self.root: StorageRoot = open_root(parent, storage_options)
        self.head = name
        self.objects = f"{name}.d"
        self._names = _DeltaNamer()

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

    def load_state(self) -> SnapshotState:
        """Read head, base and the unfolded deltas (one listing; deltas fetched in
        parallel). If a compaction deletes a listed delta meanwhile, read again."""
        for _ in range(10):
            state = self._load_state_once()
            if state is not None:
                return state
        raise SnapshotError(f"snapshot {self.url} keeps changing under the reader")

    def _load_state_once(self) -> SnapshotState | None:
        head, inline, version = self._read_head()
        base = inline
        base_name = None
        folded: set[str] = set()
        if head is not None:
            base_name = head.get("base")
            folded = set(head.get("folded") or [])
            if base_name:
                try:
                    base = self.root.read_bytes(f"{self.objects}/{base_name}")
                except KeyNotFoundError as exc:
                    raise SnapshotError(f"snapshot base {base_name} is missing") from exc
        paths = sorted(
            i.path
            for i in self.root.list(f"{self.objects}/delta")
            if i.path.rsplit("/", 1)[-1] not in folded
        )

        def fetch(path: str) -> bytes | None:
            try:
                return self.root.read_bytes(path)
            except KeyNotFoundError:
                return None  # folded and deleted by a concurrent compaction

        if len(paths) > 1:
            with ThreadPoolExecutor(max_workers=8) as pool:
                blobs = list(pool.map(fetch, paths))
        else:
            blobs = [fetch(p) for p in paths]
        deltas = []
        for path, blob in zip(paths, blobs, strict=True):
            if blob is None:
                return None
            deltas.append((path.rsplit("/", 1)[-1], blob))
        return SnapshotState(base, deltas, version, base_name)

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

    def save_base(self, archive: bytes, *, folded: Sequence[str], expected: SnapshotState) -> bool:
        """Write a new base and move the head to it with compare-and-swap."""
        base_name = f"base-{uuid.uuid4().hex}.json"
        base_path = f"{self.objects}/{base_name}"
        self.root.write(base_path, archive)
        previous: list[str] = []
        if expected.version is not None:
            head, _inline, version = self._read_head()
            if version != expected.version:
                self.root.delete(base_path)
                return False
            previous = list((head or {}).get("folded") or [])
        remembered = (previous + list(folded))[-_FOLDED_MEMORY:]
        document = {
            "format": HEAD_FORMAT,
            "version": 2,
            "base": base_name,
            "folded": remembered,
            "updated_at": datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        try:
            if expected.version is None:
                self.root.write(self.head, _jsonutil.dumps(document), create_only=True)
            else:
                self.root.write(self.head, _jsonutil.dumps(document), if_version=expected.version)
        except ConflictError:
            self.root.delete(base_path)
            return False
        for name in folded:
            self.root.delete(f"{self.objects}/delta/{name}")
        if expected.base_name and expected.base_name != base_name:
            self.root.delete(f"{self.objects}/{expected.base_name}")
        return True

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


class RedisKnowledgeBackend:
    """A snapshot stored natively in Redis (the seed's Redis backend, made incremental).

    Keys: ``<prefix><key>:base`` (the base archive), ``<prefix><key>:deltas`` (a list;
    ``RPUSH`` appends a delta atomically) and ``<prefix><key>:version`` (a counter moved by
    each compaction, watched for compare-and-swap). With ``ttl`` every save refreshes a
    server-side expiry on all three keys.

    Args:
        key: the snapshot's name, e.g. a user id.
        url: Redis URL (``redis://[:password@]host:port/db``); ignored when ``client`` is given.
        prefix: key namespace.
        ttl: seconds until the snapshot expires after its last save (None: never).
        client: an existing ``redis.Redis`` client.
    """

    def __init__(
        self,
        key: str,
        url: str = "redis://localhost:6379/0",
        prefix: str = "fsmemory:knowledge:",
        ttl: int | None = None,
        *,
        client: Any = None,
    ) -> None:
        if not isinstance(key, str) or not key:
            raise InvalidInputError("key must be a non-empty string")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise InvalidInputError("ttl must be a positive number of seconds or None")
        if client is None:
            try:
                import redis
            except ImportError as exc:
                raise MissingDependencyError("redis", "redis") from exc
            client = redis.Redis.from_url(url)
        self.client = client
        self.ttl = ttl
        self._base = f"{prefix}{key}:base"
        self._deltas = f"{prefix}{key}:deltas"
        self._version = f"{prefix}{key}:version"

    def __repr__(self) -> str:
        return f"RedisKnowledgeBackend({self._base.rsplit(':', 1)[0]!r})"

    def _expire(self, pipe: Any) -> None:
        if self.ttl is not None:
            for k in (self._base, self._deltas, self._version):
                pipe.expire(k, self.ttl)

    def load_state(self) -> SnapshotState:
        """One round trip: base, all deltas and the version, read atomically."""
        from fsmemory.fs.errors import translated

        with translated(self._base):
            pipe = self.client.pipeline(transaction=True)
            pipe.get(self._base).lrange(self._deltas, 0, -1).get(self._version)
            base, deltas, version = pipe.execute()
        count = len(deltas)
        names = [f"{i:08d}" for i in range(count)]
        return SnapshotState(
            base, list(zip(names, deltas, strict=True)), f"{int(version or 0)}:{count}", None
        )

    def save_delta(self, data: bytes) -> str:
        """``RPUSH`` one delta (and refresh the TTL) in one transaction."""
        from fsmemory.fs.errors import translated

        with translated(self._deltas):
            pipe = self.client.pipeline(transaction=True)
            pipe.rpush(self._deltas, data)
            self._expire(pipe)
            length = pipe.execute()[0]
        return f"{int(length) - 1:08d}"

    def save_base(self, archive: bytes, *, folded: Sequence[str], expected: SnapshotState) -> bool:
        """Replace the base and drop the folded deltas if no compaction happened since
        ``expected`` was read (``WATCH`` on the version counter)."""
        import redis

        from fsmemory.fs.errors import translated

        expected_version = int((expected.version or "0:0").split(":")[0])
        with translated(self._base), self.client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(self._version)
                if int(pipe.get(self._version) or 0) != expected_version:
                    return False
                pipe.multi()
                pipe.set(self._base, archive)
                pipe.ltrim(self._deltas, len(folded), -1)
                pipe.incr(self._version)
                self._expire(pipe)
                pipe.execute()
            except redis.WatchError:
                return False
        return True

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
        access_key_id / secret_access_key: the S3 access keys.
        region: the project's region (needed for request signing).
        endpoint_url: override the endpoint (self-hosted Supabase).
    """
    endpoint = endpoint_url or f"https://{project_ref}.supabase.co/storage/v1/s3"
    options: Mapping[str, Any] = {
        "key": access_key_id,
        "secret": secret_access_key,
        "client_kwargs": {"endpoint_url": endpoint, "region_name": region},
    }
    return FsspecBackend(f"s3://{bucket}/{key.strip('/')}", **options)
