"""``make test-pythons``: the wheel, installed alone, works on every Python fsmemory supports.

Run from the repository root as ``python -m tests.wheel_check`` (it needs ``build`` and
the test tools: the ``.venv`` that ``make test`` sets up, plus ``build``). It

1. builds the wheel once with ``python -m build --wheel`` from a clean copy of the
   sources (no ``build/`` or ``*.egg-info`` left over from a developer's tree) and checks
   it holds every module of the package and ``py.typed``;
2. for each Python the ``Programming Language :: Python :: 3.X`` classifiers name, found
   as ``python3.X`` on PATH or under pyenv (a missing one is skipped and said so), creates
   a fresh venv and ``pip install``\\s the wheel alone (the core: no extras), then runs
   ``pip check``;
3. runs the README's quickstart blocks there as a user would, each in an empty folder:
   ``python`` blocks with the venv's ``python``, ``pycon`` blocks as doctests with
   ``python -m doctest``, ``console`` blocks by bash with the venv's ``bin`` first on
   PATH (``tests/test_readme.py`` extracts and checks them, so both read the README the
   same way), then ``fsmemory --help`` and ``python -m fsmemory --help``;
4. prints one row per Python: install seconds, quickstart, ``--help``, environment size.

The exit status is 1 when a found Python fails or none is found, else 0.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

from tests.test_packaging import LOCAL
from tests.test_readme import Block, blocks, run_console

ROOT = Path(__file__).resolve().parents[1]
#: the README sections whose blocks are the quickstart: the opening example (before the
#: first ``##`` heading) and the API tour with its command line
QUICKSTART_SECTIONS = ("", "API tour")
#: variables of the developer's shell that would make the fresh venv see something else
_LEAKY_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "FSMEMORY_STORE")
_PROBE = "import sys; print('%d.%d.%d' % sys.version_info[:3])"


def supported_versions(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The ``3.X`` versions the project's classifiers name, oldest first."""
    with open(pyproject, "rb") as f:
        classifiers = tomllib.load(f)["project"]["classifiers"]
    found = {
        m.group(1)
        for c in classifiers
        if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))
    }
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def quickstart_blocks(readme: str = "README.md") -> list[Block]:
    """The runnable blocks of the README's quickstart sections (``QUICKSTART_SECTIONS``),
    as ``tests/test_readme.py`` extracts them; raises when a section has none."""
    text = (ROOT / readme).read_text(encoding="utf-8")
    headings = [
        (text.count("\n", 0, m.start()) + 1, m.group(1).strip())
        for m in re.finditer(r"^## (.+)$", text, re.M)
    ]

    def section(line: int) -> str:
        return next((name for at, name in reversed(headings) if at < line), "")

    chosen = [
        b
        for b in blocks()
        if b.doc == readme
        and b.kind in ("python", "pycon", "console")
        and b.skip_reason is None
        and section(b.line) in QUICKSTART_SECTIONS
    ]
    empty = set(QUICKSTART_SECTIONS) - {section(b.line) for b in chosen}
    if empty:
        raise LookupError(f"{readme}: no runnable block in section(s) {sorted(empty)}")
    return chosen


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", name))


def _pyenv_roots() -> list[Path]:
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    return [Path(r) for r in dict.fromkeys(roots) if r]


def find_python(version: str, path: str | None = None) -> tuple[Path, str] | None:
    """An interpreter for ``version`` (``"3.12"``) and its full version: ``python3.12``
    on ``path`` (default: PATH) if it runs and is that version, else the newest
    ``versions/3.12.*`` under pyenv's root that is; ``None`` when there is none."""
    candidates: list[Path] = []
    on_path = shutil.which(f"python{version}", path=path)
    if on_path:
        candidates.append(Path(on_path))
    for root in _pyenv_roots():
        installed = sorted(
            (root / "versions").glob(f"{version}.*"), key=lambda p: _version_key(p.name)
        )
        candidates += [p / "bin" / "python" for p in reversed(installed)]
    for candidate in candidates:
        try:
            probe = subprocess.run(
                [str(candidate), "-c", _PROBE],
                capture_output=True,
                text=True,
                timeout=60,
                env=user_env(),
                check=False,
            )
        except OSError:
            continue
        full = probe.stdout.strip()
        if probe.returncode == 0 and full.startswith(version + "."):
            return candidate, full
    return None


