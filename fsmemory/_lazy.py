"""Lazy package exports: a package names what it offers, modules load on first use.

``import fsmemory`` then costs only what the caller touches: the local-folder path never
imports fsspec's remote filesystems, pyarrow, the snapshot or sanitizer modules.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for ``package``.

    Args:
        package: the package's ``__name__``.
        exports: public name -> module that defines it.

    Returns:
        ``(__getattr__, __dir__)``: the first imports the defining module on first
        access and caches the value in the package namespace.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
