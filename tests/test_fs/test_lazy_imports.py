"""What a local memory does not need it does not load: the retry machinery (retries serve
network roots), URL parsing (only a path segment with ``%`` needs it), the vector modules
(only an embedder needs them) and ``hashlib`` (OpenSSL; only versioned reads need it),
while ``fsmemory.fs`` still offers the retry names and every root still checks a
``retry`` option."""

from __future__ import annotations

import inspect
import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

import fsmemory.fs
from fsmemory.errors import InvalidInputError, InvalidPathError
from fsmemory.fs import open_root

SCRIPT = """
import json, sys
from fsmemory import KnowledgeMemory
km = KnowledgeMemory(sys.argv[1])
km.remember("Prefers dark mode", category="preferences", persistent=True)
km.remember("Deploys on Fridays")
assert [e.content for e in km.recall("dark mode")] == ["Prefers dark mode"]
assert "Deploys on Fridays" in km.build_context()
unneeded = ("fsmemory.fs.retry", "random", "urllib.parse", "ipaddress")
print(json.dumps(sorted(m for m in unneeded if m in sys.modules)))
"""

# What ``from fsmemory import KnowledgeMemory`` alone must not load (a user's first line;
# benchmarks/run.py's import-cost table measures it).
IMPORT_ONLY = """
import json, sys
from fsmemory import KnowledgeMemory
deferred = (
    "fsmemory.memory._vectors", "fsmemory.memory._vecfile", "fsmemory.memory._vecrank",
    "hashlib", "mmap", "base64", "logging",
)
from fsmemory.memory import _analysis
compiled = ["spaceless-script pattern"] if _analysis._unspaced.cache_info().currsize else []
print(json.dumps(sorted(m for m in deferred if m in sys.modules) + compiled))
"""


def _installed_run(script: str, *args: str) -> list[str]:
    """Run as an installed package runs: without ``site`` (this checkout's editable
    finder imports ``urllib.parse`` into every process), the package and its
    dependencies on ``PYTHONPATH``; the script's last line of output, as JSON."""
    checkout = Path(fsmemory.fs.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), *site.getsitepackages()])}
    done = subprocess.run(
        [sys.executable, "-S", "-c", script, *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_a_local_memory_loads_neither_retries_nor_url_parsing(tmp_path: Path) -> None:
    assert _installed_run(SCRIPT, str(tmp_path / "m")) == []


def test_the_first_line_loads_no_vector_module_nor_logging_nor_hashlib() -> None:
    assert _installed_run(IMPORT_ONLY) == []


LOG_LATE = """
import sys
from fsmemory import KnowledgeMemory
from fsmemory.memory import _index_cache
assert "logging" not in sys.modules
_index_cache.logger.warning("first record")
import logging
print([type(h).__name__ for h in logging.getLogger("fsmemory").handlers])
if sys.argv[1] == "configured":
    logging.basicConfig()
    _index_cache.logger.warning("second record")
"""


@pytest.mark.parametrize("host", ["silent", "configured"])
def test_a_logger_loaded_late_is_silent_until_the_host_configures_logging(host: str) -> None:
    """The first record loads ``logging`` and gives the package logger its
    ``NullHandler`` before it is handled: nothing reaches stderr (Python's last-resort
    handler stays out) until the host configures logging; the module's logger is the
    standard one of its name."""
    checkout = Path(fsmemory.fs.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), *site.getsitepackages()])}
    done = subprocess.run(
        [sys.executable, "-S", "-c", LOG_LATE, host],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert done.stdout.strip() == "['NullHandler']"
    if host == "silent":
        assert done.stderr == ""
    else:
        assert done.stderr == "WARNING:fsmemory.memory._index_cache:second record\n"


def test_a_logger_taken_after_logging_loaded_is_the_standard_one() -> None:
    import logging

    from fsmemory._log import get_logger

    assert get_logger("fsmemory.example") is logging.getLogger("fsmemory.example")
    handlers = logging.getLogger("fsmemory").handlers
    assert [type(h) for h in handlers].count(logging.NullHandler) == 1


def test_spaceless_scripts_are_still_split_into_pairs() -> None:
    from fsmemory.memory._analysis import words

    assert words("東京タワー visit") == ["東京", "京タ", "タワ", "ワー", "visit"]
    assert words("café") == ["cafe"]


def test_an_embedder_still_gets_the_default_batch_size() -> None:
    from fsmemory.memory import _settings, _vectors
    from fsmemory.memory.knowledge import KnowledgeMemory

    assert _vectors.DEFAULT_EMBED_BATCH == _settings.DEFAULT_EMBED_BATCH == 64
    default = inspect.signature(KnowledgeMemory).parameters["embed_batch_size"].default
    assert default == _vectors.DEFAULT_EMBED_BATCH


def test_a_percent_encoded_traversal_is_still_refused(tmp_path: Path) -> None:
    root = open_root(tmp_path / "r")
    for path in ("a/%2e%2e/b", "a/%2E%2e", "x%2Fy"):
        with pytest.raises(InvalidPathError):
            root.write(path, b"no")
    root.write("100%25/ok.md", b"yes")
    assert root.read_bytes("100%25/ok.md") == b"yes"
    root.close()


def test_the_retry_names_are_still_exported() -> None:
    from fsmemory.fs import retry

    assert fsmemory.fs.RetryPolicy is retry.RetryPolicy
    assert fsmemory.fs.DEFAULT_RETRY is retry.DEFAULT_RETRY
    assert fsmemory.fs.NO_RETRY is retry.NO_RETRY
    assert {"DEFAULT_RETRY", "NO_RETRY", "RetryPolicy"} <= set(dir(fsmemory.fs))


def test_a_local_root_still_checks_a_retry_option(tmp_path: Path) -> None:
    root = open_root(tmp_path / "ok", {"retry": {"attempts": 3}})
    root.close()
    with pytest.raises(InvalidInputError):
        open_root(tmp_path / "bad", {"retry": {"attempts": "many"}})
