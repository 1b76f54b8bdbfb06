"""Which listed files count as logs (``classify``), on ordinary and awkward paths."""

from __future__ import annotations

from typing import Any

import pytest

from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.export._sources import classify
from fsmemory.export._state import legacy_source_id, source_id
from fsmemory.fs import FileInfo, open_root
from fsmemory.fs.memory import MemoryRoot


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


class _GuardedRoot(MemoryRoot):
    """A memory root whose filesystem must not be asked for once opened, like a root
    that avoids importing its backend library until it does I/O."""

    guarded = False

    def storage_key(self) -> tuple[str, ...]:
        return (type(self).__qualname__, self.root)  # as S3Root: without its filesystem

    def __getattribute__(self, name: str) -> Any:
        if name == "fs" and object.__getattribute__(self, "guarded"):
            raise AssertionError("the root's filesystem was asked for its identity")
        return super().__getattribute__(name)


def test_source_id_asks_the_root_not_its_filesystem() -> None:
    root = _GuardedRoot("/ids/tenants/", url="memory://ids/tenants/")
    root.guarded = True
    assert source_id(root) == "memory://ids/tenants"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("memory://ids/a/", "memory://ids/a"),
        ("memory:///ids/a", "memory://ids/a"),
        ("simplecache::memory://ids/b", "simplecache://ids/b"),
    ],
)
def test_source_id_is_the_scheme_and_root_path(url: str, expected: str) -> None:
    root = open_root(url)
    assert source_id(root) == expected == legacy_source_id(root)


def test_source_id_spells_aliases_as_the_filesystem_does() -> None:
    pytest.importorskip("s3fs")
    options = {"anon": True}
    assert source_id(open_root("s3a://bkt/pre/", options)) == "s3://bkt/pre"
    assert source_id(open_root("s3://bkt/pre", options)) == "s3://bkt/pre"
