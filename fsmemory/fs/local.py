"""Local-folder storage root.

* Whole-file writes go to a uniquely named temp file next to the target and are moved
  into place with ``os.replace`` (atomic on POSIX): a reader or a crash sees the old or
  the new content, never a mix.
* Appends use ``O_APPEND`` under a cross-process ``flock`` on ``<root>/.fsmemory.lock``,
  which also serializes compare-and-swap writes, so an append and a CAS rewrite of the
  same file can never lose each other's bytes. Where there is no ``fcntl`` (Windows) the
  lock is ``msvcrt.locking`` on the first byte of the same file; a Python with neither
  opens and reads a folder, and raises :class:`~fsmemory.errors.BackendError` naming
  the reason when a write needs the lock. ``fcntl`` is never imported where it is
  missing.
* Create-only writes use ``os.link`` of the finished temp file, which fails atomically
  when the target exists.
* The final path component is opened with ``O_NOFOLLOW`` and parent directories are
  resolved and checked to stay inside the root, so a symlink planted in the folder
  cannot lead a read or write outside it. Where ``O_NOFOLLOW`` does not exist (Windows)
  the final component is checked with ``lstat`` just before it is opened.
"""

from __future__ import annotations

import builtins
import errno
import importlib
import os
import stat as stat_mod
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from fsmemory.errors import (
    BackendError,
    ConflictError,
    InvalidPathError,
    KeyNotFoundError,
    NotAFileError,
)
from fsmemory.fs._nowait import WouldBlock, must_not_wait, retry_until
from fsmemory.fs.base import (
    CacheData,
    Capabilities,
    FileInfo,
    StorageRoot,
    Versioned,
    check_options,
    content_version,
)
from fsmemory.fs.errors import translated
from fsmemory.fs.paths import RESERVED_PREFIX, is_reserved_name, validate_path

if TYPE_CHECKING:
    import mmap

__all__ = ["LocalRoot", "stat_token"]

_LOCK_NAME = f"{RESERVED_PREFIX}.lock"


def _optional_module(name: str) -> Any:
    """The platform module ``name`` (``fcntl``, ``msvcrt``), or None where it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_fcntl = _optional_module("fcntl")
_msvcrt = None if _fcntl is not None else _optional_module("msvcrt")

# Flags that only some platforms have: 0 where they are missing. O_BINARY (Windows)
# keeps the C runtime from translating line ends in reads and writes.
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock of the open lock file ``fd`` if no process holds it.

    Raises:
        BackendError: this Python has neither ``fcntl`` nor ``msvcrt``.
    """
    if _fcntl is not None:
        try:
            _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    if _msvcrt is not None:
        os.lseek(fd, 0, os.SEEK_SET)  # msvcrt locks bytes from the current position
        try:
            _msvcrt.locking(fd, _msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EDEADLOCK):
                return False  # another process holds it
            raise
        return True
    raise BackendError(
        "writing to a local folder needs a cross-process file lock, and this Python has "
        "neither fcntl (POSIX) nor msvcrt (Windows); reading works without one"
    )


def _unlock(fd: int) -> None:
    if _fcntl is not None:
        _fcntl.flock(fd, _fcntl.LOCK_UN)
    elif _msvcrt is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        _msvcrt.locking(fd, _msvcrt.LK_UNLCK, 1)


def _refuse_symlink(full: str, path: str) -> None:
    """Where ``O_NOFOLLOW`` is missing: refuse a final component that is a symlink."""
    if not _O_NOFOLLOW and os.path.islink(full):
        raise InvalidPathError(f"{path!r} is a symlink")


