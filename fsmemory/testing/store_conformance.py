"""Conformance suite for path stores: every backend must pass the same behaviour tests.

Usage in a backend's test module::

    import pytest
    from fsmemory.store import FsspecKnowledgeStore
    from fsmemory.testing.store_conformance import KnowledgeStoreTests

    class TestMyBackend(KnowledgeStoreTests):
        @pytest.fixture
        def store(self, tmp_path):
            return FsspecKnowledgeStore(f"myproto://{tmp_path}", poll_interval=0.05)

The behaviour tests are ``async def test_*`` methods: run them with pytest-asyncio
(``asyncio_mode = "auto"``, as fsmemory's own suite does). The ``store`` fixture returns a
fresh, empty store (a
:class:`~fsmemory.store.VersionedKnowledgeStore`). Override :meth:`process_url` to run
the cross-process append test, and :meth:`backdoor_write` when the store has no
``root`` (changes made "behind the store's back" must still reach ``on_change``).

:func:`store_state_machine` builds a hypothesis state machine that checks a store against
a plain ``dict`` model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from fsmemory.errors import ConflictError, InvalidPathError
from fsmemory.fs.base import StorageRoot
from fsmemory.store import (
    StoreStat,
    SyncKnowledgeStore,
    VersionedKnowledgeStore,
)

__all__ = [
    "HOSTILE_PATHS",
    "KnowledgeStoreTests",
    "append_worker",
    "expected_range",
    "store_state_machine",
    "unique_name",
    "wait_for",
]

T = TypeVar("T")

#: Paths every store must refuse with InvalidPathError (never store them literally).
HOSTILE_PATHS: tuple[str, ...] = (
    "..",
    "/..",
    "/a/../b",
    "../etc/passwd",
    "/a/..",
    "/./a",
    "%2e%2e",
    "/a/%2e%2e/b",
    "/a/%2E%2e",
    "/a\x00b",
    "/a/\x00",
    "/a\x01b",
    "/tab\there",
    "/new\nline",
    "/cr\rhere",
    "/del\x7f",
    "/a\\b",
    "\\..\\x",
    "/.fsmemory.lock",
    "/x" * 700,
    "/" + "n" * 300,
)


def expected_range(data: bytes, start: int, end: int | None) -> str:
    """The text ``read_range`` must return: every character whose first byte lies in
    ``[start, end)`` (an oracle independent of the implementation)."""
    text = data.decode("utf-8")
    out = []
    pos = 0
    stop = len(data) if end is None else end
    for char in text:
        if start <= pos < stop:
            out.append(char)
        pos += len(char.encode("utf-8"))
    return "".join(out)


def append_worker(url: str, path: str, tag: str, count: int, start_at: float) -> list[int]:
    """Append ``count`` lines tagged ``tag`` to ``path`` of the store at ``url``.

    Runs in another process (it is importable). Waits until the wall clock reaches
    ``start_at`` so that several workers really overlap. Returns the offsets.
    """
    with SyncKnowledgeStore(url) as store:
        delay = start_at - time.time()
        if delay > 0:
            time.sleep(delay)
        return [store.append(path, f"{tag}:{i:04d}\n") for i in range(count)]


async def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Let the event loop run until ``predicate()`` holds; False if ``timeout`` seconds
    pass first (a generous bound for slow machines, never a measurement)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


class KnowledgeStoreTests:
    """Behaviour tests every path store must pass; subclass and provide ``store``."""

    #: seconds to wait for a change made outside the store to be reported
    change_timeout: float = 5.0
    #: concurrent appenders and appends each in the asyncio test
    appenders: int = 8
    appends_each: int = 25

    @pytest.fixture
    def store(self) -> VersionedKnowledgeStore:
        """A fresh, empty store (each backend's test class overrides this)."""
        raise NotImplementedError("provide a `store` fixture")

    # -- hooks -------------------------------------------------------------------------
    def process_url(self, store: Any) -> str | None:
        """A URL another process can open to reach the same data, or None to skip."""
        return None

    def backdoor_write(self, store: Any, path: str, data: bytes) -> None:
        """Change a file without going through the store (for ``on_change``)."""
        root: StorageRoot | None = getattr(store, "root", None)
        if root is None and hasattr(store, "store"):
            root = getattr(store.store, "root", None)
        if root is None:
            pytest.skip("no backdoor into this store")
        root.write(path.lstrip("/"), data)

    # -- read / write ------------------------------------------------------------------
    async def test_write_read_roundtrip(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/notes/a.md", "# Title\n- fact\n")
        assert await store.read("/notes/a.md") == "# Title\n- fact\n"
        await store.write("/notes/a.md", "replaced")
        assert await store.read("/notes/a.md") == "replaced"

    async def test_unicode_and_empty_content(self, store: VersionedKnowledgeStore) -> None:
        text = "héllo wörld € 😀 日本語\n"
        await store.write("/u.txt", text)
        assert await store.read("/u.txt") == text
        await store.write("/empty", "")
        assert await store.read("/empty") == ""
        assert await store.exists("/empty")

    async def test_read_missing_or_directory_is_none(self, store: VersionedKnowledgeStore) -> None:
        assert await store.read("/nope") is None
        await store.write("/dir/file", "x")
        assert await store.read("/dir") is None
        assert await store.read("/") is None
        assert await store.read("/dir/file/deeper") is None
        assert await store.read_bytes("/nope") is None

    async def test_write_creates_parents(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/a/b/c/d.txt", "deep")
        assert await store.exists("/a")
        assert await store.exists("/a/b")
        assert await store.exists("/a/b/c")
        assert await store.exists("/a/b/c/d.txt")
        assert await store.list("/a/b") == ["c/"]

    @pytest.mark.parametrize("variant", ["a/b.md", "/a//b.md", "/a/b.md/", "//a///b.md//"])
    async def test_paths_are_normalized(self, store: VersionedKnowledgeStore, variant: str) -> None:
        await store.write(variant, "same")
        assert await store.read("/a/b.md") == "same"
        assert await store.list("/") == ["a/"]
        assert await store.list("a/") == ["b.md"]
        assert await store.exists(variant)

    @pytest.mark.parametrize("bad", HOSTILE_PATHS)
    async def test_hostile_paths_rejected(self, store: VersionedKnowledgeStore, bad: str) -> None:
        async def noop(path: str) -> None:
            return None

        attempts: list[Callable[[], Awaitable[object]]] = [
            lambda: store.write(bad, "x"),
            lambda: store.write_bytes(bad, b"x"),
            lambda: store.append(bad, "x"),
            lambda: store.read(bad),
            lambda: store.read_bytes(bad),
            lambda: store.read_range(bad, 0),
            lambda: store.exists(bad),
            lambda: store.list(bad),
            lambda: store.delete(bad),
            lambda: store.stat(bad),
            lambda: store.on_change(bad, noop),
        ]

        for attempt in attempts:
            with pytest.raises(InvalidPathError):
                await attempt()
        assert await store.list("/") == []

    async def test_write_to_root_rejected(self, store: VersionedKnowledgeStore) -> None:
        with pytest.raises(InvalidPathError):
            await store.write("/", "x")
        with pytest.raises(InvalidPathError):
            await store.append("//", "x")

    async def test_wrong_content_type(self, store: VersionedKnowledgeStore) -> None:
        with pytest.raises(TypeError):
            await store.write("/x", b"bytes")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            await store.write_bytes("/x", "text")  # type: ignore[arg-type]
        assert await store.read("/x") is None

    async def test_bytes_roundtrip(self, store: VersionedKnowledgeStore) -> None:
        blob = bytes(range(256)) * 3
        await store.write_bytes("/bin/blob", blob)
        assert await store.read_bytes("/bin/blob") == blob
        text = await store.read("/bin/blob")  # invalid UTF-8 must not raise
        assert text is not None and "\ufffd" in text

    # -- exists / list -----------------------------------------------------------------
    async def test_exists(self, store: VersionedKnowledgeStore) -> None:
        assert await store.exists("/")
        assert not await store.exists("/a")
        await store.write("/a/b", "x")
        assert await store.exists("/a/b")
        assert await store.exists("/a/")
        assert not await store.exists("/a/b/c")
        assert not await store.exists("/ab")
        assert not await store.exists("/a/b2")

    async def test_list_sorted_with_directory_slash(self, store: VersionedKnowledgeStore) -> None:
        for path in ["/z.md", "/a.md", "/m/x", "/b/y/z", "/SKILL.md"]:
            await store.write(path, "x")
        assert await store.list("/") == ["SKILL.md", "a.md", "b/", "m/", "z.md"]
        assert await store.list("/b") == ["y/"]
        assert await store.list("/b/") == ["y/"]
        assert await store.list("/b/y") == ["z"]

    async def test_list_missing_is_empty(self, store: VersionedKnowledgeStore) -> None:
        assert await store.list("/") == []
        assert await store.list("/missing") == []
        await store.write("/file", "x")
        assert await store.list("/file") == []

    async def test_prefixes_never_confused(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/a/x", "1")
        await store.write("/ab/y", "2")
        await store.write("/abc", "3")
        assert await store.list("/a") == ["x"]
        assert await store.list("/ab") == ["y"]
        await store.delete("/a")
        assert await store.read("/ab/y") == "2"
        assert await store.read("/abc") == "3"
        assert await store.list("/") == ["ab/", "abc"]

    async def test_internal_files_never_listed(self, store: VersionedKnowledgeStore) -> None:
        await store.append("/log/a", "x\n")
        await store.write("/log/b", "y")
        await store.write("/log/b", "z")
        assert await store.list("/") == ["log/"]
        assert await store.list("/log") == ["a", "b"]

    # -- delete ------------------------------------------------------------------------
    async def test_delete_file(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/d/f1", "1")
        await store.write("/d/f2", "2")
        await store.delete("/d/f1")
        assert await store.read("/d/f1") is None
        assert await store.list("/d") == ["f2"]

    async def test_delete_directory_recursively(self, store: VersionedKnowledgeStore) -> None:
        for path in ["/d/a", "/d/sub/b", "/d/sub/deeper/c", "/keep"]:
            await store.write(path, "x")
        await store.delete("/d/")
        assert not await store.exists("/d")
        assert await store.list("/") == ["keep"]

    async def test_delete_missing_is_noop(self, store: VersionedKnowledgeStore) -> None:
        await store.delete("/never/was")
        await store.delete("/never")
        assert await store.list("/") == []

    async def test_delete_root_needs_opt_in(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/a/b", "x")
        await store.write("/c", "y")
        for root in ("/", "", "//"):
            with pytest.raises(InvalidPathError):
                await store.delete(root)
        assert await store.list("/") == ["a/", "c"]
        await store.delete("/", allow_root=True)
        assert await store.list("/") == []

    # -- append ------------------------------------------------------------------------
    async def test_append_offsets(self, store: VersionedKnowledgeStore) -> None:
        assert await store.append("/log/wal.jsonl", '{"n":1}\n') == 0
        assert await store.append("/log/wal.jsonl", "é€\n") == 8
        assert await store.append("/log/wal.jsonl", "x") == 8 + 6
        assert await store.read("/log/wal.jsonl") == '{"n":1}\né€\nx'
        st_ = await store.stat("/log/wal.jsonl")
        assert st_ is not None and st_.size == 15

    async def test_append_after_write(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/f", "abc")
        assert await store.append("/f", "def") == 3
        await store.write("/f", "1")
        assert await store.append("/f", "2") == 1
        assert await store.read("/f") == "12"

    async def test_concurrent_appenders(self, store: VersionedKnowledgeStore) -> None:
        async def appender(tag: int) -> list[tuple[int, str]]:
            out = []
            for i in range(self.appends_each):
                line = f"w{tag}:{i:03d}:{'é' * (tag % 3)}\n"
                out.append((await store.append("/log/shared", line), line))
                await asyncio.sleep(0)
            return out

        results = await asyncio.gather(*(appender(t) for t in range(self.appenders)))
        pairs = [pair for result in results for pair in result]
        offsets = [offset for offset, _ in pairs]
        assert len(set(offsets)) == len(offsets)
        data = await store.read_bytes("/log/shared")
        assert data is not None
        assert len(data) == sum(len(line.encode()) for _, line in pairs)
        for offset, line in pairs:
            encoded = line.encode()
            assert data[offset : offset + len(encoded)] == encoded

    async def test_append_from_processes(self, store: VersionedKnowledgeStore) -> None:
        url = self.process_url(store)
        if url is None:
            pytest.skip("this store is not reachable from another process")
        workers, count = 4, 50
        ctx = multiprocessing.get_context("spawn")
        start_at = time.time() + 2.0
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            futures = [
                pool.submit(append_worker, url, "/log/multi", f"p{w}", count, start_at)
                for w in range(workers)
            ]
            offsets = [f.result(timeout=120) for f in futures]

        data = await store.read_bytes("/log/multi")
        assert data is not None
        flat = [o for per in offsets for o in per]
        assert len(set(flat)) == workers * count
        assert len(data) == workers * count * len(b"p0:0000\n")
        for w, per in enumerate(offsets):
            for i, offset in enumerate(per):
                assert data[offset : offset + 8] == f"p{w}:{i:04d}\n".encode()

    # -- read_range --------------------------------------------------------------------
    async def test_read_range_basic(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/r", "0123456789")
        assert await store.read_range("/r", 0) == "0123456789"
        assert await store.read_range("/r", 3) == "3456789"
        assert await store.read_range("/r", 3, 6) == "345"
        assert await store.read_range("/r", 8, 100) == "89"
        assert await store.read_range("/r", 10) == ""
        assert await store.read_range("/r", 50) == ""
        assert await store.read_range("/r", 6, 3) == ""
        assert await store.read_range("/r", 4, 4) == ""

    async def test_read_range_missing_or_empty(self, store: VersionedKnowledgeStore) -> None:
        assert await store.read_range("/missing", 0) == ""
        assert await store.read_range("/missing", 5, 10) == ""
        await store.write("/empty", "")
        assert await store.read_range("/empty", 0) == ""
        await store.write("/dir/x", "x")
        assert await store.read_range("/dir", 0) == ""

    async def test_read_range_negative_offsets(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/r", "abc")
        for start, end in [(-1, None), (0, -1), (-5, -1)]:
            with pytest.raises(ValueError):
                await store.read_range("/r", start, end)
            with pytest.raises(ValueError):
                await store.read_range("/missing", start, end)

    async def test_read_range_split_utf8(self, store: VersionedKnowledgeStore) -> None:
        text = "aé€😀b日\n"
        data = text.encode()

        await store.write("/u", text)
        for start in range(len(data) + 2):
            for end in [None, *range(len(data) + 2)]:
                got = await store.read_range("/u", start, end)
                assert got == expected_range(data, start, end), (start, end)
        # consecutive ranges give every character back exactly once
        for cut in range(len(data) + 1):
            left = await store.read_range("/u", 0, cut)
            right = await store.read_range("/u", cut)
            assert left + right == text

    async def test_append_then_read_range_tail(self, store: VersionedKnowledgeStore) -> None:
        lines = [f'{{"i": {i}, "v": "{"ü" * i}"}}\n' for i in range(30)]
        offsets = [await store.append("/wal", line) for line in lines]
        for offset, line in zip(offsets, lines, strict=True):
            assert await store.read_range("/wal", offset, offset + len(line.encode())) == line
        assert await store.read_range("/wal", offsets[10]) == "".join(lines[10:])

    # -- stat / compare-and-swap -------------------------------------------------------
    async def test_stat(self, store: VersionedKnowledgeStore) -> None:
        assert await store.stat("/missing") is None
        before = time.time()
        await store.write("/s/file", "héllo")
        info = await store.stat("/s/file")
        assert isinstance(info, StoreStat)
        assert info.path == "/s/file"
        assert info.size == len("héllo".encode())
        assert isinstance(info.version, str) and info.version
        if info.mtime is not None:
            assert info.mtime > before - 120
        assert await store.stat("/s") is None
        assert await store.stat("/") is None
        assert StoreStat.from_dict(info.to_dict()) == info

    async def test_compare_and_swap(self, store: VersionedKnowledgeStore) -> None:
        v1 = await store.write("/cas", "one")
        info = await store.stat("/cas")
        assert info is not None and info.version == v1
        v2 = await store.write("/cas", "two", if_version=v1)
        assert v2 != v1
        with pytest.raises(ConflictError):
            await store.write("/cas", "stale", if_version=v1)
        assert await store.read("/cas") == "two"
        await store.append("/cas", "+")
        with pytest.raises(ConflictError):
            await store.write("/cas", "stale", if_version=v2)
        with pytest.raises(ConflictError):
            await store.write("/missing", "x", if_version=v2)
        assert await store.read("/missing") is None

    async def test_create_only(self, store: VersionedKnowledgeStore) -> None:
        await store.write("/once", "first", create_only=True)
        with pytest.raises(ConflictError):
            await store.write("/once", "second", create_only=True)
        assert await store.read("/once") == "first"
        await store.delete("/once")
        await store.write_bytes("/once", b"again", create_only=True)
        assert await store.read("/once") == "again"

    async def test_no_version_reuse_after_recreate(self, store: VersionedKnowledgeStore) -> None:
        old = await store.write("/aba", "same")
        await store.delete("/aba")
        await store.write("/aba", "other")
        with pytest.raises(ConflictError):
            await store.write("/aba", "lost update", if_version=old)

    async def test_concurrent_read_modify_write(self, store: VersionedKnowledgeStore) -> None:
        async def increment() -> None:
            while True:
                info = await store.stat("/counter")
                assert info is not None
                value = int(await store.read("/counter") or "0")
                await asyncio.sleep(0)
                try:
                    await store.write("/counter", str(value + 1), if_version=info.version)
                    return
                except ConflictError:
                    await asyncio.sleep(0)

        await store.write("/counter", "0")
        await asyncio.gather(*(increment() for _ in range(10)))
        assert await store.read("/counter") == "10"

    # -- on_change ---------------------------------------------------------------------
    async def test_on_change_reports_writes_after_commit(
        self, store: VersionedKnowledgeStore
    ) -> None:
        seen: list[tuple[str, str | None]] = []

        async def callback(path: str) -> None:
            seen.append((path, await store.read(path)))

        sub = await store.on_change("/watched", callback)
        try:
            await store.write("/watched/a.md", "v1")
            await store.write("/elsewhere/b.md", "no")
            await store.write("/watchedx", "no")
            # Delivery is in order: once the last change is seen, the others were.
            await store.write("/watched/last.md", "end")
            assert await wait_for(lambda: ("/watched/last.md", "end") in seen, self.change_timeout)
        finally:
            await sub.close()
        assert ("/watched/a.md", "v1") in seen
        assert all(path.startswith("/watched/") for path, _ in seen)

    async def test_on_change_reports_append_and_delete(
        self, store: VersionedKnowledgeStore
    ) -> None:
        seen: list[str] = []

        await store.write("/w/old", "x")

        async def callback(path: str) -> None:
            seen.append(path)

        sub = await store.on_change("/w", callback)
        try:
            await store.append("/w/log", "line\n")
            assert await wait_for(lambda: "/w/log" in seen, self.change_timeout)
            await store.delete("/w/old")
            assert await wait_for(lambda: "/w/old" in seen, self.change_timeout)
        finally:
            await sub.close()

    async def test_on_change_callback_errors_are_logged(
        self, store: VersionedKnowledgeStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        calls: list[str] = []

        async def callback(path: str) -> None:
            calls.append(path)
            raise RuntimeError("callback bug")

        with caplog.at_level(logging.ERROR, logger="fsmemory.store"):
            sub = await store.on_change("/e", callback)
            try:
                await store.write("/e/1", "x")  # must not raise
                assert await wait_for(lambda: "/e/1" in calls, self.change_timeout)
                await store.write("/e/2", "y")
                assert await wait_for(lambda: "/e/2" in calls, self.change_timeout)
            finally:
                await sub.close()
        assert "callback bug" in caplog.text

    async def test_on_change_close_stops_delivery(self, store: VersionedKnowledgeStore) -> None:
        seen: list[str] = []
        other: list[str] = []

        async def callback(path: str) -> None:
            seen.append(path)

        async def witness(path: str) -> None:
            other.append(path)

        sub = await store.on_change("/", callback)
        await store.write("/one", "1")
        assert await wait_for(lambda: "/one" in seen, self.change_timeout)
        await sub.close()
        await sub.close()
        seen.clear()
        check = await store.on_change("/", witness)
        try:
            await store.write("/two", "2")
            await store.write("/three", "3")
            # The witness saw both changes, so they were published; the closed one got none.
            assert await wait_for(lambda: "/three" in other, self.change_timeout)
        finally:
            await check.close()
        assert "/two" in other
        assert seen == []

    async def test_on_change_sees_outside_changes(self, store: VersionedKnowledgeStore) -> None:
        seen: list[str] = []

        async def callback(path: str) -> None:
            seen.append(path)

        sub = await store.on_change("/ext", callback)
        try:
            self.backdoor_write(store, "/ext/file.md", b"written elsewhere")
            assert await wait_for(lambda: "/ext/file.md" in seen, self.change_timeout)
        finally:
            await sub.close()


def store_state_machine(
    factory: Callable[[], VersionedKnowledgeStore],
    *,
    max_examples: int = 50,
    step_count: int = 30,
) -> type[RuleBasedStateMachine]:
    """A hypothesis state machine checking the store made by ``factory`` against a dict.

    Usage: ``TestMemoryModel = store_state_machine(make_store).TestCase``.
    """
    names = st.sampled_from(["a", "ab", "b", "a b", "é", "x.md"])
    paths = st.lists(names, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))
    dirs = st.one_of(st.just("/"), paths)
    texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)

    class StoreModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.loop = asyncio.new_event_loop()
            self.store = factory()
            self.model: dict[str, bytes] = {}

        def run(self, coro: Coroutine[Any, Any, T]) -> T:
            return self.loop.run_until_complete(coro)

        def clashes(self, path: str) -> bool:
            """A file where the model has a directory, or below a file (backend-specific)."""
            return any(
                key.startswith(path + "/") or path.startswith(key + "/") for key in self.model
            )

        @rule(path=paths, text=texts)
        def write(self, path: str, text: str) -> None:
            if self.clashes(path):
                return
            self.run(self.store.write(path, text))
            self.model[path] = text.encode()

        @rule(path=paths, text=texts)
        def append(self, path: str, text: str) -> None:
            if self.clashes(path):
                return
            offset = self.run(self.store.append(path, text))
            current = self.model.get(path, b"")
            assert offset == len(current)
            self.model[path] = current + text.encode()

        @rule(path=paths)
        def delete(self, path: str) -> None:
            self.run(self.store.delete(path))
            for key in [k for k in self.model if k == path or k.startswith(path + "/")]:
                del self.model[key]

        @rule(path=paths)
        def read(self, path: str) -> None:
            expected = self.model.get(path)
            got = self.run(self.store.read(path))
            assert got == (None if expected is None else expected.decode())

        @rule(path=paths, start=st.integers(0, 40), length=st.one_of(st.none(), st.integers(0, 40)))
        def read_range(self, path: str, start: int, length: int | None) -> None:
            end = None if length is None else start + length
            got = self.run(self.store.read_range(path, start, end))
            assert got == expected_range(self.model.get(path, b""), start, end)

        @rule(path=dirs)
        def list(self, path: str) -> None:
            prefix = "/" if path == "/" else path + "/"
            children = set()
            for key in self.model:
                if key.startswith(prefix):
                    head, sep, _ = key[len(prefix) :].partition("/")
                    children.add(head + sep)
            assert self.run(self.store.list(path)) == sorted(children)

        @rule(path=paths)
        def exists(self, path: str) -> None:
            expected = path in self.model or any(k.startswith(path + "/") for k in self.model)
            assert self.run(self.store.exists(path)) == expected

        @rule(path=paths)
        def stat(self, path: str) -> None:
            info = self.run(self.store.stat(path))
            expected = self.model.get(path)
            assert (info is None) == (expected is None)
            if info is not None and expected is not None:
                assert info.size == len(expected)

        def teardown(self) -> None:
            try:
                self.run(self.store.delete("/", allow_root=True))
                closer = getattr(self.store, "close", None)
                if closer is not None:
                    self.run(closer())
            finally:
                self.loop.close()

    StoreModel.TestCase.settings = settings(
        max_examples=max_examples, stateful_step_count=step_count, deadline=None
    )
    return StoreModel


def unique_name(prefix: str = "t") -> str:
    """A fresh name for a per-test namespace (memory roots, redis prefixes)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
