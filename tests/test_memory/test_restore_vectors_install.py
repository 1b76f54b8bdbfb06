"""A restore installs the snapshot's vector files the same way on every root; a memory
without an embedder never imports NumPy, and a missing NumPy is reported by the first
use."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.fs.local import LocalRoot
from fsmemory.memory._replica import SnapshotReplica
from fsmemory.memory._vecfile import (
    HEADER_SIZE,
    encode_block,
    encode_header,
    read_header,
    scan_blocks,
)
from fsmemory.memory._vecmath import quantize
from fsmemory.memory._vectravel import Dead, VectorFold
from fsmemory.snapshot import FsspecBackend

pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[2]

# a pure-Python embedder, the same in this process and in the child processes
EMBEDDER = textwrap.dedent(
    """
    import hashlib

    class Embedder:
        name = "tiny"
        dimension = 8

        def __call__(self, texts):
            out = []
            for text in texts:
                digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
                out.append([byte - 127.5 for byte in digest])
            return out
    """
)
# run in the child processes: a restore, with the names of the threads it started
RESTORED = textwrap.dedent(
    """
    import threading

    def restored(folder, url, embedder):
        from fsmemory import KnowledgeMemory
        from fsmemory.snapshot import FsspecBackend

        started = []
        start = threading.Thread.start

        def recorded(thread):
            started.append(thread)
            start(thread)

        threading.Thread.start = recorded
        try:
            km = KnowledgeMemory(folder, backend=FsspecBackend(url), embedder=embedder)
        finally:
            threading.Thread.start = start
        for thread in started:
            thread.join()
        return km, [thread.name for thread in started]
    """
)
_space: dict[str, Any] = {}
exec(EMBEDDER, _space)
Embedder: Any = _space["Embedder"]
PATH = "vectors/tiny-8.i8v"


def _snapshot(tmp_path: Path, entries: int = 300, deltas: int = 3) -> str:
    """A snapshot whose base carries one block of ``entries`` rows (kept whole by a
    restore) and whose ``deltas`` deltas carry a row each."""
    url = (tmp_path / "store" / "mem.snapshot").as_uri()
    folder = tmp_path / "writer"
    plain = KnowledgeMemory(folder, embedder=Embedder())
    for i in range(entries):
        plain.remember(f"fact {i} about topic {i % 13}")
    km = KnowledgeMemory(
        folder, backend=FsspecBackend(url), embedder=Embedder(), snapshot_compact_after=1000
    )
    for i in range(deltas):
        km.remember(f"late fact {i}")
    state = FsspecBackend(url).load_state()
    assert state.base is not None and len(state.deltas) == deltas
    return url


def _installed(folder: Path, url: str, *, native_append: bool) -> tuple[bytes, SnapshotReplica]:
    root = LocalRoot(str(folder))
    if not native_append:
        root.capabilities = root.capabilities._replace(native_append=False)
    replica = SnapshotReplica(root, FsspecBackend(url))
    replica.restore()
    return (folder / PATH).read_bytes(), replica


def test_a_restore_installs_the_same_vector_file_on_every_root(tmp_path: Path) -> None:
    url = _snapshot(tmp_path)
    native, by_append = _installed(tmp_path / "a", url, native_append=True)
    whole, by_write = _installed(tmp_path / "b", url, native_append=False)
    # the same blocks after a header of each one's own generation
    assert native[HEADER_SIZE:] == whole[HEADER_SIZE:]
    for data, replica in ((native, by_append), (whole, by_write)):
        header = read_header(data)
        assert header is not None
        assert replica._vec.synced[PATH] == (header.generation, len(data))
        scan = scan_blocks(data, HEADER_SIZE, len(data), 8)
        assert scan.skipped == 0
        keys = [k for block in scan.blocks for k in zip(block.ids, block.hashes, strict=True)]
        assert len(keys) == len(set(keys)) == 303
        # the base's block kept whole, the deltas' rows in one block after it
        assert [len(block.ids) for block in scan.blocks] == [300, 3]
        assert replica._vec.keys[PATH] == set(keys)
    assert native[:HEADER_SIZE] != whole[:HEADER_SIZE]  # fresh generations


def test_a_restore_replaces_a_vector_file_left_in_the_folder(tmp_path: Path) -> None:
    url = _snapshot(tmp_path, entries=260, deltas=1)
    folder = tmp_path / "r"
    (folder / "vectors").mkdir(parents=True)
    (folder / PATH).write_bytes(b"left over by someone" * 1000)
    data, replica = _installed(folder, url, native_append=True)
    header = read_header(data)
    assert header is not None and replica._vec.synced[PATH] == (header.generation, len(data))
    scan = scan_blocks(data, HEADER_SIZE, len(data), 8)
    assert scan.skipped == 0 and sum(len(b.ids) for b in scan.blocks) == 261


def _child(script: str, *args: str) -> dict[str, Any]:
    code = EMBEDDER + RESTORED + textwrap.dedent(script)
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["stderr"] = out.stderr
    return result


RESTORE = """
import json, sys

