"""S3 roots against a server that answers as AWS does where moto does not
(:mod:`tests.test_fs.aws_fake`): listings url-encoded with a space as ``+``.

moto encodes a listed key's space as ``%20``, so a client that decodes ``+`` wrongly
passes every moto test; these tests go through a relay in front of moto that encodes
listings as S3 does, and check the result against moto itself.
"""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import BackendError, InvalidInputError
from fsmemory.fs import RetryPolicy, open_root
from fsmemory.fs._s3client import (
    MAX_OBJECT,
    MAX_REPLY,
    Credentials,
    S3Client,
    S3Config,
    list_page,
)
from fsmemory.fs.s3 import S3Root
from fsmemory.store import FsspecKnowledgeStore
from fsmemory.testing.cloud_services import MotoService
from tests.test_fs.aws_fake import AwsListingRelay, HostileServer, aws_url_encode

pytestmark = pytest.mark.s3

#: names whose listing encoding differs between moto and S3, and some that do not
TRICKY = {
    "notes/a b.md": b"a space",
    "notes/a+b.md": b"a plus",
    "notes/a%2Bb.md": b"an encoded plus",
    "x%20y": b"an encoded space",
    "100%.csv": b"a percent",
    "dir with space/two  spaces.txt": b"in a spaced directory",
    "dir+with+plus/f.txt": b"in a plussed directory",
    "sym/a=b&c;d,e@f$g!~'*()[].txt": b"reserved characters",
    "uni/caf\u00e9 \u2603 \U0001f600.md": b"unicode",
    "\u65e5\u672c/\u8a9e \u8a9e": b"cjk with a space",
    'quote/"q"<a>.txt': b"xml characters",
}


@pytest.fixture(scope="module")
def aws_relay(moto_service: MotoService) -> Iterator[AwsListingRelay]:
    """moto behind a relay that encodes listings as S3 does."""
    relay = AwsListingRelay(moto_service.url)
    try:
        yield relay
    finally:
        relay.stop()


@pytest.fixture(params=["builtin", "s3fs"])
def client(request: pytest.FixtureRequest) -> str:
    """The S3 client a root uses (botocore, under s3fs, decodes listings as S3 means)."""
    return str(request.param)


def _options(base: dict[str, Any], endpoint: str, client: str) -> dict[str, Any]:
    return {**base, "client_kwargs": {"endpoint_url": endpoint}, "client": client}


def test_the_relay_encodes_listings_as_s3_does() -> None:
    """The fixture's own encoding, on the replies S3 was seen to send."""
    assert aws_url_encode("a b.txt") == "a+b.txt"
    assert aws_url_encode("a+b.txt") == "a%2Bb.txt"
    assert aws_url_encode("100%.csv") == "100%25.csv"
    assert aws_url_encode("\ud55c\uae00/x.txt") == "%ED%95%9C%EA%B8%80/x.txt"
    assert aws_url_encode("run books/") == "run+books/"
    assert aws_url_encode("test_file(3).png") == "test_file%283%29.png"


def test_listed_names_are_the_stored_names(
    aws_relay: AwsListingRelay,
    s3_root_url: str,
    s3_storage_options: dict[str, Any],
    client: str,
) -> None:
    """Through a server answering as S3 does: each key is listed under its own name,
    reading each listed name gives its own bytes, the directories of a delimited
    listing are named right, and ``delete_tree`` deletes every one of them (moto,
    asked directly, holds nothing afterwards)."""
    root = open_root(s3_root_url, _options(s3_storage_options, aws_relay.url, client))
    assert isinstance(root, S3Root) and root.client == client
    for path, data in TRICKY.items():
        root.write(path, data)
    before = len(aws_relay.listings)
    listed = [info.path for info in root.list("", recursive=True)]
    assert len(aws_relay.listings) > before
    raw = aws_relay.listings[-1]
    assert b"notes/a+b.md" in raw and b"notes/a%2Bb.md" in raw  # answered as S3 does
    assert sorted(listed) == sorted(TRICKY)
    for path in listed:
        assert root.read_bytes(path) == TRICKY[path], path
    assert root.list_dirs("") == sorted({p.split("/")[0] for p in TRICKY if "/" in p})
    assert sorted(root.list_names("notes")[0]) == ["a b.md", "a%2Bb.md", "a+b.md"]
    assert sorted(i.path for i in root.list("dir with space")) == ["dir with space/two  spaces.txt"]
    root.write_cache("index", b"cache")
    listing, loaded = root.list_with_cache("index", bytes)
    assert sorted(i.path for i in listing) == sorted(TRICKY) and loaded == b"cache"

    assert root.delete_tree("") == len(TRICKY)
    assert root.list("", recursive=True) == []
    direct = open_root(s3_root_url, s3_storage_options)
    assert direct.list("", recursive=True) == []
    assert not direct.exists("notes/a b.md")