def user_env(bin_dir: Path | None = None) -> dict[str, str]:
    """The environment a user's shell gives a command: this one without the variables
    that point Python elsewhere, with ``bin_dir`` first on PATH when given."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    if bin_dir is not None:
        env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    return env


def env_size_mb(folder: Path) -> float:
    """The size of the files under ``folder`` in MB (10**6 bytes), links not followed."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total / 1e6


def build_wheel(work: Path) -> Path:
    """The wheel built by ``python -m build --wheel`` from a clean copy of the sources."""
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=LOCAL)
    out = work / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        env=user_env(),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"python -m build --wheel failed:\n{done.stdout}{done.stderr}")
    (wheel,) = out.glob("fsmemory-*.whl")
    return wheel


def missing_from_wheel(wheel: Path, source: Path) -> list[str]:
    """The package's files under ``source`` (modules, ``py.typed``) the wheel lacks: a
    folder without ``__init__.py`` is left out of the wheel though the tests, run from
    the sources, never notice."""
    package = source / "fsmemory"
    wanted = {
        p.relative_to(source).as_posix()
        for p in package.rglob("*")
        if p.is_file()
        and (p.suffix == ".py" or p.name == "py.typed")
        and "__pycache__" not in p.parts
    }
    with zipfile.ZipFile(wheel) as whl:
        return sorted(wanted - set(whl.namelist()))


@dataclass
class Row:
    """What one Python did with the wheel."""

    version: str
    python: Path | None = None
    venv_s: float = 0.0
    install_s: float = 0.0
    quickstart: str = "-"
    help: str = "-"
    size_mb: float = 0.0
    failures: list[str] = field(default_factory=list)


def _run(cmd: list[str], cwd: Path, env: dict[str, str], what: str, row: Row) -> str | None:
    """Run ``cmd``; its output, or ``None`` after recording a failure named ``what``."""
    try:
        done = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        row.failures.append(f"{what}: timed out")
        return None
    if done.returncode != 0:
        row.failures.append(f"{what}: exit status {done.returncode}\n{done.stdout}")
        return None
    return done.stdout


def run_block(block: Block, venv: Path, work: Path, row: Row) -> bool:
    """Run one quickstart block with the venv's Python in a new empty folder."""
    bin_dir = venv / "bin"
    name = f"README_line{block.line}"
    cwd = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=work))
    failures = len(row.failures)
    if block.kind == "console":
        # run_console puts the bin folder of sys.executable first on PATH: the venv's.
        try:
            with (
                mock.patch.object(sys, "executable", str(bin_dir / "python")),
                mock.patch.dict(os.environ, user_env(), clear=True),
            ):
                run_console(block, cwd)
        except AssertionError as e:
            said = str(e)
            row.failures.append(said if said.startswith(block.id) else f"{block.id}: {said}")
    else:
        script = work / (name + (".py" if block.kind == "python" else ".txt"))
        script.write_text(block.code, encoding="utf-8")
        cmd = [str(bin_dir / "python"), str(script)]
        if block.kind == "pycon":
            flags = ["-o", "ELLIPSIS", "-o", "NORMALIZE_WHITESPACE"]
            cmd = [str(bin_dir / "python"), "-m", "doctest", *flags, str(script)]
        _run(cmd, cwd, user_env(bin_dir), block.id, row)
    return len(row.failures) == failures


