"""Tenant isolation: a root at ``<base>/users/1`` never reads or writes outside it.

Neighbours are planted around the tenant -- ``users/10`` (a name that *starts* like the
tenant's), ``users/2``, ``users/1-x`` and a file beside ``users/`` -- and every entry
point is driven with hostile paths: ``..``, ``%2e%2e``, absolute paths, backslashes,
drive letters, reserved names, and symlinks on local folders. One test per entry point:
storage roots, KnowledgeMemory, the path store, snapshot restore, the ``knowledge``
tool, the Anthropic memory-tool handler and the Parquet export. After each, every byte
outside the tenant's prefix is as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import InvalidInputError, InvalidPathError, SnapshotError
from fsmemory.fs import StorageRoot, open_root
from fsmemory.store import FsspecKnowledgeStore, SyncKnowledgeStore
from tests.test_memory.conftest import backend_location

BACKENDS = [
    "local",
    "memory",
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("gcs", marks=pytest.mark.gcs),
    pytest.param("redis", marks=pytest.mark.redis),
]

#: paths that must be refused by every primitive of a root
ESCAPES = [
    "..",
    "../10/secret.txt",
    "../../outside.txt",
    "a/../../10/secret.txt",
    "%2e%2e/10/secret.txt",
    "%2E%2e/10/secret.txt",
    "..%2f10%2fsecret.txt",
    "%2e%2e%2f10",
    "./../10",
    "/users/10/secret.txt",
    "/etc/passwd",
    "\\..\\10\\secret.txt",
    "..\\10",
    "C:/x",
    "c:\\x",
    "a\x00/../../10",
    ".fsmemory.lock",
    "logs/.fsmemory-tmp-x",
    "",
]

NEIGHBOURS = {
    "users/10/secret.txt": b"tenant 10's secret",
    "users/10/logs/2026-01-01.jsonl": b'{"id": "n10", "content": "neighbour ten entry"}\n',
    "users/2/MEMORY.md": b"# Agent Memory\n\n## general\n- neighbour two fact\n",
    "users/1-x/secret.txt": b"prefix sibling",
    "outside.txt": b"beside the users folder",
}


@dataclass
class Tenant:
    """A tenant root plus a raw view of everything around it."""

    backend: str
    url: str
    options: dict[str, Any]
    base: StorageRoot

    def root(self) -> StorageRoot:
        """The tenant's root, opened from its URL."""
        return open_root(self.url, self.options)

    def outside(self) -> dict[str, bytes]:
        """Every file of the base outside ``users/1/``."""
        return {
            i.path: self.base.read_bytes(i.path)
            for i in self.base.list("", recursive=True)
            if not i.path.startswith("users/1/")
        }


