"""Local folders where ``fcntl`` is missing (Windows): the package imports, a memory
opens and reads, writes lock with ``msvcrt.locking`` when it exists and fail with a clear
error when no lock exists at all. Simulated in subprocesses by hiding ``fcntl``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from fsmemory import KnowledgeMemory

NO_FCNTL = """\
import sys
sys.modules["fcntl"] = None  # as on Windows: importing it raises ImportError
"""

# A stand-in for Windows' msvcrt.locking, over POSIX record locks on the same byte, so
# two processes really contend: LK_NBLCK fails with EACCES while another holds it, as
# msvcrt's does; it insists on the position msvcrt locks from (the file's start).
FAKE_MSVCRT = """\
import errno, os, sys, types
import fcntl as real_fcntl
calls = []

def locking(fd, mode, nbytes):
    if os.lseek(fd, 0, os.SEEK_CUR) != 0 or nbytes != 1:
        raise AssertionError("msvcrt.locking is called at offset 0 for 1 byte")
    calls.append(mode)
    if mode == msvcrt.LK_UNLCK:
        real_fcntl.lockf(fd, real_fcntl.LOCK_UN, 1, 0)
        return
    try:
        real_fcntl.lockf(fd, real_fcntl.LOCK_EX | real_fcntl.LOCK_NB, 1, 0)
    except OSError:
        raise OSError(errno.EACCES, "Permission denied") from None

msvcrt = types.ModuleType("msvcrt")
msvcrt.LK_UNLCK, msvcrt.LK_LOCK, msvcrt.LK_NBLCK = 0, 1, 2
msvcrt.locking = locking
sys.modules["msvcrt"] = msvcrt
sys.modules["fcntl"] = None
"""


def run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )


def test_without_any_lock_a_memory_opens_and_reads_and_writes_fail_clearly(
    tmp_path: Path,
) -> None:
    store = tmp_path / "mem"
    km = KnowledgeMemory(str(store))
    km.remember("Prefers dark mode", "preferences", persistent=True)
    km.remember("Lunch at noon", "context")
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    code = NO_FCNTL + textwrap.dedent(
        f"""\
        sys.modules["msvcrt"] = None
        import json
        import fsmemory
        from fsmemory import KnowledgeMemory
        from fsmemory.errors import BackendError
        km = KnowledgeMemory({str(store)!r})
        out = {{
            "context": km.build_context(),
            "recall": [e.content for e in km.recall("dark")],
            "entries": len(km.entries()),
            "fcntl_loaded": sys.modules.get("fcntl") is not None,
        }}
        try:
            km.remember("never stored", "context")
        except BackendError as exc:
            out["error"] = str(exc)
        print(json.dumps(out))
        """
    )
    done = run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "Prefers dark mode" in out["context"] and "Lunch at noon" in out["context"]
    assert out["recall"] == ["Prefers dark mode"] and out["entries"] == 2
    assert out["fcntl_loaded"] is False
    assert "neither fcntl (POSIX) nor msvcrt (Windows)" in out["error"]
    after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    assert {p: d for p, d in after.items() if p in before} == before
    assert not any(b"never stored" in d for d in after.values())


def test_without_fcntl_writes_lock_with_msvcrt_across_processes(tmp_path: Path) -> None:
    """Two processes append 150 entries each to the same memory through the msvcrt
    lock: every entry arrives whole, none is lost."""
    store = tmp_path / "mem"
    KnowledgeMemory(str(store)).remember("seed", "context")
    code = FAKE_MSVCRT + textwrap.dedent(
        f"""\
        from fsmemory import KnowledgeMemory
        km = KnowledgeMemory({str(store)!r})
        for i in range(150):
            km.remember(f"{{sys.argv[1]}} entry {{i}}", "context", persistent=i % 50 == 0)
        assert msvcrt.LK_NBLCK in calls and msvcrt.LK_UNLCK in calls, calls
        assert sys.modules.get("fcntl") is None
        print(len(calls))
        """
    )
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", code, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for name in ("alpha", "beta")
    ]
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert int(out) >= 2 * 150  # a lock and an unlock per append at least
    contents = {e.content for e in KnowledgeMemory(str(store)).entries()}
    expected = {f"{n} entry {i}" for n in ("alpha", "beta") for i in range(150)} | {"seed"}
    assert contents == expected
    for log in (store / "logs").glob("*.jsonl"):
        for line in log.read_text().splitlines():
            json.loads(line)  # no interleaved bytes
