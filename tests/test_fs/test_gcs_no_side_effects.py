"""Opening a gs:// root changes no process-wide state: the environment stays as it was."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("gcsfs")


def test_opening_a_gcs_root_leaves_the_environment_alone() -> None:
    code = (
        "import os\n"
        "before = dict(os.environ)\n"
        "from fsmemory.fs.gcs import _gcsfs_class\n"
        "cls = _gcsfs_class()\n"
        "import gcsfs.core\n"
        "assert cls is gcsfs.core.GCSFileSystem, cls\n"
        "assert dict(os.environ) == before, set(os.environ) ^ set(before)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
