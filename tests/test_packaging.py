"""What a release publishes: the sdist and wheel build without warnings, carry LICENSE
(and the sdist the test suite), and the metadata says what the project is (issue 29)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

import fsmemory

ROOT = Path(__file__).resolve().parent.parent
# What a checkout holds beside the sources; none of it may reach a distribution.
LOCAL = shutil.ignore_patterns(
    ".git", ".venv*", "__pycache__", "*.egg-info", "build", "dist", "site", "agent_memory",
    ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", "out", "node_modules",
)  # fmt: skip


def pyproject() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_licence_metadata_is_an_spdx_expression() -> None:
    project = pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    backend = pyproject()["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(7[7-9]|[89]\d)(\.\d+)*", r) for r in backend)


def test_classifiers_name_every_python_from_the_floor_to_3_13() -> None:
    project = pyproject()["project"]
    assert project["requires-python"] == ">=3.11"
    versions = {
        c.rsplit(" ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert versions == {"3.11", "3.12", "3.13"}
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(project["urls"])


def test_the_version_is_written_once() -> None:
    config = pyproject()
    assert "version" not in config["project"] and config["project"]["dynamic"] == ["version"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "fsmemory.__version__"}
    assert importlib.metadata.version("fsmemory") == fsmemory.__version__
    assert f"## [{fsmemory.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


def test_developer_tools_are_groups_and_export_is_an_extra() -> None:
    config = pyproject()
    extras = config["project"]["optional-dependencies"]
    assert "test" not in extras and "bench" not in extras
    assert {"test", "bench"} <= set(config["dependency-groups"])
    assert any(r.startswith("pytest>=") for r in config["dependency-groups"]["test"])
    assert [r.split(";")[0] for r in extras["export"]] == ["pyarrow>=15", "pyarrow>=18"]
    assert extras["parquet"] == ["fsmemory[export]"]
    assert "export" in extras["all"][0]


def test_floors_that_do_not_install_or_do_not_work_are_gone() -> None:
    project = pyproject()["project"]
    every = list(project["dependencies"])
    for requirements in project["optional-dependencies"].values():
        every += requirements
    assert "redis>=5.0.1" in every
    assert "fsspec>=2024.12.0" in every
    assert "PyStemmer>=2.2.0.2" in every  # 2.2.0 and 2.2.0.1 do not install


def build(tmp_path: Path) -> tuple[Path, Path, str]:
    """The sdist and the wheel built from a copy of the sources as ``python -m build``
    builds them (the wheel from the unpacked sdist), and everything the backend printed."""
    pytest.importorskip("setuptools", minversion="77.0.3")
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=LOCAL)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = tmp_path / "dist"

    def backend(call: str, cwd: Path) -> str:
        code = f"from setuptools import build_meta as b; print(b.{call}({str(out)!r}))"
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
            timeout=300, check=True,
        )  # fmt: skip
        return done.stdout + done.stderr

    log = backend("build_sdist", source)
    sdist = out / log.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    log += backend("build_wheel", tmp_path / "unpacked" / sdist.name.removesuffix(".tar.gz"))
    wheel = next(out.glob("*.whl"))
    return sdist, wheel, log


def test_sdist_and_wheel_build_without_warnings_and_carry_the_licence(tmp_path: Path) -> None:
    sdist, wheel, log = build(tmp_path)
    warnings = [line for line in log.splitlines() if re.search(r"warn", line, re.IGNORECASE)]
    assert warnings == []
    base = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as tar:
        names = {name.removeprefix(base + "/") for name in tar.getnames()}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml"} <= names
    assert {"tests/conftest.py", "tests/test_demo.py", "tests/test_packaging.py"} <= names
    assert "examples/quickstart.py" in names
    assert any(n.startswith("benchmarks/data/") and n.endswith(".json") for n in names)
    assert not [n for n in names if "__pycache__" in n or n.startswith(".venv")]
    with zipfile.ZipFile(wheel) as whl:
        files = set(whl.namelist())
        info = f"fsmemory-{fsmemory.__version__}.dist-info"
        metadata = whl.read(f"{info}/METADATA").decode()
    assert f"{info}/licenses/LICENSE" in files
    assert not [n for n in files if n.startswith("tests/")]
    assert "License-Expression: Apache-2.0" in metadata
    assert f"Version: {fsmemory.__version__}" in metadata
    assert "Classifier: Programming Language :: Python :: 3.13" in metadata
    assert "Provides-Extra: export" in metadata and "Provides-Extra: test" not in metadata
