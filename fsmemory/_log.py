"""Module loggers that import :mod:`logging` when they first log.

``logging`` and what it imports (``traceback``, ``string``, ``threading``...) cost a
fresh process more than some of fsmemory's own modules, and a memory that runs without
incident never logs. A module on the import path of ``from fsmemory import
KnowledgeMemory`` therefore takes its logger from :func:`get_logger`: the standard
``logging.Logger`` of that name if ``logging`` is loaded already, otherwise a stand-in
that loads ``logging`` and hands every attribute to that same logger on first use.

Either way the package logger ``fsmemory`` has its ``NullHandler`` before any record of
fsmemory's is emitted (see the README's Logging section).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

__all__ = ["get_logger", "package_logger"]

PACKAGE = "fsmemory"


def package_logger() -> logging.Logger:
    """The ``fsmemory`` logger, given a ``NullHandler`` the first time (imports
    ``logging``): a library logs, its host decides where records go, and without a
    handler Python's last-resort handler would print fsmemory's warnings on the stderr
    of a host that has not configured logging."""
    import logging

    package = logging.getLogger(PACKAGE)
    if not any(isinstance(h, logging.NullHandler) for h in package.handlers):
        package.addHandler(logging.NullHandler())
    return package


class _DeferredLogger:
    """Stands in for ``logging.getLogger(name)`` until something is logged."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: logging.Logger | None = None

    def __getattr__(self, attr: str) -> Any:
        logger = self._logger
        if logger is None:
            package_logger()
            import logging

            logger = self._logger = logging.getLogger(self._name)
        return getattr(logger, attr)

    def __repr__(self) -> str:
        return f"<deferred logger {self._name!r}>"


def get_logger(name: str) -> logging.Logger:
    """The logger ``name`` (below ``fsmemory``), importing ``logging`` only when the
    first record is logged, unless it is loaded already."""
    if "logging" in sys.modules:
        package_logger()
        return sys.modules["logging"].getLogger(name)  # type: ignore[no-any-return]
    return _DeferredLogger(name)  # type: ignore[return-value]
