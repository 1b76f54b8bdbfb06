"""Run leases, and the sweep of what runs that died before committing left behind.

Every export attempt has a run id (:func:`new_run_id`) that names all of its files:
``part-<run>-<n>.parquet``, segment files ``<bucket>/<day>-<run>.json`` and its lease
``_fsmemory_runs/<run>.json``. The lease is written before any other file of the run
and renewed while it works; it says whether the run is running, committed or aborted,
until when it holds, and which shard (if any) the run exports.

The sweep (:func:`sweep`) deletes files named after a run that the manifest does not
list and that no live lease protects: those of runs that crashed before committing.
Nothing else is ever deleted: not a file named otherwise (a person's backfill or notes),
and, by a sharded run, nothing that crashed runs of another shard (or of no shard) left.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from fsmemory import _jsonutil
from fsmemory.errors import KeyNotFoundError
from fsmemory.export._manifest import RUNS_DIR, SEGMENTS_DIR, Manifest, segment_path
from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.export._writer import part_run
from fsmemory.fs import FileInfo, StorageRoot

__all__ = ["FINISHED_RETENTION", "Lease", "is_run_id", "new_run_id", "sweep"]

logger = logging.getLogger(__name__)

#: How long finished runs' lease files are kept (they protect that run's files from a
#: concurrent run's orphan sweep that read an older manifest).
FINISHED_RETENTION = 24 * 3600.0

_T = TypeVar("_T")
_R = TypeVar("_R")
Mapper = Callable[[Callable[[_T], _R], Sequence[_T]], list[_R]]
Shard = tuple[int, int]


def new_run_id() -> str:
    """A new run id: the UTC start time and 8 random hex digits."""
    return f"{datetime.now(tz=UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def is_run_id(text: str) -> bool:
    """Whether ``text`` has the shape of :func:`new_run_id`'s ids."""
    stamp, sep, token = text.partition("-")
    return (
        bool(sep)
        and len(stamp) == 16
        and stamp[8] == "T"
        and stamp[15] == "Z"
        and stamp.isascii()
        and (stamp[:8] + stamp[9:15]).isdigit()
        and len(token) == 8
        and all(c in "0123456789abcdef" for c in token)
    )


def segment_run(path: str) -> str | None:
    """The run id in a segment file name (``<day>-<run>.json``)."""
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".json"):
        return None
    pieces = name[: -len(".json")].rsplit("-", 2)
    return "-".join(pieces[-2:]) if len(pieces) == 3 else None


class Lease:
    """The lease file of one run attempt.

    Args:
        dst: the destination root.
        run_id: the attempt's run id.
        shard: the attempt's shard, recorded so that only that shard's runs sweep up
            after it.
        seconds: how long a silent run is presumed alive.
    """

    def __init__(self, dst: StorageRoot, run_id: str, shard: Shard | None, seconds: float):
        self.dst = dst
        self.run_id = run_id
        self.shard = shard
        self.seconds = seconds
        self.path = f"{RUNS_DIR}/{run_id}.json"
        #: whether the file was written (the run may have left files)
        self.held = False
        self.renewed = time.monotonic()

    def _write(self, state: str, expires: float) -> None:
        shard = list(self.shard) if self.shard is not None else None
        body = {"run": self.run_id, "state": state, "expires": expires, "shard": shard}
        self.dst.write(self.path, _jsonutil.dumps(body))

    def hold(self) -> None:
        """Write (or renew) the lease of a running attempt."""
        self._write("running", time.time() + self.seconds)
        self.renewed = time.monotonic()
        self.held = True

    def finish(self, state: str) -> None:
        """Record the attempt's end (``committed`` or ``aborted``); the file stays for
        :data:`FINISHED_RETENTION`."""
        self._write(state, time.time() + FINISHED_RETENTION)

    def due(self) -> bool:
        """True when the lease should be renewed (a quarter of it has passed)."""
        return time.monotonic() - self.renewed > self.seconds / 4

    def lapsing(self) -> bool:
        """True when a concurrent run may soon take the lease as expired (and delete the
        attempt's files): the attempt must start over."""
        return time.monotonic() - self.renewed > self.seconds * 0.8


