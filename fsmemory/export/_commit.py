"""The commit part of an export run: the manifest head, its segments, and the commit.

:class:`Ledger` reads the head (and its version token), checks that this run may
continue it, groups source files into segments (tenant bucket x day), reads the segment
files that planning needs, and at the end writes the changed segment files and replaces
the head by compare-and-swap, merging onto a concurrent winner's head when that touched
none of this run's segments.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime

from fsmemory.errors import ConflictError, InvalidInputError, KeyNotFoundError
from fsmemory.export._leases import sweep
from fsmemory.export._manifest import (
    BUCKETS,
    EVENTS_SEGMENT,
    MANIFEST_PATH,
    FileState,
    Manifest,
    ManifestError,
    PartInfo,
    SegmentRef,
    bucket_of,
    decode_segment,
    encode_segment,
    segment_path,
)
from fsmemory.export._schema import MEMORY_TABLE, SCHEMA_VERSION
from fsmemory.export._sources import tenant_of
from fsmemory.export._state import Context, Lost, NeedsFullExport, legacy_source_id
from fsmemory.memory.layout import log_date

__all__ = ["Ledger"]

logger = logging.getLogger(__name__)

#: Compare-and-swap rounds on the head before the attempt starts over.
_CAS_ROUNDS = 50


class Ledger:
    """One attempt's view of the manifest: the segments it read, and the segment of
    every source file it knows of."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.buckets = BUCKETS
        self._buckets: dict[str, int] = {}
        self._prefixes: dict[str, str] = {}
        #: base states of the segments read so far
        self.loaded: dict[str, dict[str, FileState]] = {}
        #: segment of every source file this run knows of
        self.seg_of: dict[str, str] = {}
        #: trash the head listed when this attempt started (deleted by the sweep)
        self.cleared: set[str] = set()

    # -- the head ----------------------------------------------------------------------
    def load(self) -> tuple[Manifest | None, str | None]:
        """The head and its version token (None, None: no export yet).

        Raises:
            NeedsFullExport: the head is unreadable (and this is not a full export).
        """
        ctx = self.ctx
        try:
            current = ctx.dst.read(MANIFEST_PATH)
        except KeyNotFoundError:
            return None, None
        ctx.counters.manifest_read += len(current.data)
        try:
            return Manifest.from_bytes(current.data), current.version
        except ManifestError as exc:
            if ctx.opts.full:
                logger.warning("replacing an unreadable export manifest: %s", exc)
                return None, current.version
            raise NeedsFullExport(f"{ctx.dst.url}: {exc}") from exc

    def check_compatible(self, manifest: Manifest | None) -> None:
        """Refuse to continue an export of another source or schema version.

        Raises:
            NeedsFullExport: another source or schema version.
            InvalidInputError: a sharded run on an old manifest layout.
        """
        ctx = self.ctx
        if manifest is None or ctx.opts.full:
            return
        if manifest.source not in (ctx.source, ctx.src.url.rstrip("/")) and (
            ctx.src.storage_key()[0] == "local" or manifest.source != legacy_source_id(ctx.src)
        ):
            raise NeedsFullExport(
                f"{ctx.dst.url} holds an export of {manifest.source!r}, not of "
                f"{ctx.source!r} (export to another destination)"
            )
        if manifest.schema_version != SCHEMA_VERSION:
            raise NeedsFullExport(
                f"{ctx.dst.url} uses export schema version {manifest.schema_version}, "
                f"this fsmemory writes version {SCHEMA_VERSION}"
            )
        if ctx.opts.shard is not None and manifest.legacy_files is not None:
            raise InvalidInputError(
                f"{ctx.dst.url} has a manifest of an older fsmemory: run one export "
                "without shard first (it converts the manifest)"
            )

    def adopt(self, base: Manifest) -> None:
        """Take ``base``'s bucket count; group a layout-1 manifest's files into
        segments (all rewritten at commit)."""
        if base.buckets != self.buckets:
            self.buckets, self._buckets, self._prefixes = base.buckets, {}, {}
        if base.legacy_files is None:
            return
        for key, state in base.legacy_files.items():
            day = log_date(state.path) if state.table == MEMORY_TABLE else None
            seg = self.segment_name(state.table, state.root, day)
            self.loaded.setdefault(seg, {})[key] = state
            self.seg_of[key] = seg
            for path in state.parts:
                info = base.parts.get(path)
                if info is not None and seg not in info.segments:
                    info.segments.append(seg)

    def sweep(self, manifest: Manifest) -> None:
        """Delete replaced files still listed as trash, and files of runs (of this
        run's shard, when sharded) that died before committing."""
        ctx = self.ctx
        self.cleared = set(manifest.trash)
        ctx.counters.parts_removed += sweep(
            ctx.dst, manifest, run_id=ctx.run_id, shard=ctx.opts.shard, map_fn=ctx.map
        )

    # -- segments ----------------------------------------------------------------------
    def bucket(self, root: str) -> int:
        """The bucket of a root: that of its tenant (:func:`tenant_of`)."""
        bucket = self._buckets.get(root)
        if bucket is None:
            bucket = self._buckets[root] = bucket_of(tenant_of(root), self.buckets)
        return bucket

    def segment_name(self, table: str, root: str, day: str | None) -> str:
        """The segment holding the state of a source file."""
        prefix = self.segment_prefix(root)
        return prefix + (day if table == MEMORY_TABLE and day else EVENTS_SEGMENT)

    def segment_prefix(self, root: str) -> str:
        """The start of the names of the segments of ``root``'s files (``"<bucket>/"``)."""
        prefix = self._prefixes.get(root)
        if prefix is None:
            width = len(str(self.buckets - 1))
            prefix = self._prefixes[root] = f"{self.bucket(root):0{width}d}/"
        return prefix

    def mine(self, tenant: str) -> bool:
        """Whether ``tenant`` belongs to this run's shard."""
        shard = self.ctx.opts.shard
        if shard is None:
            return True
        index, count = shard
        return self.bucket(tenant) % count == index

    def base_state(self, key: str) -> FileState:
        """The state the head records for source file ``key`` (its segment is loaded)."""
        return self.loaded[self.seg_of[key]][key]

    def load_segments(self, base: Manifest, names: Iterable[str]) -> None:
        """Read the segment files of ``names`` not read yet (concurrently).

        Raises:
            Lost: a segment file was replaced by a concurrent commit meanwhile.
            NeedsFullExport: an unreadable segment file.
        """
        ctx = self.ctx
        need = [s for s in dict.fromkeys(names) if s not in self.loaded]
        reads = []
        for seg in need:
            ref = base.segments.get(seg)
            if ref is None:
                self.loaded[seg] = {}
            else:
                reads.append((seg, segment_path(seg, ref.run)))

        def read(item: tuple[str, str]) -> bytes | None:
            try:
                return ctx.dst.read_bytes(item[1])
            except KeyNotFoundError:
                return None

        for (seg, path), data in zip(reads, ctx.map(read, reads), strict=True):
            if data is None:
                # Replaced by a concurrent commit (and deleted) since we read the head.
                logger.info("manifest segment %s changed meanwhile; starting over", path)
                raise Lost
            ctx.counters.manifest_read += len(data)
            ctx.counters.segments_read += 1
            try:
                states = decode_segment(data)
            except ManifestError as exc:
                raise NeedsFullExport(f"{ctx.dst.url}: {path}: {exc}") from exc
            self.loaded[seg] = states
            for key in states:
                self.seg_of[key] = seg

    # -- the commit --------------------------------------------------------------------
    def commit(
        self,
        head: Manifest | None,
        version: str | None,
        listed: dict[str, tuple[str, int]],
        visited: list[str],
        states: dict[str, FileState],
        written: dict[str, PartInfo],
        removed: set[str],
        segment_files: list[str],
    ) -> tuple[int, set[str]]:
        """Write the changed segment files (their paths are added to
        ``segment_files`` first), then replace the head; returns the new generation and
        the segment files the commit replaced (to delete).

        ``listed`` holds each listed segment's (fingerprint, files), ``visited`` the
        segments planned file by file, ``states`` the new file states.

        Raises:
            Lost: a concurrent commit touched this run's segments (or the lease lapsed).
        """
        ctx = self.ctx
        base = head or Manifest(source=ctx.source, buckets=self.buckets)
        refs, contents = self._segment_updates(base, listed, visited, states)
        files = [(segment_path(seg, ctx.run_id), data) for seg, data in contents.items()]
        segment_files.extend(path for path, _ in files)

        def put(item: tuple[str, bytes]) -> None:
            ctx.dst.write(item[0], item[1], create_only=True)

        ctx.renew()
        ctx.map(put, files)
        ctx.counters.segments_written += len(files)
        ctx.counters.manifest_written += sum(len(data) for _, data in files)
        # Replaced segment files are deleted after the commit; after a crash, by the
        # orphan sweep once their run's lease is gone (they are not data).
        replaced = {
            segment_path(seg, base.segments[seg].run) for seg in contents if seg in base.segments
        }
        if ctx.opts.full:
            replaced |= {segment_path(s, r.run) for s, r in base.segments.items()}
        return self._swap(head, version, refs, written, removed), replaced

    def _swap(
        self,
        head: Manifest | None,
        version: str | None,
        refs: dict[str, SegmentRef],
        written: dict[str, PartInfo],
        removed: set[str],
    ) -> int:
        """Replace the head by compare-and-swap, rebasing onto concurrent commits that
        touched none of ``refs``; returns the new generation."""
        ctx = self.ctx
        current = head
        for _ in range(_CAS_ROUNDS):
            new = self._merged(current, refs, written, removed)
            data = new.to_bytes()
            try:
                if version is None:
                    ctx.dst.write(MANIFEST_PATH, data, create_only=True)
                else:
                    ctx.dst.write(MANIFEST_PATH, data, if_version=version)
                ctx.counters.manifest_written += len(data)
                return new.generation
            except ConflictError:
                ctx.counters.conflicts += 1
            remote, version = self.load()
            if remote is not None and any(r.get("run") == ctx.run_id for r in remote.runs):
                # Our write landed although the service reported a conflict (a retried
                # conditional request answers 412 to its own first success).
                return remote.generation
            ctx.check_lease()
            if remote is None or not self._can_rebase(current, remote, refs, removed):
                raise Lost
            current = remote
        raise Lost

    def _segment_updates(
        self,
        base: Manifest,
        listed: dict[str, tuple[str, int]],
        visited: list[str],
        states: dict[str, FileState],
    ) -> tuple[dict[str, SegmentRef], dict[str, bytes]]:
        """The head entries this commit sets, and the segment files it writes."""
        full = self.ctx.opts.full
        by_segment: dict[str, dict[str, FileState]] = {}
        for key, state in states.items():
            by_segment.setdefault(self.seg_of[key], {})[key] = state
        if base.legacy_files is not None:
            for seg in self.loaded:
                by_segment.setdefault(seg, {})
        refs: dict[str, SegmentRef] = {}
        contents: dict[str, bytes] = {}
        for seg in sorted(set(by_segment) | set(visited)):
            old = base.segments.get(seg)
            fp, count = listed.get(seg, (old.fingerprint, old.files) if old else ("", 0))
            changes = by_segment.get(seg)
            if changes is None:
                if old is not None and old.fingerprint != fp:
                    refs[seg] = SegmentRef(old.run, fp, count, old.pending)
                continue
            merged = {} if full else dict(self.loaded.get(seg, {}))
            merged.update(changes)
            pending = sum(1 for s in merged.values() if s.offset < s.size)
            contents[seg] = encode_segment(merged)
            refs[seg] = SegmentRef(self.ctx.run_id, fp, count, pending)
        return refs, contents

    def _merged(
        self,
        base: Manifest | None,
        refs: dict[str, SegmentRef],
        written: dict[str, PartInfo],
        removed: set[str],
    ) -> Manifest:
        ctx = self.ctx
        opts = ctx.opts
        if base is None or opts.full:
            old_parts = set(base.parts) if base is not None else set()
            new = Manifest(
                source=ctx.source,
                generation=(base.generation if base else 0) + 1,
                buckets=self.buckets,
            )
            new.segments = dict(refs)
            new.parts = dict(written)
            old_trash = set(base.trash) - self.cleared if base is not None else set()
            new.trash = sorted(old_parts | removed | old_trash)
            new.runs = list(base.runs) if base is not None else []
        else:
            new = Manifest(
                source=ctx.source,
                generation=base.generation + 1,
                buckets=self.buckets,
                segments=dict(base.segments),
                parts=dict(base.parts),
                runs=list(base.runs),
            )
            new.segments.update(refs)
            for path in removed:
                new.parts.pop(path, None)
            new.parts.update(written)
            # Keep trash a concurrent commit added (we rebased on it) and did not clear.
            new.trash = sorted(removed | (set(base.trash) - self.cleared))
        new.runs.append(
            {
                "run": ctx.run_id,
                "finished": datetime.now(tz=UTC).isoformat(),
                "full": opts.full,
                "rows": sum(ctx.counters.rows.values()),
                "parts": len(written),
                "since": opts.since,
                "until": opts.until,
                "shard": list(opts.shard) if opts.shard else None,
                "compact": opts.compact,
            }
        )
        return new

    def _can_rebase(
        self,
        base: Manifest | None,
        remote: Manifest,
        refs: dict[str, SegmentRef],
        removed: set[str],
    ) -> bool:
        """True when a concurrent commit touched none of the segments this run sets."""
        if self.ctx.opts.full or remote.legacy_files is not None:
            return False
        if remote.source != self.ctx.source or remote.schema_version != SCHEMA_VERSION:
            return False
        if remote.buckets != self.buckets:
            return False
        for seg in refs:
            before = base.segments.get(seg) if base is not None else None
            if before != remote.segments.get(seg):
                return False
        return all(path in remote.parts for path in removed)
