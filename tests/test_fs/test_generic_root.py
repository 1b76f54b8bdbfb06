"""The generic fsspec root (:class:`~fsmemory.fs.generic.FsspecRoot`) on a filesystem
without native compare-and-swap: conditional writes and appends hold a lease object.

fsspec's memory filesystem stands in for such a filesystem (its create-only write is
exclusive, so the root writes; ``memory://`` URLs open :class:`MemoryRoot` instead).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import fsspec
import orjson
import pytest

from fsmemory.errors import LockTimeoutError
from fsmemory.fs import StorageRoot
from fsmemory.fs.base import content_version
from fsmemory.fs.generic import FsspecRoot
from fsmemory.fs.paths import RESERVED_PREFIX
from fsmemory.testing.conformance import StorageRootTests
from tests.test_fs.test_conformance import NameListingTests


def _root() -> FsspecRoot:
    return FsspecRoot(fsspec.filesystem("memory"), f"/fsm-generic-{uuid.uuid4().hex}")


class TestFsspecRootWithLeases(StorageRootTests, NameListingTests):
    """The conformance suite on the lease route (compare-and-swap under a lease)."""

    @pytest.fixture
    def root(self) -> Iterator[StorageRoot]:
        root = _root()
        assert root.read_only_reason is None
        yield root
        root.delete_tree("")

    def test_a_filesystem_without_versions_gets_content_tokens(self, root: StorageRoot) -> None:
        """fsspec's memory filesystem reports neither a version nor a time: a file's
        token is a digest of its content, the same for the same bytes and new for a
        same-size rewrite, in a listing and from ``stat`` alike."""
        assert isinstance(root, FsspecRoot)
        root.write("a.txt", b"first")
        root.write("b.txt", b"first")
        listed = {i.path: i.token for i in root.list("", recursive=True)}
        assert listed["a.txt"] == listed["b.txt"] == content_version(b"first")
        root.write("a.txt", b"other")
        info = root.stat("a.txt")
        assert info is not None and info.token == content_version(b"other")
        assert {i.path: i.token for i in root.list("")}["a.txt"] == info.token
        # a file removed between the listing call and the reads is left out
        real_cat = root.fs.cat_ranges

        def cat_after_delete(*args: object, **kwargs: object) -> list[object]:
            root.fs.rm_file(root.full_path("b.txt"))
            return list(real_cat(*args, **kwargs))

        root.fs.cat_ranges = cat_after_delete  # type: ignore[method-assign]
        try:
            assert [i.path for i in root.list("")] == ["a.txt"]
        finally:
            del root.fs.cat_ranges


def test_an_expired_or_unreadable_lease_is_broken_and_a_live_one_holds() -> None:
    root = _root()
    lease = f"{root.root}/{RESERVED_PREFIX}.lease-root"
    for stale in (orjson.dumps({"owner": "crashed", "expires": time.time() - 1}), b"{torn"):
        root.fs.pipe_file(lease, stale)
        with root.lock(timeout=5):
            assert orjson.loads(root.fs.cat_file(lease))["owner"] != "crashed"
        assert not root.fs.exists(lease)
    live = orjson.dumps({"owner": "alive", "expires": time.time() + 30})
    root.fs.pipe_file(lease, live)
    with pytest.raises(LockTimeoutError), root.lock(timeout=0.05):
        pass
    assert root.fs.cat_file(lease) == live
