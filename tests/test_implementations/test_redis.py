"""RedisFileSystem against a real redis-server: URLs, storage model, atomic primitives."""

from __future__ import annotations

import errno
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import fsspec
import pytest
import redis

from fsmemory.errors import BackendError, ConflictError, InvalidPathError, KeyNotFoundError
from fsmemory.implementations import register
from fsmemory.implementations.redis import RedisFile, RedisFileSystem

from . import _workers

pytestmark = pytest.mark.redis

Factory = Callable[..., RedisFileSystem]


def commandstats(client: redis.Redis) -> dict[str, int]:
    """Calls per command since the last CONFIG RESETSTAT."""
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


# --------------------------------------------------------------------------- URLs


class TestUrls:
    def test_kwargs_from_url(self) -> None:
        kw = RedisFileSystem._get_kwargs_from_urls(
            "rediss://alice:p%40ss%3Aword@cache.example:6380/7/notes/a.md?prefix=tenant-1"
        )
        assert kw == {
            "host": "cache.example",
            "port": 6380,
            "username": "alice",
            "password": "p@ss:word",
            "db": 7,
            "ssl": True,
            "prefix": "tenant-1",
        }

    def test_password_only_and_defaults(self) -> None:
        kw = RedisFileSystem._get_kwargs_from_urls("redis://:secret@h/a/b")
        assert kw == {"host": "h", "password": "secret"}
        assert RedisFileSystem._get_kwargs_from_urls("a/b") == {}

    def test_bad_port(self) -> None:
        with pytest.raises(InvalidPathError):
            RedisFileSystem._get_kwargs_from_urls("redis://h:notaport/0/a")

    @pytest.mark.parametrize(
        ("url", "path"),
        [
            ("redis://127.0.0.1:6379/0/a/b.txt", "a/b.txt"),
            ("rediss://u:p@h:1/12/a/b/", "a/b"),
            ("redis://h/notes/x.md", "notes/x.md"),
            ("redis://h:1/0", ""),
            ("redis://h", ""),
            ("/a//b/", "a/b"),
            ("a/b", "a/b"),
            ("redis::a/b", "a/b"),
        ],
    )
    def test_strip_protocol(self, url: str, path: str) -> None:
        assert RedisFileSystem._strip_protocol(url) == path

    def test_url_to_fs_connects_to_host_port_db(self, redis_url: str) -> None:
        register()
        prefix = "urltest"
        fs, path = fsspec.url_to_fs(f"{redis_url}/3/a/b.txt?prefix={prefix}")
        try:
            assert isinstance(fs, RedisFileSystem)
            assert path == "a/b.txt"
            assert (fs.db, fs.prefix) == (3, prefix)
            assert fs.host == "127.0.0.1" and redis_url.endswith(f":{fs.port}")
            fs.pipe_file(path, b"in db 3")
            raw3 = redis.Redis(host=fs.host, port=fs.port, db=3)
            raw0 = redis.Redis(host=fs.host, port=fs.port, db=0)
            assert raw3.get("{urltest}:d:a/b.txt") == b"in db 3"
            assert raw0.get("{urltest}:d:a/b.txt") is None
            assert fs.unstrip_protocol(path) == f"{redis_url}/3/a/b.txt?prefix={prefix}"
            with fsspec.open(f"{redis_url}/3/a/b.txt?prefix={prefix}", "rb") as f:
                assert f.read() == b"in db 3"
        finally:
            fs.rm("", recursive=True)
            raw3.delete("{urltest}:seq")

    def test_register_is_explicit(self) -> None:
        code = (
            "import sys\n"
            "from fsspec.registry import get_filesystem_class, known_implementations, registry\n"
            "import fsmemory.implementations as impl\n"
            "assert 'redis' not in registry, 'registered on import'\n"
            "assert 'fsmemory.implementations.redis' not in sys.modules\n"
            "impl.register()\n"
            "assert 'fsmemory' in known_implementations['redis']['class']\n"
            "assert get_filesystem_class('rediss').__name__ == 'RedisFileSystem'\n"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60, env=env)

    def test_invalid_prefix(self) -> None:
        for prefix in ("", "a{b", "a}b", "a\x00"):
            with pytest.raises(InvalidPathError):
                RedisFileSystem(prefix=prefix, skip_instance_cache=True)


