"""Every Python block of the README runs as written and shows its real output.

Rules for README authors (the test enforces them):

* a ````` ```python ````` block is run alone, in a fresh empty folder as the current
  directory, and must not raise;
* a ````` ```pycon ````` block (``>>>`` prompts) is run the same way as a doctest: what it
  shows after each prompt must be what Python prints (``...`` matches anything, e.g. a
  timestamp or an id; whitespace runs compare equal);
* a block that needs a server, credentials or a placeholder value is marked on the line
  before its fence with ``<!-- not-run: why -->``; the reason must be said.

Add a file to ``DOCS`` to hold it to the same rules.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md"]

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_NOT_RUN = re.compile(r"<!--[ \t]*not-run:[ \t]*(\S[^\n]*?)[ \t]*-->\s*\Z")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    kind: str  # "python" or "pycon"
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
            if kind not in ("python", "py", "pycon"):
                continue
            before = text[: match.start()]
            marker = _NOT_RUN.search(before)
            line = before.count("\n") + 1
            found.append(
                Block(
                    doc,
                    line,
                    "pycon" if kind == "pycon" else "python",
                    match.group(2),
                    marker.group(1) if marker else None,
                )
            )
    return found


BLOCKS = blocks()


def test_the_readme_has_runnable_blocks() -> None:
    runnable = [b for b in BLOCKS if b.skip_reason is None]
    assert len(runnable) >= 5, [b.id for b in BLOCKS]
    assert any(b.kind == "pycon" for b in runnable)


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
