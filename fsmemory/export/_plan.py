"""The plan part of an export run: what to read.

One listing of the source, grouped into segments (tenant bucket x day); a segment whose
listing fingerprint matches the head's is skipped unread; the other segments' files are
planned file by file: unchanged files are skipped, grown files continue at their
watermark (after checking the digests of the exported prefix), rewritten files start
over (:attr:`Plan.reexport`), and, with ``compact``, small Parquet files are picked for
merging.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fsmemory.errors import KeyNotFoundError
from fsmemory.export._commit import Ledger
from fsmemory.export._manifest import EVENTS_SEGMENT, FileState, Manifest, digest, fingerprint
from fsmemory.export._schema import MEMORY_TABLE
from fsmemory.export._sources import Listing, SourceFile, discover
from fsmemory.export._state import CHECK_BYTES, COMPACT_BELOW, Context
from fsmemory.fs import FileInfo

__all__ = ["Plan", "Work", "make_plan", "nothing_to_do", "order"]


@dataclass(slots=True)
class Work:
    """One source file to read from ``start``."""

    source: SourceFile
    state: FileState
    start: int
    open_line: bool = False
    tail: bytes = b""
    stopped: bool = False

    @property
    def remaining(self) -> int:
        """Bytes of the file not read yet (by the listing's size)."""
        return max(0, self.source.info.size - self.start)


@dataclass(slots=True)
class Plan:
    """What one attempt reads and rewrites."""

    works: list[Work] = field(default_factory=list)
    #: rewritten files, exported again from the start (their old rows are dropped)
    reexport: dict[str, SourceFile] = field(default_factory=dict)
    #: unchanged files whose listing changed (size and token only)
    refresh: dict[str, FileState] = field(default_factory=dict)
    #: per listed segment: (fingerprint, files)
    listed: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: segments whose fingerprint changed (planned file by file)
    visited: list[str] = field(default_factory=list)
    #: ``compact``: Parquet files to merge
    compact: set[str] = field(default_factory=set)


def order(sf: SourceFile) -> tuple[bool, str, str, str]:
    """The reading order: memory logs first, by day, root and path."""
    return (sf.table != MEMORY_TABLE, sf.day or "", sf.root, sf.path)


def make_plan(ctx: Context, ledger: Ledger, base: Manifest) -> Plan:
    """List the source once and plan this attempt's reads against ``base``."""
    plan = Plan()
    listing, listed = _segments(ctx, ledger)
    window = f"{ctx.opts.since}|{ctx.opts.until}"
    key, size, token = (
        listing.keys.__getitem__,
        listing.sizes.__getitem__,
        listing.tokens.__getitem__,
    )
    for seg, rows in listed.items():
        salt = window if seg.endswith("/" + EVENTS_SEGMENT) else ""
        entries = zip(map(key, rows), map(size, rows), map(token, rows), strict=True)
        fp = fingerprint(entries, salt)
        plan.listed[seg] = (fp, len(rows))
        ref = base.segments.get(seg)
        if not ctx.opts.full and ref is not None and ref.fingerprint == fp:
            ctx.counters.files_unchanged += len(rows)
            ctx.counters.pending += ref.pending
            continue
        plan.visited.append(seg)
    if not ctx.opts.full:
        ledger.load_segments(base, plan.visited)
    groups = {seg: [listing.source_file(i) for i in listed[seg]] for seg in plan.visited}
    checks = _plan_files(ctx, ledger, plan, groups)
    if checks:
        _plan_changed(ctx, plan, checks)
        # In listing order (day, root, path): the small logs of a day follow each
        # other. New files were added in that order, continued ones after them.
        listing_order = (sf for seg in plan.visited for sf in groups[seg])
        rank = {sf.key: i for i, sf in enumerate(listing_order)}
        plan.works.sort(key=lambda w: rank[w.source.key])
    ctx.counters.files_reexported = len(plan.reexport)
    if ctx.opts.compact and not ctx.opts.full:  # a full run rewrites every file anyway
        plan.compact = _compaction_candidates(base)
    return plan


def _segments(ctx: Context, ledger: Ledger) -> tuple[Listing, dict[str, list[int]]]:
    """The source's files, and the rows of this run's (shard, tables, window) by
    segment: the files of a segment by root and path, the segments in the order of
    their first file when all files are ordered by :func:`order`."""
    mine = None if ctx.opts.shard is None else ledger.mine
    local = ctx.src.capabilities.local_io
    listing = discover(ctx.src, ctx.opts.tables, mine, by_folder=local)
    ctx.counters.files_seen += len(listing)
    opts = ctx.opts
    windowed = opts.since is not None or opts.until is not None
    roots, days = listing.roots, listing.days
    groups: dict[str, list[int]] = {}
    # Folders by root, files by name: each segment's files come in (root, path) order
    # (a root has one folder per table; the folder of a segment's files is the same).
    for d in sorted(range(len(roots)), key=roots.__getitem__):
        prefix = ledger.segment_prefix(roots[d])
        files = sorted(listing.files_of(d), key=listing.names.__getitem__)
        if listing.tables[d] != MEMORY_TABLE:
            groups.setdefault(prefix + EVENTS_SEGMENT, []).extend(files)
            continue
        for i in files:
            day = days[i]
            if day is None or (windowed and not opts.in_window(day)):
                continue
            seg = prefix + day
            rows = groups.get(seg)
            if rows is None:
                groups[seg] = [i]
            else:
                rows.append(i)
    # (one SourceFile per segment: a few hundred, not one per file)
    first = {seg: order(listing.source_file(rows[0])) for seg, rows in groups.items()}
    return listing, dict(sorted(groups.items(), key=lambda group: first[group[0]]))


def _plan_files(
    ctx: Context, ledger: Ledger, plan: Plan, groups: dict[str, list[SourceFile]]
) -> list[tuple[SourceFile, FileState]]:
    """Plan the files of the visited segments: new ones are read from the start,
    unchanged ones skipped; returns the changed ones, to verify."""
    checks: list[tuple[SourceFile, FileState]] = []
    for seg in plan.visited:
        old = {} if ctx.opts.full else ledger.loaded.get(seg, {})
        for sf in groups[seg]:
            ledger.seg_of[sf.key] = seg
            state = old.get(sf.key)
            if state is None:
                plan.works.append(Work(sf, FileState(sf.table, sf.root, sf.path), 0))
            elif sf.info.size == state.size and sf.info.token == state.token:
                ctx.counters.files_unchanged += 1
                if state.offset < state.size:
                    ctx.counters.pending += 1
            else:
                checks.append((sf, state))
    return checks


def _plan_changed(ctx: Context, plan: Plan, checks: list[tuple[SourceFile, FileState]]) -> None:
    """Verify the exported prefix of each changed file (concurrently): continue a grown
    file, refresh one that only changed its listing, re-export a rewritten one."""
    verified_all = ctx.map(lambda item: _verify(ctx, *item), checks)
    for (sf, state), verified in zip(checks, verified_all, strict=True):
        if verified is None:
            plan.reexport[sf.key] = sf
            continue
        tail, open_line = verified
        if sf.info.size == state.offset:
            refreshed = state.copy()
            refreshed.size, refreshed.token = sf.info.size, sf.info.token
            plan.refresh[sf.key] = refreshed
            ctx.counters.files_unchanged += 1
            continue
        plan.works.append(Work(sf, state.copy(), state.offset, open_line, tail))


def _compaction_candidates(base: Manifest) -> set[str]:
    groups: dict[tuple[str, str], list[str]] = {}
    for path, info in base.parts.items():
        if info.bytes < COMPACT_BELOW:
            groups.setdefault((info.table, info.date), []).append(path)
    return {path for paths in groups.values() if len(paths) > 1 for path in paths}


def _verify(ctx: Context, sf: SourceFile, state: FileState) -> tuple[bytes, bool] | None:
    """``(tail bytes, ends mid-line)`` when the exported prefix is unchanged; None
    when the file was rewritten (it is then exported again from the start)."""
    src = ctx.src
    old = FileInfo(sf.key, state.size, None, state.token)
    if sf.info.size < state.offset or src.rewritten(old, sf.info):
        return None
    if state.offset == 0:
        return b"", False
    try:
        if state.offset <= 2 * CHECK_BYTES:
            prefix = src.read_range(sf.key, 0, state.offset)
            head, tail = prefix[: state.head_len], prefix[state.offset - state.tail_len :]
            if len(prefix) != state.offset:
                return None
        else:
            head = src.read_range(sf.key, 0, state.head_len)
            tail = src.read_range(sf.key, state.offset - state.tail_len, state.offset)
    except KeyNotFoundError:
        return None
    if digest(head) != state.head or digest(tail) != state.tail:
        return None
    return tail, bool(tail) and not tail.endswith(b"\n")


def nothing_to_do(ctx: Context, base: Manifest, plan: Plan) -> bool:
    """Whether the attempt would change nothing (a no-op re-run)."""
    if ctx.opts.full or base.trash or plan.works or plan.reexport or plan.refresh:
        return False
    if plan.compact:
        return False
    for seg in plan.visited:
        ref = base.segments.get(seg)
        if ref is None or ref.fingerprint != plan.listed[seg][0]:
            return False
    return True
