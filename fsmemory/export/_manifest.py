"""The watermark manifest: a small head plus one segment file per (tenant bucket, day).

``<dest>/_fsmemory_manifest.json`` (the *head*) is the only file replaced by
compare-and-swap. It names the source, the dataset's Parquet files (``parts``), the
replaced files still to delete (``trash``), the last runs, and one entry per *segment*:
the run that wrote the segment's file and a fingerprint of the listing (path, size and
change token of each source file) that file describes.

A segment groups the source files of one day (``events`` for agent event logs) of the
tenants (top-level folders of the source) that hash to one of :data:`BUCKETS` buckets;
its file
``_fsmemory_manifest.d/<bucket>/<day>-<run>.json`` records, per source file, how far it
has been exported (byte offset and line count, digests of the first and last bytes
before that offset so a rewritten file is noticed) and which Parquet files hold its
rows. Segment files are written once, before the head that names them, and never
changed; a commit that changes a segment writes a new file and lists the old one as
trash. So a run reads the segment files whose fingerprint changed and writes only those
that changed: a no-op re-run reads the head and the listing, nothing else.

Sharded runs (``shard=(i, n)``) own the buckets ``b`` with ``b % n == i``; they never
write each other's segments, so their concurrent commits merge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from fsmemory import _jsonutil
from fsmemory.export._schema import SCHEMA_VERSION

__all__ = [
    "BUCKETS",
    "EVENTS_SEGMENT",
    "MANIFEST_PATH",
    "RUNS_DIR",
    "SEGMENTS_DIR",
    "FileState",
    "Manifest",
    "ManifestError",
    "PartInfo",
    "SegmentRef",
    "bucket_of",
    "digest",
    "fingerprint",
    "segment_path",
]

MANIFEST_PATH = "_fsmemory_manifest.json"
RUNS_DIR = "_fsmemory_runs"
SEGMENTS_DIR = "_fsmemory_manifest.d"
FORMAT = "fsmemory-export-manifest"
SEGMENT_FORMAT = "fsmemory-export-segment"
#: Version of the manifest layout (1: one JSON document; 2: head + segment files).
LAYOUT_VERSION = 2
#: Tenant buckets of a new manifest (a shard count above this leaves shards empty).
BUCKETS = 32
#: The segment "day" of agent event logs.
EVENTS_SEGMENT = "events"
#: Runs kept in the manifest's history.
MAX_RUNS = 20


class ManifestError(ValueError):
    """The manifest cannot be read (corrupt, or written by an incompatible version)."""


def digest(data: bytes) -> str:
    """A short content digest (hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def bucket_of(tenant: str, buckets: int) -> int:
    """The bucket of a tenant: stable across runs, machines and Python versions."""
    value = hashlib.blake2b(tenant.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(value, "big") % buckets


def fingerprint(entries: Iterable[tuple[str, int, str]], salt: str = "") -> str:
    """A digest of ``(key, size, token)`` listing entries (in the order given)."""
    text = "".join([f"{key}\0{size}\0{token}\n" for key, size, token in entries])
    h = hashlib.blake2b(salt.encode(), digest_size=8)
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def segment_path(segment: str, run: str) -> str:
    """The file of ``segment`` (``"<bucket>/<day>"``) as written by ``run``."""
    return f"{SEGMENTS_DIR}/{segment}-{run}.json"


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
        return FileState(
            self.table, self.root, self.path, self.size, self.token, self.offset,
            self.lines, self.head_len, self.head, self.tail_len, self.tail,
            list(self.parts), self.last_date,
        )  # fmt: skip

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
        segments: the manifest segments whose source files have rows in it.
    """

    table: str
    date: str
    rows: int
    bytes: int
    run: str
    segments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class SegmentRef:
    """The head's entry for one segment.

    Attributes:
        run: the run that wrote the segment's file.
        fingerprint: of the listing that file describes (see :func:`fingerprint`).
        files: source files in it.
        pending: of those, files ending in an unfinished line left for later.
    """

    run: str
    fingerprint: str
    files: int = 0
    pending: int = 0


@dataclass(slots=True)
class Manifest:
    """The destination's record of what has been exported (the head).

    Attributes:
        source: the normalized URL of the source the dataset was exported from.
        generation: incremented by every commit.
        schema_version: the dataset's schema version.
        buckets: tenant buckets of the segments.
        segments: per segment (``"<bucket>/<day>"``), its file's run and fingerprint.
        parts: the dataset's Parquet files (paths relative to the destination).
        trash: replaced files (Parquet files, segment files) still to delete.
        runs: summaries of the last runs, newest last.
        legacy_files: the per-file states of a layout-1 manifest (one JSON document);
            written out as segments by the next commit.
    """

    source: str
    generation: int = 0
    schema_version: int = SCHEMA_VERSION
    buckets: int = BUCKETS
    segments: dict[str, SegmentRef] = field(default_factory=dict)
    parts: dict[str, PartInfo] = field(default_factory=dict)
    trash: list[str] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    legacy_files: dict[str, FileState] | None = None

    def to_bytes(self) -> bytes:
        """The head as JSON."""
        return _jsonutil.dumps(
            {
                "format": FORMAT,
                "layout": LAYOUT_VERSION,
                "schema_version": self.schema_version,
                "generation": self.generation,
                "source": self.source,
                "buckets": self.buckets,
                "segments": {
                    k: [v.run, v.fingerprint, v.files, v.pending]
                    for k, v in sorted(self.segments.items())
                },
                "parts": {k: asdict(v) for k, v in sorted(self.parts.items())},
                "trash": sorted(set(self.trash)),
                "runs": self.runs[-MAX_RUNS:],
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        """Parse a head (or a layout-1 manifest).

        Raises:
            ManifestError: not a manifest, or an unreadable one.
        """
        try:
            raw = _jsonutil.loads(data)
        except _jsonutil.JSONDecodeError as exc:
            raise ManifestError(f"the export manifest is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ManifestError("the export manifest has an unknown format")
        layout = raw.get("layout", 1)
        if layout not in (1, LAYOUT_VERSION):
            raise ManifestError(f"the export manifest has layout {layout!r}, unknown here")
        try:
            manifest = cls(
                source=str(raw["source"]),
                generation=int(raw["generation"]),
                schema_version=int(raw["schema_version"]),
                parts={k: PartInfo(**v) for k, v in raw["parts"].items()},
                trash=[str(p) for p in raw.get("trash", [])],
                runs=list(raw.get("runs", [])),
            )
            if layout == 1:
                manifest.legacy_files = {k: FileState(**v) for k, v in raw["files"].items()}
            else:
                manifest.buckets = int(raw["buckets"])
                if manifest.buckets < 1:
                    raise ValueError("buckets must be >= 1")
                manifest.segments = {
                    str(k): SegmentRef(str(v[0]), str(v[1]), int(v[2]), int(v[3]))
                    for k, v in raw["segments"].items()
                }
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ManifestError(f"the export manifest is malformed: {exc}") from exc
        return manifest


# -- segment files ---------------------------------------------------------------------
_STATE_FIELDS = ("size", "token", "offset", "lines", "head_len", "head", "tail_len", "tail")


def encode_segment(states: dict[str, FileState]) -> bytes:
    """A segment file: its files' states, parts named by index into one list."""
    parts: dict[str, int] = {}
    files: dict[str, list[Any]] = {}
    for key in sorted(states):
        s = states[key]
        refs = []
        for path in s.parts:
            refs.append(parts.setdefault(path, len(parts)))
        files[key] = [s.table, s.root, s.path, s.size, s.token, s.offset, s.lines,
                      s.head_len, s.head, s.tail_len, s.tail, refs, s.last_date]  # fmt: skip
    return _jsonutil.dumps(
        {
            "format": SEGMENT_FORMAT,
            "fields": ["table", "root", "path", *_STATE_FIELDS, "parts", "last_date"],
            "parts": list(parts),
            "files": files,
        }
    )


def decode_segment(data: bytes) -> dict[str, FileState]:
    """The states of a segment file.

    Raises:
        ManifestError: not a segment file.
    """
    try:
        raw = _jsonutil.loads(data)
        if not isinstance(raw, dict) or raw.get("format") != SEGMENT_FORMAT:
            raise ManifestError("an export manifest segment has an unknown format")
        names = [str(p) for p in raw["parts"]]
        out = {}
        for key, v in raw["files"].items():
            t, r, p, size, token, off, lines, hl, h, tl, tail, refs, last = v
            out[str(key)] = FileState(
                str(t), str(r), str(p), int(size), str(token), int(off), int(lines),
                int(hl), str(h), int(tl), str(tail), [names[i] for i in refs],
                None if last is None else str(last),
            )  # fmt: skip
    except ManifestError:
        raise
    except (_jsonutil.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise ManifestError(f"an export manifest segment is malformed: {exc}") from exc
    return out
