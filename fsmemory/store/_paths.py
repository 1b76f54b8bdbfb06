"""Store paths: ``/``-rooted, normalized, validated once at the API boundary."""

from __future__ import annotations

from fsmemory.errors import InvalidPathError
from fsmemory.fs.paths import validate_path

__all__ = ["affects", "normalize", "split"]


def split(path: str) -> tuple[str, str]:
    """Normalize ``path`` and return ``(store_path, root_relative_path)``.

    ``"a//b/"`` -> ``("/a/b", "a/b")``; the store root is ``("/", "")``.

    Raises:
        InvalidPathError: ``..`` or ``.`` segments (also percent-encoded), NUL or other
            control characters, backslashes, reserved ``.fsmemory*`` names, or a path
            over the length limits. Nothing is ever stored under such a path.
    """
    if not isinstance(path, str):
        raise InvalidPathError(f"path must be a str, not {type(path).__name__}")
    rel = "/".join(segment for segment in path.split("/") if segment)
    validate_path(rel, allow_empty=True)
    return "/" + rel, rel


def normalize(path: str) -> str:
    """The canonical form of a store path: leading ``/``, no ``//``, no trailing ``/``.

    Raises:
        InvalidPathError: see :func:`split`.
    """
    return split(path)[0]


def affects(watched: str, changed: str) -> bool:
    """True when a change at ``changed`` concerns a watcher of ``watched``.

    That is the same path, a path below it, or a directory above it (deleting ``/a``
    deletes ``/a/b``). Both arguments are normalized store paths. ``/a`` never matches
    ``/ab``.
    """
    if watched == "/" or changed == "/" or changed == watched:
        return True
    return changed.startswith(watched + "/") or watched.startswith(changed + "/")
