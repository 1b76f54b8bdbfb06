"""Count the requests a storage root sends to its service (for tests and benchmarks).

* S3 (and other obstore roots): every obstore call (the root's observers; a listing
  counts once per 1000 keys, a batch delete once), or every HTTP request botocore
  really sends (a ``before-send`` hook) on the s3fs route; retries count.
* GCS: every request gcsfs issues through ``_request``.
* Redis: round trips (commands the client sends; a Lua script is one).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fsmemory.fs import StorageRoot

__all__ = ["RequestCounter", "count_requests"]


class RequestCounter:
    """Holds each request (``calls``); ``len(counter)`` is the count."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __len__(self) -> int:
        return len(self.calls)


@contextmanager
def count_requests(root: StorageRoot) -> Iterator[RequestCounter]:
    """Count the requests ``root`` sends while the block runs.

    Raises:
        TypeError: the root's backend cannot be counted (local folders, memory).
    """
    counter = RequestCounter()
    observers = getattr(root, "observers", None)
    if isinstance(observers, list):  # an obstore root (fsmemory.fs._obstore)

        def observe(method: str, url: str) -> None:
            counter.calls.append(f"{method} {url}")

        observers.append(observe)
        try:
            yield counter
        finally:
            observers.remove(observe)
        return
    protocol = root.fs.protocol
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    if "s3" in protocols:

        def hook(request: Any, **kwargs: Any) -> None:
            counter.calls.append(f"{request.method} {request.url}")

        events = root.fs.s3.meta.events
        events.register("before-send.s3", hook)
        try:
            yield counter
        finally:
            events.unregister("before-send.s3", hook)
    elif "gs" in protocols or "gcs" in protocols:
        fs = root.fs
        original = fs._request

        async def counting(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
            counter.calls.append(f"{method} {path}")
            return await original(method, path, *args, **kwargs)

        fs._request = counting
        try:
            yield counter
        finally:
            del fs._request
    elif "redis" in protocols:
        client = root.fs.client
        original_execute = client.execute_command

        def execute(*args: Any, **kwargs: Any) -> Any:
            counter.calls.append(str(args[0]))
            return original_execute(*args, **kwargs)

        client.execute_command = execute
        try:
            yield counter
        finally:
            del client.execute_command
    else:
        raise TypeError(f"cannot count requests of {root!r}")
