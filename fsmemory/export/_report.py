"""What an export did: :class:`ExportReport`, and :class:`ExportProgress` for progress bars."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["CorruptLine", "ExportProgress", "ExportReport"]

#: At most this many corrupt lines are listed in a report (all of them are counted).
MAX_CORRUPT_SAMPLES = 100


@dataclass(frozen=True, slots=True)
class CorruptLine:
    """A skipped source line.

    Attributes:
        root: the memory or store root, relative to the export source.
        source_file: the log file relative to that root.
        line: the 1-based line number.
        reason: why it was skipped.
    """

    root: str
    source_file: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ExportProgress:
    """A progress snapshot, passed to the ``progress`` callback of
    :func:`~fsmemory.export.export_parquet` after every block of lines, and (stage
    ``"rewrite"``) after every Parquet file merged by ``compact`` or rewritten without a
    re-exported source file's rows, which happens before the reading.

    Attributes:
        files_done: source files finished in this run.
        files_total: source files this run reads.
        lines: lines read so far.
        bytes_read: source bytes read so far.
        bytes_total: source bytes this run reads in total (an estimate while files grow).
        rows: rows written so far.
        stage: ``"read"`` (reading source files) or ``"rewrite"`` (merging or rewriting
            Parquet files).
        parts_done: Parquet files merged or rewritten so far.
        parts_total: Parquet files this run merges or rewrites.
    """

    files_done: int
    files_total: int
    lines: int
    bytes_read: int
    bytes_total: int
    rows: int
    stage: str = "read"
    parts_done: int = 0
    parts_total: int = 0


@dataclass(frozen=True, slots=True)
class ExportReport:
    """The outcome of one :func:`~fsmemory.export.export_parquet` run.

    Attributes:
        source: the source URL.
        dest: the destination URL.
        run_id: this run's id (it names the Parquet files it wrote).
        full: True for a full rebuild.
        rows: rows written (both tables).
        memory_rows: rows written to the ``memory`` table.
        event_rows: rows written to the ``events`` table.
        rewritten_rows: rows carried over from replaced files (not counted in ``rows``).
        files_seen: source log files found.
        files_read: source log files read (new or grown).
        files_unchanged: source log files skipped because nothing changed.
        files_reexported: source log files exported again from the start because they
            were rewritten or shrank (their old rows were replaced).
        files_vanished: source files that disappeared while the export ran.
        lines_read: source lines read.
        bytes_read: source bytes read.
        corrupt_lines: lines skipped because they are not valid records (all counted).
        corrupt_samples: the first corrupt lines, for a look.
        pending_lines: unfinished last lines (no newline yet, not valid JSON) left for a
            later run.
        out_of_window: event rows dropped because they are before ``since``.
        parts_written: Parquet files written.
        bytes_written: bytes of Parquet written.
        parts_removed: Parquet files deleted (replaced, rebuilt, or orphans of
            crashed runs).
        parts_compacted: small Parquet files merged into bigger ones (``compact``).
        conflicts: concurrent exports this run had to merge with or retry after.
        manifest_generation: the destination manifest's generation after this run.
        manifest_bytes_read: bytes of manifest (head and segment files) read.
        manifest_bytes_written: bytes of manifest (head and segment files) written.
        segments_read: manifest segment files read (the others were unchanged).
        segments_written: manifest segment files written.
        max_reads_in_flight: the most source reads this run had in flight at once.
        shard: ``"i/n"`` for a sharded run, else None.
        seconds: wall time.
    """

    source: str
    dest: str
    run_id: str
    full: bool
    rows: int = 0
    memory_rows: int = 0
    event_rows: int = 0
    rewritten_rows: int = 0
    files_seen: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    files_reexported: int = 0
    files_vanished: int = 0
    lines_read: int = 0
    bytes_read: int = 0
    corrupt_lines: int = 0
    corrupt_samples: tuple[CorruptLine, ...] = field(default_factory=tuple)
    pending_lines: int = 0
    out_of_window: int = 0
    parts_written: int = 0
    bytes_written: int = 0
    parts_removed: int = 0
    parts_compacted: int = 0
    conflicts: int = 0
    manifest_generation: int = 0
    manifest_bytes_read: int = 0
    manifest_bytes_written: int = 0
    segments_read: int = 0
    segments_written: int = 0
    max_reads_in_flight: int = 0
    shard: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict of every field."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people: rows, files, bytes, seconds (and problems, if any)."""
        text = (
            f"exported {self.rows:,} rows from {self.files_read:,} of {self.files_seen:,} "
            f"log files into {self.parts_written:,} Parquet files "
            f"({_size(self.bytes_written)}) in {self.seconds:.2f} s"
        )
        extras = [
            f"{count:,} {what}" for name, what in _SUMMARY_EXTRAS if (count := getattr(self, name))
        ]
        return text + ("; " + ", ".join(extras) if extras else "")


#: The counts :meth:`ExportReport.summary` adds after its main line when not zero.
_SUMMARY_EXTRAS = (
    ("corrupt_lines", "corrupt lines skipped"),
    ("pending_lines", "unfinished lines left for later"),
    ("files_reexported", "rewritten files re-exported"),
    ("out_of_window", "events before --since skipped"),
    ("parts_compacted", "small Parquet files merged"),
    ("conflicts", "concurrent-export conflicts resolved"),
)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover
