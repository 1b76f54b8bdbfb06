"""The export README's recipes run as written.

Each ``python`` block of ``fsmemory/export/README.md`` is saved as a script and run in
a fresh interpreter, in a folder holding a small fleet of tenants (``users/``) and an
export of it (``out/``): the Dask recipe on a ``LocalCluster`` of two worker processes,
the Ray recipe on a local Ray instance. Ray is a large install (about 240 MB), not in
the test dependencies: its run is marked slow and skipped where Ray is missing. The
DuckDB query block runs through DuckDB's Python API.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "fsmemory" / "export" / "README.md"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)

TENANTS = 6
FACTS = 3


def _blocks(kind: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [m.group(2) for m in _FENCE.finditer(text) if m.group(1) == kind]


def _recipe(marker: str) -> str:
    found = [code for code in _blocks("python") if marker in code]
    assert len(found) == 1, f"one README block with {marker!r}, found {len(found)}"
    return found[0]


def test_every_python_block_is_run_here() -> None:
    """A new python block in the export README must be run by a test of this file."""
    known = ("import pyarrow.dataset", "dask.distributed", "import ray")
    for code in _blocks("python"):
        assert sum(marker in code for marker in known) == 1, code[:200]


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """``users/tenant-N`` memories (``TENANTS`` x ``FACTS`` facts) and their export in
    ``out/``, made in a child process (the test process keeps its working folder)."""
    script = (
        "from fsmemory import KnowledgeMemory\n"
        "from fsmemory.export import export_parquet\n"
        f"for t in range({TENANTS}):\n"
        "    memory = KnowledgeMemory(f'users/tenant-{t}')\n"
        f"    for i in range({FACTS}):\n"
        "        memory.remember(f'tenant {t} likes item {i}')\n"
        "print(export_parquet('users', 'out').rows)\n"
    )
    done = _run_python(script, tmp_path, "fleet.py", timeout=120)
    assert done.stdout.split() == [str(TENANTS * FACTS)]
    return tmp_path


def _run_python(
    code: str, cwd: Path, name: str, timeout: float
) -> subprocess.CompletedProcess[str]:
    script = cwd / name
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done


def _exported_rows(dest: Path) -> list[tuple[str, str]]:
    import pyarrow.dataset as ds

    table = ds.dataset(dest / "memory", format="parquet", partitioning="hive").to_table()
    return sorted(
        zip(table.column("root").to_pylist(), table.column("content").to_pylist(), strict=True)
    )


def _check_sharded_export(fleet: Path, stdout: str) -> None:
    assert stdout.strip().splitlines()[-1] == f"{TENANTS * FACTS} rows"
    # the shards together wrote exactly what one unsharded run wrote
    assert _exported_rows(fleet / "exports" / "memory") == _exported_rows(fleet / "out")


def test_the_pyarrow_block_reads_the_export(fleet: Path) -> None:
    code = _recipe("import pyarrow.dataset") + "\nprint(table.num_rows)\n"
    done = _run_python(code, fleet, "read_with_pyarrow.py", timeout=60)
    assert done.stdout.split() == [str(TENANTS * FACTS)]


def test_the_duckdb_query_runs(fleet: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    (query,) = [q for q in _blocks("sql") if "read_parquet('out/memory" in q]
    cwd = os.getcwd()
    os.chdir(fleet)
    try:
        rows = duckdb.sql(query).fetchall()
    finally:
        os.chdir(cwd)
    assert sum(count for *_, count in rows) == TENANTS * FACTS


def test_the_dask_recipe_runs_as_a_script(fleet: Path) -> None:
    """It failed as a script (process workers re-ran a module without a main guard),
    and ``fsmemory[dask]`` did not install the distributed scheduler it needs."""
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    code = _recipe("dask.distributed")
    assert 'if __name__ == "__main__":' in code
    done = _run_python(code, fleet, "export_with_dask.py", timeout=180)
    _check_sharded_export(fleet, done.stdout)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")
def test_the_ray_recipe_runs_as_a_script(fleet: Path) -> None:
    code = _recipe("import ray")
    assert 'if __name__ == "__main__":' in code
    done = _run_python(code, fleet, "export_with_ray.py", timeout=300)
    _check_sharded_export(fleet, done.stdout)


def test_the_extras_install_what_the_recipes_import() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]

    def names(extra: str) -> set[str]:
        return {re.split(r"[<>=\[; ]", req, maxsplit=1)[0] for req in extras[extra]}

    assert {"dask", "distributed"} <= names("dask")
    assert "ray" in names("ray")
