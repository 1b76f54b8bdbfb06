"""One way in: every root is built from ``(url, storage_options)`` by a table lookup,
and local roots refuse options they do not understand instead of dropping them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fsmemory.errors import InvalidInputError
from fsmemory.fs import RetryPolicy, open_root
from fsmemory.fs.local import LocalRoot
from fsmemory.fs.memory import MemoryRoot
from fsmemory.fs.open import ROOT_CLASSES
from fsmemory.fs.sqlite import SqliteRoot


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("{tmp}/folder", {"anon": True}),
        ("file://{tmp}/folder", {"durabel": True}),
        ("memory://fsm-options", {"durable": True}),
        ("sqlite://{tmp}/x.db", {"pol_interval": 1}),
    ],
)
def test_local_roots_refuse_unknown_options(tmp_path: Path, url: str, options: Any) -> None:
    with pytest.raises(InvalidInputError, match=next(iter(options))):
        open_root(url.format(tmp=tmp_path), options)
    assert not (tmp_path / "folder").exists()  # refused before anything was created


def test_every_root_is_built_from_url_and_options(tmp_path: Path) -> None:
    local = open_root(str(tmp_path / "a"), {"durable": True})
    assert isinstance(local, LocalRoot) and local.durable
    assert isinstance(LocalRoot.from_url(f"file://{tmp_path}/b"), LocalRoot)
    memory = MemoryRoot.from_url("memory://fsm-from-url")
    assert memory.root == "/fsm-from-url"
    sqlite = open_root(f"sqlite://{tmp_path}/s.db", {"durable": True, "timeout": 2})
    assert isinstance(sqlite, SqliteRoot) and sqlite.durable and sqlite.timeout == 2
    sqlite.close()
    # The table names each protocol's class; every listed class has from_url.
    for target, _extra in ROOT_CLASSES.values():
        assert ":" in target


def test_retry_is_understood_everywhere(tmp_path: Path) -> None:
    """The same options can serve a local folder and a bucket: ``retry`` is accepted by
    roots that have nothing to retry."""
    options = {"retry": RetryPolicy(attempts=2)}
    assert isinstance(open_root(str(tmp_path), options), LocalRoot)
    assert isinstance(open_root("memory://fsm-retry", options), MemoryRoot)
    with pytest.raises(InvalidInputError):
        open_root(str(tmp_path), {"retry": {"attempt": 2}})  # a typo in the policy


def test_generic_fsspec_roots_read_the_retry_option_once() -> None:
    from fsmemory.fs.generic import FsspecRoot

    root = open_root("memory://", None)  # memory has its own root
    assert isinstance(root, MemoryRoot)
    generic = FsspecRoot.from_url("memory://fsm-generic", {"retry": 3})
    assert generic.retry == RetryPolicy(attempts=3)
    assert "retry" not in generic.fs.storage_options


def test_durable_keyword_still_works(tmp_path: Path) -> None:
    root = open_root(str(tmp_path), durable=True)
    assert isinstance(root, LocalRoot) and root.durable
