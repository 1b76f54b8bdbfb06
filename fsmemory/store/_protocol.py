"""The path-store protocols and the small values they exchange."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ChangeCallback",
    "ChangeSubscription",
    "KnowledgeStore",
    "StoreStat",
    "VersionedKnowledgeStore",
]

#: Receives the normalized path that changed. Usually ``async def``; a plain function
#: is accepted too. Exceptions it raises are logged and never reach the writer.
ChangeCallback = Callable[[str], Awaitable[None] | None]


@runtime_checkable
class ChangeSubscription(Protocol):
    """Handle returned by :meth:`KnowledgeStore.on_change`; ``await close()`` stops it."""

    async def close(self) -> None:
        """Stop delivering notifications and release the watcher."""
        ...


@dataclass(frozen=True, slots=True)
class StoreStat:
    """What :meth:`VersionedKnowledgeStore.stat` tells about one file.

    Attributes:
        path: the normalized store path (``/a/b.md``).
        size: size in bytes.
        mtime: modification time (seconds since the epoch) when the backend knows it.
        version: the token to pass as ``write(..., if_version=...)``.
    """

    path: str
    size: int
    mtime: float | None
    version: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoreStat:
        """Inverse of :meth:`to_dict`."""
        mtime = data.get("mtime")
        return cls(
            path=str(data["path"]),
            size=int(data["size"]),
            mtime=None if mtime is None else float(mtime),
            version=str(data["version"]),
        )


@runtime_checkable
class KnowledgeStore(Protocol):
    """An async, path-based store for agent knowledge (the seed's protocol).

    Paths look like ``/dir/sub/file.md``: they are normalized to a leading ``/`` with
    ``//`` collapsed and trailing ``/`` stripped, and ``..``, ``.``, NUL, control
    characters and backslashes raise :class:`~fsmemory.errors.InvalidPathError`.
    Directories are implied by the files under them.
    """

    async def read(self, path: str) -> str | None:
        """The file's text, or None when it is missing or a directory."""
        ...

    async def write(self, path: str, content: str) -> str | None:
        """Replace the file (parents are implied). Implementations may return a version."""
        ...

    async def list(self, path: str = "/") -> list[str]:
        """Sorted names of the immediate children; directories end with ``/``."""
        ...

    async def delete(self, path: str) -> None:
        """Delete the file and everything under ``path/``; missing is a no-op."""
        ...

    async def exists(self, path: str) -> bool:
        """True for a file or an implied directory."""
        ...

    async def append(self, path: str, content: str) -> int:
        """Append atomically; returns the byte offset where ``content`` starts."""
        ...

    async def read_range(self, path: str, start: int, end: int | None = None) -> str:
        """UTF-8 text of bytes ``[start, end)``; ``""`` when missing."""
        ...

    async def on_change(self, path: str, callback: ChangeCallback) -> ChangeSubscription:
        """Call ``callback(changed_path)`` after changes at or under ``path``."""
        ...


@runtime_checkable
class VersionedKnowledgeStore(KnowledgeStore, Protocol):
    """A :class:`KnowledgeStore` with bytes access, ``stat`` and compare-and-swap writes.

    Every store in :mod:`fsmemory.store` implements it.
    """

    async def write(
        self, path: str, content: str, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Replace the file and return its new version.

        Args:
            path: the file's path; parent directories are implied.
            content: the new text (stored as UTF-8).
            if_version: only write when the file's current version is this one
                (compare-and-swap; a version comes from ``stat`` or a previous write).
            create_only: only write when the file does not exist yet.

        Raises:
            ConflictError: the condition did not hold.
        """
        ...

    async def delete(self, path: str, *, allow_root: bool = False) -> None:
        """Delete the file and everything under ``path/``.

        Deleting ``/`` (the whole store) needs ``allow_root=True``.
        """
        ...

    async def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when it is missing or a directory."""
        ...

    async def write_bytes(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Replace the file with ``data``; returns the new version (see ``write``)."""
        ...

    async def stat(self, path: str) -> StoreStat | None:
        """Size, mtime and compare-and-swap version of a file, or None."""
        ...
