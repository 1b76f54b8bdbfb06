"""MkDocs hooks of the fsmemory documentation site (named in mkdocs.yml).

* ``<!-- fsmemory-help: ARGS -->`` alone on a line is replaced, at build time, by the
  output of ``fsmemory ARGS --help`` (the installed command beside the Python running
  MkDocs), so the CLI page always shows the real help text.
* The docstrings are written with Sphinx cross-reference roles (``:class:`X```); in the
  rendered API reference ``:class:`` would show as literal text before the name, so the
  role is dropped and, as Sphinx does, ``~a.b.C`` shows as ``C``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_HELP = re.compile(r"^<!--[ \t]*fsmemory-help:[ \t]*([^\n]*?)[ \t]*-->[ \t]*$", re.M)
_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const|ref):<code>(~?)([^<]*)</code>"
)
#: the width argparse wraps help to (it reads COLUMNS)
HELP_COLUMNS = "88"


def fsmemory_command() -> list[str]:
    """The ``fsmemory`` console script of the environment running MkDocs."""
    beside = Path(sys.executable).with_name("fsmemory")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("fsmemory")
    if found is None:
        raise RuntimeError(
            "the fsmemory command is not installed: the CLI page shows its --help "
            "(pip install -e . in the environment that runs mkdocs)"
        )
    return [found]


def cli_help(args: str) -> str:
    """The text ``fsmemory ARGS --help`` prints, at a fixed width."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEMORY_")}
    env["COLUMNS"] = HELP_COLUMNS
    done = subprocess.run(
        [*fsmemory_command(), *args.split(), "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"fsmemory {args} --help failed: {done.stderr.strip()}")
    return done.stdout.rstrip()


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Put the live ``--help`` text where a page asks for it (the commands run at once)."""
    wanted = sorted({m.group(1) for m in _HELP.finditer(markdown)})
    if not wanted:
        return markdown
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = dict(zip(wanted, pool.map(cli_help, wanted), strict=True))
    return _HELP.sub(lambda m: f"```text\n{texts[m.group(1)]}\n```", markdown)


def _drop_role(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    if tilde:
        target = target.rsplit(".", 1)[-1]
    return f"<code>{target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """Render Sphinx roles of the docstrings as plain code."""
    return _ROLE.sub(_drop_role, html)
