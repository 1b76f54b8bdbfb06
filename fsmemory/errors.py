"""One exception tree for fsmemory.

Every error we raise derives from :class:`FsMemoryError`; most also derive from the
builtin a caller would already catch, so ``except ValueError`` or
``except FileNotFoundError`` keeps working::

    FsMemoryError
    ├── InvalidPathError        (ValueError)        a path escapes its root or is malformed
    ├── InvalidInputError       (ValueError)        content / category / option is not acceptable
    │   └── ContentTooLargeError                    content or file over the configured limit
    ├── KeyNotFoundError        (FileNotFoundError) the file does not exist
    │   └── NotAFileError                           a directory stands where a file is expected
    ├── ConflictError                               a compare-and-swap lost a race
    ├── LockTimeoutError        (TimeoutError)      a lock or lease could not be acquired in time
    ├── ReadOnlyStorageError    (PermissionError)   the URL can be read, never safely written
    ├── BackendError            (OSError)           the storage service failed (network, auth, 5xx)
    │   └── BucketNotFoundError                     the S3/GCS bucket of a URL does not exist
    ├── SnapshotError                               a snapshot is corrupt, unsafe or unreadable
    └── MissingDependencyError  (ImportError)       an optional extra is not installed
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BucketNotFoundError",
    "ConflictError",
    "ContentTooLargeError",
    "EmbedderError",
    "FsMemoryError",
    "InvalidInputError",
    "InvalidPathError",
    "KeyNotFoundError",
    "LockTimeoutError",
    "MissingDependencyError",
    "NotAFileError",
    "ReadOnlyStorageError",
    "SnapshotError",
]


class FsMemoryError(Exception):
    """Base class of every error raised by fsmemory."""


class InvalidPathError(FsMemoryError, ValueError):
    """A path is malformed or would escape its storage root (``..``, NUL, absolute, ...)."""


class InvalidInputError(FsMemoryError, ValueError):
    """User data (content, category, an option) is not acceptable."""


class ContentTooLargeError(InvalidInputError):
    """Content or a file exceeds the configured size limit."""


class KeyNotFoundError(FsMemoryError, FileNotFoundError):
    """The requested file does not exist."""


class NotAFileError(KeyNotFoundError):
    """A directory stands where a file is expected (or a file where a directory is).

    Reading such a path is reading a file that does not exist, hence the base class;
    writing it is refused by the path store as an invalid path.
    """


class ConflictError(FsMemoryError):
    """A compare-and-swap write lost a race: the file changed since it was read,
    or a create-only write found the file already present."""


class LockTimeoutError(FsMemoryError, TimeoutError):
    """A lock or lease could not be acquired within its timeout."""


class ReadOnlyStorageError(FsMemoryError, PermissionError):
    """Writes are refused for good: the URL's filesystem cannot create a file exclusively
    and atomically, or cannot see other writers, so a write could lose acknowledged
    data. Reads work. The message names the reason; trying again never helps."""


class BackendError(FsMemoryError, OSError):
    """The storage service failed (network, authentication, server error).

    The original exception is chained as ``__cause__``.
    """


class BucketNotFoundError(BackendError):
    """The bucket named by an ``s3://`` or ``gs://`` URL does not exist (or is not
    visible with these credentials). Not a missing file: create the bucket first.

    Attributes:
        bucket: the bucket's name.
    """

    def __init__(self, bucket: str, service: str = "object store") -> None:
        super().__init__(f"{service} bucket {bucket!r} does not exist")
        self.bucket = bucket
        self.service = service

    def __reduce__(self) -> tuple[type[BucketNotFoundError], tuple[str, str]]:
        return type(self), (self.bucket, self.service)


class SnapshotError(FsMemoryError):
    """A snapshot is corrupt, unsafe to unpack, or could not be read."""


class EmbedderError(FsMemoryError):
    """The embedder failed or did not return one finite vector of the expected dimension
    per text; nothing was stored."""


class MissingDependencyError(FsMemoryError, ImportError):
    """An optional dependency is missing; the message names the extra to install.

    Args:
        module: the module that could not be imported.
        extra: the fsmemory extra that installs it, or None when no extra does (then
            ``hint`` says what to install).
        hint: what to do instead of installing an extra.
    """

    def __init__(self, module: str, extra: str | None, hint: str | None = None) -> None:
        if extra is not None:
            advice = f"pip install 'fsmemory[{extra}]'"
        else:
            advice = hint or f"pip install {module}"
        super().__init__(f"{module!r} is required for this feature: {advice}")
        self.module = module
        self.extra = extra
        self.hint = hint

    def __reduce__(self) -> tuple[type[MissingDependencyError], tuple[str, str | None, str | None]]:
        return type(self), (self.module, self.extra, self.hint)


def require(module: str, extra: str) -> object:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``extra``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(module, extra) from exc
