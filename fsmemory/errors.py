"""One exception tree for fsmemory.

Every error we raise derives from :class:`FsMemoryError`; most also derive from the
builtin a caller would already catch, so ``except ValueError`` or
``except FileNotFoundError`` keeps working::

    FsMemoryError
    ├── InvalidPathError        (ValueError)        a path escapes its root or is malformed
    ├── InvalidInputError       (ValueError)        content / category / option is not acceptable
    │   └── ContentTooLargeError                    content or file over the configured limit
    ├── KeyNotFoundError        (FileNotFoundError) the file does not exist
    ├── ConflictError                               a compare-and-swap lost a race
    ├── LockTimeoutError        (TimeoutError)      a lock or lease could not be acquired in time
    ├── BackendError            (OSError)           the storage service failed (network, auth, 5xx)
    ├── SnapshotError                               a snapshot is corrupt, unsafe or unreadable
    └── MissingDependencyError  (ImportError)       an optional extra is not installed
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "ConflictError",
    "ContentTooLargeError",
    "FsMemoryError",
    "InvalidInputError",
    "InvalidPathError",
    "KeyNotFoundError",
    "LockTimeoutError",
    "MissingDependencyError",
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


class ConflictError(FsMemoryError):
    """A compare-and-swap write lost a race: the file changed since it was read,
    or a create-only write found the file already present."""


class LockTimeoutError(FsMemoryError, TimeoutError):
    """A lock or lease could not be acquired within its timeout."""


class BackendError(FsMemoryError, OSError):
    """The storage service failed (network, authentication, server error).

    The original exception is chained as ``__cause__``.
    """


class SnapshotError(FsMemoryError):
    """A snapshot is corrupt, unsafe to unpack, or could not be read."""


class MissingDependencyError(FsMemoryError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"{module!r} is required for this feature: pip install 'fsmemory[{extra}]'"
        )
        self.module = module
        self.extra = extra


def require(module: str, extra: str) -> object:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``extra``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(module, extra) from exc
