"""The pieces of ``make test-pythons`` (tests/wheel_check.py) that decide what it checks
and whether it fails: which Pythons, which README blocks, a failing block. The whole run
(a wheel and a venv per Python, a few minutes) is ``make test-pythons`` itself."""

from __future__ import annotations

import os
import stat
import sys
import zipfile
from pathlib import Path

import pytest

from tests import wheel_check
from tests.test_readme import Block
from tests.wheel_check import Row, env_size_mb, find_python, quickstart_blocks, run_block


def test_the_pythons_checked_are_the_ones_the_classifiers_name(tmp_path: Path) -> None:
    assert wheel_check.supported_versions() == ["3.11", "3.12", "3.13"]
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nclassifiers = ["Programming Language :: Python :: 3.14",'
        ' "Programming Language :: Python :: 3.9", "Programming Language :: Python :: 3",'
        ' "Programming Language :: Python :: 3 :: Only"]\n'
    )
    assert wheel_check.supported_versions(pyproject) == ["3.9", "3.14"]


def test_the_quickstart_is_the_opening_example_and_the_api_tour() -> None:
    chosen = quickstart_blocks()
    readme = (wheel_check.ROOT / "README.md").read_text(encoding="utf-8")
    first_fence = readme.count("\n", 0, readme.index("```")) + 1
    assert chosen[0].line == first_fence and chosen[0].kind == "pycon"
    assert {b.kind for b in chosen} == {"pycon", "python", "console"}
    assert all(b.doc == "README.md" and b.skip_reason is None for b in chosen)
    # the command line's console blocks run the installed `fsmemory` and `python -m fsmemory`
    console = "\n".join(b.code for b in chosen if b.kind == "console")
    assert "$ FSMEMORY_STORE=" in console and "python -m fsmemory" in console


def test_a_quickstart_section_without_blocks_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wheel_check, "QUICKSTART_SECTIONS", ("", "No such section"))
    with pytest.raises(LookupError, match="No such section"):
        quickstart_blocks()


