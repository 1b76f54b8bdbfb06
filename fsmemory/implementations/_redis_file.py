"""The file object of :class:`~fsmemory.implementations.redis.RedisFileSystem`."""

from __future__ import annotations

import errno
import io
from typing import TYPE_CHECKING, Any

from fsspec.spec import AbstractBufferedFile

if TYPE_CHECKING:
    from fsmemory.implementations.redis import RedisFileSystem

__all__ = ["RedisFile"]


class RedisFile(AbstractBufferedFile):  # type: ignore[misc]
    """A file of :class:`RedisFileSystem`.

    Read mode (``rb``) fetches ranges with GETRANGE and raises
    :class:`fsmemory.errors.ConflictError` if the file is replaced (not merely appended
    to) while it is open, so a reader never mixes two versions. Write modes (``wb``,
    ``xb``, ``ab``) buffer everything and commit in one atomic script on close; leaving a
    ``with`` block by an exception discards the buffer and the file stays as it was.
    After a successful commit :attr:`version` holds the file's new version.
    """

    def __init__(
        self,
        fs: RedisFileSystem,
        path: str,
        mode: str = "rb",
        block_size: int | str | None = "default",
        autocommit: bool = True,
        cache_type: str = "readahead",
        cache_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.version = 0
        self._pending: bytes | None = None
        self._base_version: int | None = None
        details: dict[str, Any] | None = None
        if mode == "rb":
            details = fs._stat(path)
            if details["type"] != "file":
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            kwargs["size"] = details["size"]
            self.version = int(details["version"])
            self._base_version = int(details.pop("_base"))
        elif mode == "xb" and fs.exists(path):
            raise FileExistsError(errno.EEXIST, "File exists", path)
        super().__init__(
            fs,
            path,
            mode=mode,
            block_size=block_size,
            autocommit=autocommit,
            cache_type=cache_type,
            cache_options=cache_options,
            **kwargs,
        )
        if details is not None:
            self.details = details

    def _fetch_range(self, start: int, end: int) -> bytes:
        fs: RedisFileSystem = self.fs
        return fs._read(self.path, start, end, self._base_version)[0]

    def _upload_chunk(self, final: bool = False) -> bool:
        if not final:
            return False  # keep buffering: the whole file is committed at once
        data = self.buffer.getvalue()
        if self.autocommit:
            self._commit_data(data)
        else:
            self._pending = data
        return True

    def _commit_data(self, data: bytes) -> None:
        fs: RedisFileSystem = self.fs
        if self.mode == "ab":
            self.version = fs.append_bytes(self.path, data)[1]
        else:
            self.version = fs.pipe_file(
                self.path, data, mode="create" if self.mode == "xb" else "overwrite"
            )

    def commit(self) -> None:
        """Write the buffered content (used when the file belongs to a transaction)."""
        if self._pending is not None:
            data, self._pending = self._pending, None
            self._commit_data(data)

    def discard(self) -> None:
        """Drop the buffered content without writing it."""
        self._pending = None

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is not None and self.mode != "rb" and not self.closed:
            # Leaving by an exception: drop the buffer; `forced` makes close() skip the commit.
            self.discard()
            self.buffer = io.BytesIO()
            self.forced = True
        self.close()
