"""``memory://`` storage root over fsspec's in-process ``MemoryFileSystem``.

Files live in fsspec's (process-global) memory store, so anything written here is
visible to ``fsspec.open("memory://...")`` and to tools such as pyarrow. One
process-wide lock makes every mutation atomic; versions are per-file generation
counters, so compare-and-swap is exact.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from fsmemory.errors import ConflictError, KeyNotFoundError
from fsmemory.fs.base import (
    Capabilities,
    FileInfo,
    StorageRoot,
    Versioned,
    check_options,
)
from fsmemory.fs.paths import children, is_reserved_name, validate_path

__all__ = ["MemoryRoot"]

_LOCK = threading.RLock()
_GENERATION: dict[str, int] = {}
_COUNTER = [0]


def _store_copy(store: dict[str, Any]) -> dict[str, Any]:
    """A consistent copy of fsspec's global memory store.

    Other code in the process (plain ``fsspec`` users, other threads) writes that dict
    without our lock, and iterating it while building tuples can let another thread run
    (a garbage collection may call finalizers), so iteration can see it change size.
    ``dict.copy`` runs no Python code; the retry covers interpreters where it might.
    """
    for _ in range(100):
        try:
            return store.copy()
        except RuntimeError:  # pragma: no cover - changed while copying
            continue
    return store.copy()


def _next_generation(full: str) -> int:
    _COUNTER[0] += 1
    _GENERATION[full] = _COUNTER[0]
    return _COUNTER[0]


class MemoryRoot(StorageRoot):
    """A directory in fsspec's in-memory filesystem (``memory://name``).

    Args:
        root: the directory inside the memory filesystem, e.g. ``"/tenant-1"``.
        url: the URL it was opened from.
    """

    capabilities = Capabilities(
        conditional_write=True, native_append=True, cheap_lock=True, local_io=True
    )

    def __init__(self, root: str, *, url: str | None = None) -> None:
        import fsspec

        self.fs: Any = fsspec.filesystem("memory")
        stripped = self.fs._strip_protocol(root).rstrip("/")
        self.root = stripped if stripped.startswith("/") else "/" + stripped
        self.root = self.root.rstrip("/")
        self.url = url if url is not None else f"memory://{self.root}"

    @classmethod
    def from_url(cls, url: str, options: Mapping[str, Any] | None = None) -> MemoryRoot:
        """Open ``memory://name``; memory roots take no storage options.

        Raises:
            InvalidInputError: any option.
        """
        check_options("memory://", dict(options or {}), ())
        _, _, rest = url.partition("://")
        return cls(rest, url=url)

    @contextmanager
    def lock(self, name: str = "", *, timeout: float = 30.0) -> Iterator[None]:
        """The process-wide memory lock (memory:// is process-local)."""
        with _LOCK:
            yield

    def rewritten(self, old: FileInfo, new: FileInfo) -> bool:
        """A whole-file write creates a new file object; an append keeps it."""
        return old.token.split(".", 1)[0] != new.token.split(".", 1)[0]

    def full_path(self, path: str) -> str:
        """Path inside the memory filesystem (validated)."""
        validate_path(path)
        return f"{self.root}/{path}"

    def _file(self, full: str) -> Any:
        return self.fs.store.get(full)

    def _version(self, full: str, f: Any) -> str:
        return f"{id(f):x}.{_GENERATION.get(full, 0)}"

    @staticmethod
    def _size(f: Any) -> int:
        with f.getbuffer() as view:
            return int(view.nbytes)

    def read(self, path: str) -> Versioned:
        """Read a file with its generation version."""
        full = self.full_path(path)
        with _LOCK:
            f = self._file(full)
            if f is None:
                raise KeyNotFoundError(path)
            return Versioned(bytes(f.getvalue()), self._version(full, f))

    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """Read bytes ``[start, end)`` without copying the whole file."""
        self.check_range(start, end)
        full = self.full_path(path)
        with _LOCK:
            f = self._file(full)
            if f is None:
                raise KeyNotFoundError(path)
            with f.getbuffer() as view:
                return bytes(view[start:end])

    def stat(self, path: str) -> FileInfo | None:
        """Size, mtime and a generation token; None when missing."""
        full = self.full_path(path)
        with _LOCK:
            f = self._file(full)
            if f is None:
                return None
            return self._info(path, full, f)

    def _info(self, rel: str, full: str, f: Any) -> FileInfo:
        size = self._size(f)
        modified = getattr(f, "modified", None)
        mtime = modified.timestamp() if isinstance(modified, datetime) else None
        return FileInfo(rel, size, mtime, f"{self._version(full, f)}.{size}")

    def list(self, prefix: str = "", *, recursive: bool = False) -> list[FileInfo]:
        """Files under ``prefix`` (one pass over the memory store)."""
        validate_path(prefix, allow_empty=True)
        base = f"{self.root}/{prefix}/" if prefix else f"{self.root}/"
        out: list[FileInfo] = []
        with _LOCK:
            for full, f in _store_copy(self.fs.store).items():
                if not full.startswith(base):
                    continue
                rest = full[len(base) :]
                if not recursive and "/" in rest:
                    continue
                if any(is_reserved_name(seg) for seg in rest.split("/")):
                    continue
                rel = full[len(self.root) + 1 :]
                out.append(self._info(rel, full, f))
        out.sort(key=lambda i: i.path)
        return out

    def list_dirs(self, prefix: str = "") -> builtins.list[str]:
        """Immediate subdirectories implied by the files under ``prefix``."""
        return sorted(self.list_names(prefix)[1])

    def list_names(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """One pass over the memory filesystem's keys, names only."""
        validate_path(prefix, allow_empty=True)
        base = f"{self.root}/{prefix}/" if prefix else f"{self.root}/"
        cut = len(base)
        with _LOCK:
            keys = builtins.list(_store_copy(self.fs.store))
        return children(key[cut:] for key in keys if key.startswith(base))

    def write(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Replace a file atomically (see :meth:`StorageRoot.write`)."""
        self.check_condition(if_version, create_only)
        full = self.full_path(path)
        with _LOCK:
            f = self._file(full)
            if create_only and f is not None:
                raise ConflictError(f"{path!r} already exists")
            if if_version is not None:
                current = None if f is None else self._version(full, f)
                if current != if_version:
                    raise ConflictError(f"{path!r} changed since version {if_version}")
            self.fs.pipe_file(full, bytes(data))
            new = self._file(full)
            _next_generation(full)
            return self._version(full, new)

    def append(
        self, path: str, data: bytes, *, line_safe: bool = False, unique: bool = False
    ) -> int:
        """Append in place (amortized O(1)); returns the start offset of ``data``.

        ``unique`` is accepted and ignored: this append is never retried.
        """
        full = self.full_path(path)
        with _LOCK:
            f = self._file(full)
            if f is None:
                self.fs.pipe_file(full, bytes(data))
                _next_generation(full)
                return 0
            with f.getbuffer() as view:
                size = int(view.nbytes)
                torn = line_safe and size > 0 and view[size - 1 : size] != b"\n"
            payload = b"\n" + data if torn else data
            f.seek(0, 2)
            f.write(payload)
            f.seek(0)
            f.modified = datetime.now(tz=UTC)
            _next_generation(full)
            return size + (1 if torn else 0)

    def delete(self, path: str) -> bool:
        """Remove a file; False when it did not exist."""
        full = self.full_path(path)
        with _LOCK:
            _GENERATION.pop(full, None)
            return self.fs.store.pop(full, None) is not None