def fake_python(path: Path, prints: str, status: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {prints}\nexit {status}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_python_takes_path_then_the_newest_pyenv_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    on_path = tmp_path / "bin"
    # a pyenv shim for a version pyenv does not have selected: fails, so pyenv's own wins
    fake_python(on_path / "python3.99", "'pyenv: python3.99: command not found'", 127)
    fake_python(tmp_path / "pyenv/versions/3.99.2/bin/python", "3.99.2")
    fake_python(tmp_path / "pyenv/versions/3.99.10/bin/python", "3.99.10")
    fake_python(tmp_path / "pyenv/versions/3.9.1/bin/python", "3.9.1")
    found = find_python("3.99", path=str(on_path))
    assert found == (tmp_path / "pyenv/versions/3.99.10/bin/python", "3.99.10")
    # one on PATH that runs and is the right version comes first
    fake_python(on_path / "python3.99", "3.99.0")
    assert find_python("3.99", path=str(on_path)) == (on_path / "python3.99", "3.99.0")
    # an interpreter that reports another version is not taken
    assert find_python("3.9", path=str(on_path)) == (
        tmp_path / "pyenv/versions/3.9.1/bin/python",
        "3.9.1",
    )
    assert find_python("3.98", path=str(on_path)) is None


def test_env_size_counts_files_once_and_links_as_links(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a").write_bytes(b"x" * 1_500_000)
    (tmp_path / "b").write_bytes(b"y" * 500_000)
    (tmp_path / "link").symlink_to(tmp_path / "lib" / "a")
    size = env_size_mb(tmp_path)
    assert 2.0 <= size < 2.001


@pytest.fixture
def venv_like(tmp_path: Path) -> Path:
    """A folder with ``bin/python`` (this interpreter), as a venv has."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    return tmp_path / "venv"


@pytest.mark.parametrize(
    ("kind", "passing", "failing"),
    [
        ("python", "import sys\nprint(sys.argv)\n", "raise SystemExit(3)\n"),
        ("pycon", ">>> 1 + 1\n2\n>>> 'a' * 3\n'aaa'\n", ">>> 1 + 1\n3\n"),
        ("console", "$ echo one \\\n  two\none two\n$ true\n", "$ echo one\ntwo\n"),
    ],
)
def test_a_block_passes_or_fails_as_the_readme_test_would(
    kind: str, passing: str, failing: str, venv_like: Path, tmp_path: Path
) -> None:
    row = Row("3.x")
    assert run_block(Block("README.md", 1, kind, passing, None), venv_like, tmp_path, row)
    assert row.failures == []
    assert not run_block(Block("README.md", 2, kind, failing, None), venv_like, tmp_path, row)
    assert len(row.failures) == 1 and row.failures[0].startswith("README.md:2")


def test_console_blocks_run_the_venvs_commands_in_an_empty_folder(
    venv_like: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "elsewhere"))
    code = (
        "$ command -v python\n"
        f"{venv_like}/bin/python\n"
        "$ ls -A | wc -l\n0\n"
        '$ echo "${PYTHONPATH:-unset}"\nunset\n'
    )
    row = Row("3.x")
    assert run_block(Block("README.md", 1, "console", code, None), venv_like, tmp_path, row), (
        row.failures
    )
    assert os.environ["PYTHONPATH"] == str(tmp_path / "elsewhere")  # restored afterwards


def test_the_table_says_which_python_was_skipped() -> None:
    rows = [
        Row("3.11.7", Path("python3.11"), 2.0, 9.5, "4/4 ok", "2/2 ok", 30.46),
        Row("3.12"),
    ]
    lines = wheel_check.table(rows).splitlines()
    assert lines[2] == "| 3.11.7 | 2.0 | 9.5 | 4/4 ok | 2/2 ok | 30.5 |"
    assert lines[3] == "| 3.12 | - | - | skipped: not found | - | - |"


def test_no_python_found_fails_before_building(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(wheel_check, "find_python", lambda version: None)

    def no_build(work: Path) -> Path:
        raise AssertionError("built a wheel with no Python to install it on")

    monkeypatch.setattr(wheel_check, "build_wheel", no_build)
    assert wheel_check.main(["--python", "3.98", "--python", "3.99"]) == 1
    out, err = capsys.readouterr()
    assert "Python 3.98: skipped" in out and "FAILED: none of Python 3.98, 3.99 found" in err


@pytest.mark.parametrize("fails", [False, True])
def test_the_exit_status_is_1_when_a_found_python_fails(
    fails: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing Python is skipped; a found one that fails makes the run fail."""
    found = {"3.98": None, "3.99": (Path("/x/python3.99"), "3.99.1")}
    monkeypatch.setattr(wheel_check, "find_python", found.get)

    def fake_build(work: Path) -> Path:
        (work / "fsmemory-0-py3-none-any.whl").write_bytes(b"PK")
        return work / "fsmemory-0-py3-none-any.whl"

    def fake_check(row: Row, wheel: Path, work: Path, quickstart: list[Block]) -> Row:
        row.quickstart = "3/4 ok" if fails else "4/4 ok"
        row.failures += ["README.md:8: boom"] if fails else []
        return row

    monkeypatch.setattr(wheel_check, "build_wheel", fake_build)
    monkeypatch.setattr(wheel_check, "missing_from_wheel", lambda wheel, source: [])
    monkeypatch.setattr(wheel_check, "check_python", fake_check)
    assert wheel_check.main(["--python", "3.98", "--python", "3.99"]) == int(fails)
    out, err = capsys.readouterr()
    assert "| 3.98 | - | - | skipped: not found | - | - |" in out
    assert f"| 3.99.1 | 0.0 | 0.0 | {'3/4' if fails else '4/4'} ok |" in out
    assert ("FAILED README.md:8: boom" in err) is fails


def test_a_module_left_out_of_the_wheel_is_named(tmp_path: Path) -> None:
    source = tmp_path / "src"
    for name in ["__init__.py", "py.typed", "cli.py", "sub/__init__.py", "nopkg/mod.py"]:
        (source / "fsmemory" / name).parent.mkdir(parents=True, exist_ok=True)
        (source / "fsmemory" / name).write_text("")
    (source / "fsmemory" / "__pycache__").mkdir()
    (source / "fsmemory" / "__pycache__" / "cli.cpython-311.py").write_text("")
    (source / "fsmemory" / "notes.txt").write_text("")
    wheel = tmp_path / "fsmemory-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as whl:
        for name in ["__init__.py", "py.typed", "cli.py", "sub/__init__.py"]:
            whl.writestr(f"fsmemory/{name}", "")
    assert wheel_check.missing_from_wheel(wheel, source) == ["fsmemory/nopkg/mod.py"]
    with zipfile.ZipFile(wheel, "a") as whl:
        whl.writestr("fsmemory/nopkg/mod.py", "")
    assert wheel_check.missing_from_wheel(wheel, source) == []
