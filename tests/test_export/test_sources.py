"""Which listed files count as logs (``classify``), on ordinary and awkward paths."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from fsmemory.export._manifest import fingerprint
from fsmemory.export._schema import EVENTS_TABLE, MEMORY_TABLE
from fsmemory.export._sources import Listing, classify, discover
from fsmemory.export._state import TABLES, legacy_source_id, source_id
from fsmemory.fs import FileInfo, open_root
from fsmemory.fs.local import LocalRoot
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


# -- a local source is walked directly: the same logs as its root's listing ------------
ALL = frozenset(TABLES)


class _ListedRoot(LocalRoot):
    """A local root that ``discover`` lists through ``list``/``list_dirs`` (it walks
    only a plain :class:`LocalRoot` itself)."""


def _tree(base: Path) -> None:
    """A source with awkward corners: nested roots, roots whose names sort differently
    by path and by folder, non-logs, reserved names, symlinks and a ``log`` folder
    inside a ``logs`` folder."""
    files = [
        "t1/logs/2026-01-01.jsonl",
        "t1/logs/2026-01-02.jsonl",
        "t1/logs/notes.jsonl",
        "t1/logs/2026-02-30.jsonl",
        "t1/logs/sub/2026-01-01.jsonl",
        "t1/log/agent.jsonl",
        "t1/log/.jsonl",
        "t1/MEMORY.md",
        "t1-b/logs/2026-01-01.jsonl",
        "t1/x/logs/2026-01-01.jsonl",
        "org/a/logs/2026-01-03.jsonl",
        "org/a/log/s 1.jsonl",
        "logs/2026-01-01.jsonl",
        "logs/log/a.jsonl",
        "log/b.jsonl",
        "top.jsonl",
        "t2/logs/.fsmemory-tmp-1",
        "t2/logs/2026-01-04.jsonl",
        "t2/.fsmemory-cache/logs/2026-01-01.jsonl",
    ]
    for i, rel in enumerate(files):
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b'{"n": %d}\n' % i * (i + 1))
    (base / "t2" / "logs" / "2026-01-05.jsonl").symlink_to(base / "t1/logs/2026-01-01.jsonl")
    (base / "t3").mkdir()
    (base / "t3" / "logs").symlink_to(base / "t1" / "logs", target_is_directory=True)
    (base / "t4").symlink_to(base / "t1", target_is_directory=True)


def _rows(listing: Listing) -> list[tuple[Any, ...]]:
    files = [listing.source_file(i) for i in range(len(listing))]
    return sorted((f.table, f.root, f.path, f.key, f.day, f.info) for f in files)


@pytest.mark.parametrize("tables", [ALL, frozenset({MEMORY_TABLE}), frozenset({EVENTS_TABLE})])
@pytest.mark.parametrize("tenants", [None, {"t1", "org", ""}, {"t1-b", "logs"}])
def test_a_local_walk_lists_what_the_root_lists(
    tmp_path: Path, tables: frozenset[str], tenants: set[str] | None
) -> None:
    _tree(tmp_path)
    accept = None if tenants is None else tenants.__contains__
    walked = discover(LocalRoot(str(tmp_path)), tables, accept, by_folder=True)
    listed = discover(_ListedRoot(str(tmp_path)), tables, accept, by_folder=True)
    assert _rows(walked) == _rows(listed)
    if tenants is None and tables == ALL:  # 7 memory logs, 4 event logs
        assert len(walked) == 11
    # The listing entries are the root's own (its stat's size, mtime and token).
    root = LocalRoot(str(tmp_path))
    for i in range(len(walked)):
        info = walked.source_file(i).info
        assert info == root.stat(info.path)


def test_a_local_walk_notices_a_same_length_edit(tmp_path: Path) -> None:
    """The listing entry of a log edited in place to the same length changes (its
    change token), whatever its modification time says."""
    _tree(tmp_path)
    root = LocalRoot(str(tmp_path))
    key = "t1/logs/2026-01-01.jsonl"

    def entry() -> FileInfo:
        listing = discover(root, ALL, None, by_folder=True)
        return next(listing.source_file(i).info for i in range(len(listing))
                    if listing.keys[i] == key)  # fmt: skip

    before = entry()
    path = tmp_path / key
    stat = os.stat(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"n"', b'"m"'))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the old mtime, put back
    after = entry()
    assert after.size == before.size and after.mtime == before.mtime
    assert after.token != before.token


def test_listing_fingerprints_are_those_earlier_versions_recorded() -> None:
    """Fingerprints keep the digests earlier versions wrote into manifest heads (so
    their no-op re-runs stay no-ops)."""
    entries = [("t/logs/2026-01-01.jsonl", 10, "1-10-5-6"), ("u/log/a b.jsonl", 0, "x")]
    assert fingerprint(entries) == "8bcdd7bf6f48035e"
    assert fingerprint(entries[:1], "2026-01-01|None") == "f0c957c062121267"
