"""Arrow's allocator and the process setup: a library call leaves the host's pool and
environment alone; the command sets up only a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fsmemory.export import export_parquet
from fsmemory.fs import open_root

from .conftest import lines, read_rows, record, write_log

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyarrow.parquet")


def test_an_export_leaves_the_callers_memory_pool_alone(local_dirs: tuple[str, str]) -> None:
    """A library call does not switch Arrow's process-wide pool: another thread of the
    host allocating while the export runs gets the pool the host chose."""
    src, dest = local_dirs
    write_log(open_root(src), "2026-03-10", lines([record("one"), record("two", n=1)]))
    before = pa.default_memory_pool().backend_name
    seen: list[str] = []
    report = export_parquet(
        src, dest, progress=lambda _p: seen.append(pa.default_memory_pool().backend_name)
    )
    assert report.rows == 2
    assert seen and set(seen) == {before}
    assert pa.default_memory_pool().backend_name == before
    assert sorted(r["content"] for r in read_rows(dest)) == ["one", "two"]


def test_an_export_leaves_a_pool_the_host_set_alone(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    write_log(open_root(src), "2026-03-10", lines([record("one")]))
    host_pool = pa.default_memory_pool()
    try:
        pa.set_memory_pool(pa.system_memory_pool())
        seen: list[str] = []
        export_parquet(
            src, dest, progress=lambda _p: seen.append(pa.default_memory_pool().backend_name)
        )
        assert set(seen) == {"system"}
        assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(host_pool)


def _after_setup(env: dict[str, str], before: str, probe: str, own_process: bool = True) -> str:
    """What ``probe`` prints in a fresh process that ran ``before`` and then the export
    command's process setup (as the command's own process, or called by a host)."""
    code = (
        f"{before}\n"
        "from fsmemory._cli_export import _prepare_process\n"
        f"_prepare_process(own_process={own_process})\n"
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


def test_called_by_a_host_the_command_leaves_its_environment_alone() -> None:
    """``main(argv)`` from a host program (not the console script): no environment
    variable of the host is set, and its Arrow keeps the default allocator."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "ARROW_DEFAULT_MEMORY_POOL")
    }
    probe = (
        "import os\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS', '-'), "
        "os.environ.get('ARROW_DEFAULT_MEMORY_POOL', '-'))"
    )
    assert _after_setup(env, "", probe, own_process=False) == "- -"
    # The command's own process: the allocator only (one BLAS thread did not pay).
    assert _after_setup(env, "", probe) == "- system"
