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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from fsmemory.errors import LockTimeoutError

__all__ = ["WouldBlock", "call_without_waiting", "must_not_wait", "no_wait", "retry_until"]

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


def retry_until(
    take: Callable[[], bool],
    timeout: float,
    held: str,
    *,
    delay: float = 0.001,
    max_delay: float = 0.05,
) -> None:
    """Call ``take`` (one try at a lock) until it returns True, backing off in between.

    Args:
        take: tries once; True when the lock is now ours.
        timeout: seconds to keep trying.
        held: says what is held, for the errors ("the lock of ...").
        delay: the first pause (doubled after each try).
        max_delay: the longest pause.

    Raises:
        WouldBlock: the first try failed inside :func:`no_wait`.
        LockTimeoutError: still taken after ``timeout`` seconds.
    """
    if take():
        return
    if must_not_wait():
        raise WouldBlock(f"{held} is held by another writer")
    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() >= deadline:
            raise LockTimeoutError(f"{held} is held by another writer (waited {timeout} s)")
        time.sleep(delay)
        delay = min(delay * 2, max_delay)
        if take():
            return