def _read(dst: StorageRoot, info: FileInfo) -> tuple[str, str, float, Shard | None] | None:
    """``(run, state, expires, shard)`` of a lease file; None when it vanished."""
    try:
        body = _jsonutil.loads(dst.read_bytes(info.path))
        shard = body.get("shard")
        return (
            str(body["run"]),
            str(body["state"]),
            float(body["expires"]),
            (int(shard[0]), int(shard[1])) if shard is not None else None,
        )
    except KeyNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        # Unreadable: treat as a long-dead unsharded run (its name still protects nothing).
        return info.path.rsplit("/", 1)[-1].removesuffix(".json"), "aborted", 0.0, None


def sweep(
    dst: StorageRoot,
    manifest: Manifest,
    *,
    run_id: str,
    shard: Shard | None,
    map_fn: Mapper[FileInfo, tuple[str, str, float, Shard | None] | None],
) -> int:
    """Delete the files ``manifest``'s trash lists, and the files of runs that died
    before committing (of ``shard``'s runs only, when given); returns how many of the
    deleted files were Parquet files. ``map_fn`` maps over lease files (concurrently)."""
    removed = 0
    for path in manifest.trash:
        if dst.delete(path) and not path.startswith(SEGMENTS_DIR):
            removed += 1
    candidates = _leftovers(dst, manifest, run_id)
    if not candidates:
        return removed
    dead, protected, expired = _judge(dst, shard, map_fn)
    for path, run in candidates:
        # No lease at all: a run that is long gone (its lease is written first).
        ours = run in dead or (shard is None and run not in protected)
        if ours and dst.delete(path):
            logger.info("deleted %s, left by an export run that did not commit", path)
            if not path.startswith(SEGMENTS_DIR):
                removed += 1
    for path in expired:
        dst.delete(path)
    return removed


def _leftovers(dst: StorageRoot, manifest: Manifest, run_id: str) -> list[tuple[str, str]]:
    """``(path, run)`` of every part and segment file named after another run that
    ``manifest`` does not list."""
    # List parts and segment files before leases: a run's lease is written before any
    # of its files.
    candidates = []
    for table in (MEMORY_TABLE, EVENTS_TABLE):
        for info in dst.list(table, recursive=True):
            run = part_run(info.path)
            if run is None or run == run_id or not is_run_id(run):
                continue
            if info.path not in manifest.parts:
                candidates.append((info.path, run))
    live = {segment_path(s, r.run) for s, r in manifest.segments.items()}
    for info in dst.list(SEGMENTS_DIR, recursive=True):
        run = segment_run(info.path)
        if run is not None and is_run_id(run) and info.path not in live:
            candidates.append((info.path, run))
    return candidates


def _judge(
    dst: StorageRoot,
    shard: Shard | None,
    map_fn: Mapper[FileInfo, tuple[str, str, float, Shard | None] | None],
) -> tuple[set[str], set[str], list[str]]:
    """Read every lease: the runs whose leftovers this sweep deletes, the runs whose
    files stay, and the expired lease files to delete afterwards."""
    now = time.time()
    leases = [
        info
        for info in dst.list(RUNS_DIR)
        if info.path.endswith(".json") and is_run_id(info.path.rsplit("/", 1)[-1][:-5])
    ]
    dead: set[str] = set()
    protected: set[str] = set()
    expired: list[str] = []
    for info, lease in zip(leases, map_fn(lambda i: _read(dst, i), leases), strict=True):
        if lease is None:
            continue
        run, state, expires, owner = lease
        if expires > now and state in ("running", "committed"):
            protected.add(run)
            continue
        if shard is not None and owner != shard:
            protected.add(run)  # another shard's (or an unsharded run's): not ours to sweep
            continue
        dead.add(run)
        if expires <= now:
            expired.append(info.path)
    return dead, protected, expired
