"""Each storage primitive costs the number of requests the docs promise.

S3: every HTTP request the client really sends is counted (retries included): by the
built-in client's observers, or by a botocore ``before-send`` hook with s3fs. GCS: every request gcsfs issues through its
``_request`` method is counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fsmemory.fs import StorageRoot, open_root
from fsmemory.testing.requests import count_requests


def _count_s3(root: StorageRoot) -> Any:
    return count_requests(root)


def _count_gcs(root: StorageRoot) -> Any:
    return count_requests(root)


def _check_counts(
    root: StorageRoot, count: Callable[[StorageRoot], Any], expected: dict[str, int]
) -> None:
    root.write("warm-up", b"x")  # open connections / sessions outside the counts
    root.write("f.txt", b"hello\n")
    for i in range(5):
        root.write(f"dir/{i}.txt", b"x")
    version = root.read("f.txt").version
    ops: dict[str, Callable[[], object]] = {
        "read": lambda: root.read("f.txt"),
        "stat": lambda: root.stat("f.txt"),
        "stat_missing": lambda: root.stat("nope.txt"),
        "read_range": lambda: root.read_range("f.txt", 2, 4),
        # whole objects in one batch: one GET each, no metadata request per object
        "read_ranges_whole": lambda: root.read_ranges(
            [(f"dir/{i}.txt", 0, None) for i in range(5)]
        ),
        "read_ranges_missing": lambda: root.read_ranges([("nope.txt", 0, None)]),
        "write": lambda: root.write("g.txt", b"x"),
        "cas_write": lambda: root.write("f.txt", b"v2\n", if_version=version),
        "create_only": lambda: root.write("h.txt", b"x", create_only=True),
        "append": lambda: root.append("f.txt", b"more\n"),
        "list_recursive": lambda: root.list(recursive=True),
        "list": lambda: root.list("dir"),
        "list_dirs": lambda: root.list_dirs(),
        "delete": lambda: root.delete("g.txt"),
    }
    measured: dict[str, int] = {}
    for name, op in ops.items():
        with count(root) as calls:
            op()
        measured[name] = len(calls)
    assert measured == expected


@pytest.mark.s3
@pytest.mark.parametrize("client", ["obstore", "s3fs"])
def test_s3_request_counts(
    s3_root_url: str, s3_storage_options: dict[str, Any], client: str
) -> None:
    """read = 1 GET, stat = 1 HEAD, CAS write = 1 PUT, append = GET + PUT, list = 1; a
    batch of whole-object reads is one GET per object (no HEAD before each); the same
    through the built-in client and through s3fs."""
    root = open_root(s3_root_url, {**s3_storage_options, "client": client})
    assert root.client == client  # type: ignore[attr-defined]
    _check_counts(
        root,
        _count_s3,
        {
            "read": 1,
            "stat": 1,
            "stat_missing": 1,
            "read_range": 1,
            "read_ranges_whole": 5,
            "read_ranges_missing": 1,
            "write": 1,
            "cas_write": 1,
            "create_only": 1,
            "append": 2,
            "list_recursive": 1,
            "list": 1,
            "list_dirs": 1,
            "delete": 2,  # HEAD + DELETE: S3 deletes missing keys silently
        },
    )


@pytest.mark.gcs
def test_gcs_request_counts(gcs_root_url: str, gcs_storage_options: dict[str, Any]) -> None:
    """read = 1 GET, stat = 1 GET, CAS write = 1 upload, append = GET + upload."""
    root = open_root(gcs_root_url, gcs_storage_options)
    _check_counts(
        root,
        _count_gcs,
        {
            "read": 1,
            "stat": 1,
            "stat_missing": 1,
            "read_range": 1,
            "read_ranges_whole": 5,
            "read_ranges_missing": 1,
            "write": 1,
            "cas_write": 1,
            "create_only": 1,
            "append": 2,
            "list_recursive": 1,
            "list": 1,
            "list_dirs": 1,
            "delete": 1,
        },
    )