embedder = Embedder() if sys.argv[3] == "embedder" else None
km, started = restored(sys.argv[1], sys.argv[2], embedder)
loaded = "numpy" in sys.modules
found = [e.content for e in km.recall("fact 7 about topic 7", limit=3)]
print(json.dumps({"started": started, "numpy": loaded, "found": found}))
"""


@pytest.mark.parametrize("deltas", [0, 3])
def test_a_restore_without_an_embedder_never_imports_numpy(tmp_path: Path, deltas: int) -> None:
    # the base's block is installed as it is; the deltas' rows are joined into a block
    # of their own from their bytes
    url = _snapshot(tmp_path, entries=260, deltas=deltas)
    got = _child(RESTORE, str(tmp_path / "p"), url, "plain")
    assert got["numpy"] is False
    assert "fact 7 about topic 7" in got["found"]
    # the same blocks as a restore in this process (NumPy loaded) installs
    here, _ = _installed(tmp_path / "q", url, native_append=True)
    there = (tmp_path / "p" / PATH).read_bytes()
    assert there[HEADER_SIZE:] == here[HEADER_SIZE:]
    scan = scan_blocks(there, HEADER_SIZE, len(there), 8)
    assert [len(block.ids) for block in scan.blocks] == [260] + ([deltas] if deltas else [])


def test_rows_taken_apart_are_encoded_as_from_an_array(tmp_path: Path) -> None:
    # a fold that drops some rows copies the others out of their blocks as bytes: the
    # block it encodes is the one encode_block makes of the same rows as an array
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    vectors = quantize(np, rng.standard_normal((300, 8)))
    ids = [f"id-{n}" for n in range(300)]
    hashes = [f"{n:016x}" for n in range(300)]
    part = encode_header("tiny", 8) + encode_block(ids, hashes, vectors)
    small = encode_header("tiny", 8) + encode_block(ids[:5], hashes[:5], vectors[:5])
    dead = Dead(forgotten={ids[n] for n in range(0, 300, 3)}, records={})
    for data, count in ((part, 300), (small, 5)):
        fold = VectorFold()
        fold.add(PATH, data)
        kept = [n for n in range(count) if n % 3]
        encoded = fold.encode(PATH, dead)
        assert encoded is not None
        expected = encode_block([ids[n] for n in kept], [hashes[n] for n in kept], vectors[kept])
        assert encoded[HEADER_SIZE:] == expected
        # and rows kept from a block with damaged bytes before it (copied out) too
        fold = VectorFold()
        damaged = data[:HEADER_SIZE] + b"junk" + data[HEADER_SIZE:]
        fold.add(PATH, damaged, known={(ids[n], hashes[n]) for n in range(1, count, 2)})
        evens = list(range(0, count, 2))
        encoded = fold.encode(PATH)
        assert encoded is not None
        expected = encode_block([ids[n] for n in evens], [hashes[n] for n in evens], vectors[evens])
        assert encoded[HEADER_SIZE:] == expected


MISSING = """
import importlib.abc, json, sys

class NoNumpy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoNumpy())
from fsmemory import MissingDependencyError

km, started = restored(sys.argv[1], sys.argv[2], Embedder())
try:
    km.recall("fact 7")
    error = None
except MissingDependencyError as exc:
    error = [exc.module, exc.extra, type(exc.__cause__).__name__]
print(json.dumps({"started": started, "error": error, "numpy": "numpy" in sys.modules}))
"""


def test_numpy_missing_still_raises_missing_dependency_error_on_first_use(
    tmp_path: Path,
) -> None:
    url = _snapshot(tmp_path, entries=20, deltas=2)
    got = _child(MISSING, str(tmp_path / "m"), url)
    assert got["error"] == ["numpy", "embed", "ModuleNotFoundError"]
    assert got["numpy"] is False
    assert "Traceback" not in str(got["stderr"])
