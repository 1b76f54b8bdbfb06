"""The ``fsmemory export`` subcommand: its options, progress bar and messages.

Part of the command line (``fsmemory.cli`` registers it); the export itself is
:func:`fsmemory.export.export_parquet`. Messages name this command's flags (``--full``),
never the Python arguments behind them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from fsmemory import _jsonutil
from fsmemory._cliopts import parse_storage_options
from fsmemory.errors import FsMemoryError, MissingDependencyError

if TYPE_CHECKING:
    from fsmemory.export import ExportProgress

__all__ = ["add_export_parser", "run_export_command"]

_DESCRIPTION = """\
Export memory logs (<root>/logs/*.jsonl) and agent event logs (<root>/log/*.jsonl) under
SOURCE to a hive-partitioned Parquet dataset at DEST (DEST/memory/date=.../*.parquet and
DEST/events/date=.../*.parquet). SOURCE is one memory root or a prefix holding many.
Re-runs export only what is new; --full rebuilds. Several processes or machines export
one dataset together with --shard I/N each (N shards, this one is I). --compact merges
the small Parquet files that many incremental runs leave. Read the result with DuckDB:
  SELECT * FROM read_parquet('DEST/memory/*/*.parquet', hive_partitioning=true)
"""


def add_export_parser(subparsers: Any) -> None:
    """Register the ``export`` subcommand on an argparse ``subparsers`` object.

    The parsed namespace gets ``func=run_export_command``.
    """
    parser = subparsers.add_parser(
        "export",
        help="export memory and event logs to Parquet",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", help="memory root URL, or a prefix holding many roots")
    parser.add_argument("dest", help="destination URL of the Parquet dataset")
    parser.add_argument("--since", metavar="DATE", help="export days on or after DATE")
    parser.add_argument("--until", metavar="DATE", help="export days on or before DATE")
    parser.add_argument("--full", action="store_true", help="rebuild the whole dataset")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--table",
        action="append",
        choices=("memory", "events"),
        help="export only this table (repeatable; default: both)",
    )
    parser.add_argument(
        "--storage-option",
        "-o",
        dest="export_storage_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fsspec option for SOURCE (and DEST); VALUE is parsed as JSON when it can be; "
        "a.b=v sets key b of option a (repeatable)",
    )
    parser.add_argument(
        "--dest-storage-option",
        dest="export_dest_storage_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fsspec option for DEST only (then --storage-option applies to SOURCE only)",
    )
    parser.add_argument(
        "--compression",
        default="snappy",
        choices=("snappy", "zstd", "gzip", "lz4", "none"),
        help="Parquet codec (default snappy; zstd makes smaller files, slower)",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        type=_shard,
        help="export only shard I of N (tenants split by a stable hash); run the N "
        "shards at once, in any processes or machines, into the same DEST",
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="also merge each partition's small Parquet files (not with --shard)",
    )
    parser.add_argument(
        "--concurrency",
        metavar="N",
        type=int,
        default=16,
        help="source reads in flight at once on object stores (default 16)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar, even on a terminal"
    )
    parser.set_defaults(func=run_export_command)


def _shard(text: str) -> tuple[int, int]:
    index, sep, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        shard = (-1, 0)
    if not sep or not 0 <= shard[0] < shard[1]:
        raise argparse.ArgumentTypeError(f"expected I/N with 0 <= I < N, got {text!r}")
    return shard


class _ProgressBar:
    """A one-line progress bar on a terminal stream (redrawn at most 10 times a second,
    and whenever the stage changes): the Parquet files that ``--compact`` merges (or a
    rewrite replaces) first, then the source files read."""

    def __init__(self, stream: TextIO, *, compact: bool = False) -> None:
        self.stream = stream
        self.last = 0.0
        self.started = time.monotonic()
        self.drawn = False
        self.stage = ""
        self.rewrite_label = "merging small Parquet files" if compact else "rewriting Parquet files"

    def __call__(self, p: ExportProgress) -> None:
        now = time.monotonic()
        last_of_stage = p.stage == "rewrite" and p.parts_done == p.parts_total
        if now - self.last < 0.1 and p.stage == self.stage and not last_of_stage:
            return
        if p.stage != self.stage:
            self.started = now  # each stage's rate counts from its start
        self.last, self.stage = now, p.stage
        if p.stage == "rewrite":
            fraction = p.parts_done / p.parts_total if p.parts_total else 1.0
            detail = f"{self.rewrite_label}  {p.parts_done:,}/{p.parts_total:,} files"
        else:
            fraction = p.bytes_read / p.bytes_total if p.bytes_total else 0.0
            rate = p.lines / max(now - self.started, 1e-9)
            detail = f"{p.lines:,} lines  {p.files_done}/{p.files_total} files  {rate:,.0f} lines/s"
        fraction = min(1.0, max(0.0, fraction))
        width = 24
        filled = int(fraction * width)
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {fraction:4.0%} {detail} \x1b[K"
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _prepare_process(*, own_process: bool = False) -> None:
    """Set up the command's own process for an export, before pyarrow first loads.

    Only with ``own_process`` (the process was started as ``fsmemory ...``, so the
    export is all it does); called from a host program (``main(argv)``), the command
    leaves the host's environment alone.

    ``ARROW_DEFAULT_MEMORY_POOL=system`` unless set: Arrow reads it once, when pyarrow
    is first imported; an export of many small logs keeps about 30 MiB (a fifth of its
    peak) less resident with the C library's allocator than with the bundled one, at
    the same speed (``benchmarks/bench_export.py --fleet --tricks``). A pyarrow
    already imported keeps its pool.
    """
    if own_process and "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def run_export_command(args: argparse.Namespace) -> int:
    """Run ``fsmemory export`` from parsed arguments; returns the exit code.

    Prints a one-line summary (or the JSON report with ``--json``) to stdout; errors go
    to stderr. Exit codes: 0 done (corrupt lines are skipped and reported, not fatal),
    1 the export failed, 2 bad arguments.
    """
    _prepare_process(own_process=getattr(args, "own_process", False))
    from fsmemory.export import export_parquet

    try:
        source_options, dest_options = _export_storage_options(args)
    except ValueError as exc:
        print(f"fsmemory export: {exc}", file=sys.stderr)
        return 2
    problem = _argument_problem(args)
    if problem is not None:
        print(f"fsmemory export: {problem}", file=sys.stderr)
        return 2
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        bar = _ProgressBar(sys.stderr, compact=args.compact)
    failure: tuple[str, int] | None = None
    try:
        report = export_parquet(
            args.source,
            args.dest,
            since=args.since,
            until=args.until,
            incremental=not args.full,
            storage_options=source_options or None,
            dest_storage_options=dest_options,
            tables=tuple(args.table) if args.table else ("memory", "events"),
            progress=bar,
            compression=args.compression,
            shard=args.shard,
            compact=args.compact,
            concurrency=args.concurrency,
        )
    except (ValueError, ImportError, FsMemoryError, OSError) as exc:
        failure = _failure(exc)
    if bar is not None:
        bar.close()
    if failure is not None:
        message, code = failure
        print(message, file=sys.stderr)
        return code
    if args.json:
        print(_jsonutil.dumps(report.to_dict(), indent=True).decode())
    else:
        print(report.summary())
    return 0


def _export_storage_options(
    args: argparse.Namespace,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The source's storage options (the command's global ``-o`` ones count too) and the
    destination's (None: the source's apply).

    Raises:
        ValueError: an option is not ``KEY=VALUE``.
    """
    global_options = getattr(args, "storage_option", None) or []
    source = parse_storage_options([*global_options, *getattr(args, "export_storage_option", [])])
    dest_items = getattr(args, "export_dest_storage_option", [])
    return source, (parse_storage_options(dest_items) if dest_items else None)


def _argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of flags (None: nothing)."""
    if args.shard is not None and (args.full or args.compact):
        flag = "--full" if args.full else "--compact"
        return f"{flag} cannot be combined with --shard"
    if args.concurrency < 1:
        return "--concurrency must be at least 1"
    return None


def _failure(exc: Exception) -> tuple[str, int]:
    """The message and exit code of an export that raised ``exc``."""
    from fsmemory.export import NeedsFullExport

    if isinstance(exc, NeedsFullExport):
        return f"fsmemory export: {exc.problem}; rebuild it with --full", 2
    if isinstance(exc, MissingDependencyError):
        return f"fsmemory export: {exc}", 1
    if isinstance(exc, ValueError | ImportError):
        return f"fsmemory export: {exc}", 2
    return f"fsmemory export failed: {exc}", 1
