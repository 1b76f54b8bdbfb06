"""A blocking facade over any path store, for scripts and synchronous code."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from fsmemory.fs.base import StorageRoot
from fsmemory.store._fsspec import FsspecKnowledgeStore
from fsmemory.store._protocol import (
    ChangeSubscription,
    KnowledgeStore,
    StoreStat,
)

__all__ = ["SyncKnowledgeStore", "SyncSubscription"]

T = TypeVar("T")


class _LoopThread:
    """An event loop running in a daemon thread, for coroutines called from sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="fsmemory-store-loop", daemon=True
        )
        self._thread.start()

    @property
    def ident(self) -> int | None:
        return self._thread.ident

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.get_ident() == self._thread.ident:
            coro.close()
            raise RuntimeError(
                "a SyncKnowledgeStore method was called from one of its own change callbacks"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


class SyncSubscription:
    """Handle returned by :meth:`SyncKnowledgeStore.on_change`; ``close()`` stops it."""

    def __init__(self, sub: ChangeSubscription, runner: _LoopThread) -> None:
        self._sub = sub
        self._runner = runner
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Stop the notifications."""
        if not self._closed:
            self._closed = True
            self._runner.run(self._sub.close())

    def __enter__(self) -> SyncSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncKnowledgeStore:
    """The path store with blocking methods of the same names, for scripts.

    ``SyncKnowledgeStore("./state")`` opens a URL like :class:`FsspecKnowledgeStore`;
    ``SyncKnowledgeStore(store)`` wraps any async store. Over an
    :class:`FsspecKnowledgeStore` each call runs directly in the calling thread (no event
    loop, no thread hop); other stores run on a private event loop thread, which is also
    where ``on_change`` callbacks (plain functions) are called.

    Use it as a context manager, or call :meth:`close`.

    Args:
        store: a URL, a local path, a storage root or an async store.
        storage_options: filesystem options for a URL (as for
            :class:`FsspecKnowledgeStore`).
        **options: other :class:`FsspecKnowledgeStore` keywords (``watch``,
            ``poll_interval``, ``inline``) when ``store`` is a URL.
    """

    def __init__(
        self,
        store: KnowledgeStore | str | os.PathLike[str] | StorageRoot,
        *,
        storage_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if isinstance(store, str | os.PathLike | StorageRoot):
            self._store: KnowledgeStore = FsspecKnowledgeStore(
                store, storage_options=storage_options, **options
            )
            self._owns = True
        else:
            if options or storage_options:
                raise TypeError("options are only accepted together with a URL")
            self._store = store
            self._owns = False
        # An FsspecKnowledgeStore's blocking core runs right here: no loop, no thread hop.
        self._core = self._store._core if isinstance(self._store, FsspecKnowledgeStore) else None
        self._runner: _LoopThread | None = None
        self._guard = threading.Lock()
        self._subs: list[SyncSubscription] = []

    @property
    def store(self) -> KnowledgeStore:
        """The async store underneath."""
        return self._store

    def __repr__(self) -> str:
        return f"SyncKnowledgeStore({self._store!r})"

    def _loop(self) -> _LoopThread:
        with self._guard:
            if self._runner is None:
                self._runner = _LoopThread()
            return self._runner

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop().run(coro)

    def _do(self, name: str, *args: Any, **options: Any) -> Any:
        """Call the store method ``name``: directly on the core of an
        :class:`FsspecKnowledgeStore` (in this thread), else on the private loop.

        ``options`` are the extension keywords (``if_version``, ``allow_root``, ...);
        only those that differ from their defaults are passed, so a store that implements
        only the seed's protocol works as long as they are not used.
        """
        given = {key: value for key, value in options.items() if value not in (None, False)}
        if self._core is not None:
            return getattr(self._core, name)(*args, **given)
        return self._run(getattr(self._store, name)(*args, **given))

    # -- the store API -----------------------------------------------------------------
    def read(self, path: str) -> str | None:
        """The file's text, or None when missing (see :meth:`FsspecKnowledgeStore.read`)."""
        result: str | None = self._do("read", path)
        return result

    def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when missing."""
        result: bytes | None = self._do("read_bytes", path)
        return result

    def write(
        self, path: str, content: str, *, if_version: str | None = None, create_only: bool = False
    ) -> str | None:
        """Replace the file atomically; returns the new version when the store gives one."""
        result: str | None = self._do(
            "write", path, content, if_version=if_version, create_only=create_only
        )
        return result

    def write_bytes(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """:meth:`write` for bytes."""
        result: str = self._do(
            "write_bytes", path, data, if_version=if_version, create_only=create_only
        )
        return result

    def append(self, path: str, content: str) -> int:
        """Append atomically; returns the byte offset where ``content`` starts."""
        result: int = self._do("append", path, content)
        return result

    def read_range(self, path: str, start: int, end: int | None = None) -> str:
        """Text of bytes ``[start, end)``; offsets inside a character snap forward."""
        result: str = self._do("read_range", path, start, end)
        return result

    def list(self, path: str = "/") -> list[str]:
        """Sorted immediate children; directories end with ``/``."""
        result: list[str] = self._do("list", path)
        return result

    def exists(self, path: str) -> bool:
        """True for a file or an implied directory."""
        return bool(self._do("exists", path))

    def delete(self, path: str, *, allow_root: bool = False) -> None:
        """Delete the file and everything under ``path/`` (``/`` needs ``allow_root``)."""
        self._do("delete", path, allow_root=allow_root)

    def stat(self, path: str) -> StoreStat | None:
        """Size, mtime and compare-and-swap version, or None."""
        result: StoreStat | None = self._do("stat", path)
        return result

    def on_change(self, path: str, callback: Callable[[str], object]) -> SyncSubscription:
        """Call ``callback(changed_path)`` (a plain function) after changes under ``path``.

        Callbacks run one at a time on the store's private event loop thread; one that
        raises is logged. Returns a :class:`SyncSubscription`.
        """
        runner = self._loop()

        async def deliver(changed: str) -> None:
            callback(changed)

        handle = SyncSubscription(runner.run(self._store.on_change(path, deliver)), runner)
        self._subs.append(handle)
        return handle

    def close(self) -> None:
        """Stop the private event loop (closing subscriptions) and a store it opened."""
        runner = self._runner
        for handle in self._subs:
            handle.close()
        self._subs.clear()
        if self._owns:
            store: Any = self._store
            if runner is not None:
                runner.run(store.close())
            elif self._core is not None:
                self._core.root.close()
        if runner is not None:
            runner.stop()
            self._runner = None

    def __enter__(self) -> SyncKnowledgeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
