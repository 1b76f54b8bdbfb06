"""The ``with`` protocol of the test helpers that run in the background."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["Running"]


class Running(ABC):
    """Something started and stopped around a block: ``with thing:`` calls
    :meth:`start` on entry (and binds what it returns) and :meth:`stop` on exit."""

    @abstractmethod
    def start(self) -> Self:
        """Start running (a no-op when already running); ``self``."""

    @abstractmethod
    def stop(self) -> None:
        """Stop running and release what :meth:`start` took (safe to call twice)."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
