"""The ``fsmemory export`` subcommand (wired into ``fsmemory.cli`` by the caller)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from typing import Any, TextIO

from fsmemory import _jsonutil
from fsmemory.errors import FsMemoryError
from fsmemory.export._report import ExportProgress

__all__ = ["add_export_parser", "parse_storage_options", "run_export_command"]

_DESCRIPTION = """\
Export memory logs (<root>/logs/*.jsonl) and agent event logs (<root>/log/*.jsonl) under
SOURCE to a hive-partitioned Parquet dataset at DEST (DEST/memory/date=.../*.parquet and
DEST/events/date=.../*.parquet). SOURCE is one memory root or a prefix holding many.
Re-runs export only what is new; --full rebuilds. Read the result with DuckDB:
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
        "--no-progress", action="store_true", help="no progress bar, even on a terminal"
    )
    parser.set_defaults(func=run_export_command)


def parse_storage_options(items: Iterable[str | tuple[str, Any]]) -> dict[str, Any]:
    """``["anon=true", "client_kwargs.endpoint_url=http://x"]`` ->
    ``{"anon": True, "client_kwargs": {"endpoint_url": "http://x"}}``.

    VALUE is parsed as JSON when it can be, else kept as text; ``a.b=v`` sets key ``b``
    of option ``a``. Already split ``(key, value)`` pairs are accepted too.

    Raises:
        ValueError: an item without ``=``.
    """
    options: dict[str, Any] = {}
    for item in items:
        if isinstance(item, tuple):
            key, value = item
        else:
            key, sep, raw = item.partition("=")
            if not sep or not key:
                raise ValueError(f"storage option {item!r} is not KEY=VALUE")
            try:
                value = _jsonutil.loads(raw)
            except _jsonutil.JSONDecodeError:
                value = raw
        key = key.strip()
        if "." in key:
            outer, inner = key.split(".", 1)
            nested = options.setdefault(outer, {})
            if not isinstance(nested, dict):
                raise ValueError(f"storage option {outer!r} is set twice")
            nested[inner] = value
        else:
            options[key] = value
    return options


class _ProgressBar:
    """A one-line progress bar on a terminal stream (redrawn at most 10 times a second)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.last = 0.0
        self.started = time.monotonic()
        self.drawn = False

    def __call__(self, p: ExportProgress) -> None:
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        fraction = p.bytes_read / p.bytes_total if p.bytes_total else 0.0
        fraction = min(1.0, max(0.0, fraction))
        width = 24
        filled = int(fraction * width)
        rate = p.lines / max(now - self.started, 1e-9)
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {fraction:4.0%} "
            f"{p.lines:,} lines  {p.files_done}/{p.files_total} files  {rate:,.0f} lines/s "
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def run_export_command(args: argparse.Namespace) -> int:
    """Run ``fsmemory export`` from parsed arguments; returns the exit code.

    Prints a one-line summary (or the JSON report with ``--json``) to stdout; errors go
    to stderr. Exit codes: 0 done (corrupt lines are skipped and reported, not fatal),
    1 the export failed, 2 bad arguments.
    """
    from fsmemory.export._export import export_parquet

    # `fsmemory -o KEY=VALUE export ...` (the command's global option) counts too.
    global_options = getattr(args, "storage_option", None) or []
    try:
        source_options = parse_storage_options(
            [*global_options, *getattr(args, "export_storage_option", [])]
        )
        dest_items = getattr(args, "export_dest_storage_option", [])
        dest_options = parse_storage_options(dest_items) if dest_items else None
    except ValueError as exc:
        print(f"fsmemory export: {exc}", file=sys.stderr)
        return 2
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        bar = _ProgressBar(sys.stderr)
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
        )
    except (ValueError, ImportError) as exc:
        if bar is not None:
            bar.close()
        print(f"fsmemory export: {exc}", file=sys.stderr)
        return 2
    except (FsMemoryError, OSError) as exc:
        if bar is not None:
            bar.close()
        print(f"fsmemory export failed: {exc}", file=sys.stderr)
        return 1
    if bar is not None:
        bar.close()
    if args.json:
        print(_jsonutil.dumps(report.to_dict(), indent=True).decode())
    else:
        print(report.summary())
    return 0
