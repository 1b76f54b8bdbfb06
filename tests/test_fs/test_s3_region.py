"""S3 region redirects on the obstore route, against a relay that answers as S3 does
for a bucket in another region than the one a request is signed for
(:class:`tests.test_fs.aws_fake.RegionRelay`): a 301 without ``Location``, and the
bucket's region in ``x-amz-bucket-region``.

botocore follows these redirects (and remembers the bucket's region); AWS Lambda always
sets a region, so a function reading a bucket of another region depends on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.errors import BackendError
from fsmemory.fs import RetryPolicy, open_root
from fsmemory.fs._obstore import WrongRegionError, map_error
from fsmemory.fs.errors import is_transient
from fsmemory.fs.s3 import S3ObstoreRoot, bucket_region, obstore_config
from fsmemory.testing.cloud_services import MotoService
from tests.test_fs.aws_fake import HostileServer, RegionRelay

FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.001)


@pytest.fixture
def relay(moto_service: MotoService) -> Iterator[RegionRelay]:
    """moto behind a relay whose buckets live in eu-west-1 (a fresh relay per test: the
    learned regions are kept per endpoint)."""
    served = RegionRelay(moto_service.url, "eu-west-1")
    try:
        yield served
    finally:
        served.stop()


def _through(relay: RegionRelay, base: dict[str, Any], region: str) -> dict[str, Any]:
    return {
        **base,
        "client_kwargs": {"endpoint_url": relay.url, "region_name": region},
        "client": "obstore",
        "retry": FAST,
    }


@pytest.mark.s3
def test_a_bucket_in_another_region_is_followed(
    relay: RegionRelay, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """A root configured for us-east-1 on a bucket in eu-west-1: the first request is
    redirected, the root asks for the bucket's region once, and every request after it
    (this root's and a later root's of the same bucket) is signed for eu-west-1; the
    files are those moto holds."""
    root = open_root(s3_root_url, _through(relay, s3_storage_options, "us-east-1"))
    assert isinstance(root, S3ObstoreRoot) and root.region == "us-east-1"
    version = root.write("MEMORY.md", b"- fact\n")
    assert relay.redirected == ["us-east-1"] and relay.lookups == 1
    assert root.region == "eu-west-1"
    assert root.read("MEMORY.md").version == version
    root.write("logs/a b.md", b"spaced", create_only=True)
    assert [i.path for i in root.list("", recursive=True)] == ["MEMORY.md", "logs/a b.md"]
    later = open_root(s3_root_url, _through(relay, s3_storage_options, "us-east-1"))
    assert isinstance(later, S3ObstoreRoot) and later.region == "eu-west-1"
    assert later.read_bytes("logs/a b.md") == b"spaced"
    assert relay.redirected == ["us-east-1"] and relay.lookups == 1
    assert set(relay.signed) == {"eu-west-1"}
    direct = open_root(s3_root_url, s3_storage_options)
    assert direct.read_bytes("MEMORY.md") == b"- fact\n"


@pytest.mark.s3
def test_a_memory_in_another_region_remembers_and_recalls(
    relay: RegionRelay, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """The whole memory through the redirect: nothing written is lost or doubled."""
    options = _through(relay, s3_storage_options, "us-west-2")
    memory = KnowledgeMemory(s3_root_url, storage_options=options)
    for i in range(5):
        memory.remember(f"fact {i} about the lighthouse")
    fresh = KnowledgeMemory(s3_root_url, storage_options=options, index_cache=False)
    found = sorted(e.content for e in fresh.recall("lighthouse", limit=10))
    assert found == [f"fact {i} about the lighthouse" for i in range(5)]
    assert relay.redirected == ["us-west-2"]


def test_a_region_named_in_the_reply_needs_no_lookup() -> None:
    """S3's 400 ``AuthorizationHeaderMalformed`` names the bucket's region in its body:
    the error carries it; another 400 is not a region error."""
    import obstore.exceptions

    body = (
        "Generic S3 error: Error performing GET http://x/b/k in 1ms - Server returned "
        "non-2xx status code: 400 Bad Request: <Error><Code>AuthorizationHeaderMalformed"
        "</Code><Message>the region 'us-east-1' is wrong; expecting 'ap-south-1'</Message>"
        "<Region>ap-south-1</Region></Error>"
    )
    mapped = map_error(obstore.exceptions.GenericError(body), "b", "S3")
    assert isinstance(mapped, WrongRegionError) and mapped.region == "ap-south-1"
    other = body.replace("AuthorizationHeaderMalformed", "InvalidRequest")
    assert not isinstance(
        map_error(obstore.exceptions.GenericError(other), "b", "S3"), WrongRegionError
    )
    hostile = body.replace("ap-south-1</Region>", "ap-south-1.evil.example/x</Region>")
    named = map_error(obstore.exceptions.GenericError(hostile), "b", "S3")
    assert not (isinstance(named, WrongRegionError) and named.region)


_REDIRECT = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PermanentRedirect</Code>'
    b"<Message>The bucket you are attempting to access must be addressed using the "
    b"specified endpoint.</Message><Endpoint>bucket.s3.eu-west-1.amazonaws.com</Endpoint>"
    b"</Error>"
)


@pytest.mark.parametrize(
    ("header", "requests"),
    [
        # the lookup names a region, the request is sent there once more, and is
        # redirected again (a server that redirects every request): then the error
        (b"x-amz-bucket-region: eu-west-1\r\n", 3),
        # no region in the lookup's reply: the error, after the request and the lookup
        (b"", 2),
        # a hostile region is never used
        (b"x-amz-bucket-region: eu-west-1.evil.example\r\n", 2),
    ],
)
def test_a_redirect_that_cannot_be_followed_says_so(header: bytes, requests: int) -> None:
    """When the redirect cannot be followed, the error names the region settings and is
    not retried; a region from a reply is used only when it is one."""
    server = HostileServer(
        b"HTTP/1.1 301 Moved Permanently\r\n%sContent-Type: application/xml\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (header, len(_REDIRECT), _REDIRECT)
    )
    try:
        options = {
            "key": "k",
            "secret": "s",
            "client_kwargs": {"endpoint_url": server.url, "region_name": "us-east-1"},
            "client": "obstore",
            "retry": FAST,
        }
        root = open_root(f"s3://bucket-{uuid.uuid4().hex[:8]}/root", options)
        with pytest.raises(BackendError, match="region") as info:
            root.read_bytes("MEMORY.md")
        assert not is_transient(info.value)
        assert len(server.requests) == requests
        heads = [r for r in server.requests if r.startswith(b"HEAD ")]
        assert len(heads) == 1 and b"Authorization" not in heads[0]
    finally:
        server.close()


def test_no_region_signs_for_us_east_1_as_botocore_does() -> None:
    """Keys and no region anywhere: the obstore route, signing for us-east-1 (S3's
    redirect then leads to the bucket's own region)."""
    env = {
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_CONFIG_FILE": "/nonexistent",
    }
    env["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent"
    settings, why = obstore_config({}, env)
    assert settings is not None, why
    assert settings["config"]["region"] == "us-east-1"
    assert settings["bucket_style"] == "virtual"


def test_the_lookup_of_an_unreachable_endpoint_is_none() -> None:
    """No answer (nothing listens) is no region, within the root's timeout."""
    server = HostileServer(b"")
    server.close()
    settings, _ = obstore_config(
        {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": server.url}}, {}
    )
    assert settings is not None
    assert bucket_region("bucket", settings["config"], settings["client_options"]) is None
