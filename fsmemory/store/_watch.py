"""Change notifications for the path store.

Three sources feed one :class:`Subscription`:

* the **in-process hub**: every mutation made through a store publishes its path *after*
  the storage call returned (the change is committed), to every subscription on the same
  storage root in this process -- immediate, no polling;
* a **watchdog** observer on local folders (inotify / FSEvents / ...), for changes made by
  other processes or by hand;
* a **poller** everywhere else (and on local folders when watchdog is missing or polling
  is forced): it lists the watched subtree every ``poll_interval`` seconds and compares
  change tokens (mtime/size/inode, etag, generation, version).

A change seen by the hub is not reported a second time by the watcher that observes the
same commit. Delivery runs in one task per subscription, in order; notifications for a
path that is already waiting to be delivered are coalesced. A callback that raises is
logged and the subscription goes on; the writer never sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from fsmemory.errors import FsMemoryError
from fsmemory.fs.base import StorageRoot
from fsmemory.fs.paths import is_reserved_name, validate_path
from fsmemory.store._paths import affects
from fsmemory.store._protocol import ChangeCallback

__all__ = ["ChangeHub", "Subscription", "hub_for", "make_watcher"]

logger = logging.getLogger("fsmemory.store")

_MISSING: Any = object()
_KNOWN_LIMIT = 10_000
_DELETE_WINDOW = 2.0


class Change:
    """Yielded by :meth:`ChangeHub.changing`; set ``changed = False`` to publish nothing."""

    __slots__ = ("changed",)

    def __init__(self) -> None:
        self.changed = True


class ChangeHub:
    """Fans changes made through stores out to the subscriptions on one storage root."""

    def __init__(self) -> None:
        self._subs: tuple[Subscription, ...] = ()
        self._lock = threading.Lock()

    def add(self, sub: Subscription) -> None:
        """Start sending changes to ``sub``."""
        with self._lock:
            self._subs = (*self._subs, sub)

    def remove(self, sub: Subscription) -> None:
        """Stop sending changes to ``sub`` (no-op when absent)."""
        with self._lock:
            self._subs = tuple(s for s in self._subs if s is not sub)

    @property
    def active(self) -> bool:
        """True while at least one subscription listens."""
        return bool(self._subs)

    def publish(self, path: str) -> None:
        """Tell every interested subscription that ``path`` changed (thread-safe)."""
        subs = self._subs
        if not subs:
            return
        for sub in subs:
            if affects(sub.path, path):
                sub._local_change(path)

    @contextlib.contextmanager
    def changing(self, path: str) -> Iterator[Change]:
        """Wrap a mutation of ``path``: watchers ignore what they observe of it while it
        runs, and the change is published once it has committed -- not when it fails,
        nor when the body sets ``changed = False`` (nothing was there to delete)."""
        subs = tuple(s for s in self._subs if affects(s.path, path))
        for sub in subs:
            sub._begin(path)
        change = Change()
        try:
            yield change
            if change.changed:
                self.publish(path)
        finally:
            for sub in subs:
                sub._end(path)


_HUBS: weakref.WeakValueDictionary[tuple[str, ...], ChangeHub] = weakref.WeakValueDictionary()
_HUBS_LOCK = threading.Lock()


def hub_for(root: StorageRoot) -> ChangeHub:
    """The hub shared by every store of this process over the same storage location."""
    key = root.storage_key()
    with _HUBS_LOCK:
        hub = _HUBS.get(key)
        if hub is None:
            hub = ChangeHub()
            _HUBS[key] = hub
        return hub


class _Watcher(ABC):
    """How a subscription learns about changes made outside this process: watches
    ``rel`` (the subscription's path under ``root``) and hands each changed path to
    ``sub._deliver``, except the ones this process changed itself (``note_local``;
    ``begin``/``end`` bracket a write in flight). ``interval`` is the poll period."""

    kind: str

    def __init__(self, sub: Subscription, root: StorageRoot, rel: str, interval: float) -> None:
        self._sub = sub
        self._root = root
        self._rel = rel
        self._interval = interval
        self._lock = threading.Lock()

    @abstractmethod
    async def start(self) -> None:
        """Begin watching."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop watching."""

    @abstractmethod
    def note_local(self, path: str) -> None:
        """``path`` was just changed by this process: do not report it."""

    @abstractmethod
    def begin(self, path: str) -> None:
        """A write to ``path`` by this process starts."""

    @abstractmethod
    def end(self, path: str) -> None:
        """The write :meth:`begin` announced is over."""


class Subscription:
    """A live ``on_change`` registration; ``await sub.close()`` stops it.

    Also an async context manager. Attributes: ``path`` (the watched, normalized path)
    and ``mode`` (``"watchdog"``, ``"poll"`` or ``"local"`` -- in-process changes only).
    """

    def __init__(
        self,
        path: str,
        callback: ChangeCallback,
        loop: asyncio.AbstractEventLoop,
        hub: ChangeHub,
    ) -> None:
        self.path = path
        self._callback = callback
        self._loop = loop
        self._thread = threading.get_ident()
        self._hub = hub
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._pending: set[str] = set()
        self._closed = False
        self._watcher: _Watcher | None = None
        self._consumer: asyncio.Task[None] | None = None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    @property
    def mode(self) -> str:
        """How outside changes are detected: ``"watchdog"``, ``"poll"`` or ``"local"``."""
        return self._watcher.kind if self._watcher is not None else "local"

    async def _start(self, watcher: _Watcher | None) -> None:
        self._watcher = watcher
        self._consumer = self._loop.create_task(self._consume())
        # Join the hub before the watcher takes its first look, so a write racing with
        # the subscription is reported by one of them rather than by neither.
        self._hub.add(self)
        if watcher is not None:
            try:
                await watcher.start()
            except BaseException:
                await self.close()
                raise

    def _local_change(self, path: str) -> None:
        if self._closed:
            return
        watcher = self._watcher
        if watcher is not None:
            try:
                watcher.note_local(path)
            except Exception:  # pragma: no cover - defensive: never break a writer
                logger.debug("watcher bookkeeping failed for %s", path, exc_info=True)
        self._deliver(path)

    def _begin(self, path: str) -> None:
        if self._watcher is not None:
            self._watcher.begin(path)

    def _end(self, path: str) -> None:
        if self._watcher is not None:
            self._watcher.end(path)

    def _deliver(self, path: str) -> None:
        """Queue ``path`` for the callback; callable from any thread."""
        if self._closed:
            return
        if threading.get_ident() == self._thread:
            self._enqueue(path)
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
            self._loop.call_soon_threadsafe(self._enqueue, path)

    def _enqueue(self, path: str) -> None:
        if self._closed or path in self._pending:
            return
        self._pending.add(path)
        self._queue.put_nowait(path)

    async def _consume(self) -> None:
        while True:
            path = await self._queue.get()
            self._pending.discard(path)
            try:
                result = self._callback(path)
                if inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("on_change callback for %s failed on %s", self.path, path)

    async def close(self) -> None:
        """Stop watching and delivering; safe to call twice or from the callback."""
        if self._closed:
            return
        self._closed = True
        self._hub.remove(self)
        if self._watcher is not None:
            await self._watcher.stop()
        consumer = self._consumer
        if consumer is not None:
            consumer.cancel()
            if consumer is not asyncio.current_task():
                with contextlib.suppress(asyncio.CancelledError):
                    await consumer

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.mode
        return f"<Subscription {self.path!r} ({state})>"


def _covered(path: str, seen: set[str]) -> bool:
    """``path`` or one of its parent directories is in ``seen``."""
    if path in seen:
        return True
    cut = path.rfind("/")
    while cut > 0:
        if path[:cut] in seen:
            return True
        cut = path.rfind("/", 0, cut)
    return "/" in seen


class _PollWatcher(_Watcher):
    """Lists the watched subtree every ``interval`` seconds and diffs change tokens."""

    kind = "poll"

    def __init__(self, sub: Subscription, root: StorageRoot, rel: str, interval: float) -> None:
        super().__init__(sub, root, rel, interval)
        self._seen: set[str] = set()
        self._snap: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    def _snapshot(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self._rel:
            info = self._root.stat(self._rel)
            if info is not None:
                out["/" + self._rel] = info.token
        for info in self._root.list(self._rel, recursive=True):
            try:
                validate_path(info.path)
            except FsMemoryError:
                continue  # a name made outside fsmemory that the store cannot address
            out["/" + info.path] = info.token
        return out

    async def start(self) -> None:
        self._snap = await asyncio.to_thread(self._snapshot)
        self._task = asyncio.get_running_loop().create_task(self._run())

    def note_local(self, path: str) -> None:
        with self._lock:
            self._seen.add(path)

    def begin(self, path: str) -> None:
        """Nothing to do: the poll that sees this change also sees it in ``_seen``."""

    def end(self, path: str) -> None:
        """See :meth:`begin`."""

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            with self._lock:
                seen, self._seen = self._seen, set()
            try:
                new = await asyncio.to_thread(self._snapshot)
            except Exception:
                logger.warning("polling %s for changes failed", self._sub.path, exc_info=True)
                continue
            old, self._snap = self._snap, new
            changed = [p for p in old.keys() | new.keys() if old.get(p) != new.get(p)]
            for path in sorted(changed):
                if not _covered(path, seen):
                    self._sub._deliver(path)

    async def stop(self) -> None:
        task = self._task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class _WatchdogHandler:
    """The object watchdog calls (from its thread) for each filesystem event."""

    def __init__(self, watcher: _WatchdogWatcher) -> None:
        self._watcher = watcher

    def dispatch(self, event: Any) -> None:
        kind = getattr(event, "event_type", "")
        if kind not in ("created", "modified", "deleted", "moved", "closed"):
            return
        is_dir = bool(getattr(event, "is_directory", False))
        if is_dir and kind not in ("deleted", "moved"):
            return
        paths = [event.src_path]
        if kind == "moved":
            paths.append(event.dest_path)
        for raw in paths:
            try:
                self._watcher.on_event(os.fsdecode(raw))
            except Exception:  # pragma: no cover - never kill the observer thread
                logger.debug("ignoring watchdog event for %r", raw, exc_info=True)


class _WatchdogWatcher(_Watcher):
    """Native notifications on a local folder through ``watchdog``."""

    kind = "watchdog"

    def __init__(self, sub: Subscription, root: StorageRoot, rel: str, interval: float) -> None:
        super().__init__(sub, root, rel, interval)
        self._fallback: _PollWatcher | None = None
        self._base = str(root.root)
        self._known: dict[str, str | None] = {}
        self._deleted: dict[str, float] = {}
        self._inflight: dict[str, int] = {}
        self._observer: Any = None

    def _start_observer(self) -> None:
        from watchdog.observers import Observer

        os.makedirs(self._base, exist_ok=True)
        observer = Observer()
        handler: Any = _WatchdogHandler(self)  # duck-typed: watchdog only calls dispatch()
        observer.schedule(handler, self._base, recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer

    async def start(self) -> None:
        try:
            await asyncio.to_thread(self._start_observer)
        except Exception as exc:  # e.g. the inotify watch limit is reached
            logger.warning("watchdog unavailable for %s (%s); polling instead", self._base, exc)
            self._fallback = _PollWatcher(self._sub, self._root, self._rel, self._interval)
            self.kind = "poll"
            await self._fallback.start()

    def _token(self, rel: str) -> str | None:
        try:
            info = self._root.stat(rel)
        except Exception:
            return None
        return None if info is None else info.token

    def _remember(self, path: str, token: str | None) -> None:
        if len(self._known) > _KNOWN_LIMIT:
            self._known.clear()
            self._deleted.clear()
        self._known[path] = token

    def note_local(self, path: str) -> None:
        if self._fallback is not None:
            self._fallback.note_local(path)
            return
        rel = path.lstrip("/")
        token = self._token(rel) if rel else None
        with self._lock:
            self._remember(path, token)
            if token is None:
                # A delete through the store: the files under it vanish too, and the
                # observer will report each of them.
                self._deleted[path] = time.monotonic()
                below = "/" if path == "/" else path + "/"
                for known in list(self._known):
                    if known.startswith(below):
                        self._known[known] = None

    def begin(self, path: str) -> None:
        if self._fallback is not None:
            return
        with self._lock:
            self._inflight[path] = self._inflight.get(path, 0) + 1

    def end(self, path: str) -> None:
        if self._fallback is not None:
            return
        with self._lock:
            left = self._inflight.get(path, 0) - 1
            if left > 0:
                self._inflight[path] = left
            else:
                self._inflight.pop(path, None)

    def _in_flight(self, path: str) -> bool:
        inflight = self._inflight
        return bool(inflight) and _covered(path, set(inflight))

    def _recently_deleted(self, path: str) -> bool:
        now = time.monotonic()
        for deleted, when in list(self._deleted.items()):
            if now - when > _DELETE_WINDOW:
                self._deleted.pop(deleted, None)
            elif path == deleted or path.startswith(deleted.rstrip("/") + "/"):
                return True
        return False

    def on_event(self, full: str) -> None:
        rel = os.path.relpath(full, self._base)
        if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
            return
        rel = rel.replace(os.sep, "/")
        if any(is_reserved_name(segment) for segment in rel.split("/")):
            return
        try:
            validate_path(rel)
        except FsMemoryError:
            return
        path = "/" + rel
        if not affects(self._sub.path, path):
            return
        token = self._token(rel)
        with self._lock:
            if self._in_flight(path):
                return  # a mutation through a store: the hub reports it once committed
            previous = self._known.get(path, _MISSING)
            if previous == token:
                return
            if token is None and previous is _MISSING and self._recently_deleted(path):
                return
            self._remember(path, token)
        self._sub._deliver(path)

    async def stop(self) -> None:
        if self._fallback is not None:
            await self._fallback.stop()
        observer = self._observer
        if observer is None:
            return
        self._observer = None

        def shutdown() -> None:
            with contextlib.suppress(Exception):
                observer.stop()
            with contextlib.suppress(Exception):
                observer.join(timeout=5.0)

        await asyncio.to_thread(shutdown)


def _watchdog_available() -> bool:
    try:
        import watchdog.observers  # noqa: F401
    except ImportError:
        return False
    return True


def make_watcher(
    mode: str,
    sub: Subscription,
    root: StorageRoot,
    rel: str,
    *,
    poll_interval: float,
) -> _Watcher | None:
    """Pick how ``sub`` learns about changes made outside this process.

    ``mode`` is ``"auto"`` (native notifications where the root's capabilities say
    ``watch`` -- local folders, through watchdog when installed -- else polling),
    ``"poll"`` or ``"none"`` (in-process changes only).
    """
    if mode == "none":
        return None
    if mode == "auto" and root.capabilities.watch and _watchdog_available():
        return _WatchdogWatcher(sub, root, rel, poll_interval)
    return _PollWatcher(sub, root, rel, poll_interval)
