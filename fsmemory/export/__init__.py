"""Export memory logs and agent event logs to a hive-partitioned Parquet dataset.

:func:`export_parquet` reads every memory log (``<root>/logs/YYYY-MM-DD.jsonl``) and
path-store event log (``<root>/log/<stream>.jsonl``) under a source URL and writes::

    <dest>/memory/date=YYYY-MM-DD/part-<run>-<n>.parquet   (schema: MEMORY_COLUMNS)
    <dest>/events/date=YYYY-MM-DD/part-<run>-<n>.parquet   (schema: EVENT_COLUMNS)
    <dest>/_fsmemory_manifest.json                         (the manifest head)
    <dest>/_fsmemory_manifest.d/<bucket>/<day>-<run>.json  (watermarks, per segment)

Any engine reads it without fsmemory::

    SELECT category, date, count(*) FROM
        read_parquet('out/memory/*/*.parquet', hive_partitioning=true) GROUP BY ALL;

    pyarrow.dataset.dataset("out/memory", format="parquet", partitioning="hive")

**Incremental.** The manifest records, per source file, the byte offset exported so far
(with digests of the first and last 4 KiB before it), in one segment file per tenant
bucket and day; the head keeps a fingerprint of each segment's listing, so a re-run
reads only the segments whose files changed (a no-op re-run reads the head alone) and
then only the bytes appended since. A file that shrank or whose exported prefix changed
is exported again and the Parquet files holding its old rows are replaced by copies
without them. Rows are never duplicated. ``incremental=False`` (``fsmemory export
--full``) rebuilds everything. Source files that disappear (pruned logs) keep their
exported rows. A source is identified by its normalized URL (a local folder by its real
path), so a relative and an absolute spelling continue the same dataset.

**Fleets.** Small logs of one day are read together (``concurrency`` requests in flight
on object stores) and parsed as one block. ``shard=(i, n)`` exports only the tenants
(top-level folders of the source) of shard ``i`` of ``n``, so ``n`` processes or
machines export one dataset at once; ``compact=True`` merges small Parquet files.

**Concurrency and crashes.** Each run writes only new, uniquely named files, then commits
the head with compare-and-swap. A run that loses the race merges its commit when the
winner changed none of its segments (shards never share one), else deletes its own files
and starts over. A run's uncommitted files are protected by a lease file
(``_fsmemory_runs/<run>.json``) renewed while it works; files of a run that crashed
before committing are deleted by the first run after its lease expired
(``lease_seconds``, 10 min by default), and files replaced by a run that crashed after
committing are deleted by the next run (the manifest lists them as ``trash``). Until then
a reader that globs ``*.parquet`` can see those leftovers; a reader that takes the file
list from the head's ``parts`` never does. The sweep deletes only files named after a
run (never one a person put there), and a sharded run only those its own shard's runs
left. While a run replaces the files of a rewritten source file (or compacts), a
globbing reader may briefly see both.

**Windows.** ``since``/``until`` select days. Memory logs outside the window are not read
and stay unexported (a later run with a wider window exports them). Event logs are read
in order: events before ``since`` are passed over for good, and reading a stream stops
at its first event after ``until`` (a later run continues there).

**Bad input.** Corrupt lines (bad JSON, invalid UTF-8, a record without content) are
skipped and counted in :attr:`ExportReport.corrupt_lines`; an unfinished last line is
left for a later run and counted in :attr:`ExportReport.pending_lines`.

Requires pyarrow (``pip install 'fsmemory[parquet]'``); importing this package does not
import it.
"""

from __future__ import annotations

from fsmemory.export._export import NeedsFullExport, export_parquet
from fsmemory.export._report import CorruptLine, ExportProgress, ExportReport
from fsmemory.export._schema import (
    EVENT_COLUMNS,
    EVENTS_TABLE,
    MEMORY_COLUMNS,
    MEMORY_TABLE,
    PARTITION_COLUMN,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    Column,
    events_schema,
    memory_schema,
)

#: Path of the manifest, relative to the destination.
MANIFEST_PATH = "_fsmemory_manifest.json"

__all__ = [
    "EVENTS_TABLE",
    "EVENT_COLUMNS",
    "MANIFEST_PATH",
    "MEMORY_COLUMNS",
    "MEMORY_TABLE",
    "PARTITION_COLUMN",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "Column",
    "CorruptLine",
    "ExportProgress",
    "ExportReport",
    "NeedsFullExport",
    "events_schema",
    "export_parquet",
    "memory_schema",
]
