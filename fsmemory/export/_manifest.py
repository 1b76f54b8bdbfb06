"""The watermark manifest at ``<dest>/_fsmemory_manifest.json``.

It records, per source log file, how far it has been exported (a byte offset and line
count, plus digests of the first and last bytes before that offset so a rewritten file is
noticed) and which Parquet files hold its rows; and the list of Parquet files that make
up the dataset. It is replaced only by compare-and-swap, so concurrent exports cannot
overwrite each other's commits.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from fsmemory import _jsonutil
from fsmemory.export._schema import SCHEMA_VERSION

__all__ = [
    "MANIFEST_PATH",
    "RUNS_DIR",
    "FileState",
    "Manifest",
    "ManifestError",
    "PartInfo",
    "digest",
]

MANIFEST_PATH = "_fsmemory_manifest.json"
RUNS_DIR = "_fsmemory_runs"
FORMAT = "fsmemory-export-manifest"
#: Runs kept in the manifest's history.
MAX_RUNS = 20


class ManifestError(ValueError):
    """The manifest cannot be read (corrupt, or written by an incompatible version)."""


def digest(data: bytes) -> str:
    """A short content digest (hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(slots=True)
class FileState:
    """How far one source log file has been exported.

    Attributes:
        table: ``"memory"`` or ``"events"``.
        root: the memory/store root relative to the source.
        path: the file relative to ``root``.
        size: the file size seen when it was last read.
        token: the storage change token seen then.
        offset: bytes exported (always the end of a complete line).
        lines: lines before ``offset``.
        head_len: bytes covered by ``head``.
        head: digest of the first ``head_len`` bytes.
        tail_len: bytes covered by ``tail``.
        tail: digest of the ``tail_len`` bytes before ``offset``.
        parts: dataset files holding rows of this file.
        last_date: events: the partition day of the last exported event.
    """

    table: str
    root: str
    path: str
    size: int = 0
    token: str = ""
    offset: int = 0
    lines: int = 0
    head_len: int = 0
    head: str = ""
    tail_len: int = 0
    tail: str = ""
    parts: list[str] = field(default_factory=list)
    last_date: str | None = None

    def copy(self) -> FileState:
        """An independent copy."""
        data = asdict(self)
        data["parts"] = list(self.parts)
        return FileState(**data)

    def same_progress(self, other: FileState | None) -> bool:
        """True when ``other`` records the same exported prefix and parts."""
        return (
            other is not None
            and self.offset == other.offset
            and self.lines == other.lines
            and self.head == other.head
            and self.tail == other.tail
            and self.parts == other.parts
        )


@dataclass(slots=True)
class PartInfo:
    """One Parquet file of the dataset.

    Attributes:
        table: the table it belongs to.
        date: its partition day.
        rows: rows in it.
        bytes: its size.
        run: the run that wrote it.
    """

    table: str
    date: str
    rows: int
    bytes: int
    run: str


@dataclass(slots=True)
class Manifest:
    """The destination's record of what has been exported.

    Attributes:
        source: the source URL the dataset was exported from.
        generation: incremented by every commit.
        schema_version: the dataset's schema version.
        files: per source file (path relative to the source), its progress.
        parts: the dataset's Parquet files (paths relative to the destination).
        trash: replaced Parquet files still to delete (a crash may have left them).
        runs: summaries of the last runs, newest last.
    """

    source: str
    generation: int = 0
    schema_version: int = SCHEMA_VERSION
    files: dict[str, FileState] = field(default_factory=dict)
    parts: dict[str, PartInfo] = field(default_factory=dict)
    trash: list[str] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)

    def to_bytes(self) -> bytes:
        """The manifest as JSON."""
        return _jsonutil.dumps(
            {
                "format": FORMAT,
                "schema_version": self.schema_version,
                "generation": self.generation,
                "source": self.source,
                "files": {k: asdict(v) for k, v in sorted(self.files.items())},
                "parts": {k: asdict(v) for k, v in sorted(self.parts.items())},
                "trash": sorted(set(self.trash)),
                "runs": self.runs[-MAX_RUNS:],
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        """Parse a manifest.

        Raises:
            ManifestError: not a manifest, or an unreadable one.
        """
        try:
            raw = _jsonutil.loads(data)
        except _jsonutil.JSONDecodeError as exc:
            raise ManifestError(f"the export manifest is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ManifestError("the export manifest has an unknown format")
        try:
            return cls(
                source=str(raw["source"]),
                generation=int(raw["generation"]),
                schema_version=int(raw["schema_version"]),
                files={k: FileState(**v) for k, v in raw["files"].items()},
                parts={k: PartInfo(**v) for k, v in raw["parts"].items()},
                trash=[str(p) for p in raw.get("trash", [])],
                runs=list(raw.get("runs", [])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"the export manifest is malformed: {exc}") from exc