def check_python(row: Row, wheel: Path, work: Path, quickstart: list[Block]) -> Row:
    """A fresh venv on ``row.python`` with the wheel alone, and the quickstart run in it."""
    assert row.python is not None
    venv = work / f"venv-{row.version}"
    env = user_env()
    start = time.perf_counter()
    if _run([str(row.python), "-m", "venv", str(venv)], work, env, "venv", row) is None:
        return row
    row.venv_s = time.perf_counter() - start
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    start = time.perf_counter()
    if _run([*pip, "install", "--quiet", str(wheel)], work, env, "pip install", row) is None:
        return row
    row.install_s = time.perf_counter() - start
    row.size_mb = env_size_mb(venv)
    _run([*pip, "check"], work, env, "pip check", row)
    where = _run(
        [python, "-c", "import fsmemory; print(fsmemory.__file__)"], work, env, "import", row
    )
    if where is not None and not Path(where.strip()).is_relative_to(venv):
        row.failures.append(f"import: fsmemory came from {where.strip()}, not the venv")
    ok = [run_block(b, venv, work, row) for b in quickstart]
    row.quickstart = f"{sum(ok)}/{len(ok)} ok"
    helps = [
        _run(
            [str(venv / "bin" / "fsmemory"), "--help"],
            work,
            user_env(venv / "bin"),
            "fsmemory --help",
            row,
        ),
        _run([python, "-m", "fsmemory", "--help"], work, env, "python -m fsmemory --help", row),
    ]
    shown = [h for h in helps if h is not None and h.startswith("usage: ")]
    row.help = f"{len(shown)}/{len(helps)} ok"
    if len(shown) < len(helps):
        row.failures.append("--help: not a usage message:\n" + "\n".join(h or "" for h in helps))
    return row


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table (a skipped Python says so)."""
    lines = [
        "| python | venv s | install s | quickstart | --help | env MB |",
        "| --- | ---: | ---: | --- | --- | ---: |",
    ]
    for r in rows:
        if r.python is None:
            lines.append(f"| {r.version} | - | - | skipped: not found | - | - |")
            continue
        lines.append(
            f"| {r.version} | {r.venv_s:.1f} | {r.install_s:.1f} | {r.quickstart} | "
            f"{r.help} | {r.size_mb:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Build, install and run on each Python; print the table; 1 on any failure."""
    parser = argparse.ArgumentParser(prog="python -m tests.wheel_check", description=__doc__)
    parser.add_argument(
        "--python",
        action="append",
        metavar="3.X",
        help="a Python version to check (repeatable; default: every one the classifiers name)",
    )
    args = parser.parse_args(argv)
    versions: list[str] = args.python or supported_versions()
    quickstart = quickstart_blocks()
    began = time.perf_counter()
    rows = []
    for version in versions:
        found = find_python(version)
        if found is None:
            print(
                f"== Python {version}: skipped, python{version} is neither on PATH nor under pyenv"
            )
            rows.append(Row(version))
        else:
            print(f"== Python {found[1]}: {found[0]}")
            rows.append(Row(found[1], found[0]))
    if all(r.python is None for r in rows):
        print(f"FAILED: none of Python {', '.join(versions)} found", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="fsmemory-wheel-check-") as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        try:
            wheel = build_wheel(work)
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            print(f"FAILED: {e}", file=sys.stderr)
            return 1
        missing = missing_from_wheel(wheel, work / "src")
        if missing:
            print(f"FAILED: {wheel.name} lacks {', '.join(missing)}", file=sys.stderr)
            return 1
        print(
            f"== python -m build --wheel: {wheel.name}, {wheel.stat().st_size / 1e3:.0f} kB"
            f" in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        print(f"== quickstart: README.md lines {', '.join(str(b.line) for b in quickstart)}")
        for row in rows:
            if row.python is None:
                continue
            print(f"== Python {row.version}: venv, pip install, quickstart, --help", flush=True)
            try:
                check_python(row, wheel, work, quickstart)
            except Exception:
                row.failures.append(traceback.format_exc())
            for failure in row.failures:
                print(f"   FAILED {failure}", file=sys.stderr)
    print()
    print(table(rows))
    print(f"\n{time.perf_counter() - began:.0f} s in all")
    return 1 if any(r.failures for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
