"""``redis://`` URLs carrying the tenant (``?prefix=TENANT``) compose as fsspec composes
URLs: it joins a name by appending ``/name`` and reads a ``?`` in a path it is handed as a
glob. fsspec's own abstract suites run with every path such a URL, in the documented form
(``redis://host:port/DB/root?prefix=T``) and with the query closing the authority."""

from __future__ import annotations

from typing import Any

import fsspec
import fsspec.tests.abstract as abstract
import pytest

from fsmemory.errors import InvalidPathError
from fsmemory.implementations.redis import RedisFileSystem

pytestmark = pytest.mark.redis


class PrefixUrlFixtures(abstract.AbstractFixtures):  # type: ignore[misc]
    """Paths are ``redis://host:port/DB/root?prefix=TENANT`` and what fsspec joins to it."""

    @pytest.fixture
    def fs(self, redis_fs: Any) -> Any:
        return redis_fs

    @pytest.fixture
    def fs_path(self, redis_fs: Any) -> str:
        return (
            f"redis://{redis_fs.host}:{redis_fs.port}/{redis_fs.db}/root?prefix={redis_fs.prefix}"
        )

    @pytest.fixture
    def fs_sanitize_path(self, redis_fs: Any) -> Any:
        return redis_fs._strip_protocol


class AuthorityPrefixFixtures(PrefixUrlFixtures):
    """Paths are ``redis://host:port?prefix=TENANT/DB/root/...``."""

    @pytest.fixture
    def fs_path(self, redis_fs: Any) -> str:
        return (
            f"redis://{redis_fs.host}:{redis_fs.port}?prefix={redis_fs.prefix}/{redis_fs.db}/root"
        )


class TestPrefixCopy(abstract.AbstractCopyTests, PrefixUrlFixtures):  # type: ignore[misc]
    """fsspec copy tests."""


class TestPrefixGet(abstract.AbstractGetTests, PrefixUrlFixtures):  # type: ignore[misc]
    """fsspec get tests."""


class TestPrefixPut(abstract.AbstractPutTests, PrefixUrlFixtures):  # type: ignore[misc]
    """fsspec put tests."""


class TestPrefixPipe(abstract.AbstractPipeTests, PrefixUrlFixtures):  # type: ignore[misc]
    """fsspec pipe tests."""


class TestPrefixOpen(abstract.AbstractOpenTests, PrefixUrlFixtures):  # type: ignore[misc]
    """fsspec open tests."""


class TestAuthorityPrefixCopy(abstract.AbstractCopyTests, AuthorityPrefixFixtures):  # type: ignore[misc]
    """fsspec copy tests, tenant in the authority."""


class TestAuthorityPrefixGet(abstract.AbstractGetTests, AuthorityPrefixFixtures):  # type: ignore[misc]
    """fsspec get tests, tenant in the authority."""


class TestAuthorityPrefixPut(abstract.AbstractPutTests, AuthorityPrefixFixtures):  # type: ignore[misc]
    """fsspec put tests, tenant in the authority."""


def test_cp_to_a_new_name_writes_that_key(redis_fs: RedisFileSystem) -> None:
    """The reproduction: ``cp`` to ``target/newfile`` wrote ``target/newfile/subfile1``
    (fsspec read the ``?`` of ``?prefix=`` as a glob and the target as a folder)."""
    base = f"redis://{redis_fs.host}:{redis_fs.port}/{redis_fs.db}/ext?prefix={redis_fs.prefix}"
    redis_fs.pipe(f"{base}/source/subfile1", b"payload")
    redis_fs.cp(f"{base}/source/subfile1", f"{base}/newfile")
    assert redis_fs.cat_file("ext/newfile") == b"payload"
    assert sorted(redis_fs.find("ext")) == ["ext/newfile", "ext/source/subfile1"]


def test_url_to_fs_keeps_the_tenant_wherever_the_query_stands(redis_url: str) -> None:
    """``redis://h:p?prefix=T/0/mem`` (the query closing the authority, as a URL joined
    to a bare server address reads) named the default tenant before: another tenant's
    keys."""
    for url in (
        f"{redis_url}?prefix=tenant-q/2/mem/MEMORY.md",
        f"{redis_url}/2/mem?prefix=tenant-q/MEMORY.md",
        f"{redis_url}/2/mem/MEMORY.md?prefix=tenant-q",
    ):
        fs, path = fsspec.url_to_fs(url, skip_instance_cache=True)
        assert (fs.prefix, fs.db, path) == ("tenant-q", 2, "mem/MEMORY.md"), url


def test_two_tenants_in_one_url_are_refused(redis_url: str) -> None:
    with pytest.raises(InvalidPathError, match="more than one"):
        RedisFileSystem._get_kwargs_from_urls(f"{redis_url}?prefix=a/0/mem?prefix=b/x")
    with pytest.raises(InvalidPathError, match="more than one"):
        RedisFileSystem._strip_protocol(f"{redis_url}/0/mem?prefix=a/x?prefix=b")


def test_bulk_operations_refuse_another_tenant(make_redis_fs: Any) -> None:
    """A URL naming another tenant than the filesystem's is refused, never copied into
    this tenant's keys."""
    fs = make_redis_fs(prefix="tenant-one")
    fs.pipe("a/file", b"x")
    other = f"redis://{fs.host}:{fs.port}/{fs.db}/a?prefix=tenant-two"
    with pytest.raises(InvalidPathError):
        fs.cp("a/file", f"{other}/copy")
    with pytest.raises(InvalidPathError):
        fs.put(__file__, f"{other}/copy")
    assert fs.find("") == ["a/file"]


def test_question_marks_in_names_still_belong_to_the_name(redis_fs: RedisFileSystem) -> None:
    base = f"redis://{redis_fs.host}:{redis_fs.port}/{redis_fs.db}"
    redis_fs.pipe(f"{base}/notes/what?.md", b"q")
    redis_fs.pipe(f"{base}/notes/prefix=no?.md", b"r")
    assert redis_fs.find("notes") == ["notes/prefix=no?.md", "notes/what?.md"]


@pytest.mark.parametrize("prefix", ["tenant-7", "a/b", "what?#", "ten ant", "ü"])
def test_full_names_reopen_in_the_same_tenant(make_redis_fs: Any, prefix: str) -> None:
    """``unstrip_protocol`` (what fsspec shows as a file's full name) named no tenant:
    opened again, the URL addressed the default tenant's key."""
    fs = make_redis_fs(prefix=prefix)
    fs.pipe("notes/a.md", b"tenant data")
    url = fs.unstrip_protocol("notes/a.md")
    assert "?prefix=" in url
    again, path = fsspec.url_to_fs(url, skip_instance_cache=True)
    assert (again.prefix, again.db, path) == (prefix, fs.db, "notes/a.md")
    assert again.cat_file(path) == b"tenant data"
    assert fs.cat_file(url) == b"tenant data"


def test_the_default_tenant_needs_no_query(redis_url: str) -> None:
    options = RedisFileSystem._get_kwargs_from_urls(redis_url)
    fs = RedisFileSystem(skip_instance_cache=True, **options)
    assert fs.unstrip_protocol("a/b.md") == f"{redis_url}/0/a/b.md"