def _pread(fd: int, size: int, offset: int) -> bytes:
    """``os.pread`` where it exists, else a seek and a read (the fd is not shared)."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


_TMP_PREFIX = f"{RESERVED_PREFIX}-tmp-"


def stat_token(st: os.stat_result) -> str:
    """The change token of a local file: inode, size, mtime and ctime.

    The inode comes first (:meth:`LocalRoot.rewritten` compares it alone). The ctime is
    what catches a same-size edit in place whose mtime was set back (``touch -r``, sync
    tools restoring timestamps): no user call can set a ctime back.
    """
    return f"{st.st_ino}-{st.st_size}-{st.st_mtime_ns}-{st.st_ctime_ns}"


class LocalRoot(StorageRoot):
    """A directory on the local filesystem.

    Args:
        directory: the folder (created on first write).
        url: the URL it was opened from, for messages.
        durable: ``fsync`` files and directories after writes (slower; survives power
            loss, not only process crashes).
    """

    capabilities = Capabilities(
        conditional_write=True, native_append=True, watch=True, cheap_lock=True, local_io=True
    )
    _file_or_dir = True

    def __init__(self, directory: str, *, url: str | None = None, durable: bool = False) -> None:
        self.root = os.path.abspath(os.path.expanduser(directory)).rstrip(os.sep) or os.sep
        self.url = url if url is not None else self.root
        self.durable = durable
        self._real_root: str | None = None
        self._thread_lock = threading.RLock()
        self._lock_depth = 0

    @classmethod
    def from_url(cls, url: str, options: Mapping[str, Any] | None = None) -> LocalRoot:
        """Open a local path or ``file://`` URL (``file:`` and ``local:`` too, as fsspec
        reads them: ``file:/abs`` is ``/abs``).

        Options: ``durable`` (``fsync`` files and directories after writes) and fsspec's
        ``auto_mkdir`` (accepted for fsspec users; parent folders are always created).

        Raises:
            InvalidInputError: any other option.
        """
        opts = dict(options or {})
        check_options("local folders", opts, ("durable", "auto_mkdir"))
        from fsmemory.fs.open import split_protocol

        _, rest = split_protocol(url)  # file:/abs is /abs, as fsspec reads it
        return cls(rest or ".", url=url, durable=bool(opts.get("durable", False)))

    def storage_key(self) -> tuple[str, ...]:
        """The folder itself."""
        return ("local", self.root)

    def __getattr__(self, name: str) -> Any:
        # ``fs`` (fsspec's local filesystem) is imported on first use: the root itself
        # never needs it, and a local folder must not pay for importing fsspec.
        if name == "fs":
            import fsspec

            self.fs = fsspec.filesystem("file")
            return self.fs
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- paths -------------------------------------------------------------------------
    def full_path(self, path: str) -> str:
        """Absolute OS path of a root-relative path (validated, confined to the root)."""
        validate_path(path)
        return os.path.join(self.root, *path.split("/"))

    def _real_root_path(self) -> str:
        if self._real_root is None:
            os.makedirs(self.root, exist_ok=True)
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    def _inside(self, directory: str) -> bool:
        """True when ``directory`` (an OS path) resolves inside the root."""
        real = os.path.realpath(directory)
        real_root = self._real_root_path()
        return real == real_root or real.startswith(real_root + os.sep)

    def _confined(self, path: str) -> str:
        """Full path whose parent directory resolves inside the root."""
        full = self.full_path(path)
        parent = os.path.dirname(full)
        if parent != self.root and not self._inside(parent):
            raise InvalidPathError(f"{path!r} resolves outside the root (symlink)")
        return full

    # -- locking -----------------------------------------------------------------------
    @contextmanager
    def lock(self, name: str = "", *, timeout: float = 30.0) -> Iterator[None]:
        """Hold the root's cross-process lock (``flock`` on ``.fsmemory.lock``; on
        Windows ``msvcrt.locking`` of its first byte).

        Re-entrant within a thread of this process. ``name`` is accepted for API
        symmetry with lease locks; one lock guards the whole root.
        """
        if not self._thread_lock.acquire(blocking=not must_not_wait()):
            raise WouldBlock(f"the lock of {self.url} is held by another thread")
        try:
            if self._lock_depth:
                self._lock_depth += 1
                try:
                    yield
                finally:
                    self._lock_depth -= 1
                return
            lock_path = os.path.join(self._real_root_path(), _LOCK_NAME)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _O_CLOEXEC, 0o644)
            try:
                self._flock(fd, timeout)
                self._lock_depth = 1
                try:
                    yield
                finally:
                    self._lock_depth = 0
                    _unlock(fd)
            finally:
                os.close(fd)
        finally:
            self._thread_lock.release()

    def _flock(self, fd: int, timeout: float) -> None:
        what = f"the lock of {self.url}"
        retry_until(lambda: _try_lock(fd), timeout, what, delay=0.0005, max_delay=0.02)

    def rewritten(self, old: FileInfo, new: FileInfo) -> bool:
        """A whole-file write replaces the inode; an append keeps it."""
        return old.token.split("-", 1)[0] != new.token.split("-", 1)[0]

    # -- reads -------------------------------------------------------------------------
    def _open_read(self, path: str) -> int:
        return self._open_confined(self._confined(path), path)

    @staticmethod
    def _open_confined(full: str, path: str) -> int:
        """Open ``full`` (whose parent is checked) for reading, refusing a symlink and
        anything that is not a regular file.

        ``O_NONBLOCK``: opening a named pipe for reading would wait for a writer for
        ever (a FIFO planted at a cache path would hang every fresh open); a regular
        file ignores the flag.
        """
        try:
            _refuse_symlink(full, path)
            fd = os.open(full, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK)
        except FileNotFoundError:
            raise KeyNotFoundError(path) from None
        except NotADirectoryError:
            raise NotAFileError(f"{path}: a parent is a file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InvalidPathError(f"{path!r} is a symlink") from exc
            raise BackendError(f"{path}: {exc}") from exc
        mode = os.fstat(fd).st_mode
        if not stat_mod.S_ISREG(mode):
            os.close(fd)
            raise NotAFileError(f"{path}: {_kind(mode)}, not a regular file")
        return fd

    def read_bytes(self, path: str) -> bytes:
        """Read a whole file. Raises :class:`KeyNotFoundError` when missing."""
        fd = self._open_read(path)
        try:
            return _read_all(fd)
        finally:
            os.close(fd)

    def read_mapped(self, path: str) -> bytes | mmap.mmap:
        """A whole file memory-mapped read-only, opened with the checks of
        :meth:`read_bytes` (no symlink, a regular file inside the root); its bytes where
        a file cannot be mapped (empty, or on Windows, where a mapped file can be
        neither replaced nor deleted). No copy is made: pages are read as they are
        touched, and the kernel shares them with the page cache.

        Meant for files replaced whole (:meth:`write` renames a new file into place:
        the mapping keeps the old one) or only appended to: a file cut short in place
        by another program while mapped makes a read past its new end fault (SIGBUS).
        On Python < 3.13 a mapping holds a file descriptor while it lives. Raises as
        :meth:`read_bytes`.
        """
        import mmap  # (only a reader of a mapped file loads it)

        fd = self._open_read(path)
        try:
            size = os.fstat(fd).st_size
            if size and os.name != "nt":
                # Python >= 3.13 need not keep a descriptor open per mapping.
                extra = {"trackfd": False} if sys.version_info >= (3, 13) else {}
                with suppress(OSError, ValueError):  # (not mappable: read it)
                    return mmap.mmap(fd, size, access=mmap.ACCESS_READ, **extra)
            return _read_all(fd)
        finally:
            os.close(fd)

    def _read_cache_file(self, path: str) -> CacheData:
        """A cache file mapped (see :meth:`read_mapped`): a cold open reads the index
        cache without a copy (16 ms of 28 MB at 100k entries)."""
        return self.read_mapped(path)

    def read(self, path: str) -> Versioned:
        """Read a whole file; its version is a digest of the content."""
        data = self.read_bytes(path)
        return Versioned(data, content_version(data))

    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """Read bytes ``[start, end)`` with one ``pread``."""
        self.check_range(start, end)
        fd = self._open_read(path)
        try:
            return _pread_range(fd, start, end)
        finally:
            os.close(fd)

    def read_ranges(
        self, requests: Sequence[tuple[str, int, int | None]]
    ) -> builtins.list[bytes | None]:
        """Read many byte ranges, in order (None: missing); each parent directory is
        resolved and checked once per call instead of once per file."""
        checked: set[str] = {self.root}
        out: builtins.list[bytes | None] = []
        for path, start, end in requests:
            self.check_range(start, end)
            full = self.full_path(path)
            parent = os.path.dirname(full)
            if parent not in checked and not self._plain_dirs(parent, checked):
                self._confined(path)  # a symlinked folder: allowed only inside the root
                checked.add(parent)
            try:
                fd = self._open_confined(full, path)
            except KeyNotFoundError:
                out.append(None)
                continue
            try:
                out.append(_pread_range(fd, start, end))
            finally:
                os.close(fd)
        return out

    def _plain_dirs(self, directory: str, checked: set[str]) -> bool:
        """True when every folder from the root down to ``directory`` is a real folder
        (no symlink); those folders are added to ``checked``. False when one is not."""
        if not directory.startswith(self.root + os.sep):
            return False
        current = self.root
        for name in directory[len(self.root) + 1 :].split(os.sep):
            current = f"{current}{os.sep}{name}"  # os.path.join, without its checks
            if current in checked:
                continue
            try:
                mode = os.lstat(current).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return False
            if not stat_mod.S_ISDIR(mode):
                return False
            checked.add(current)
        return True

    def stat(self, path: str) -> FileInfo | None:
        """Size, mtime and an inode/size/mtime change token; None when missing."""
        full = self._confined(path)
        try:
            st = os.stat(full, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat_mod.S_ISREG(st.st_mode):
            return None
        return FileInfo(path, st.st_size, st.st_mtime, stat_token(st))

    def list(self, prefix: str = "", *, recursive: bool = False) -> list[FileInfo]:
        """Regular files under ``prefix``; symlinks and internal files are skipped."""
        validate_path(prefix, allow_empty=True)
        out: list[FileInfo] = []
        self._scan(prefix, recursive, out, None)
        out.sort(key=lambda i: i.path)
        return out

    def list_dirs(self, prefix: str = "") -> builtins.list[str]:
        """Immediate subdirectory names of ``prefix`` (symlinked ones are skipped)."""
        validate_path(prefix, allow_empty=True)
        dirs: list[str] = []
        self._scan(prefix, False, None, dirs)
        return sorted(dirs)

    def _names_dir(self, prefix: str) -> str | None:
        """The folder of ``prefix``, or None when it resolves outside the root (a
        symlinked directory lists nothing of what lies outside)."""
        validate_path(prefix, allow_empty=True)
        if not prefix:
            return self.root
        base = self.full_path(prefix)
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(base)
        if real != real_root and not real.startswith(real_root + os.sep):
            return None
        return base

    def _entries(self, prefix: str) -> Iterator[os.DirEntry[str]]:
        """The visible entries (regular files and real directories) of ``prefix``."""
        base = self._names_dir(prefix)
        if base is None:
            return
        for entry in _scandir(base):
            if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
                yield entry

    def list_names(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """One ``scandir`` using the entries' types only (no stat per file)."""
        files: builtins.list[str] = []
        dirs: builtins.list[str] = []
        for entry in self._entries(prefix):
            (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
        return files, dirs

    def has_entries(self, prefix: str) -> bool:
        """True when the folder ``prefix`` holds a file or a directory (stops early)."""
        return next(self._entries(prefix), None) is not None

    def _scan(
        self,
        prefix: str,
        recursive: bool,
        files: builtins.list[FileInfo] | None,
        dirs: builtins.list[str] | None,
        confined: bool = False,
    ) -> None:
        base = self.full_path(prefix) if prefix else self.root
        # A folder reached from a confined one through a real (non-symlink) entry is
        # confined too: only the prefix a caller names is resolved.
        if prefix and not confined and not self._inside(base):
            raise InvalidPathError(f"{prefix!r} resolves outside the root (symlink)")
        for entry in _scandir(base):
            name = entry.name
            rel = f"{prefix}/{name}" if prefix else name
            if entry.is_dir(follow_symlinks=False):
                if dirs is not None:
                    dirs.append(name)
                if recursive and files is not None:
                    self._scan(rel, True, files, None, confined=True)
            elif files is not None and entry.is_file(follow_symlinks=False):
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                files.append(FileInfo(rel, st.st_size, st.st_mtime, stat_token(st)))

    # -- writes ------------------------------------------------------------------------
    def _write_temp(self, full: str, data: bytes) -> str:
        parent = os.path.dirname(full)
        tmp = os.path.join(parent, f"{_TMP_PREFIX}{uuid.uuid4().hex}")
        for _ in range(5):
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o644)
                break
            except FileNotFoundError:
                os.makedirs(parent, exist_ok=True)
        else:  # pragma: no cover - parent keeps vanishing
            raise KeyNotFoundError(parent)
        try:
            _write_all(fd, data)
            if self.durable:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            _unlink_quiet(tmp)
            raise
        os.close(fd)
        return tmp

    def write(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """Atomic write through a temp file + rename (see :meth:`StorageRoot.write`)."""
        self.check_condition(if_version, create_only)
        with translated(path):
            return self._write(path, data, if_version, create_only)

    def _write(self, path: str, data: bytes, if_version: str | None, create_only: bool) -> str:
        full = self._confined(path)
        tmp = self._write_temp(full, data)
        try:
            if create_only:
                try:
                    os.link(tmp, full)
                except FileExistsError:
                    raise ConflictError(f"{path!r} already exists") from None
            elif if_version is not None:
                with self.lock():
                    try:
                        current = self.read(path).version
                    except KeyNotFoundError:
                        current = None
                    if current != if_version:
                        raise ConflictError(f"{path!r} changed since version {if_version}")
                    os.replace(tmp, full)
                    tmp = ""
            else:
                os.replace(tmp, full)
                tmp = ""
        finally:
            if tmp:
                _unlink_quiet(tmp)
        if self.durable:
            _fsync_dir(os.path.dirname(full))
        return content_version(data)

    def append(
        self, path: str, data: bytes, *, line_safe: bool = False, unique: bool = False
    ) -> int:
        """``O_APPEND`` write under the root lock; returns the start offset of ``data``.

        ``unique`` is accepted and ignored: this append is never retried.
        """
        with translated(path):
            return self._append(path, data, line_safe)

    def _append(self, path: str, data: bytes, line_safe: bool) -> int:
        full = self._confined(path)
        with self.lock():
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK
            try:
                _refuse_symlink(full, path)
                fd = os.open(full, flags, 0o644)
            except FileNotFoundError:
                os.makedirs(os.path.dirname(full), exist_ok=True)
                fd = os.open(full, flags, 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise InvalidPathError(f"{path!r} is a symlink") from exc
                raise
            try:
                st = os.fstat(fd)
                if not stat_mod.S_ISREG(st.st_mode):
                    # bytes written to a pipe or a device would be acknowledged and lost
                    raise NotAFileError(f"{path}: {_kind(st.st_mode)}, not a regular file")
                size = st.st_size
                payload = data
                if line_safe and size and _pread(fd, 1, size - 1) != b"\n":
                    payload = b"\n" + data
                    size += 1
                _write_all(fd, payload)
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            return size

    def delete(self, path: str) -> bool:
        """Unlink a file (under the root lock) and prune emptied parent directories."""
        full = self._confined(path)
        with self.lock():
            try:
                os.unlink(full)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return False
            self._prune_empty_dirs(os.path.dirname(full))
        return True

    def delete_tree(self, prefix: str) -> int:
        """Delete every file under ``prefix`` and the emptied directories."""
        count = super().delete_tree(prefix)
        base = self.full_path(prefix) if prefix else self.root
        with self.lock():
            for dirpath, _dirnames, _files in sorted(os.walk(base), reverse=True):
                with suppress(OSError):
                    os.rmdir(dirpath)
            self._prune_empty_dirs(os.path.dirname(base))
        return count

    def _prune_empty_dirs(self, directory: str) -> None:
        while directory != self.root and directory.startswith(self.root + os.sep):
            try:
                os.rmdir(directory)
            except OSError:
                return
            directory = os.path.dirname(directory)


def _kind(mode: int) -> str:
    """What a file of ``mode`` is, for messages."""
    if stat_mod.S_ISDIR(mode):
        return "is a directory"
    if stat_mod.S_ISFIFO(mode):
        return "is a named pipe"
    if stat_mod.S_ISSOCK(mode):
        return "is a socket"
    if stat_mod.S_ISCHR(mode) or stat_mod.S_ISBLK(mode):
        return "is a device"
    return "is a special file"


def _scandir(base: str) -> Iterator[os.DirEntry[str]]:
    """The entries of the folder ``base`` except fsmemory's own (none when missing)."""
    try:
        it = os.scandir(base)
    except (FileNotFoundError, NotADirectoryError):
        return
    with it:
        for entry in it:
            if not is_reserved_name(entry.name):
                yield entry


def _pread_range(fd: int, start: int, end: int | None) -> bytes:
    """Bytes ``[start, end)`` of an open file (fewer when it is shorter)."""
    size = os.fstat(fd).st_size
    stop = size if end is None else min(end, size)
    if stop <= start:
        return b""
    chunks = []
    pos = start
    while pos < stop:
        chunk = _pread(fd, stop - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


def _read_all(fd: int) -> bytes:
    # One read of the size fstat gives, then small reads until EOF (a file may grow
    # meanwhile). The EOF read must be small: os.read allocates the whole count first,
    # and a second buffer the size of the file would cost as much as the read itself.
    size = os.fstat(fd).st_size
    first = os.read(fd, size) if size else b""
    chunks = [first]
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return first if len(chunks) == 1 else b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _unlink_quiet(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


def _fsync_dir(directory: str) -> None:
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows: a folder cannot be opened for fsync; its entries are journaled
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
