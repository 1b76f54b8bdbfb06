"""The documented, stable schema of the exported Parquet tables.

Two tables are written under the destination, each a hive-partitioned dataset:

``memory/date=YYYY-MM-DD/part-*.parquet``
    one row per line of the memory logs (``<root>/logs/YYYY-MM-DD.jsonl``): remembered
    facts (``op = 'remember'``) and forget records (``op = 'forget'``). ``date`` is the
    UTC day of the log file.
``events/date=YYYY-MM-DD/part-*.parquet``
    one row per event of the path store's agent event logs (``<root>/log/<stream>.jsonl``).
    ``date`` is the UTC day of the event's timestamp (see :data:`EVENT_COLUMNS`).

The partition column ``date`` lives in the directory names only (the hive convention);
readers get it with ``hive_partitioning=true`` (DuckDB) or ``partitioning="hive"``
(pyarrow). Every file carries the key ``fsmemory_schema_version`` in its Parquet schema
metadata. Columns are only ever added at the end within one schema version; a change of
type or meaning bumps :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

#: Version of the exported schema, stored in every file's Parquet schema metadata.
SCHEMA_VERSION = 1
#: The Parquet schema metadata key holding :data:`SCHEMA_VERSION`.
SCHEMA_VERSION_KEY = "fsmemory_schema_version"
#: Directory (under the destination) of the memory-log table.
MEMORY_TABLE = "memory"
#: Directory (under the destination) of the agent event-log table.
EVENTS_TABLE = "events"
#: The hive partition column (a ``YYYY-MM-DD`` UTC day), present in paths only.
PARTITION_COLUMN = "date"


@dataclass(frozen=True, slots=True)
class Column:
    """One documented column of an exported table.

    Attributes:
        name: the column name.
        type: the Arrow type, as Arrow prints it.
        nullable: False when every row has a value.
        description: what the value means.
    """

    name: str
    type: str
    nullable: bool
    description: str


_TS = "timestamp[us, tz=UTC]"

#: Columns of the ``memory`` table, in file order.
MEMORY_COLUMNS: tuple[Column, ...] = (
    Column(
        "root",
        "string",
        False,
        "the memory root (tenant) as a path relative to the export source; '' when the "
        "source is itself a memory root",
    ),
    Column("source_file", "string", False, "log file relative to the root: logs/YYYY-MM-DD.jsonl"),
    Column("line", "int64", False, "1-based line number in source_file"),
    Column("op", "string", False, "'remember' for facts, 'forget' for forget/eviction records"),
    Column(
        "id",
        "string",
        False,
        "entry id; for forget rows the id of the forgotten entry; records without an id "
        "get the same derived id KnowledgeMemory gives them",
    ),
    Column("timestamp", _TS, True, "when the record was written (UTC)"),
    Column("category", "string", True, "category ('general' when absent); null on forget rows"),
    Column("content", "string", True, "the remembered text; null on forget rows"),
    Column("persistent", "bool", True, "kept in MEMORY.md too; null on forget rows"),
    Column("importance", "double", True, "0.0 - 1.0 (0.5 when absent); null on forget rows"),
    Column("ttl_days", "double", True, "lifetime in days; null for no expiry"),
    Column(
        "expires_at", _TS, True, "expiry (UTC): the record's, else timestamp + ttl_days; or null"
    ),
    Column("metadata", "string", True, "caller metadata as compact JSON text; null when absent"),
    Column("reason", "string", True, "forget rows: 'forget' or 'evicted'; null otherwise"),
)

#: Columns of the ``events`` table, in file order.
EVENT_COLUMNS: tuple[Column, ...] = (
    Column("root", "string", False, "the store root as a path relative to the export source"),
    Column("source_file", "string", False, "event log relative to the root: log/<stream>.jsonl"),
    Column("stream_id", "string", False, "the stream id (the file name without .jsonl)"),
    Column("line", "int64", False, "1-based line number in source_file (the event's sequence)"),
    Column("type", "string", True, "the event's 'type' field when it is a string"),
    Column(
        "timestamp",
        _TS,
        True,
        "the event's 'timestamp' (ISO-8601 text, or Unix seconds) when parseable; the "
        "partition day of an event without one is that of the event before it",
    ),
    Column("data", "string", False, "the whole event as JSON text"),
)


def check_pyarrow() -> None:
    """Raise :class:`~fsmemory.errors.MissingDependencyError` when pyarrow is not
    installed, without importing it (about 0.3 s of CPU: an export that writes nothing,
    such as a no-op re-run, never needs it; :func:`require_pyarrow` imports it)."""
    import importlib.util
    import sys

    if sys.modules.get("pyarrow") is not None:
        return
    try:
        found = importlib.util.find_spec("pyarrow") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        from fsmemory.errors import MissingDependencyError

        raise MissingDependencyError("pyarrow", "parquet")


def require_pyarrow() -> Any:
    """Import pyarrow, or raise :class:`~fsmemory.errors.MissingDependencyError`."""
    from fsmemory.errors import MissingDependencyError

    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise MissingDependencyError("pyarrow", "parquet") from exc
    return pyarrow


def _arrow_type(arrow: Any, name: str) -> pa.DataType:
    types: dict[str, pa.DataType] = {
        "string": arrow.string(),
        "int64": arrow.int64(),
        "bool": arrow.bool_(),
        "double": arrow.float64(),
        _TS: arrow.timestamp("us", tz="UTC"),
    }
    return types[name]


@functools.cache
def _build(table: str, columns: tuple[Column, ...]) -> pa.Schema:
    arrow = require_pyarrow()
    fields = [
        arrow.field(
            c.name,
            _arrow_type(arrow, c.type),
            nullable=c.nullable,
            metadata={"description": c.description},
        )
        for c in columns
    ]
    metadata = {
        SCHEMA_VERSION_KEY: str(SCHEMA_VERSION),
        "fsmemory_table": table,
        "fsmemory_partitioning": f"hive:{PARTITION_COLUMN}",
    }
    schema: pa.Schema = arrow.schema(fields, metadata=metadata)
    return schema


def memory_schema() -> pa.Schema:
    """The Arrow schema of the ``memory`` table's files (without the ``date`` partition).

    Raises:
        MissingDependencyError: pyarrow is not installed (``pip install 'fsmemory[parquet]'``).
    """
    return _build(MEMORY_TABLE, MEMORY_COLUMNS)


def events_schema() -> pa.Schema:
    """The Arrow schema of the ``events`` table's files (without the ``date`` partition).

    Raises:
        MissingDependencyError: pyarrow is not installed (``pip install 'fsmemory[parquet]'``).
    """
    return _build(EVENTS_TABLE, EVENT_COLUMNS)


def schema_for(table: str) -> pa.Schema:
    """The schema of ``table`` (:data:`MEMORY_TABLE` or :data:`EVENTS_TABLE`).

    Raises:
        ValueError: an unknown table name.
    """
    if table == MEMORY_TABLE:
        return memory_schema()
    if table == EVENTS_TABLE:
        return events_schema()
    raise ValueError(f"unknown table {table!r}")
