"""Fixtures for the Parquet export tests: log writers and read-back helpers."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fsmemory import _jsonutil
from fsmemory.fs import StorageRoot, open_root

pytest.importorskip("pyarrow")

Record = dict[str, Any]


class FakeClock:
    """A settable UTC clock."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> FakeClock:
    """A clock starting at 2026-03-10 09:00 UTC."""
    return FakeClock(datetime(2026, 3, 10, 9, 0, tzinfo=UTC))


def record(
    content: str,
    *,
    day: str = "2026-03-10",
    n: int = 0,
    category: str = "general",
    **extra: Any,
) -> Record:
    """A remember record as KnowledgeMemory writes it."""
    rec: Record = {
        "id": extra.pop("id", f"id-{day}-{n:06d}"),
        "timestamp": f"{day}T10:00:{n % 60:02d}.{n:06d}Z",
        "category": category,
        "content": content,
        "persistent": bool(extra.pop("persistent", False)),
        "importance": extra.pop("importance", 0.5),
        "ttl_days": extra.pop("ttl_days", None),
        "expires_at": extra.pop("expires_at", None),
    }
    rec.update(extra)
    return rec


def lines(records: list[Record]) -> bytes:
    """JSONL bytes of ``records``."""
    return b"".join(_jsonutil.dumps_line(r) for r in records)


def write_log(root: StorageRoot, day: str, data: bytes, *, append: bool = True) -> None:
    """Append (or write) raw bytes to ``logs/<day>.jsonl`` of ``root``."""
    path = f"logs/{day}.jsonl"
    if append:
        root.append(path, data)
    else:
        root.write(path, data)


@pytest.fixture
def local_dirs(tmp_path: Path) -> tuple[str, str]:
    """``(source dir, dest dir)`` on the local filesystem."""
    src = tmp_path / "memory"
    src.mkdir()
    return str(src), str(tmp_path / "export")


@pytest.fixture
def memory_urls() -> Iterator[tuple[str, str]]:
    """``(source URL, dest URL)`` on memory:// (unique, removed afterwards)."""
    token = uuid.uuid4().hex
    src, dest = f"memory://exp-src-{token}", f"memory://exp-dst-{token}"
    yield src, dest
    import fsspec

    fs = fsspec.filesystem("memory")
    for url in (src, dest):
        path = url[len("memory://") :]
        if fs.exists(path):
            fs.rm(path, recursive=True)


def read_rows(dest: str, table: str = "memory") -> list[dict[str, Any]]:
    """Every row of an exported local table via DuckDB, sorted by (root, source_file, line)."""
    duckdb = pytest.importorskip("duckdb")
    pattern = os.path.join(dest, table, "*", "*.parquet")
    rel = duckdb.sql(
        f"SELECT * FROM read_parquet('{pattern}', hive_partitioning=true) "
        "ORDER BY root, source_file, line"
    )
    names = rel.columns
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


def parquet_files(dest: str, table: str = "memory") -> list[str]:
    """Part files of a local table (relative to ``dest``)."""
    out = []
    for dirpath, _, names in os.walk(os.path.join(dest, table)):
        for name in names:
            if name.endswith(".parquet"):
                out.append(os.path.relpath(os.path.join(dirpath, name), dest))
    return sorted(out)


Opener = Callable[[str], StorageRoot]


@pytest.fixture
def opener() -> Opener:
    """``open_root`` with no options."""
    return lambda url: open_root(url)


def file_states(dest: str | StorageRoot) -> dict[str, Any]:
    """Every source file's export state recorded in ``dest``'s manifest (head and
    segment files), by source key."""
    from fsmemory.export._manifest import (
        MANIFEST_PATH,
        Manifest,
        decode_segment,
        segment_path,
    )

    root = open_root(dest)
    head = Manifest.from_bytes(root.read_bytes(MANIFEST_PATH))
    states: dict[str, Any] = {}
    for seg, ref in head.segments.items():
        states.update(decode_segment(root.read_bytes(segment_path(seg, ref.run))))
    return states