def test_a_root_whose_prefix_has_a_space(
    aws_relay: AwsListingRelay,
    s3_root_url: str,
    s3_storage_options: dict[str, Any],
    client: str,
) -> None:
    """``s3://bucket/users/with space`` lists its files, and ``delete_tree`` empties it
    while ``users/with+space`` next to it keeps every byte."""
    bucket = s3_root_url.split("/")[2]
    options = _options(s3_storage_options, aws_relay.url, client)
    spaced = open_root(f"s3://{bucket}/users/with space", options)
    plussed = open_root(f"s3://{bucket}/users/with+space", options)
    spaced.write("MEMORY.md", b"# spaced\n")
    spaced.write("logs/2026-12-02.jsonl", b'{"a": 1}\n')
    plussed.write("MEMORY.md", b"# plussed\n")
    plussed.write("logs/a b.jsonl", b'{"b": 2}\n')
    assert [i.path for i in spaced.list("", recursive=True)] == [
        "MEMORY.md",
        "logs/2026-12-02.jsonl",
    ]
    assert spaced.list_dirs("") == ["logs"]
    assert [i.path for i in plussed.list("", recursive=True)] == ["MEMORY.md", "logs/a b.jsonl"]

    assert spaced.delete_tree("") == 2
    assert spaced.list("", recursive=True) == []
    direct = open_root(f"s3://{bucket}/users/with space", s3_storage_options)
    assert direct.list("", recursive=True) == []
    neighbour = open_root(f"s3://{bucket}/users/with+space", s3_storage_options)
    assert neighbour.read_bytes("MEMORY.md") == b"# plussed\n"
    assert neighbour.read_bytes("logs/a b.jsonl") == b'{"b": 2}\n'


def test_a_memory_under_a_spaced_prefix_is_recalled_by_a_fresh_instance(
    aws_relay: AwsListingRelay, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """``KnowledgeMemory`` on ``s3://bucket/users/with space`` through a server that
    answers as S3 does: what one instance remembers, a fresh one recalls."""
    bucket = s3_root_url.split("/")[2]
    url = f"s3://{bucket}/users/with space/{uuid.uuid4().hex[:8]}"
    options = _options(s3_storage_options, aws_relay.url, "auto")
    first = KnowledgeMemory(url, storage_options=options)
    first.remember("the user paints watercolours on sundays", persistent=True)
    first.remember("the user's cat is called Miso")
    fresh = KnowledgeMemory(url, storage_options=options)
    found = [e.content for e in fresh.recall("watercolours")]
    assert found == ["the user paints watercolours on sundays"]
    assert [e.content for e in fresh.recall("cat Miso")] == ["the user's cat is called Miso"]


def test_a_listing_page_decodes_what_s3_encodes() -> None:
    """``list_page`` on a reply as S3 writes it: a ``+`` is a space, ``%2B`` a plus;
    the continuation token, which S3 does not encode, is kept as it is."""
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult>'
        b"<Name>b</Name><Prefix>run+books/</Prefix><EncodingType>url</EncodingType>"
        b"<IsTruncated>true</IsTruncated>"
        b"<Contents><Key>run+books/a+b%2Bc%25.md</Key><Size>3</Size>"
        b"<ETag>&quot;e&quot;</ETag></Contents>"
        b"<CommonPrefixes><Prefix>run+books/%ED%95%9C+x/</Prefix></CommonPrefixes>"
        b"<NextContinuationToken>1+a/b=</NextContinuationToken></ListBucketResult>"
    )
    objects, prefixes, token = list_page(body)
    assert [o["Key"] for o in objects] == ["run books/a b+c%.md"]
    assert prefixes == ["run books/\ud55c x/"]
    assert token == "1+a/b="


#: version tokens no header may carry: they must never reach the wire
BAD_VERSIONS = [
    "x\r\nX-Evil: 1",
    "x\nX-Evil: 1",
    "x\rX-Evil: 1",
    "x\x00y",
    "x\x1b[31m",
    "x\x7f",
    "caf\u00e9",
]


@pytest.mark.parametrize("bad", BAD_VERSIONS)
async def test_a_version_token_cannot_inject_a_header(
    aws_relay: AwsListingRelay,
    s3_root_url: str,
    s3_storage_options: dict[str, Any],
    client: str,
    bad: str,
) -> None:
    """``FsspecKnowledgeStore.write(..., if_version=...)`` with a CR, LF, NUL, another
    control character or a non-ASCII one in the version refuses with
    :class:`InvalidInputError` before any request (the server sees none), and the
    file keeps every byte (a file that did not exist is still absent)."""
    store = FsspecKnowledgeStore(
        s3_root_url, storage_options=_options(s3_storage_options, aws_relay.url, client)
    )
    await store.write("notes.md", "old content\n")
    seen = len(aws_relay.heads)
    with pytest.raises(InvalidInputError, match="if-match"):
        await store.write("notes.md", "new content\n", if_version=bad)
    with pytest.raises(InvalidInputError, match="if-match"):
        await store.write("fresh.md", "new content\n", if_version=bad)
    assert len(aws_relay.heads) == seen
    direct = open_root(s3_root_url, s3_storage_options)
    assert direct.read_bytes("notes.md") == b"old content\n"
    assert not direct.exists("fresh.md")
    assert not any(name.lower() == "x-evil" for head in aws_relay.heads for name, _ in head)


