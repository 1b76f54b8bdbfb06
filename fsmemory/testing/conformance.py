"""The storage-layer conformance suite: one set of behaviour tests for every backend.

Subclass :class:`StorageRootTests` in a test module and provide a ``root`` fixture that
yields a fresh, empty :class:`~fsmemory.fs.base.StorageRoot`; pytest collects every
``test_*`` method for that backend::

    import pytest
    from fsmemory.fs import open_root
    from fsmemory.testing.conformance import StorageRootTests

    class TestMyRoot(StorageRootTests):
        concurrency_ops = 10

        @pytest.fixture
        def root(self, tmp_path):
            return open_root(str(tmp_path))

The suite itself imports nothing from pytest, so it can be imported anywhere.
"Backdoor" helpers (:meth:`StorageRootTests.backdoor_write`) write through the raw
filesystem, so each API method is tested on its own; override them for a root whose
``fs``/``root`` attributes do not address its files directly.

:func:`cas_increment_worker` is the body of the multi-process compare-and-swap test: each
process opens the root from its URL and increments one counter file ``n`` times.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Any

from fsmemory.errors import ConflictError, InvalidPathError, KeyNotFoundError
from fsmemory.fs.base import CacheData, FileInfo, StorageRoot

__all__ = ["BAD_PATHS", "StorageRootTests", "cas_increment_worker", "increment"]

#: paths every root must refuse with InvalidPathError before any I/O
BAD_PATHS: tuple[str, ...] = (
    "..",
    "../x",
    "a/../b",
    "a/..",
    ".",
    "./a",
    "%2e%2e",
    "%2E%2E/x",
    "a/%2e%2e/b",
    "a%2fb%2f..",
    "/abs",
    "/etc/passwd",
    "a\\b",
    "..\\x",
    "a\x00b",
    "a\nb",
    "a\rb",
    "a\tb",
    "a\x1bb",
    "a\x7fb",
    "a//b",
    "a/",
    "C:/x",
    ".fsmemory",
    ".fsmemory.lock",
    "a/.fsmemory-tmp-1",
    ".fsmemory.lease-x/y",
    "\ud800",
)


def increment(current: bytes | None) -> bytes:
    """The counter update used by the compare-and-swap tests: ``int + 1``."""
    return str(int(current or b"0") + 1).encode()


def cas_increment_worker(
    url: str, storage_options: Mapping[str, Any] | None, path: str, n: int
) -> int:
    """Open the root at ``url`` and increment the counter at ``path`` ``n`` times.

    Meant to run in a child process (it must be importable by ``spawn``).

    Returns:
        How many increments this process applied (always ``n`` unless it raises).
    """
    from fsmemory.fs.open import open_root

    root = open_root(url, dict(storage_options or {}))
    try:
        for _ in range(n):
            root.update(path, increment, attempts=10_000)
    finally:
        root.close()
    return n


def _entry_points(root: StorageRoot, bad: str) -> list[Callable[[], object]]:
    """Every public method of ``root`` called with the path ``bad``."""
    return [
        lambda: root.read(bad),
        lambda: root.read_bytes(bad),
        lambda: root.read_range(bad, 0, 1),
        lambda: root.read_range(bad, 0),
        lambda: root.stat(bad),
        lambda: root.exists(bad),
        lambda: root.write(bad, b"x"),
        lambda: root.write(bad, b"x", create_only=True),
        lambda: root.write(bad, b"x", if_version="v"),
        lambda: root.append(bad, b"x"),
        lambda: root.append(bad, b"x", line_safe=True),
        lambda: root.delete(bad),
        lambda: root.update(bad, increment),
        lambda: root.list(bad),
        lambda: root.list(bad, recursive=True),
        lambda: root.list_dirs(bad),
        lambda: root.delete_tree(bad),
    ]


class _PoisonedFs:
    """Stands in for ``root.fs``: any use of it means I/O was attempted."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"I/O attempted before path validation (fs.{name})")


@contextmanager
def _raises(*kinds: type[BaseException]) -> Iterator[None]:
    try:
        yield
    except kinds:
        return
    raise AssertionError(f"expected {' or '.join(k.__name__ for k in kinds)}")


