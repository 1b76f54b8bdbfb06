"""The path store's configurable file-size limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsmemory import ContentTooLargeError
from fsmemory.store import FsspecKnowledgeStore


@pytest.mark.parametrize("url", ["local", "memory://size-limit-test"])
async def test_writes_and_appends_beyond_the_limit_raise(url: str, tmp_path: Path) -> None:
    store = FsspecKnowledgeStore(str(tmp_path / "s") if url == "local" else url, max_file_bytes=10)

    await store.write("/a.txt", "0123456789")
    with pytest.raises(ContentTooLargeError):
        await store.write("/b.txt", "0123456789X")
    assert await store.read("/b.txt") is None
    with pytest.raises(ValueError):  # ContentTooLargeError is a ValueError
        await store.append("/a.txt", "x")
    assert await store.read("/a.txt") == "0123456789"
    assert await store.append("/log.txt", "12345") == 0
    assert await store.append("/log.txt", "67890") == 5
    with pytest.raises(ContentTooLargeError):
        await store.append("/log.txt", "!")
    assert await store.read("/log.txt") == "1234567890"


def test_limit_must_be_a_count(tmp_path: Path) -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError):
            FsspecKnowledgeStore(str(tmp_path), max_file_bytes=bad)  # type: ignore[arg-type]
