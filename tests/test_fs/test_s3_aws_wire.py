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


@pytest.fixture(params=["obstore", "s3fs"])
def client(request: pytest.FixtureRequest) -> str:
    """The S3 route a root takes (obstore, or botocore under s3fs)."""
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
    if client == "s3fs":  # botocore asks for encoding-type=url: answered as S3 does
        assert len(aws_relay.listings) > before
        raw = aws_relay.listings[-1]
        assert b"notes/a+b.md" in raw and b"notes/a%2Bb.md" in raw
    else:  # obstore asks for no encoding: keys come as XML text, nothing to decode
        assert len(aws_relay.listings) == before
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


def _hostile_root(reply: bytes, attempts: int = 3) -> tuple[HostileServer, S3Root]:
    """An obstore-route root whose every request gets ``reply`` (then a close)."""
    server = HostileServer(reply)
    options = {
        "key": "k",
        "secret": "s",
        "client_kwargs": {"endpoint_url": server.url},
        "client": "obstore",
        "retry": RetryPolicy(attempts=attempts, base_delay=0.001, max_delay=0.001),
    }
    root = open_root("s3://bucket/root", options)
    assert isinstance(root, S3Root) and root.client == "obstore"
    return server, root


#: the most an object GET may claim in these tests (a 10**15 claim must allocate nothing)
_HUGE = 10**15


@pytest.mark.parametrize(
    "rest",
    [
        b"Content-Length: %d\r\n\r\nabc" % _HUGE,  # was a MemoryError
        b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nabc",
        b"Content-Length: 3000000000\r\n\r\nabc",  # the connection closes early
        b"Content-Length: abc\r\n\r\nabc",
        b"Content-Length: -1\r\n\r\nabc",
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc",
    ],
)
def test_a_body_that_never_comes_allocates_nothing(rest: bytes) -> None:
    """A reply whose ``Content-Length`` or chunk sizes claim more than ever arrives,
    or are malformed, is a broken reply: tried as often as the retry policy says, then
    a :class:`BackendError` (never a ``MemoryError``); memory grows with what arrived,
    never with what was claimed."""
    server, root = _hostile_root(b"HTTP/1.1 200 OK\r\n" + rest, attempts=2)
    try:
        tracemalloc.start()
        try:
            with pytest.raises(BackendError):
                root.read_bytes("MEMORY.md")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 << 20
        assert 1 <= len(server.requests) <= 2
    finally:
        server.close()


def test_bodies_read_in_pieces_arrive_whole() -> None:
    """A body too large to be read in one piece comes back byte for byte. (S3 answers
    a ``GetObject`` with a ``Content-Length``; obstore refuses a chunked one.)"""
    data = bytes(range(256)) * ((70 << 20) // 256) + b"tail"  # 70 MiB and 4 bytes
    reply = b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
    server, root = _hostile_root(b"HTTP/1.1 200 OK\r\n" + reply, attempts=1)
    try:
        assert root.read_bytes("MEMORY.md") == data
    finally:
        server.close()
