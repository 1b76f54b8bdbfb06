"""fsspec filesystems provided by fsmemory.

- ``redis://`` / ``rediss://``: :class:`RedisFileSystem` (needs ``pip install 'fsmemory[redis]'``).

The protocols are declared through the ``fsspec.specs`` entry-point group, which fsspec
reads when the package is installed. :func:`register` does the same explicitly (for a
source checkout, or to override another registration). Importing this package registers
nothing and does not import redis-py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsmemory.implementations.redis import RedisFileSystem

__all__ = ["RedisFileSystem", "register"]

_IMPLEMENTATIONS: dict[str, str] = {
    "redis": "fsmemory.implementations.redis.RedisFileSystem",
    "rediss": "fsmemory.implementations.redis.RedisFileSystem",
}


def register(clobber: bool = True) -> None:
    """Register fsmemory's filesystems with fsspec (``redis``, ``rediss``).

    The classes are imported lazily by fsspec on first use, so this works without the
    optional dependencies installed until such a URL is opened.

    Args:
        clobber: replace an existing registration of the same protocol.
    """
    import fsspec

    for protocol, target in _IMPLEMENTATIONS.items():
        fsspec.register_implementation(
            protocol,
            target,
            clobber=clobber,
            errtxt=f"{protocol}:// needs redis-py: pip install 'fsmemory[redis]'",
        )


def __getattr__(name: str) -> Any:
    if name == "RedisFileSystem":
        from fsmemory.implementations.redis import RedisFileSystem

        return RedisFileSystem
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
