"""``storage_options`` is one mapping on every store (the old ``**kwargs`` spelling still
works, with a DeprecationWarning)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsmemory.errors import InvalidInputError
from fsmemory.store import FsspecKnowledgeStore, RedisKnowledgeStore, SyncKnowledgeStore


async def test_mapping_reaches_the_root(tmp_path: Path) -> None:
    store = FsspecKnowledgeStore(str(tmp_path), storage_options={"durable": True})
    assert store.root.durable  # type: ignore[attr-defined]
    await store.write("/a", "x")
    assert (tmp_path / "a").read_text() == "x"


def test_keyword_options_still_work_with_a_warning(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="storage_options"):
        store = FsspecKnowledgeStore(str(tmp_path), durable=True)
    assert store.root.durable  # type: ignore[attr-defined]


def test_a_typo_is_refused_not_dropped(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="pol_interval"):
        FsspecKnowledgeStore(str(tmp_path), storage_options={"pol_interval": 1})
    with pytest.raises(InvalidInputError, match="pol_interval"):
        SyncKnowledgeStore(str(tmp_path), storage_options={"pol_interval": 1})


@pytest.mark.redis
def test_redis_store_takes_the_mapping(redis_url: str) -> None:
    url = f"{redis_url}/0/opts"
    store = RedisKnowledgeStore(url, storage_options={"prefix": "fsm-opts", "socket_timeout": 5})
    assert store.root.fs.prefix == "fsm-opts"  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning):
        legacy = RedisKnowledgeStore(url, socket_timeout=5)
    assert legacy.root.fs._socket_timeout == 5  # type: ignore[attr-defined]