@pytest.mark.parametrize("where", ["header", "token", "endpoint"])
def test_no_header_leaves_the_client_with_a_control_character(where: str) -> None:
    """Every header the built-in client sends is checked, its own and the caller's,
    and so is the request line: a session token or a caller's header holding CR/LF,
    or an endpoint path with a space, fails with :class:`InvalidInputError` and
    nothing reaches the server; the same client then sends clean requests."""
    server = HostileServer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    try:
        token = "t\r\nX-Evil: 1" if where == "token" else None
        endpoint = server.url + ("/X-Evil: 1" if where == "endpoint" else "")
        s3 = S3Client(S3Config(endpoint, "us-east-1", True, Credentials("k", "s", token)))
        headers = {"x-amz-meta-a": "1\r\nX-Evil: 1"} if where == "header" else None
        with pytest.raises(InvalidInputError):
            s3.request("GET", "b", "k", headers=headers)
        assert server.requests == []
        if where == "header":
            assert s3.request("GET", "b", "k").body == b"ok"
            assert len(server.requests) == 1
    finally:
        server.close()


def _hostile_root(reply: bytes, attempts: int = 3) -> tuple[HostileServer, S3Root]:
    """A built-in-client root whose every request gets ``reply`` (then a close)."""
    server = HostileServer(reply)
    options = {
        "key": "k",
        "secret": "s",
        "client_kwargs": {"endpoint_url": server.url},
        "client": "builtin",
        "retry": RetryPolicy(attempts=attempts, base_delay=0.001, max_delay=0.001),
    }
    root = open_root("s3://bucket/root", options)
    assert isinstance(root, S3Root)
    return server, root


@pytest.mark.parametrize(
    "rest",
    [
        b"Content-Length: 1000000000000000\r\n\r\nabc",  # 10**15: was a MemoryError
        b"Content-Length: %d\r\n\r\nabc" % (MAX_OBJECT + 1),
        b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nabc",
        # a small chunk, then one that takes the total over the limit
        b"Transfer-Encoding: chunked\r\n\r\n10\r\n%s\r\n%x\r\nabc" % (b"x" * 16, MAX_OBJECT),
    ],
)
def test_a_body_claimed_larger_than_accepted_is_refused(rest: bytes) -> None:
    """A reply whose ``Content-Length`` or chunk sizes claim more than an object
    ``GET`` accepts (:data:`MAX_OBJECT`) is refused before its body is read: a
    :class:`BackendError`, not a ``MemoryError``, and not retried."""
    server, root = _hostile_root(b"HTTP/1.1 200 OK\r\n" + rest)
    try:
        tracemalloc.start()
        try:
            with pytest.raises(BackendError, match="more than"):
                root.read_bytes("MEMORY.md")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 << 20
        assert len(server.requests) == 1
    finally:
        server.close()


def test_a_listing_claimed_larger_than_a_listing_is_refused() -> None:
    """A listing (or any reply but an object's) is refused over :data:`MAX_REPLY`."""
    server, root = _hostile_root(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n<" % (MAX_REPLY + 1)
    )
    try:
        with pytest.raises(BackendError, match="more than"):
            root.list("", recursive=True)
        assert len(server.requests) == 1
    finally:
        server.close()


@pytest.mark.parametrize(
    "head",
    [
        b"Content-Length: 3000000000",  # under the limit, then the connection closes
        b"Transfer-Encoding: chunked\r\n\r\nB2D05E00\r\nabc",
        b"Content-Length: abc",
        b"Content-Length: -1",
        b"Content-Length: 3, 3",
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc",
    ],
)
def test_a_body_that_never_comes_allocates_nothing_and_is_retried(head: bytes) -> None:
    """A ``Content-Length`` under the limit that the body never fills, or a malformed
    length, is a broken reply: retried, then a :class:`BackendError`; memory grows with
    what arrived, never with what was claimed."""
    server, root = _hostile_root(b"HTTP/1.1 200 OK\r\n" + head + b"\r\n\r\nabc", attempts=2)
    try:
        tracemalloc.start()
        try:
            with pytest.raises(BackendError):
                root.read_bytes("MEMORY.md")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 << 20
        assert len(server.requests) == 2
    finally:
        server.close()


@pytest.mark.parametrize("chunked", [False, True])
def test_bodies_read_in_pieces_arrive_whole(chunked: bool) -> None:
    """A body too large to be read in one piece comes back byte for byte, with a
    ``Content-Length`` and chunked."""
    data = bytes(range(256)) * ((70 << 20) // 256) + b"tail"  # 70 MiB and 4 bytes
    if chunked:
        reply = b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
    else:
        reply = b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
    server, root = _hostile_root(b"HTTP/1.1 200 OK\r\n" + reply, attempts=1)
    try:
        assert root.read_bytes("MEMORY.md") == data
    finally:
        server.close()