# --------------------------------------------------------------------------- model


class TestStorageModel:
    def test_key_layout(self, redis_fs: RedisFileSystem) -> None:
        v = redis_fs.pipe_file("dir/sub/f.txt", b"abc")
        base = "{" + redis_fs.prefix + "}:"
        c = redis_fs.client
        assert c.get(base + "d:dir/sub/f.txt") == b"abc"
        meta = c.hgetall(base + "m:dir/sub/f.txt")
        assert int(meta[b"version"]) == v
        assert c.hgetall(base + "i:dir/sub") == {b"f.txt": b"f"}
        assert c.hgetall(base + "i:dir") == {b"sub": b"d"}
        assert c.hgetall(base + "i:") == {b"dir": b"d"}

    def test_tenant_isolation(self, make_redis_fs: Factory) -> None:
        a = make_redis_fs(prefix="tenant")
        b = make_redis_fs(prefix="tenant:d")  # looks like a sub-key of `tenant`: must not be
        a.pipe_file("d:x", b"A")
        b.pipe_file("x", b"B")
        b.pipe_file("only-b/y", b"B")
        assert a.cat_file("d:x") == b"A"
        assert b.cat_file("x") == b"B"
        assert a.ls("", detail=False) == ["d:x"]
        assert b.ls("", detail=False) == ["only-b", "x"]
        a.rm("", recursive=True)
        assert b.cat_file("x") == b"B" and a.ls("") == []

    def test_ls_never_scans(self, redis_fs: RedisFileSystem) -> None:
        for i in range(30):
            redis_fs.pipe_file(f"logs/{i:02d}.jsonl", b"{}\n")
        redis_fs.makedirs("logs/empty")
        redis_fs.client.config_resetstat()
        names = redis_fs.ls("logs", detail=False)
        detail = redis_fs.ls("logs", detail=True)
        found = redis_fs.find("", withdirs=True)
        globbed = redis_fs.glob("logs/*.jsonl")
        walked = list(redis_fs.walk(""))
        stats = commandstats(redis_fs.client)
        assert len(names) == 31 and len(detail) == 31 and len(globbed) == 30
        assert len(found) == 32 and walked
        assert not {"scan", "keys"} & set(stats), stats

    def test_info_fields(self, redis_fs: RedisFileSystem) -> None:
        before = float(".".join(str(x) for x in redis_fs.client.time()))
        redis_fs.pipe_file("a/f.bin", b"12345")
        info = redis_fs.info("a/f.bin")
        assert info["name"] == "a/f.bin" and info["type"] == "file"
        assert info["size"] == 5 and info["version"] >= 1
        assert before - 1 <= info["mtime"] <= before + 5
        assert info["created"] == info["mtime"]
        assert redis_fs.ls("a")[0] == info
        time.sleep(0.01)
        redis_fs.append_bytes("a/f.bin", b"678")
        info2 = redis_fs.info("a/f.bin")
        assert info2["size"] == 8 and info2["mtime"] > info["mtime"]
        assert info2["created"] == info["created"] and info2["version"] > info["version"]
        assert redis_fs.modified("a/f.bin") == datetime.fromtimestamp(info2["mtime"], tz=UTC)
        assert redis_fs.created("a/f.bin").tzinfo is UTC
        assert redis_fs.info("a") == {"name": "a", "size": 0, "type": "directory"}
        assert redis_fs.info("")["type"] == "directory"
        assert redis_fs.size("a/f.bin") == 8

    def test_missing(self, redis_fs: RedisFileSystem) -> None:
        for call in (redis_fs.info, redis_fs.cat_file, redis_fs.ls, redis_fs.rm_file):
            with pytest.raises(FileNotFoundError) as exc:
                call("nope/x")
            assert isinstance(exc.value, KeyNotFoundError)
        with pytest.raises(FileNotFoundError):
            redis_fs.open("nope", "rb")
        assert not redis_fs.exists("nope") and redis_fs.version("nope") == 0
        assert not redis_fs.isdir("nope") and not redis_fs.isfile("nope")

    def test_directory_semantics(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        fs.pipe_file("implicit/deep/f", b"1")
        assert fs.isdir("implicit") and fs.isdir("implicit/deep")
        fs.rm_file("implicit/deep/f")
        assert not fs.exists("implicit")  # implied dirs vanish with their last file
        fs.makedirs("explicit/deep")
        fs.pipe_file("explicit/deep/f", b"1")
        fs.rm_file("explicit/deep/f")
        assert fs.ls("explicit/deep") == [] and fs.isdir("explicit")
        with pytest.raises(FileExistsError):
            fs.mkdir("explicit/deep")
        with pytest.raises(FileExistsError):
            fs.makedirs("explicit/deep")
        fs.makedirs("explicit/deep", exist_ok=True)
        with pytest.raises(FileNotFoundError):
            fs.mkdir("no/parent", create_parents=False)
        with pytest.raises(OSError) as exc:
            fs.rmdir("explicit")
        assert exc.value.errno == errno.ENOTEMPTY
        fs.rmdir("explicit/deep")
        fs.rmdir("explicit")
        assert fs.ls("") == []

    def test_file_dir_clashes(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        fs.pipe_file("f", b"x")
        with pytest.raises(NotADirectoryError):
            fs.pipe_file("f/child", b"y")
        with pytest.raises(NotADirectoryError):
            fs.append_bytes("f/child", b"y")
        with pytest.raises(NotADirectoryError):
            fs.makedirs("f/child")
        with pytest.raises(FileExistsError):
            fs.mkdir("f")
        fs.makedirs("d")
        with pytest.raises(IsADirectoryError):
            fs.pipe_file("d", b"x")
        with pytest.raises(IsADirectoryError):
            fs.cat_file("d")
        with pytest.raises(IsADirectoryError):
            fs.rm_file("d")
        with pytest.raises(IsADirectoryError):
            fs.rm("d")
        assert fs.ls("f", detail=False) == ["f"]

    def test_rm_recursive_is_complete(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        for p in ("t/a", "t/b/c", "t/b/d/e", "keep/x"):
            fs.pipe_file(p, b"1")
        fs.makedirs("t/empty")
        fs.rm("t", recursive=True)
        assert fs.ls("", detail=False) == ["keep"]
        keys = sorted(k.decode() for k in fs.client.scan_iter(match="{" + fs.prefix + "}:*"))
        base = "{" + fs.prefix + "}:"
        assert keys == [base + k for k in ("d:keep/x", "i:", "i:keep", "m:keep/x", "seq")]

    def test_rm_with_maxdepth_and_glob(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        for p in ("g/a.txt", "g/b.txt", "g/c.md", "g/sub/deep.txt"):
            fs.pipe_file(p, b"1")
        fs.rm("g/*.txt")
        assert fs.ls("g", detail=False) == ["g/c.md", "g/sub"]
        fs.rm("g", recursive=True, maxdepth=1)
        assert fs.find("g") == ["g/sub/deep.txt"]
        fs.pipe_file("h/a", b"1")
        fs.pipe_file("h/b/c", b"1")
        fs.rm("h", recursive=True, maxdepth=2)  # implicit dirs vanish along the way
        assert not fs.exists("h")

    def test_cp_and_mv(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        v1 = fs.pipe_file("src/a", b"data")
        fs.cp_file("src/a", "dst/b")
        assert fs.cat_file("dst/b") == b"data" and fs.version("dst/b") > v1
        fs.mv("dst/b", "moved/c")
        assert fs.cat_file("moved/c") == b"data" and not fs.exists("dst")
        with pytest.raises(FileNotFoundError):
            fs.cp_file("src/missing", "x")

    def test_touch(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        fs.touch("t")
        v = fs.version("t")
        fs.touch("t", truncate=False)
        assert fs.cat_file("t") == b"" and fs.version("t") > v
        fs.pipe_file("t", b"abc")
        fs.touch("t")
        assert fs.cat_file("t") == b""


# --------------------------------------------------------------------------- reads


class TestReads:
    DATA = bytes(range(40))

    @pytest.mark.parametrize(
        ("start", "end"),
        [
            (None, None),
            (0, 10),
            (5, None),
            (None, 7),
            (-5, None),
            (-5, -1),
            (3, -3),
            (10, 5),
            (0, 0),
            (39, 40),
            (40, 50),
            (-100, 3),
            (2, -100),
            (-100, -100),
            (0, 1000),
        ],
    )
    def test_cat_file_slices_like_python(
        self, redis_fs: RedisFileSystem, start: int | None, end: int | None
    ) -> None:
        redis_fs.pipe_file("r", self.DATA)
        assert redis_fs.cat_file("r", start, end) == self.DATA[start:end]

    def test_empty_file(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("e", b"")
        assert redis_fs.cat_file("e") == b"" and redis_fs.cat_file("e", 0, 5) == b""
        assert redis_fs.info("e")["size"] == 0

    def test_open_read_seek(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("r", self.DATA)
        with redis_fs.open("r", "rb", block_size=8, cache_type="none") as f:
            assert isinstance(f, RedisFile) and f.size == 40
            f.seek(30)
            assert f.read(4) == self.DATA[30:34]
            f.seek(-2, 2)
            assert f.read() == self.DATA[-2:]
        text = redis_fs.read_text("r", encoding="latin-1", newline="")
        assert text == self.DATA.decode("latin-1")

    def test_cat_file_with_version(self, redis_fs: RedisFileSystem) -> None:
        v = redis_fs.pipe_file("r", b"hello")
        assert redis_fs.cat_file_with_version("r") == (b"hello", v)
        assert redis_fs.cat_file_with_version("r", 1, 3) == (b"el", v)

    def test_reader_detects_replacement_not_append(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("r", self.DATA)
        with redis_fs.open("r", "rb", block_size=8, cache_type="none") as f:
            assert f.read(8) == self.DATA[:8]
            redis_fs.append_bytes("r", b"tail")  # prefix unchanged: still consistent
            assert f.read(8) == self.DATA[8:16]
            redis_fs.pipe_file("r", b"z" * 40)  # replaced: never mix two versions
            with pytest.raises(ConflictError):
                f.read(8)


# --------------------------------------------------------------------------- writes


class TestWrites:
    def test_create_only(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("c", b"one", mode="create")
        with pytest.raises(FileExistsError):
            redis_fs.pipe_file("c", b"two", mode="create")
        with pytest.raises(FileExistsError):
            redis_fs.open("c", "xb")
        assert redis_fs.cat_file("c") == b"one"
        with pytest.raises(ValueError):
            redis_fs.pipe_file("c", b"x", mode="append")

    def test_exclusive_open_checks_again_on_commit(self, redis_fs: RedisFileSystem) -> None:
        f = redis_fs.open("x", "xb")
        f.write(b"late")
        redis_fs.pipe_file("x", b"first")
        with pytest.raises(FileExistsError):
            f.close()
        assert redis_fs.cat_file("x") == b"first"

    def test_cas(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        v1 = fs.pipe_if_version("k", b"v1", 0)
        with pytest.raises(ConflictError):
            fs.pipe_if_version("k", b"again", 0)
        v2 = fs.pipe_if_version("k", b"v2", v1)
        assert v2 > v1 and fs.version("k") == v2
        with pytest.raises(ConflictError):
            fs.pipe_if_version("k", b"stale", v1)
        assert fs.cat_file_with_version("k") == (b"v2", v2)
        with pytest.raises(ConflictError):
            fs.pipe_if_version("missing", b"x", 5)
        with pytest.raises(ValueError):
            fs.pipe_if_version("k", b"x", -1)

    def test_versions_never_reused(self, redis_fs: RedisFileSystem) -> None:
        fs = redis_fs
        v1 = fs.pipe_file("k", b"a")
        fs.rm_file("k")
        v2 = fs.pipe_file("k", b"b")
        assert v2 > v1
        with pytest.raises(ConflictError):  # no ABA: the old version cannot match
            fs.pipe_if_version("k", b"c", v1)

    def test_cas_race_has_one_winner(self, redis_fs: RedisFileSystem) -> None:
        v = redis_fs.pipe_file("race", b"0")
        wins: list[int] = []
        barrier = threading.Barrier(8)

        def attempt(i: int) -> None:
            barrier.wait()
            try:
                redis_fs.pipe_if_version("race", str(i).encode(), v)
                wins.append(i)
            except ConflictError:
                pass

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1
        assert redis_fs.cat_file("race") == str(wins[0]).encode()

    def test_open_write_commits_atomically_on_close(self, redis_fs: RedisFileSystem) -> None:
        with redis_fs.open("w", "wb", block_size=4) as f:
            f.write(b"abcdef")
            f.write(b"ghij")
            assert not redis_fs.exists("w")
        assert redis_fs.cat_file("w") == b"abcdefghij" and f.version == redis_fs.version("w")
        with redis_fs.open("w", "ab") as f:
            f.write(b"++")
        assert redis_fs.cat_file("w") == b"abcdefghij++"
        redis_fs.write_text("t.txt", "héllo", encoding="utf-8")
        assert redis_fs.read_text("t.txt", encoding="utf-8") == "héllo"

    def test_exception_in_with_block_discards(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("w", b"old")
        with pytest.raises(RuntimeError), redis_fs.open("w", "wb") as f:
            f.write(b"half")
            raise RuntimeError("boom")
        assert redis_fs.cat_file("w") == b"old"

    def test_transaction(self, redis_fs: RedisFileSystem) -> None:
        with redis_fs.transaction:
            with redis_fs.open("tx/a", "wb") as f:
                f.write(b"a")
            assert not redis_fs.exists("tx/a")
        assert redis_fs.cat_file("tx/a") == b"a"

    def test_bytes_like_and_type_check(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("b", bytearray(b"ab"))
        redis_fs.append_bytes("b", memoryview(b"cd"))
        assert redis_fs.cat_file("b") == b"abcd"
        with pytest.raises(TypeError):
            redis_fs.pipe_file("b", "text")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- append


def _check_appends(data: bytes, records: list[tuple[int, bytes]]) -> None:
    offsets = [o for o, _ in records]
    assert len(set(offsets)) == len(offsets), "two appends got the same offset"
    assert len(data) == sum(len(r) for _, r in records), "bytes lost or duplicated"
    for offset, record in records:
        assert data[offset : offset + len(record)] == record


class TestAppend:
    def test_offsets(self, redis_fs: RedisFileSystem) -> None:
        assert redis_fs.append_bytes("log/a", b"abc")[0] == 0  # creates file and dir
        assert redis_fs.append_bytes("log/a", b"de")[0] == 3
        assert redis_fs.append_bytes("log/a", b"")[0] == 5
        assert redis_fs.cat_file("log/a") == b"abcde" and redis_fs.isdir("log")

    def test_threads(self, redis_fs: RedisFileSystem) -> None:
        records: list[tuple[int, bytes]] = []
        versions: list[int] = []
        lock = threading.Lock()
        barrier = threading.Barrier(8)

        def worker(w: int) -> None:
            barrier.wait()
            for i in range(60):
                record = f"t{w}-{i}:{'y' * ((w + i) % 11)}\n".encode()
                offset, version = redis_fs.append_bytes("log/threads", record)
                with lock:
                    records.append((offset, record))
                    versions.append(version)

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(records) == 480 and len(set(versions)) == 480
        _check_appends(redis_fs.cat_file("log/threads"), records)

    def test_processes(self, redis_fs: RedisFileSystem) -> None:
        pickled = pickle.dumps(redis_fs)
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(4) as pool:
            results = pool.starmap(
                _workers.append_many, [(pickled, "log/procs", w, 50) for w in range(4)]
            )
        records = [r for chunk in results for r in chunk]
        assert len(records) == 200
        _check_appends(redis_fs.cat_file("log/procs"), records)


# --------------------------------------------------------------------------- pickling


class TestPickle:
    def test_round_trip(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("p", b"pickled")
        assert redis_fs._client is not None  # connected
        clone = pickle.loads(pickle.dumps(redis_fs))
        assert clone is not redis_fs and clone._client is None  # no live connection
        assert (clone.host, clone.port, clone.db, clone.prefix) == (
            redis_fs.host,
            redis_fs.port,
            redis_fs.db,
            redis_fs.prefix,
        )
        assert clone.cat_file("p") == b"pickled"

    def test_round_trip_with_client(self, make_redis_fs: Factory) -> None:
        probe = make_redis_fs()
        client = redis.Redis(host=probe.host, port=probe.port, db=probe.db)
        fs = make_redis_fs(client=client, prefix=probe.prefix)
        fs.pipe_file("p", b"via client")
        clone = pickle.loads(pickle.dumps(fs))
        assert clone.client is not client
        assert clone.cat_file("p") == b"via client"

    def test_open_file_pickles(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("p", b"0123456789")
        with redis_fs.open("p", "rb") as f:
            f.seek(4)
            g = pickle.loads(pickle.dumps(f))
            assert g.read() == b"456789"

    def test_instance_cache(self, redis_url: str) -> None:
        register()
        a = fsspec.filesystem("redis", **RedisFileSystem._get_kwargs_from_urls(redis_url))
        b = fsspec.filesystem("redis", **RedisFileSystem._get_kwargs_from_urls(redis_url))
        assert a is b


# --------------------------------------------------------------------------- paths


HOSTILE = ["..", "../x", "a/../b", "a/..", "./a", "a/./b", "a\x00b", "\x00"]


class TestHostilePaths:
    @pytest.mark.parametrize("path", HOSTILE)
    def test_rejected_everywhere(self, redis_fs: RedisFileSystem, path: str) -> None:
        calls: list[Callable[[], Any]] = [
            lambda: redis_fs.pipe_file(path, b"x"),
            lambda: redis_fs.pipe_if_version(path, b"x", 0),
            lambda: redis_fs.append_bytes(path, b"x"),
            lambda: redis_fs.cat_file(path),
            lambda: redis_fs.info(path),
            lambda: redis_fs.ls(path),
            lambda: redis_fs.exists(path),
            lambda: redis_fs.rm_file(path),
            lambda: redis_fs.makedirs(path),
            lambda: redis_fs.open(path, "wb"),
            lambda: redis_fs.cp_file("ok", path),
        ]
        for call in calls:
            with pytest.raises(InvalidPathError):
                call()
        assert redis_fs.ls("") == []

    def test_odd_but_legal_names(self, redis_fs: RedisFileSystem) -> None:
        for name in ("..a", "a..", "...", "sp ace", "ünï/cödé", "a:b{c}", "*lit"):
            redis_fs.pipe_file(name, name.encode())
            assert redis_fs.cat_file(name) == name.encode()


# --------------------------------------------------------------------------- errors


class TestBackendErrors:
    def test_unreachable(self) -> None:
        from fsmemory.testing.services import free_port

        fs = RedisFileSystem(
            host="127.0.0.1", port=free_port(), socket_connect_timeout=1, skip_instance_cache=True
        )
        with pytest.raises(BackendError) as exc:
            fs.cat_file("x")
        assert isinstance(exc.value.__cause__, redis.exceptions.ConnectionError)
        assert isinstance(exc.value, OSError)
        with pytest.raises(BackendError):
            fs.exists("x")  # a dead backend is not "file missing"

    def test_acl_user_from_url_and_wrong_password(self, redis_fs: RedisFileSystem) -> None:
        user = f"fsm-{uuid.uuid4().hex[:8]}"
        redis_fs.client.acl_setuser(
            user, enabled=True, passwords=["+s3cr:t"], categories=["+@all"], keys=["*"]
        )
        try:
            url = f"redis://{user}:s3cr%3At@{redis_fs.host}:{redis_fs.port}/0/f"
            fs, path = fsspec.url_to_fs(url, prefix=redis_fs.prefix, skip_instance_cache=True)
            fs.pipe_file(path, b"as acl user")
            assert redis_fs.cat_file("f") == b"as acl user"
            wrong = RedisFileSystem(
                host=redis_fs.host,
                port=redis_fs.port,
                username=user,
                password="wrong",
                skip_instance_cache=True,
            )
            with pytest.raises(BackendError) as exc:
                wrong.info("f")
            assert isinstance(exc.value.__cause__, redis.exceptions.AuthenticationError)
        finally:
            redis_fs.client.acl_deluser(user)


# --------------------------------------------------------------------------- ? and # in names


class TestQuestionMarksAndHashes:
    """A key is stored exactly as named: ``?`` and ``#`` in a path are part of it."""

    @pytest.mark.parametrize("name", ["what?.md", "c#sharp.md", "a?b#c.md", "q?x=1.md", "#"])
    def test_urls_keep_the_whole_name(self, redis_fs: RedisFileSystem, name: str) -> None:
        url = f"redis://{redis_fs.host}:{redis_fs.port}/{redis_fs.db}/notes/{name}"
        assert RedisFileSystem._strip_protocol(url) == f"notes/{name}"
        redis_fs.pipe_file(url, b"exact")
        assert redis_fs.ls("notes", detail=False) == [f"notes/{name}"]
        assert redis_fs.cat_file(f"notes/{name}") == b"exact"
        assert redis_fs.client.get("{" + redis_fs.prefix + "}:d:notes/" + name) == b"exact"
        with fsspec.open(url, "rb", prefix=redis_fs.prefix) as f:
            assert f.read() == b"exact"

    def test_glob_question_mark_matches_one_character(self, redis_fs: RedisFileSystem) -> None:
        redis_fs.pipe_file("notes/what.md", b"1")
        redis_fs.pipe_file("notes/wha?.md", b"2")
        redis_fs.pipe_file("notes/whatt.md", b"3")
        base = f"redis://{redis_fs.host}:{redis_fs.port}/{redis_fs.db}"
        # fsspec's glob: "?" is any one character (so it also matches a literal "?").
        assert redis_fs.glob(f"{base}/notes/wha?.md") == ["notes/wha?.md", "notes/what.md"]
        assert redis_fs.glob("notes/wha?.md") == ["notes/wha?.md", "notes/what.md"]

    def test_kwargs_ignore_question_marks_in_the_path(self) -> None:
        kw = RedisFileSystem._get_kwargs_from_urls("redis://h:1/2/notes/what?.md#x")
        assert kw == {"host": "h", "port": 1, "db": 2}
        kw = RedisFileSystem._get_kwargs_from_urls("redis://h:1/2/a?.md?prefix=t")
        assert kw == {"host": "h", "port": 1, "db": 2, "prefix": "t"}
        assert RedisFileSystem._strip_protocol("redis://h:1/2/a?.md?prefix=t") == "a?.md"
        assert RedisFileSystem._get_kwargs_from_urls("redis://h?prefix=t") == {
            "host": "h",
            "prefix": "t",
        }

    def test_url_of_another_database_or_tenant_is_refused(self, redis_fs: RedisFileSystem) -> None:
        base = f"redis://{redis_fs.host}:{redis_fs.port}"
        other_db = (redis_fs.db + 1) % 16
        for url in (f"{base}/{other_db}/a.md", f"{base}/{redis_fs.db}/a.md?prefix=elsewhere"):
            with pytest.raises(InvalidPathError):
                redis_fs.pipe_file(url, b"x")
        assert redis_fs.ls("", detail=False) == []  # nothing written under another name
