"""Without an optional package, every entry point says which extra to install
(:class:`~fsmemory.errors.MissingDependencyError`), never a bare ImportError.

Each case runs in a fresh interpreter where the package is hidden
(``sys.modules[name] = None`` makes every import of it fail)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None
from fsmemory.errors import MissingDependencyError

def expect(call, extra):
    try:
        call()
    except MissingDependencyError as exc:
        assert exc.extra == extra, (exc.extra, extra)
        assert f"pip install 'fsmemory[{{extra}}]'" in str(exc), str(exc)
    else:
        raise AssertionError("no MissingDependencyError")
"""


#: an environment with no AWS credentials anywhere (the built-in S3 client cannot be
#: used, so s3:// needs s3fs)
NO_AWS = {
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_ACCESS_KEY_ID": "",
    "AWS_SECRET_ACCESS_KEY": "",
    "AWS_PROFILE": "",
    "FSMEMORY_S3_CLIENT": "",
}


def _run(hidden: list[str], body: str, env_overrides: dict[str, str] | None = None) -> None:
    code = PRELUDE.format(hidden=hidden) + textwrap.dedent(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.update(env_overrides or {})
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr


def test_without_redis() -> None:
    _run(
        ["redis", "redis.asyncio"],
        """
        import fsspec
        from fsmemory import KnowledgeMemory, open_root
        from fsmemory.store import FsspecKnowledgeStore, RedisKnowledgeStore, RedisLock
        from fsmemory.implementations import register

        url = "redis://127.0.0.1:1/0/agent"
        expect(lambda: open_root(url), "redis")
        expect(lambda: KnowledgeMemory(url), "redis")
        expect(lambda: FsspecKnowledgeStore(url), "redis")
        expect(lambda: RedisKnowledgeStore(url), "redis")
        expect(lambda: RedisLock(url), "redis")
        register()
        try:
            fsspec.filesystem("redis")
        except ImportError as exc:  # fsspec's wrapper names the extra too
            assert "pip install 'fsmemory[redis]'" in str(exc), exc
            assert isinstance(exc.__cause__, MissingDependencyError)
        else:
            raise AssertionError("no ImportError")
        """,
    )


@pytest.mark.parametrize(
    ("module", "url", "extra"),
    [("s3fs", "s3://bucket/agent", "s3fs"), ("gcsfs", "gs://bucket/agent", "gcsfs")],
)
def test_without_an_object_store_client(module: str, url: str, extra: str) -> None:
    _run(
        [module],
        f"""
        from fsmemory import KnowledgeMemory, open_root
        from fsmemory.store import FsspecKnowledgeStore

        expect(lambda: open_root({url!r}), {extra!r})
        expect(lambda: KnowledgeMemory({url!r}), {extra!r})
        expect(lambda: FsspecKnowledgeStore({url!r}), {extra!r})
        """,
        NO_AWS,
    )


def test_s3_with_static_keys_needs_no_s3fs() -> None:
    """Without s3fs, an S3 root that obstore can serve opens; only ``root.fs`` (and
    forcing s3fs) names the extra."""
    _run(
        ["s3fs"],
        """
        from fsmemory import open_root

        options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
        root = open_root("s3://bucket/agent", options)
        assert root.client == "obstore", root.client
        expect(lambda: root.fs, "s3fs")
        expect(lambda: open_root("s3://bucket/agent", {**options, "client": "s3fs"}), "s3fs")
        """,
        NO_AWS,
    )


def test_s3_without_obstore_takes_s3fs() -> None:
    """Without obstore, S3 roots take the s3fs route; forcing obstore names the extra."""
    _run(
        ["obstore", "obstore.store"],
        """
        from fsmemory import open_root

        options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
        root = open_root("s3://bucket/agent", options)
        assert root.client == "s3fs", root.client
        expect(lambda: open_root("s3://bucket/agent", {**options, "client": "obstore"}), "s3")
        """,
        NO_AWS,
    )


#: no Google credentials and no forced client (a bare gs:// URL needs gcsfs)
NO_GOOGLE = {"GOOGLE_APPLICATION_CREDENTIALS": "", "FSMEMORY_GCS_CLIENT": ""}


def test_gcs_anonymous_needs_no_gcsfs() -> None:
    """Without gcsfs, a GCS root that obstore can serve opens; only ``root.fs`` (and
    forcing gcsfs) names the extra, ``[gcsfs]``."""
    _run(
        ["gcsfs", "gcsfs.core"],
        """
        from fsmemory import open_root

        options = {"token": "anon", "endpoint_url": "http://127.0.0.1:9"}
        root = open_root("gs://bucket/agent", options)
        assert root.client == "obstore", root.client
        expect(lambda: root.fs, "gcsfs")
        expect(lambda: open_root("gs://bucket/agent", {**options, "client": "gcsfs"}), "gcsfs")
        """,
        NO_GOOGLE,
    )


def test_gcs_without_obstore_takes_gcsfs() -> None:
    """Without obstore, GCS roots take the gcsfs route; forcing obstore names ``[gcs]``;
    without either, the fast path's extra is named."""
    _run(
        ["obstore", "obstore.store"],
        """
        from fsmemory import open_root

        options = {"token": "anon", "endpoint_url": "http://127.0.0.1:9"}
        root = open_root("gs://bucket/agent", options)
        assert root.client == "gcsfs", root.client
        expect(lambda: open_root("gs://bucket/agent", {**options, "client": "obstore"}), "gcs")
        """,
        NO_GOOGLE,
    )
    _run(
        ["obstore", "obstore.store", "gcsfs", "gcsfs.core"],
        """
        from fsmemory import open_root

        expect(lambda: open_root("gs://bucket/agent", {"token": "anon"}), "gcs")
        """,
        NO_GOOGLE,
    )


def test_without_watchdog_local_folders_poll() -> None:
    """watchdog is optional: without it a local folder's ``on_change`` polls."""
    _run(
        ["watchdog", "watchdog.observers", "watchdog.events"],
        """
        import asyncio, tempfile
        from fsmemory.store import DiskKnowledgeStore

        async def main():
            store = DiskKnowledgeStore(tempfile.mkdtemp(), poll_interval=0.05)
            sub = await store.on_change("/", lambda path: None)
            assert sub.mode == "poll", sub.mode
            await store.close()

        asyncio.run(main())
        """,
    )


def test_no_extra_is_named_that_does_not_exist() -> None:
    """Every extra the storage layer names is defined in pyproject.toml."""
    import tomllib
    from pathlib import Path

    from fsmemory.fs.open import ROOT_CLASSES

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = set(tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"])
    named = {extra for _, extra in ROOT_CLASSES.values() if extra is not None}
    assert named <= extras, named - extras


def test_missing_stdlib_sqlite_names_no_extra() -> None:
    _run(
        ["sqlite3", "_sqlite3"],
        """
        from fsmemory import open_root
        try:
            open_root("sqlite:///tmp/x.db")
        except MissingDependencyError as exc:
            assert exc.extra is None and "fsmemory[" not in str(exc), str(exc)
            assert "sqlite3" in str(exc)
        else:
            raise AssertionError("no MissingDependencyError")
        """,
    )
