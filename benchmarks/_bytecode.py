"""A benchmark's warning that the code it times would be compiled in every process.

With ``PYTHONDONTWRITEBYTECODE`` set (or ``python -B``), Python does not write the
bytecode it compiles: each fresh process then compiles every module whose cached
bytecode is missing or older than its source, which an installed package never does,
and a cold-start figure counts that compilation. The benchmarks that time fresh
processes print this note first.
"""

from __future__ import annotations

import importlib.util
import os
import sys

__all__ = ["stale_bytecode_note"]


def _stale_modules(package_dir: str) -> int:
    """Modules under ``package_dir`` whose cached bytecode is missing or older than the
    source."""
    stale = 0
    for folder, _, names in os.walk(package_dir):
        for name in names:
            if name.endswith(".py"):
                source = os.path.join(folder, name)
                cached = importlib.util.cache_from_source(source)
                if not os.path.exists(cached) or os.path.getmtime(cached) < os.path.getmtime(
                    source
                ):
                    stale += 1
    return stale


def stale_bytecode_note(package_dir: str) -> str | None:
    """A note for the table when this interpreter will not write bytecode and modules
    under ``package_dir`` have none up to date (None otherwise)."""
    if not sys.dont_write_bytecode:
        return None
    stale = _stale_modules(package_dir)
    if not stale:
        return None
    return (
        f"note: {stale} modules under {os.path.basename(package_dir)} have no up-to-date "
        "bytecode and this Python does not write it (PYTHONDONTWRITEBYTECODE): every "
        "process compiles them, which an installed package never does (run "
        f"`python -m compileall {package_dir}`)"
    )
