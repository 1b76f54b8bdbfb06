"""Arrow's allocator during an export: the system one, and the caller's pool restored."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from fsmemory.export import export_parquet
from fsmemory.export._schema import system_memory_pool
from fsmemory.fs import open_root

from .conftest import lines, read_rows, record, write_log

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyarrow.parquet")


def test_export_runs_on_the_system_pool_and_restores_the_callers(
    local_dirs: tuple[str, str],
) -> None:
    src, dest = local_dirs
    write_log(open_root(src), "2026-03-10", lines([record("one"), record("two", n=1)]))
    before = pa.default_memory_pool()
    seen: list[str] = []
    report = export_parquet(
        src, dest, progress=lambda _p: seen.append(pa.default_memory_pool().backend_name)
    )
    assert report.rows == 2
    assert seen and set(seen) == {"system"}
    assert pa.default_memory_pool().backend_name == before.backend_name
    assert sorted(r["content"] for r in read_rows(dest)) == ["one", "two"]


def test_overlapping_exports_restore_the_pool_once_the_last_leaves() -> None:
    before = pa.default_memory_pool().backend_name
    inside, leave = threading.Event(), threading.Event()
    seen: list[str] = []

    def other() -> None:
        with system_memory_pool(pa):
            inside.set()
            leave.wait(30)
            seen.append(pa.default_memory_pool().backend_name)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(30)
    with system_memory_pool(pa):
        assert pa.default_memory_pool().backend_name == "system"
    # The other export is still running: its pool stays.
    assert pa.default_memory_pool().backend_name == "system"
    leave.set()
    thread.join(30)
    assert seen == ["system"]
    assert pa.default_memory_pool().backend_name == before


def _after_setup(env: dict[str, str], before: str, probe: str) -> str:
    """What ``probe`` prints in a fresh process that ran ``before`` and then the export
    command's process setup."""
    code = (
        f"{before}\n"
        "from fsmemory._cli_export import _prepare_process\n"
        "_prepare_process()\n"
        f"{probe}\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def _backend(env: dict[str, str], *, import_first: bool = False) -> str:
    return _after_setup(
        env,
        "import pyarrow" if import_first else "",
        "import pyarrow\nprint(pyarrow.default_memory_pool().backend_name)",
    )


def test_the_command_prefers_the_system_allocator_unless_told_otherwise() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    default = subprocess.run(
        [sys.executable, "-c", "import pyarrow; print(pyarrow.default_memory_pool().backend_name)"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert _backend(env) == "system"
    # A pyarrow already imported keeps the pool it started with.
    assert _backend(env, import_first=True) == default
    if default != "system":
        # A choice the user made stays.
        assert _backend({**env, "ARROW_DEFAULT_MEMORY_POOL": default}) == default


def _blas_threads(env: dict[str, str], *, import_first: bool = False) -> str:
    return _after_setup(
        env,
        "import numpy" if import_first else "",
        "import os\nprint(os.environ.get('OPENBLAS_NUM_THREADS', '-'))",
    )


def test_the_command_runs_blas_on_one_thread_unless_told_otherwise() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _blas_threads(env) == "1"
    # A choice the user made stays.
    assert _blas_threads({**env, "OPENBLAS_NUM_THREADS": "3"}) == "3"
    # A numpy already imported has started its threads: nothing is set for it.
    pytest.importorskip("numpy")
    assert _blas_threads(env, import_first=True) == "-"


def test_the_pyarrow_version_is_read_without_importing_it() -> None:
    """The command holds numpy back only from a pyarrow that runs without it (16+)."""
    from fsmemory._cli_export import _pyarrow_major

    assert _pyarrow_major() == int(pa.__version__.split(".")[0])
