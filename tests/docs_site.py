"""The documentation site's build, for ``tests/test_docs.py``.

``mkdocs build --strict`` takes a while (the API reference, and the CLI page runs every
command's ``--help``). ``tests/conftest.py`` starts it in the background as soon as the
session has collected a test that needs the site, so it runs beside the tests collected
before ``test_docs.py`` instead of in front of them; the ``site`` fixture waits for it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: how long a build may take, from its start
BUILD_TIMEOUT = 300.0


class SiteBuild:
    """``mkdocs build --strict`` of the repository's site into ``folder / "site"``
    (its output in ``folder / "mkdocs.log"``), running."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.out = folder / "site"
        self._log = folder / "mkdocs.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEMORY_")}
        env["NO_MKDOCS_2_WARNING"] = "1"
        self._started = time.monotonic()
        with self._log.open("wb") as log:  # the child keeps its own copy of the handle
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(self.out)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def result(self) -> tuple[int, str]:
        """Wait for the build; its exit code and what it printed (stdout and stderr)."""
        left = BUILD_TIMEOUT - (time.monotonic() - self._started)
        try:
            code = self.process.wait(timeout=max(left, 0.0))
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        return code, self._log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """End the build if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


#: the session's background build, when one was started
BUILD_KEY = pytest.StashKey[SiteBuild]()


def needs_site(items: list[pytest.Item]) -> bool:
    """True when one of ``items`` uses the built site (``test_docs.py``'s ``site``)."""
    return any(
        item.path.name == "test_docs.py" and "site" in getattr(item, "fixturenames", ())
        for item in items
    )


def start_in_background(config: pytest.Config) -> None:
    """Start the session's build in a temporary folder (removed by :func:`finish`)."""
    config.stash[BUILD_KEY] = SiteBuild(Path(tempfile.mkdtemp(prefix="fsmemory-site-")))


def finish(config: pytest.Config) -> None:
    """Stop the session's build if it still runs and remove its folder."""
    build = config.stash.get(BUILD_KEY, None)
    if build is None:
        return
    del config.stash[BUILD_KEY]
    with contextlib.suppress(Exception):
        build.stop()
    shutil.rmtree(build.folder, ignore_errors=True)
