"""Which listed files count as logs (``classify``), on ordinary and awkward paths."""

from __future__ import annotations

import pytest

from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.export._sources import classify
from fsmemory.fs import FileInfo


def _info(path: str) -> FileInfo:
    return FileInfo(path, 1, None, "t")


@pytest.mark.parametrize(
    ("path", "table", "root", "rel", "day"),
    [
        ("logs/2026-01-02.jsonl", MEMORY_TABLE, "", "logs/2026-01-02.jsonl", "2026-01-02"),
        ("u1/logs/2026-01-02.jsonl", MEMORY_TABLE, "u1", "logs/2026-01-02.jsonl", "2026-01-02"),
        ("a/b/logs/2026-12-31.jsonl", MEMORY_TABLE, "a/b", "logs/2026-12-31.jsonl", "2026-12-31"),
        ("log/agent.jsonl", EVENTS_TABLE, "", "log/agent.jsonl", None),
        ("t/x/log/s 1.jsonl", EVENTS_TABLE, "t/x", "log/s 1.jsonl", None),
        ("logs/log/a.jsonl", EVENTS_TABLE, "logs", "log/a.jsonl", None),
    ],
)
def test_logs_are_classified_with_their_root(
    path: str, table: str, root: str, rel: str, day: str | None
) -> None:
    item = classify(_info(path))
    assert item is not None
    assert (item.table, item.root, item.path, item.day, item.key) == (table, root, rel, day, path)


@pytest.mark.parametrize(
    "path",
    [
        "logs/2026-02-30.jsonl",  # not a calendar day
        "logs/notes.jsonl",
        "u1/logs/2026-01-02.json",
        "u1/logs/2026-01-02.jsonl.bak",
        "u1/logs/sub/2026-01-02.jsonl",
        "u1/mylogs/2026-01-02.jsonl",
        "u1/log/.jsonl",
        "u1/catalog/a.jsonl",
        "u1/log/a.jsonl/b.txt",
        "2026-01-02.jsonl",
    ],
)
def test_other_files_are_not_logs(path: str) -> None:
    assert classify(_info(path)) is None