def _paths(infos: list[FileInfo]) -> list[str]:
    return [i.path for i in infos]


class StorageRootTests:
    """Behaviour every :class:`~fsmemory.fs.base.StorageRoot` must show.

    Subclasses provide a ``root`` pytest fixture (a fresh, empty root per test) and may
    tune the class attributes below for slow backends.
    """

    #: threads in the concurrency tests
    workers: int = 8
    #: updates/appends per thread in the concurrency tests
    concurrency_ops: int = 25

    # -- backdoor ----------------------------------------------------------------------
    def backdoor_write(self, root: StorageRoot, rel: str, data: bytes) -> None:
        """Write ``rel`` through the raw filesystem, bypassing validation."""
        full = f"{root.root}/{rel}" if root.root else rel
        parent = full.rsplit("/", 1)[0]
        with suppress(OSError, NotImplementedError):
            root.fs.makedirs(parent, exist_ok=True)
        root.fs.pipe_file(full, data)

    # -- round trips -------------------------------------------------------------------
    def test_round_trips(self, root: StorageRoot) -> None:
        """Empty, binary (every byte value) and 1 MiB contents come back unchanged."""
        cases = {
            "empty.bin": b"",
            "binary.bin": bytes(range(256)) * 4 + b"\r\n\x00\xff",
            "big.bin": (bytes(range(251)) * 4200)[: 1 << 20],
            "text.md": "# Agent Memory\n- caf\u00e9 \u2603\n".encode(),
        }
        for path, data in cases.items():
            root.write(path, data)
        for path, data in cases.items():
            assert root.read_bytes(path) == data, path
            got = root.read(path)
            assert got.data == data
            info = root.stat(path)
            assert info is not None and info.size == len(data) and info.path == path

    def test_write_returns_the_version_read_sees(self, root: StorageRoot) -> None:
        """The token returned by ``write`` is the one ``read`` reports next."""
        v1 = root.write("v.txt", b"one")
        assert root.read("v.txt").version == v1
        v2 = root.write("v.txt", b"two", if_version=v1)
        assert v2 != v1
        assert root.read("v.txt").version == v2
        v3 = root.write("w.txt", b"three", create_only=True)
        assert root.read("w.txt").version == v3

    def test_overwrite_replaces_content(self, root: StorageRoot) -> None:
        """A plain write replaces a longer file completely."""
        root.write("o.txt", b"a much longer first version")
        root.write("o.txt", b"short")
        assert root.read_bytes("o.txt") == b"short"

    def test_unusual_names(self, root: StorageRoot) -> None:
        """Spaces, Unicode, URL and shell metacharacters survive every operation."""
        names = [
            "dir with space/file name.txt",
            "uni/caf\u00e9 \u2603 \U0001f600.md",
            "sym/a+b=c&d;e,f@g$h!~'.txt",
            "pct/100%.txt",
            "pct/%41%20.txt",
            "q/what?#frag.txt",
            "brace/{x}[y](z).txt",
            'quote/"q".txt',
        ]
        for i, name in enumerate(names):
            root.write(name, f"{i}".encode())
        assert _paths(root.list(recursive=True)) == sorted(names)
        assert root.list_dirs() == sorted({n.split("/")[0] for n in names})
        for i, name in enumerate(names):
            assert root.read_bytes(name) == f"{i}".encode(), name
            assert root.stat(name) is not None, name
            assert root.read_range(name, 0, 1) == f"{i}".encode()[:1]
            assert root.delete(name) is True, name
        assert root.list(recursive=True) == []

    def test_read_missing(self, root: StorageRoot) -> None:
        """Reading a missing file raises KeyNotFoundError (also a FileNotFoundError)."""
        with _raises(KeyNotFoundError):
            root.read("missing.txt")
        with _raises(FileNotFoundError):
            root.read_bytes("missing/deeper.txt")
        assert root.stat("missing.txt") is None
        assert not root.exists("missing.txt")

    # -- listing -----------------------------------------------------------------------
    def test_nested_paths(self, root: StorageRoot) -> None:
        """Deep paths work without creating directories first."""
        root.write("a/b/c/d.txt", b"deep")
        root.write("a/top.txt", b"top")
        assert root.read_bytes("a/b/c/d.txt") == b"deep"
        assert _paths(root.list("a")) == ["a/top.txt"]
        assert _paths(root.list("a", recursive=True)) == ["a/b/c/d.txt", "a/top.txt"]
        assert root.list_dirs("a") == ["b"]
        assert root.list_dirs("a/b") == ["c"]
        assert _paths(root.list("a/b/c")) == ["a/b/c/d.txt"]
        assert root.list_dirs("a/b/c") == []

    def test_listing_sibling_prefix_trap(self, root: StorageRoot) -> None:
        """``a`` never lists ``ab``'s files: prefixes are directories, not strings."""
        root.write("a/1.txt", b"1")
        root.write("ab/2.txt", b"2")
        root.write("abc", b"3")
        root.write("a.txt", b"4")
        assert _paths(root.list("a")) == ["a/1.txt"]
        assert _paths(root.list("a", recursive=True)) == ["a/1.txt"]
        assert _paths(root.list("ab", recursive=True)) == ["ab/2.txt"]
        assert _paths(root.list()) == ["a.txt", "abc"]
        assert _paths(root.list(recursive=True)) == ["a.txt", "a/1.txt", "ab/2.txt", "abc"]
        assert root.list_dirs() == ["a", "ab"]
        assert root.delete_tree("a") == 1
        assert _paths(root.list(recursive=True)) == ["a.txt", "ab/2.txt", "abc"]

    def test_list_missing_directory_is_empty(self, root: StorageRoot) -> None:
        """Listing a directory that does not exist (or is a file) gives ``[]``."""
        assert root.list() == []
        assert root.list("nope") == []
        assert root.list("nope/deeper", recursive=True) == []
        assert root.list_dirs("nope") == []
        root.write("file", b"x")
        assert root.list("file") == []
        assert root.list_dirs("file") == []

    def test_list_entries_match_stat(self, root: StorageRoot) -> None:
        """A listing reports the same size and change token as ``stat``."""
        root.write("d/x.txt", b"hello")
        root.append("d/y.log", b"line\n")
        for info in root.list("d"):
            stat = root.stat(info.path)
            assert stat is not None
            assert (info.size, info.token) == (stat.size, stat.token)

    def test_listing_sees_every_change(self, root: StorageRoot) -> None:
        """Listings are never served stale after writes and deletes."""
        assert root.list("s") == []
        root.write("s/1", b"1")
        assert _paths(root.list("s")) == ["s/1"]
        assert root.list_dirs() == ["s"]
        root.write("s/2", b"2")
        assert _paths(root.list("s", recursive=True)) == ["s/1", "s/2"]
        before = {i.path: i.token for i in root.list("s")}
        root.write("s/1", b"changed")
        after = {i.path: i.token for i in root.list("s")}
        assert after["s/1"] != before["s/1"] and after["s/2"] == before["s/2"]
        root.delete("s/1")
        assert _paths(root.list("s")) == ["s/2"]
        root.delete("s/2")
        assert root.list("s") == []
        assert root.list_dirs() == []

    def test_reserved_files_never_listed(self, root: StorageRoot) -> None:
        """Internal ``.fsmemory*`` files (locks, leases, temp files) stay hidden."""
        root.write("sub/visible.txt", b"v")
        with root.lock("conformance"):
            assert _paths(root.list(recursive=True)) == ["sub/visible.txt"]
            assert root.list_dirs() == ["sub"]
        self.backdoor_write(root, ".fsmemory-backdoor", b"x")
        self.backdoor_write(root, "sub/.fsmemory-tmp-123", b"x")
        self.backdoor_write(root, ".fsmemory-dir/inner.txt", b"x")
        assert _paths(root.list()) == []
        assert _paths(root.list("sub")) == ["sub/visible.txt"]
        assert _paths(root.list(recursive=True)) == ["sub/visible.txt"]
        assert root.list_dirs() == ["sub"]

    def test_list_with_cache(self, root: StorageRoot) -> None:
        """The listing with a cache file: the listing is ``list("", recursive=True)``,
        the cache file's exact bytes reach ``load`` (None without one), and a cache
        file is never listed."""
        for name in ("MEMORY.md", "logs/2026-12-01.jsonl", "logs/2026-12-02.jsonl"):
            root.write(name, name.encode())
        loads: list[bytes] = []

        def load(data: CacheData) -> int:  # (a local folder maps the file)
            loads.append(bytes(data))
            return len(data)

        assert root.list_with_cache("index", load) == (root.list("", recursive=True), None)
        assert loads == []
        data = bytes(range(256)) * 300
        root.write_cache("index", data)
        listing, loaded = root.list_with_cache("index", load)
        assert listing == root.list("", recursive=True)
        assert len(listing) == 3
        assert (loaded, loads) == (len(data), [data])
        assert root.delete_cache("index")

    # -- delete ------------------------------------------------------------------------
    def test_delete_is_idempotent(self, root: StorageRoot) -> None:
        """Deleting reports whether the file existed; a second delete is a no-op."""
        root.write("del/me.txt", b"x")
        assert root.delete("del/me.txt") is True
        assert root.delete("del/me.txt") is False
        assert root.delete("never/was.txt") is False
        assert root.stat("del/me.txt") is None
        with _raises(KeyNotFoundError):
            root.read("del/me.txt")

    def test_delete_tree(self, root: StorageRoot) -> None:
        """``delete_tree`` removes everything below a directory and nothing else."""
        for p in ("t/1", "t/2", "t/u/3", "t/u/v/4", "tt/5", "t.txt"):
            root.write(p, b"x")
        assert root.delete_tree("t") == 4
        assert _paths(root.list(recursive=True)) == ["t.txt", "tt/5"]
        assert root.list_dirs() == ["tt"]
        assert root.delete_tree("t") == 0
        assert root.delete_tree("missing") == 0

    # -- append ------------------------------------------------------------------------
    def test_append_offsets(self, root: StorageRoot) -> None:
        """Appending creates a missing file and returns where each chunk starts."""
        assert root.append("logs/a.jsonl", b"first\n") == 0
        assert root.append("logs/a.jsonl", b"second\n") == 6
        assert root.append("logs/a.jsonl", b"") == 13
        assert root.append("logs/a.jsonl", b"third\n") == 13
        assert root.read_bytes("logs/a.jsonl") == b"first\nsecond\nthird\n"

    def test_append_line_safe_after_torn_line(self, root: StorageRoot) -> None:
        """``line_safe`` starts a fresh line after a torn (unterminated) last line."""
        root.write("torn.jsonl", b'{"ok": 1}\n{"tor')
        offset = root.append("torn.jsonl", b'{"ok": 2}\n', line_safe=True)
        data = root.read_bytes("torn.jsonl")
        assert data == b'{"ok": 1}\n{"tor\n{"ok": 2}\n'
        assert data[offset:] == b'{"ok": 2}\n'
        # A clean end gets no extra newline; neither does a new file.
        offset = root.append("torn.jsonl", b"x\n", line_safe=True)
        assert root.read_bytes("torn.jsonl")[offset:] == b"x\n"
        assert root.append("fresh.jsonl", b"y\n", line_safe=True) == 0
        assert root.read_bytes("fresh.jsonl") == b"y\n"
        root.write("empty.jsonl", b"")
        assert root.append("empty.jsonl", b"z\n", line_safe=True) == 0

    def test_append_without_line_safe_keeps_bytes(self, root: StorageRoot) -> None:
        """Without ``line_safe`` bytes are appended exactly as given."""
        root.write("raw.bin", b"ab")
        assert root.append("raw.bin", b"cd") == 2
        assert root.read_bytes("raw.bin") == b"abcd"

    # -- compare-and-swap --------------------------------------------------------------
    def test_cas_success_and_conflict(self, root: StorageRoot) -> None:
        """``if_version`` writes only over the version the caller read."""
        v1 = root.write("cas.txt", b"1")
        v2 = root.write("cas.txt", b"2", if_version=v1)
        with _raises(ConflictError):
            root.write("cas.txt", b"stale", if_version=v1)
        assert root.read_bytes("cas.txt") == b"2"
        with _raises(ConflictError):
            root.write("cas.txt", b"bogus", if_version="not-a-version")
        with _raises(ConflictError):
            root.write("missing.txt", b"x", if_version=v2)
        assert root.stat("missing.txt") is None
        root.write("cas.txt", b"3", if_version=v2)
        assert root.read_bytes("cas.txt") == b"3"

    def test_cas_after_append(self, root: StorageRoot) -> None:
        """An append changes the version, so a CAS based on the old one fails."""
        v1 = root.write("ca.txt", b"a\n")
        root.append("ca.txt", b"b\n")
        with _raises(ConflictError):
            root.write("ca.txt", b"lost the append", if_version=v1)
        assert root.read_bytes("ca.txt") == b"a\nb\n"

    def test_create_only(self, root: StorageRoot) -> None:
        """``create_only`` succeeds once and then conflicts, leaving content alone."""
        root.write("new/once.txt", b"first", create_only=True)
        with _raises(ConflictError):
            root.write("new/once.txt", b"second", create_only=True)
        assert root.read_bytes("new/once.txt") == b"first"
        root.delete("new/once.txt")
        root.write("new/once.txt", b"again", create_only=True)
        assert root.read_bytes("new/once.txt") == b"again"

    def test_update(self, root: StorageRoot) -> None:
        """``update`` creates, changes, and leaves the file alone when declined."""
        assert root.update("u.txt", increment) == b"1"
        assert root.update("u.txt", increment) == b"2"
        assert root.update("u.txt", lambda cur: None) is None
        assert root.read_bytes("u.txt") == b"2"
        assert root.update("u2.txt", lambda cur: None) is None
        assert root.stat("u2.txt") is None

    def test_update_concurrent_threads(self, root: StorageRoot) -> None:
        """Concurrent ``update`` calls never lose an increment."""
        n, workers = self.concurrency_ops, self.workers
        root.write("counter", b"0")

        def work() -> None:
            for _ in range(n):
                root.update("counter", increment, attempts=10_000)

        self._run_threads(work, workers)
        assert int(root.read_bytes("counter")) == workers * n

    def test_append_concurrent_threads(self, root: StorageRoot) -> None:
        """Concurrent appends land once each, at distinct offsets, bytes intact."""
        n, workers = self.concurrency_ops, self.workers
        offsets: dict[int, bytes] = {}
        guard = threading.Lock()

        def work(w: int) -> None:
            for i in range(n):
                record = f"worker={w} i={i} {'x' * (w + i)}\n".encode()
                offset = root.append("shared.log", record, line_safe=True)
                with guard:
                    assert offset not in offsets, f"offset {offset} handed out twice"
                    offsets[offset] = record

        with ThreadPoolExecutor(workers) as pool:
            for f in [pool.submit(work, w) for w in range(workers)]:
                f.result()
        data = root.read_bytes("shared.log")
        assert len(offsets) == workers * n
        assert len(data) == sum(len(r) for r in offsets.values())
        for offset, record in offsets.items():
            assert data[offset : offset + len(record)] == record

    @staticmethod
    def _run_threads(work: Callable[[], None], count: int) -> None:
        with ThreadPoolExecutor(count) as pool:
            for f in [pool.submit(work) for _ in range(count)]:
                f.result()

    # -- paths -------------------------------------------------------------------------
    def test_invalid_paths_rejected_before_io(self, root: StorageRoot) -> None:
        """Every entry point refuses bad paths with InvalidPathError before any I/O."""
        real_fs = root.fs
        root.fs = _PoisonedFs()
        try:
            for bad in BAD_PATHS:
                for call in _entry_points(root, bad):
                    with _raises(InvalidPathError):
                        call()
        finally:
            root.fs = real_fs
        assert root.list(recursive=True) == []

    def test_invalid_path_is_a_value_error(self, root: StorageRoot) -> None:
        """InvalidPathError is also a ValueError, for callers that catch that."""
        with _raises(ValueError):
            root.write("../escape", b"x")

    # -- ranges ------------------------------------------------------------------------
    def test_read_range_edges(self, root: StorageRoot) -> None:
        """Ranges clamp to the file; negative offsets and missing files raise."""
        root.write("r.bin", b"0123456789")
        assert root.read_range("r.bin", 0, 3) == b"012"
        assert root.read_range("r.bin", 7) == b"789"
        assert root.read_range("r.bin", 0) == b"0123456789"
        assert root.read_range("r.bin", 8, 100) == b"89"
        assert root.read_range("r.bin", 9, 10) == b"9"
        assert root.read_range("r.bin", 10) == b""
        assert root.read_range("r.bin", 50) == b""
        assert root.read_range("r.bin", 50, 60) == b""
        assert root.read_range("r.bin", 5, 5) == b""
        assert root.read_range("r.bin", 6, 2) == b""
        for start, end in ((-1, None), (0, -1), (-5, -1)):
            with _raises(ValueError):
                root.read_range("r.bin", start, end)
        for start, end in ((0, None), (0, 10), (3, 3), (5, None)):
            with _raises(KeyNotFoundError):
                root.read_range("missing.bin", start, end)
        root.write("e.bin", b"")
        assert root.read_range("e.bin", 0) == b""
        assert root.read_range("e.bin", 0, 5) == b""
        assert root.read_range("e.bin", 3) == b""

    def test_read_range_tail(self, root: StorageRoot) -> None:
        """Reading from a remembered offset returns exactly what was appended since."""
        root.append("tail.log", b"a\n")
        offset = root.stat("tail.log").size  # type: ignore[union-attr]
        assert root.read_range("tail.log", offset) == b""
        root.append("tail.log", b"b\n")
        assert root.read_range("tail.log", offset) == b"b\n"

    def test_read_ranges_match_read_range(self, root: StorageRoot) -> None:
        """Many ranges at once: what ``read_range`` gives each, in order; None when the
        file does not exist."""
        root.write("d1/a.bin", b"0123456789")
        root.write("d2/b.bin", b"abcdef")
        requests: list[tuple[str, int, int | None]] = [
            ("d1/a.bin", 0, None), ("d2/b.bin", 2, 4), ("d1/missing.bin", 0, None),
            ("d1/a.bin", 8, 100), ("d2/b.bin", 50, None), ("d1/a.bin", 3, 3),
        ]  # fmt: skip
        assert root.read_ranges(requests) == [b"0123456789", b"cd", None, b"89", b"", b""]
        assert root.read_ranges([]) == []
        with _raises(ValueError):
            root.read_ranges([("d1/a.bin", -1, None)])

    # -- change tokens -----------------------------------------------------------------
    def test_stat_token_changes_on_every_change(self, root: StorageRoot) -> None:
        """Each write or append gives a new token, even at the same size."""
        tokens = []
        for i in range(6):
            root.write("tok.txt", f"same size {i}".encode())
            info = root.stat("tok.txt")
            assert info is not None
            tokens.append(info.token)
            root.append("tok.txt", b"+")
            info = root.stat("tok.txt")
            assert info is not None
            tokens.append(info.token)
        assert len(set(tokens)) == len(tokens), tokens

    def test_stat_reports_size_and_mtime(self, root: StorageRoot) -> None:
        """``stat`` returns size, a plausible mtime (when known) and the path."""
        root.write("m/s.txt", b"12345")
        info = root.stat("m/s.txt")
        assert info is not None
        assert (info.path, info.size) == ("m/s.txt", 5)
        assert info.mtime is None or info.mtime > 1e9
        assert info.token
        assert root.stat("m") is None

    def test_capabilities(self, root: StorageRoot) -> None:
        """Every root declares what it can do natively."""
        caps = root.capabilities
        assert isinstance(caps.conditional_write, bool)
        assert isinstance(caps.native_append, bool)
        assert root.url

    @staticmethod
    def unique_name(prefix: str = "fsm") -> str:
        """A fresh name for a bucket, directory or memory root."""
        return f"{prefix}-{uuid.uuid4().hex[:12]}"
