"""A cloud root used across ``fork()``: the check the S3, GCS and Azure tests share."""

from __future__ import annotations

import os
from collections.abc import Callable

from fsmemory.fs import StorageRoot


def check_forked_children(root: StorageRoot, in_child: Callable[[], bool] | None = None) -> None:
    """``root`` writes ``f.txt``; two children forked after that read it through the
    same root object, pass ``in_child()`` when given, create ``child-<i>.txt`` and exit
    0 (no pytest machinery in a child: only its exit status counts); the parent, which
    goes on working, then reads both files."""
    root.write("f.txt", b"before the fork")
    assert root.read_bytes("f.txt") == b"before the fork"
    pids = []
    for i in range(2):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                ok = root.read_bytes("f.txt") == b"before the fork"
                ok = ok and (in_child is None or in_child())
                root.write(f"child-{i}.txt", b"from a child", create_only=True)
                code = 0 if ok else 2
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    assert root.read_bytes("child-0.txt") == root.read_bytes("child-1.txt") == b"from a child"
    assert [i.path for i in root.list("")] == ["child-0.txt", "child-1.txt", "f.txt"]
