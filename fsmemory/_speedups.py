"""The one home of speed-ups that reach into a dependency's private API.

Policy: fsmemory uses a dependency's private names only here, each with a guarded
fallback to the dependency's public API that gives the same results, and one switch
turns every such path off: ``FSMEMORY_NO_SPEEDUPS=1`` in the environment (read when a
speed-up is first asked for, so set it before the process's first export or hybrid
recall). CI runs the tests of the export and of the memory once more with it set, so the
public paths stay tested.

The speed-ups:

``arrow_compute()``
    ``pyarrow._compute``, where Arrow's ``call_function`` and the option classes live,
    instead of ``pyarrow.compute``. Both hand out the very same functions and classes;
    ``import pyarrow.compute`` additionally builds a Python wrapper, with a generated
    signature and docstring, for each of Arrow's ~300 kernels (tens of milliseconds in
    every ``fsmemory export`` process; ``benchmarks/bench_export.py --tricks`` measures
    it). Checked against pyarrow 16 to 26.

``blake2b()``
    The interpreter's built-in ``_blake2`` module instead of ``hashlib``, for the text
    hashes vectors are keyed by. Same constructor, same digests; ``import hashlib``
    additionally loads OpenSSL's bindings (about 3 ms of a fresh process's first
    hybrid recall or remember). Decided once per process.
"""

from __future__ import annotations

import os
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import hashlib

__all__ = ["ENV", "arrow_compute", "blake2b", "enabled"]

#: Set to ``1`` (``true``, ``yes``, ``on``) to take the public path everywhere.
ENV = "FSMEMORY_NO_SPEEDUPS"

#: What the export takes from the compute module (see ``fsmemory/export/_compute.py``).
_ARROW_NAMES = ("call_function", "CastOptions", "IndexOptions", "SplitPatternOptions",
                "StrftimeOptions")  # fmt: skip


def enabled() -> bool:
    """Whether private-API speed-ups may be used (``FSMEMORY_NO_SPEEDUPS`` is unset)."""
    return os.environ.get(ENV, "").strip().lower() not in {"1", "true", "yes", "on"}


def arrow_compute() -> ModuleType:
    """The module giving Arrow's ``call_function`` and its option classes.

    ``pyarrow._compute`` when speed-ups are on and it still has every name the export
    uses; ``pyarrow.compute`` otherwise (the public API, same objects).

    Raises:
        ImportError: pyarrow is not installed.
    """
    if enabled():
        try:
            from pyarrow import _compute as private
        except ImportError:  # renamed in some pyarrow: the public path
            pass
        else:
            if all(hasattr(private, name) for name in _ARROW_NAMES):
                module: ModuleType = private
                return module
    import pyarrow.compute as public

    module = public
    return module


@cache
def blake2b() -> type[hashlib.blake2b]:
    """BLAKE2b's constructor (``blake2b(data, digest_size=8).digest()``).

    ``_blake2.blake2b`` when speed-ups are on and the interpreter has it;
    ``hashlib.blake2b`` otherwise (the public API, the same type). Decided when first
    asked for and kept for the process.
    """
    if enabled():
        try:
            from _blake2 import blake2b as private
        except ImportError:  # an interpreter built without it: the public path
            pass
        else:
            return private
    import hashlib

    return hashlib.blake2b
