"""Every code block of the README and of the documentation site (docs/) runs as written
and shows its real output.

Rules for authors (the test enforces them):

* a ````` ```python ````` block is run alone, in a fresh empty folder as the current
  directory, and must not raise;
* a ````` ```pycon ````` block (``>>>`` prompts) is run the same way as a doctest: what it
  shows after each prompt must be what Python prints (``...`` matches anything, e.g. a
  timestamp or an id; whitespace runs compare equal);
* a ````` ```console ````` block is a shell session in a fresh empty folder: each line
  starting with ``$ `` is run by bash (a trailing ``\\`` continues it on the next line)
  with this environment's ``bin`` first on PATH, must exit 0, and the lines up to the
  next prompt are what it prints (stdout and stderr; same matching as pycon);
* a block that needs a server, credentials or a placeholder value is marked on the line
  before its fence with ``<!-- not-run: why -->``; the reason must be said;
* in docs/, every other block is data (``json``, ``text``, ``markdown``, ``yaml``,
  ``toml``) or is marked not-run: a shell or SQL block that is not run says why.

Add a file to ``DOCS`` to hold it to the same rules (every page under docs/ is in it).
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE_DOCS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
DOCS = ["README.md", *SITE_DOCS]
#: fenced blocks that hold data, not code: nothing to run
DATA_KINDS = frozenset({"json", "text", "markdown", "md", "yaml", "toml", ""})
RUN_KINDS = {"python": "python", "py": "python", "pycon": "pycon", "console": "console"}

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_NOT_RUN = re.compile(r"<!--[ \t]*not-run:[ \t]*(\S[^\n]*?)[ \t]*-->\s*\Z")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    kind: str  # "python", "pycon", "console", or the fence's own language (not run)
    code: str
    skip_reason: str | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            kind = match.group(1)
            before = text[: match.start()]
            marker = _NOT_RUN.search(before)
            line = before.count("\n") + 1
            found.append(
                Block(
                    doc,
                    line,
                    RUN_KINDS.get(kind, kind),
                    match.group(2),
                    marker.group(1) if marker else None,
                )
            )
    return found


ALL_BLOCKS = blocks()
BLOCKS = [b for b in ALL_BLOCKS if b.kind in RUN_KINDS.values()]


def test_the_readme_has_runnable_blocks() -> None:
    runnable = [b for b in BLOCKS if b.skip_reason is None and b.doc == "README.md"]
    assert len(runnable) >= 5, [b.id for b in BLOCKS]
    assert any(b.kind == "pycon" for b in runnable)


def test_the_docs_pages_have_runnable_blocks() -> None:
    assert SITE_DOCS, "no pages under docs/"
    runnable = [b for b in BLOCKS if b.skip_reason is None and b.doc in SITE_DOCS]
    assert {b.kind for b in runnable} == {"python", "pycon", "console"}, [b.id for b in runnable]


def test_every_docs_block_runs_or_says_why() -> None:
    unrun = [
        b.id
        for b in ALL_BLOCKS
        if b.doc in SITE_DOCS
        and b.kind not in RUN_KINDS.values()
        and b.kind not in DATA_KINDS
        and b.skip_reason is None
    ]
    assert not unrun, f"blocks in docs/ neither run nor marked not-run: {unrun}"


def console_steps(code: str) -> list[tuple[str, str]]:
    """A console block as ``(command, expected output)`` pairs, in order."""
    steps: list[tuple[str, list[str]]] = []
    lines = iter(code.splitlines())
    for line in lines:
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                command += "\n" + next(lines, "")
            steps.append((command, []))
        elif not steps:
            raise AssertionError(f"a console block starts with output, not a $ prompt: {line!r}")
        else:
            steps[-1][1].append(line)
    return [(command, "\n".join(out)) for command, out in steps]


def test_console_steps() -> None:
    code = "$ echo a \\\n  b\na b\n$ true\n$ printf 'x\\ny'\nx\ny\n"
    assert console_steps(code) == [
        ("echo a \\\n  b", "a b"),
        ("true", ""),
        ("printf 'x\\ny'", "x\ny"),
    ]
    with pytest.raises(AssertionError, match="starts with output"):
        console_steps("output\n$ true\n")


def run_console(block: Block, cwd: Path) -> None:
    """Run a console block's commands in ``cwd``; each must exit 0 and print what it shows."""
    steps = console_steps(block.code)
    assert steps, f"{block.id}: a console block without $ prompts"
    env = {k: v for k, v in os.environ.items() if k != "FSMEMORY_STORE"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["COLUMNS"] = "88"
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    for command, want in steps:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            check=False,
        )
        got = done.stdout
        assert done.returncode == 0, f"{block.id}: `{command}` exited {done.returncode}:\n{got}"
        if not want.strip():
            assert not got.strip(), f"{block.id}: `{command}` shows no output but printed:\n{got}"
            continue
        assert checker.check_output(want + "\n", got, flags), (
            f"{block.id}: `{command}` printed:\n{got}\nthe block shows:\n{want}"
        )


def test_the_marker_is_recognised() -> None:
    assert _NOT_RUN.search("text\n<!-- not-run: needs S3 credentials -->\n")
    assert not _NOT_RUN.search("<!-- not-run: x -->\n\nmore text\n")
    assert not _NOT_RUN.search("<!-- not-run: -->\n")  # a reason is required


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"not run: {block.skip_reason}")
    monkeypatch.chdir(tmp_path)
    name = f"{block.doc} line {block.line}"
    if block.kind == "console":
        run_console(block, tmp_path)
        return
    if block.kind == "python":
        code = compile(block.code, name, "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, {"__name__": "__readme__"})
        return
    test = doctest.DocTestParser().get_doctest(
        block.code, {"__name__": "__readme__"}, name, block.doc, block.line
    )
    assert test.examples, f"{name}: a pycon block without >>> prompts"
    out = io.StringIO()
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()
