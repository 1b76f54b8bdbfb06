"""Calls that must not wait: the path store runs local storage calls inline on the
event loop, and such a call may not sit on a lock another writer holds.

Inside :func:`no_wait` (a per-thread switch, so a worker thread that takes over the call
is not affected), a root that would have to wait for a lock -- a ``flock`` held by
another process, SQLite's write lock -- raises :class:`WouldBlock` instead, before it
changed anything. The caller then repeats the call in a worker thread, where waiting is
harmless.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from fsmemory.errors import LockTimeoutError

__all__ = ["WouldBlock", "call_without_waiting", "must_not_wait", "no_wait"]

_state = threading.local()
_T = TypeVar("_T")


class WouldBlock(LockTimeoutError):
    """The call would have waited for a lock; nothing was changed. Internal: the path
    store catches it and retries in a worker thread."""


def must_not_wait() -> bool:
    """True inside :func:`no_wait` on this thread."""
    return bool(getattr(_state, "on", False))


@contextmanager
def no_wait() -> Iterator[None]:
    """Make lock waits on this thread raise :class:`WouldBlock` while the block runs."""
    previous = getattr(_state, "on", False)
    _state.on = True
    try:
        yield
    finally:
        _state.on = previous


def call_without_waiting(func: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """``func(*args, **kwargs)`` inside :func:`no_wait` (the hot path of the path store:
    no context-manager machinery).

    Raises:
        WouldBlock: ``func`` would have waited for a lock.
    """
    previous = getattr(_state, "on", False)
    _state.on = True
    try:
        return func(*args, **kwargs)
    finally:
        _state.on = previous