def make_tenant(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Tenant:
    """Plant the neighbours and return tenant 1."""
    base_url, options = backend_location(request, backend, tmp_path)
    base = open_root(base_url, options)
    for path, data in NEIGHBOURS.items():
        base.write(path, data)
    return Tenant(backend, f"{base_url}/users/1", options, base)


@pytest.fixture(params=BACKENDS)
def tenant(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tenant]:
    """Tenant 1 on each backend, neighbours planted."""
    t = make_tenant(request, str(request.param), tmp_path)
    before = t.outside()
    assert before == NEIGHBOURS
    yield t
    assert t.outside() == before, "something outside the tenant's prefix changed"


def _refused(call: Callable[[], object]) -> None:
    with pytest.raises(InvalidPathError):
        call()


# -- storage roots -----------------------------------------------------------------------------


def test_storage_root_refuses_every_escape(tenant: Tenant) -> None:
    """Every primitive of a root refuses every hostile path, before any I/O."""
    root = tenant.root()
    root.write("mine.txt", b"mine")
    for bad in ESCAPES:
        if bad:
            _refused(lambda bad=bad: root.read(bad))
            _refused(lambda bad=bad: root.read_range(bad, 0, 1))
            _refused(lambda bad=bad: root.read_ranges([("mine.txt", 0, 1), (bad, 0, 1)]))
            _refused(lambda bad=bad: root.stat(bad))
            _refused(lambda bad=bad: root.write(bad, b"x"))
            _refused(lambda bad=bad: root.write(bad, b"x", create_only=True))
            _refused(lambda bad=bad: root.append(bad, b"x"))
            _refused(lambda bad=bad: root.delete(bad))
            _refused(lambda bad=bad: root.delete_tree(bad))
            _refused(lambda bad=bad: root.list(bad))
            _refused(lambda bad=bad: root.list_dirs(bad))
        else:
            _refused(lambda: root.read(""))
            _refused(lambda: root.write("", b"x"))
    listed = [i.path for i in root.list("", recursive=True)]
    assert listed == ["mine.txt"]
    assert root.list_dirs("") == []


def test_storage_root_delete_tree_stays_inside(tenant: Tenant) -> None:
    """Deleting the tenant's trees leaves ``users/10`` and ``users/1-x`` alone."""
    root = tenant.root()
    for i in range(3):
        root.write(f"d/{i}.txt", b"x")
        root.write(f"d/e/{i}.txt", b"x")
    root.write("top.txt", b"x")
    assert root.delete_tree("d") == 6
    assert [i.path for i in root.list("", recursive=True)] == ["top.txt"]
    assert root.delete_tree("") == 1
    assert root.list("", recursive=True) == []


def test_local_delete_tree_of_the_whole_root(tmp_path: Path) -> None:
    """``delete_tree("")`` (the whole root) works on a local folder as elsewhere."""
    root = open_root(str(tmp_path / "t"))
    root.write("a/b.txt", b"x")
    assert root.delete_tree("") == 1


# -- KnowledgeMemory ---------------------------------------------------------------------------


def test_knowledge_memory_stays_inside(tenant: Tenant) -> None:
    """remember/recall/forget/prune/clear on tenant 1 never see or touch neighbours;
    categories that look like paths are only labels."""
    km = KnowledgeMemory(tenant.url, storage_options=tenant.options)
    ids = [
        km.remember("tenant one fact", category="../10", persistent=True),
        km.remember("another", category="../..", persistent=False),
        km.remember("third", category="/etc/passwd", persistent=True),
    ]
    with pytest.raises(InvalidInputError):
        km.remember("x", category="../10\n## injected")
    assert km.recall("neighbour") == []
    assert "neighbour" not in km.build_context()
    assert km.forget(ids[0]) is True
    assert km.forget("n10") is False
    km.prune_logs(0)
    km.clear_logs()
    km.clear()
    assert km.entries() == []
    assert sorted(i.path for i in tenant.root().list("", recursive=True)) == []


# -- path store --------------------------------------------------------------------------------


def test_path_store_stays_inside(tenant: Tenant) -> None:
    """The path store maps ``/`` to the tenant root: absolute paths land inside it,
    ``..`` in any spelling is refused, deleting ``/`` needs consent and stays inside."""
    store = SyncKnowledgeStore(tenant.root(), watch="none")
    store.write("/etc/passwd", "inside")
    assert tenant.root().read_bytes("etc/passwd") == b"inside"
    for bad in ESCAPES:
        if not bad or (bad.startswith("/") and ".." not in bad and "\\" not in bad):
            continue  # "" is the store's root; absolute paths are rooted at the tenant
        for call in (
            lambda bad=bad: store.read(bad),
            lambda bad=bad: store.write(bad, "x"),
            lambda bad=bad: store.append(bad, "x"),
            lambda bad=bad: store.read_range(bad, 0),
            lambda bad=bad: store.list(bad),
            lambda bad=bad: store.exists(bad),
            lambda bad=bad: store.delete(bad),
        ):
            _refused(call)
    with pytest.raises(ValueError):
        store.delete("/")
    assert store.list("/") == ["etc/"]
    store.delete("/", allow_root=True)
    assert store.list("/") == []


# -- snapshot restore --------------------------------------------------------------------------


HOSTILE_ARCHIVE_PATHS = [
    "../10/secret.txt",
    "../../outside.txt",
    "/users/10/secret.txt",
    "logs/../../10/x",
    "%2e%2e/10/x",
    "..\\10\\x",
    ".fsmemory.lock",
]


@pytest.mark.parametrize(
    "backend",
    ["local", "memory", pytest.param("s3", marks=pytest.mark.s3)],
)
def test_snapshot_restore_refuses_escaping_archives(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """A snapshot (base archive or delta) naming a path outside the folder is refused
    whole: SnapshotError, nothing written, neither in the folder nor beside it."""
    import json

    from fsmemory.snapshot import FsspecBackend

    t = make_tenant(request, backend, tmp_path)
    before = t.outside()
    snapshot_url = f"{t.url.rsplit('/', 1)[0]}/1.snapshot"
    for bad in HOSTILE_ARCHIVE_PATHS:
        t.base.write(
            "users/1.snapshot",
            json.dumps(
                {"version": 1, "files": {bad: {"encoding": "utf-8", "content": "pwned"}}}
            ).encode(),
        )
        with pytest.raises(SnapshotError):
            KnowledgeMemory(t.url, backend=FsspecBackend(snapshot_url, storage_options=t.options))
        assert t.root().list("", recursive=True) == []
    t.base.delete("users/1.snapshot")
    for bad in HOSTILE_ARCHIVE_PATHS:
        delta = {"format": "fsmemory-delta", "version": 1, "append": {bad: "pwned\n"}}
        t.base.write(
            f"users/1.snapshot.d/delta/0000000000001-evil-{uuid.uuid4().hex[:6]}.json",
            json.dumps(delta).encode(),
        )
        with pytest.raises(SnapshotError):
            KnowledgeMemory(t.url, backend=FsspecBackend(snapshot_url, storage_options=t.options))
        assert t.root().list("", recursive=True) == []
        t.base.delete_tree("users/1.snapshot.d")
    after = {k: v for k, v in t.outside().items() if not k.startswith("users/1.snapshot")}
    assert after == before


# -- local symlinks ----------------------------------------------------------------------------


def _plant_links(t: Tenant) -> Path:
    folder = Path(t.url)
    (folder / "logs").mkdir(parents=True)
    os.symlink(folder.parent / "10", folder / "dirlink")
    os.symlink(folder.parent / "10" / "secret.txt", folder / "filelink")
    os.symlink(
        folder.parent / "10" / "logs" / "2026-01-01.jsonl", folder / "logs" / "2026-01-02.jsonl"
    )
    os.symlink(folder.parent.parent, folder / "up")
    return folder


def test_local_symlinks_never_lead_outside(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Symlinks planted inside a local tenant folder (to a neighbour's folder, file, or
    the parent) are never followed by reads, appends, writes, listings or deletes."""
    t = make_tenant(request, "local", tmp_path)
    before = t.outside()
    folder = _plant_links(t)
    root = t.root()
    links = ("dirlink/secret.txt", "filelink", "up/outside.txt", "logs/2026-01-02.jsonl")
    for path in links:
        _refused(lambda path=path: root.read(path))
        _refused(lambda path=path: root.read_range(path, 0))
        _refused(lambda path=path: root.read_ranges([(path, 0, None)]))
        _refused(lambda path=path: root.append(path, b"pwned"))
        with contextlib.suppress(InvalidPathError):
            assert root.delete_tree(path) == 0
    with contextlib.suppress(InvalidPathError):
        root.delete_tree("dirlink")
    for path in ("dirlink/secret.txt", "dirlink/new.txt", "up/outside.txt"):
        _refused(lambda path=path: root.write(path, b"pwned"))
        _refused(lambda path=path: root.delete(path))
        _refused(lambda path=path: root.stat(path))
    assert [i.path for i in root.list("", recursive=True)] == []
    km = KnowledgeMemory(t.url)
    assert km.recall("neighbour") == []
    km.remember("mine")
    store = SyncKnowledgeStore(t.url, watch="none")
    for path in ("/filelink", "/dirlink/secret.txt", "/up/outside.txt"):
        with contextlib.suppress(InvalidPathError):
            assert store.read(path) is None
    assert store.list("/dirlink") == []
    with pytest.raises(InvalidPathError):
        store.write("/dirlink/x", "pwned")
    # Replacing a symlink inside the folder replaces the link, never its target.
    root.write("filelink", b"mine now")
    assert not (folder / "filelink").is_symlink()
    km.clear()
    root.delete_tree("logs")
    assert t.outside() == before


def test_local_listing_through_a_symlinked_folder_is_confined(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Listing a symlinked folder inside the tenant does not list the neighbour's files."""
    t = make_tenant(request, "local", tmp_path)
    _plant_links(t)
    root = t.root()
    _refused(lambda: root.list("dirlink"))
    _refused(lambda: root.list("dirlink", recursive=True))
    _refused(lambda: root.list_dirs("dirlink"))


# -- agent tools -------------------------------------------------------------------------------


def _agent() -> Any:
    return pytest.importorskip("fsmemory.agent")


@pytest.mark.parametrize("backend", ["local", "memory", pytest.param("s3", marks=pytest.mark.s3)])
def test_knowledge_tool_stays_inside(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """The ``knowledge`` tool answers hostile paths with an error string; whatever it
    writes lands inside the tenant root."""
    agent = _agent()
    t = make_tenant(request, backend, tmp_path)
    before = t.outside()
    tool = agent.KnowledgeTool(FsspecKnowledgeStore(t.root(), watch="none"))

    async def run() -> list[str]:
        out = []
        for bad in ESCAPES:
            for action in ("read", "list", "write", "append", "delete"):
                out.append(await tool(action, bad, "pwned"))
        out.append(await tool("write", "/notes/ok.md", "fine"))
        out.append(await tool("delete", "/", None))
        return out

    answers = asyncio.run(run())
    assert all(isinstance(a, str) for a in answers)
    assert "pwned" not in "".join(answers)
    files = {i.path for i in t.root().list("", recursive=True)}
    assert "notes/ok.md" in files
    assert all(".." not in f and "\\" not in f for f in files)
    assert t.outside() == before


@pytest.mark.parametrize("backend", ["local", "memory", pytest.param("s3", marks=pytest.mark.s3)])
def test_memory_tool_stays_inside(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """The Anthropic memory-tool handler for user 1 keeps every command inside
    ``/users/1/memories``: escapes are errors, never files elsewhere."""
    agent = _agent()
    t = make_tenant(request, backend, tmp_path)
    base_store = FsspecKnowledgeStore(t.base, watch="none")
    with pytest.raises(ValueError):
        agent.AnthropicMemoryTool(base_store, user_id="../10")
    tool = agent.AnthropicMemoryTool(base_store, user_id="1")
    before = t.outside()
    hostile = [
        "/memories/../../10/secret.txt",
        "/memories/../../../outside.txt",
        "/memories/%2e%2e/%2e%2e/10/secret.txt",
        "/memories/..\\..\\10\\secret.txt",
        "/users/10/secret.txt",
        "/memories/\x00",
        "memories/x",
        "/memories/.fsmemory.lock",
    ]
    commands: list[dict[str, Any]] = []
    for path in hostile:
        commands += [
            {"command": "view", "path": path},
            {"command": "create", "path": path, "file_text": "pwned"},
            {"command": "str_replace", "path": path, "old_str": "secret", "new_str": "pwned"},
            {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
            {"command": "delete", "path": path},
            {"command": "rename", "old_path": "/memories/ok.md", "new_path": path},
            {"command": "rename", "old_path": path, "new_path": "/memories/stolen.md"},
        ]
    results = [
        tool.execute_sync({"command": "create", "path": "/memories/ok.md", "file_text": "ok"})
    ]
    results += [tool.execute_sync(c) for c in commands]
    assert not results[0].is_error
    assert all("tenant 10's secret" not in str(r) for r in results)
    inside = {i.path for i in t.base.list("users/1", recursive=True)}
    assert all(p.startswith("users/1/memories/") for p in inside), inside
    assert "users/1/memories/stolen.md" not in inside
    assert t.outside() == before


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_export_reads_only_the_tenant(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """Exporting tenant 1 reads none of ``users/10``'s or ``users/1-x``'s logs and writes
    only under its destination."""
    pytest.importorskip("pyarrow")
    export = pytest.importorskip("fsmemory.export")
    import pyarrow.dataset as ds

    t = make_tenant(request, backend, tmp_path)
    km = KnowledgeMemory(t.url, storage_options=t.options)
    km.remember("tenant one entry")
    before = t.outside()
    dest = tmp_path / f"export-{uuid.uuid4().hex[:6]}"
    export.export_parquet(t.url, str(dest), storage_options=t.options)
    rows = ds.dataset(str(dest / "memory"), format="parquet", partitioning="hive").to_table()
    assert rows.column("content").to_pylist() == ["tenant one entry"]
    assert t.outside() == before
