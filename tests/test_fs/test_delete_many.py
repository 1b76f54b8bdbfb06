"""``StorageRoot.delete_many``: the listed files go, missing ones are skipped, every
other file stays byte for byte (S3's batched form is tested in test_s3_client.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from fsmemory import open_root


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_delete_many_removes_only_what_it_is_given(tmp_path: Path, kind: str) -> None:
    url = str(tmp_path / "root") if kind == "local" else f"memory://dm-{uuid.uuid4().hex}"
    root = open_root(url)
    kept = {"keep.md": b"a person's notes\x00\xff\n", "snap/base.tar": b"base", "snap/d-3": b"3"}
    for path, data in {**kept, "snap/d-1": b"1", "snap/d-2": b"2"}.items():
        root.write(path, data)
    assert root.delete_many(["snap/d-1", "snap/d-2", "snap/missing"]) == 2
    assert root.delete_many([]) == 0
    assert sorted(i.path for i in root.list("", recursive=True)) == sorted(kept)
    for path, data in kept.items():
        assert root.read_bytes(path) == data
