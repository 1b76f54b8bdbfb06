"""fsmemory's built-in S3 client: signatures, configuration, the choice of client, the
cold path's imports and kept-alive connections.

The conformance suite and the request-count, fault and snapshot tests run on it too (it
is the default S3 client); this module covers what they do not.
"""

from __future__ import annotations

import calendar
import json
import os
import pickle
import subprocess
import sys
import textwrap
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsmemory.errors import (
    BackendError,
    BucketNotFoundError,
    ConflictError,
    InvalidInputError,
    KeyNotFoundError,
)
from fsmemory.fs import NO_RETRY, StorageRoot, open_root
from fsmemory.fs._s3client import (
    MAX_CONNECTIONS,
    MAX_IDLE,
    Credentials,
    S3Client,
    S3Error,
    Signer,
    _elements,
    _field,
    _unescape,
    list_page,
    resolve_config,
)
from fsmemory.fs.base import Versioned
from fsmemory.fs.errors import is_transient, translate_error
from fsmemory.fs.s3 import S3Root
from fsmemory.testing.cloud_services import MotoService, start_moto
from fsmemory.testing.faults import FaultPlan, HTTPFaultProxy
from fsmemory.testing.requests import count_requests

#: names a root allows that need careful encoding in a signed URL or query
HOSTILE = [
    "plain.txt",
    "dir with space/two  spaces.txt",
    "sym/a+b=c&d;e,f@g$h!~'*().txt",
    "pct/100%.txt",
    "pct/%41%20%25.txt",
    "q/what?x=1#frag.txt",
    "uni/caf\u00e9 \u2603 \U0001f600.md",
    "\u65e5\u672c/\u8a9e",
    'quote/"q"<a>.txt',
]


def test_signature_matches_the_aws_documentation_example() -> None:
    """The ``GetObject`` example of the SigV4 documentation, byte for byte."""
    signer = Signer(Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
    headers = {"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9"}
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    when = calendar.timegm((2013, 5, 24, 0, 0, 0))
    signer.sign("GET", "/test.txt", "", headers, empty, "us-east-1", when=when)
    assert headers["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
        "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )
    assert headers["x-amz-date"] == "20130524T000000Z"
    assert "x-amz-security-token" not in headers


@pytest.fixture(scope="module")
def checking_moto() -> Iterator[tuple[MotoService, dict[str, Any]]]:
    """A moto server of its own that checks every request's signature (moto's IAM
    authentication), and storage options with a key it knows."""
    boto3 = pytest.importorskip("boto3")
    service = start_moto()
    try:
        # The next 3 actions (the IAM set-up) go unchecked; every later one is checked.
        request = urllib.request.Request(
            f"{service.url}/moto-api/reset-auth",
            data=b"3",
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        urllib.request.urlopen(request, timeout=10).read()
        iam = boto3.client(
            "iam",
            endpoint_url=service.url,
            region_name="us-east-1",
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        iam.create_user(UserName="fsmemory")
        key = iam.create_access_key(UserName="fsmemory")["AccessKey"]
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
        }
        iam.put_user_policy(UserName="fsmemory", PolicyName="s3", PolicyDocument=json.dumps(policy))
        options = {
            "key": key["AccessKeyId"],
            "secret": key["SecretAccessKey"],
            "client_kwargs": {"endpoint_url": service.url},
        }
        yield service, options
    finally:
        service.stop()


@pytest.mark.s3
def test_hostile_keys_sign_and_round_trip(
    checking_moto: tuple[MotoService, dict[str, Any]],
) -> None:
    """Every request for keys with spaces, ``+``, ``%``, ``?``, ``#``, Unicode... carries
    a signature the server accepts; a wrong secret is refused, not retried."""
    _, options = checking_moto
    bucket = f"fsm-{uuid.uuid4().hex[:16]}"
    root = open_root(f"s3://{bucket}/a b+c%d", options)
    assert isinstance(root, S3Root) and root.client == "builtin"
    root.fs.mkdir(bucket)  # s3fs, built on first use, signs with the same key
    for i, name in enumerate(HOSTILE):
        root.write(name, f"{i}\n".encode())
    assert [info.path for info in root.list(recursive=True)] == sorted(HOSTILE)
    assert root.list_dirs() == sorted({n.split("/")[0] for n in HOSTILE if "/" in n})
    for i, name in enumerate(HOSTILE):
        if "/" in name:
            folder = name.rsplit("/", 1)[0]
            same = sorted(n for n in HOSTILE if n.rsplit("/", 1)[0] == folder)
            assert [info.path for info in root.list(folder)] == same
        version = root.read(name).version
        assert root.read_range(name, 0, 1) == f"{i}".encode()
        assert root.read_ranges([(name, 0, None)]) == [f"{i}\n".encode()]
        new = root.write(name, b"changed", if_version=version)
        with pytest.raises(ConflictError):
            root.write(name, b"lost", if_version=version)
        assert root.stat(name) is not None and root.stat(name).token == new  # type: ignore[union-attr]
        assert root.read_bytes(name) == b"changed"
    assert root.delete(HOSTILE[0]) is True
    assert root.delete_tree("") == len(HOSTILE) - 1
    assert root.list(recursive=True) == []

    wrong = open_root(f"s3://{bucket}/x", {**options, "secret": "not-the-secret"})
    with pytest.raises(BackendError) as info:
        wrong.read("anything")
    assert "SignatureDoesNotMatch" in str(info.value)
    assert not is_transient(info.value)


def test_xml_replies_are_read_exactly() -> None:
    """Listings, error and delete replies: entities and character references decoded,
    empty and attributed elements, nested prefixes kept apart."""
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        "<Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><Delimiter/>"
        "<IsTruncated>true</IsTruncated><NextContinuationToken>t&amp;1=</NextContinuationToken>"
        "<Contents><Key>p/a &amp; &lt;b&gt; &#233;&#x2603;</Key>"
        "<LastModified>2026-12-02T00:52:41.000Z</LastModified>"
        "<ETag>&quot;abc&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass>"
        "</Contents>"
        "<Contents>\n  <Key>p/two</Key>\n  <Size>0</Size>\n</Contents>"
        "<CommonPrefixes><Prefix>p/d&apos;ir/</Prefix></CommonPrefixes>"
        "</ListBucketResult>"
    )
    items = _elements(xml, "Contents")
    assert [_field(i, "Key") for i in items] == ["p/a & <b> \u00e9\u2603", "p/two"]
    assert [_field(i, "ETag") for i in items] == ['"abc"', ""]
    assert [_field(i, "Size") for i in items] == ["12", "0"]
    assert [_field(p, "Prefix") for p in _elements(xml, "CommonPrefixes")] == ["p/d'ir/"]
    assert _field(xml, "NextContinuationToken") == "t&1="
    assert _field(xml, "Delimiter", "none") == "none"  # <Delimiter/> has no text element
    assert _field(xml, "Missing", "x") == "x"
    assert _unescape("&unknown; &amp;amp;") == "&unknown; &amp;"
    error = "<Error><Code>NoSuchBucket</Code><Message>gone</Message><BucketName>b-1</BucketName></Error>"
    assert (_field(error, "Code"), _field(error, "BucketName")) == ("NoSuchBucket", "b-1")


# -- configuration -----------------------------------------------------------------------
def test_xml_elements_are_found_as_the_regular_expression_finds_them() -> None:
    """The string-search reader agrees with ``<tag(?:\\s[^>]*)?>(.*?)</tag>`` (the
    reader it replaced) on random tag soup: name prefixes, attributes, empty and
    unclosed elements."""
    import random
    import re

    tokens = [
        "<Key>",
        "</Key>",
        "<KeyCount>",
        "</KeyCount>",
        "<Key/>",
        '<Key a="1">',
        "<Key\n>",
        "<Key\t b>",
        "</Key >",
        "<Ke>",
        "x",
        "&amp;",
        " ",
        ">",
        "<",
        "/",
    ]
    rng = random.Random(5)
    for _ in range(3000):
        xml = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 12)))
        expected = re.findall(r"<Key(?:[ \t\r\n][^>]*)?>(.*?)</Key>", xml, re.DOTALL)
        assert _elements(xml, "Key") == expected, xml
        first = _unescape(expected[0]) if expected else "-"
        assert _field(xml, "Key", "-") == first, xml


def test_xml_references_are_decoded_as_the_regular_expression_decodes_them() -> None:
    """``_unescape`` agrees with ``re.sub`` of ``&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z]+);``
    (the decoder it replaced) on random text of references, near-references and
    non-ASCII look-alikes."""
    import random
    import re

    named = {"quot": '"', "amp": "&", "lt": "<", "gt": ">", "apos": "'"}

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("#x"):
            return chr(int(name[2:], 16))
        if name.startswith("#"):
            return chr(int(name[1:]))
        return named.get(name, match.group(0))

    tokens = [
        "&",
        ";",
        "amp",
        "quot",
        "lt",
        "#",
        "x",
        "41",
        "2603",
        "fG",
        "\u0663",
        "\u00e9",
        "zz",
        " ",
        "&amp;",
        "&#",
    ]
    rng = random.Random(9)
    for _ in range(5000):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 10)))
        expected = re.sub(r"&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z]+);", one, text)
        assert _unescape(text) == expected, text


def _files(tmp_path: Path, credentials: str = "", config: str = "") -> dict[str, str]:
    (tmp_path / "credentials").write_text(textwrap.dedent(credentials))
    (tmp_path / "config").write_text(textwrap.dedent(config))
    return {
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
    }


def test_credentials_come_from_options_then_environment_then_files(tmp_path: Path) -> None:
    files = _files(
        tmp_path,
        """
        [default]
        aws_access_key_id = FILEKEY
        aws_secret_access_key = filesecret
        [work]
        aws_access_key_id = WORKKEY
        aws_secret_access_key = worksecret
        aws_session_token = worktoken
        """,
        """
        [default]
        region = eu-west-3
        [profile work]
        region = ap-south-1
        """,
    )
    env = {**files, "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret"}
    config, _ = resolve_config({"key": "OPTKEY", "secret": "optsecret", "token": "t"}, env)
    assert config is not None and config.credentials == Credentials("OPTKEY", "optsecret", "t")
    config, _ = resolve_config({}, {**env, "AWS_SESSION_TOKEN": "envtoken", "AWS_REGION": "x-1"})
    assert config is not None
    assert config.credentials == Credentials("ENVKEY", "envsecret", "envtoken")
    assert (config.region, config.region_known) == ("x-1", True)
    config, _ = resolve_config({}, files)
    assert config is not None and config.credentials == Credentials("FILEKEY", "filesecret")
    assert config.region == "eu-west-3"
    config, _ = resolve_config({"profile": "work"}, env)  # a named profile beats env keys
    assert config is not None
    assert config.credentials == Credentials("WORKKEY", "worksecret", "worktoken")
    assert config.region == "ap-south-1"
    config, _ = resolve_config({}, {**files, "AWS_PROFILE": "work"})
    assert config is not None and config.credentials is not None
    assert config.credentials.key == "WORKKEY"
    assert "worksecret" not in repr(config) and "worktoken" not in repr(config)


def test_endpoint_region_and_timeouts() -> None:
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    config, _ = resolve_config({}, {**env, "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000/"})
    assert config is not None and config.endpoint == "http://127.0.0.1:9000"
    assert config.region_known  # a custom endpoint signs for the default region
    options = {
        "endpoint_url": "https://elsewhere.example",
        "client_kwargs": {"endpoint_url": "https://minio.example:9000", "region_name": "r-1"},
        "config_kwargs": {"connect_timeout": 1, "read_timeout": 2.5, "retries": {}},
    }
    config, _ = resolve_config(options, env)
    assert config is not None
    assert (config.endpoint, config.region) == ("https://minio.example:9000", "r-1")
    assert (config.connect_timeout, config.read_timeout) == (1.0, 2.5)
    config, _ = resolve_config({}, env)
    assert config is not None and config.endpoint is None
    assert (config.region, config.region_known) == ("us-east-1", False)  # follows redirects
    config, _ = resolve_config({"anon": True}, {})
    assert config is not None and config.credentials is None


@pytest.mark.parametrize(
    ("options", "credentials", "config", "env", "reason"),
    [
        ({}, "", "", {}, "no static credentials"),
        (
            {},
            "",
            "[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = x\n",
            {},
            "role_arn",
        ),
        ({}, "", "[default]\nsso_session = corp\n", {}, "sso_session"),
        ({}, "", "[default]\ncredential_process = /bin/creds\n", {}, "credential_process"),
        ({"profile": "missing"}, "", "", {}, "no static keys"),
        (
            {},
            "[default]\naws_access_key_id = k\naws_secret_access_key = s\n",
            "[default]\ns3 =\n  addressing_style = virtual\n",
            {},
            "sets s3",
        ),
        (
            {},
            "",
            "",
            {
                "AWS_ACCESS_KEY_ID": "k",
                "AWS_SECRET_ACCESS_KEY": "s",
                "HTTPS_PROXY": "http://proxy:3128",
            },
            "proxies",
        ),
        ({}, "", "", {"AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, "web identity"),
        ({"key": "k", "secret": "s", "requester_pays": True}, "", "", {}, "requester_pays"),
        ({"key": "k", "secret": "s", "version_aware": True}, "", "", {}, "version_aware"),
        ({"key": "k", "secret": "s", "client_kwargs": {"use_ssl": False}}, "", "", {}, "use_ssl"),
        (
            {"key": "k", "secret": "s", "config_kwargs": {"signature_version": "s3"}},
            "",
            "",
            {},
            "signature_version",
        ),
        ({"key": "k"}, "", "", {}, "without secret"),
        ({"key": "k", "secret": "s", "endpoint_url": "ftp://x"}, "", "", {}, "http(s)"),
    ],
)
def test_what_the_built_in_client_leaves_to_s3fs(
    tmp_path: Path,
    options: dict[str, Any],
    credentials: str,
    config: str,
    env: dict[str, str],
    reason: str,
) -> None:
    """Credentials only botocore's providers can give, and options the built-in client
    does not understand, select s3fs (with the reason)."""
    resolved, why = resolve_config(options, {**_files(tmp_path, credentials, config), **env})
    assert resolved is None
    assert reason in why


@pytest.mark.s3
def test_the_client_option(
    s3_root_url: str, s3_storage_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``client`` picks the client (default: built-in when it can); both clients see the
    same objects; ``FSMEMORY_S3_CLIENT`` sets the default."""
    builtin = open_root(s3_root_url, s3_storage_options)
    forced = open_root(s3_root_url, {**s3_storage_options, "client": "s3fs"})
    assert isinstance(builtin, S3Root) and isinstance(forced, S3Root)
    assert (builtin.client, forced.client) == ("builtin", "s3fs")
    version = builtin.write("shared.txt", b"from the built-in client")
    assert forced.read("shared.txt").version == version
    forced.write("shared.txt", b"from s3fs", if_version=version)
    assert builtin.read_bytes("shared.txt") == b"from s3fs"
    monkeypatch.setenv("FSMEMORY_S3_CLIENT", "s3fs")
    assert open_root(s3_root_url, s3_storage_options).client == "s3fs"  # type: ignore[attr-defined]
    chosen = open_root(s3_root_url, {**s3_storage_options, "client": "builtin"})
    assert chosen.client == "builtin"  # type: ignore[attr-defined]
    monkeypatch.delenv("FSMEMORY_S3_CLIENT")
    with pytest.raises(InvalidInputError, match="requester_pays"):
        open_root(s3_root_url, {**s3_storage_options, "client": "builtin", "requester_pays": True})
    with pytest.raises(InvalidInputError, match="client"):
        open_root(s3_root_url, {**s3_storage_options, "client": "boto"})
    unusual = open_root(s3_root_url, {**s3_storage_options, "requester_pays": False})
    assert unusual.client == "s3fs"  # type: ignore[attr-defined]


def test_s3_errors_map_like_s3fs_errors() -> None:
    """The built-in client's error replies become the same fsmemory errors."""
    assert isinstance(translate_error(S3Error(404, "NoSuchKey"), "p"), KeyNotFoundError)
    assert isinstance(translate_error(S3Error(404, "404"), "p"), KeyNotFoundError)
    assert isinstance(translate_error(S3Error(412, "PreconditionFailed"), "p"), ConflictError)
    missing = translate_error(S3Error(404, "NoSuchBucket", bucket="b-1"), "p")
    assert isinstance(missing, BucketNotFoundError) and "b-1" in str(missing)
    denied = translate_error(S3Error(403, "AccessDenied", "no"), "p")
    assert isinstance(denied, BackendError) and not isinstance(denied, KeyNotFoundError)
    assert is_transient(S3Error(503, "SlowDown")) and is_transient(S3Error(500, "InternalError"))
    assert not is_transient(S3Error(403, "AccessDenied"))
    assert not is_transient(S3Error(400, "InvalidArgument"))
    again = pickle.loads(pickle.dumps(S3Error(404, "NoSuchBucket", "gone", "b-1")))
    assert (again.status, again.code, again.response) == (
        404,
        "NoSuchBucket",
        S3Error(404, "NoSuchBucket", "gone", "b-1").response,
    )


# -- the cold path -----------------------------------------------------------------------
@pytest.mark.s3
def test_a_cold_process_imports_no_s3fs(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """A fresh process opens a memory on S3, remembers and recalls without importing
    s3fs, aiobotocore, aiohttp, botocore, fsspec, http.client or xml -- nor, over plain
    HTTP, socket.py; ``root.fs`` still works, built on first use."""
    script = textwrap.dedent(
        f"""
        import sys
        from fsmemory import KnowledgeMemory
        km = KnowledgeMemory({s3_root_url!r}, storage_options={s3_storage_options!r})
        km.remember("the user prefers tea", persistent=True)
        assert [e.content for e in km.recall("tea")] == ["the user prefers tea"]
        km.build_context()
        heavy = ("s3fs", "aiobotocore", "aiohttp", "botocore", "fsspec", "http.client", "xml",
                 "socket", "selectors")
        loaded = [name for name in heavy if name in sys.modules]
        assert not loaded, loaded
        names = km.root.fs.ls({s3_root_url.removeprefix("s3://")!r})
        assert any(name.endswith("MEMORY.md") for name in names), names
        assert "s3fs" in sys.modules
        print("ok")
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "FSMEMORY_S3_CLIENT"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.s3
def test_a_kept_alive_connection_closed_meanwhile_is_replaced(
    moto_service: MotoService, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """Connections are reused; one that died while idle (as when the server times it
    out) costs no failure, even without retries: the request goes out again on a new
    connection, and a conditional write sent that way is not taken for a conflict.

    moto's server closes every connection after its reply, so the test talks to it
    through the (fault-free) proxy of the fault tests, which keeps connections alive.
    """
    proxy = HTTPFaultProxy(moto_service.url, FaultPlan(rate=0.0), flavor="s3").start()
    try:
        options = {**s3_storage_options, "client_kwargs": {"endpoint_url": proxy.url}}
        _check_reconnects(open_root(s3_root_url, {**options, "retry": NO_RETRY}))
    finally:
        proxy.stop()


def _check_reconnects(root: StorageRoot) -> None:
    assert isinstance(root, S3Root) and root._client is not None
    version = root.write("f.txt", b"one")
    for _ in range(5):
        root.stat("f.txt")
    assert sum(len(c) for c in root._client._idle.values()) == 1  # one connection did all

    def kill_idle() -> int:
        killed = 0
        for conns in root._client._idle.values():  # type: ignore[union-attr]
            for conn in conns:
                assert conn.sock is not None
                conn.sock.shutdown(2)
                killed += 1
        return killed

    assert kill_idle() >= 1
    assert root.read_bytes("f.txt") == b"one"
    assert kill_idle() >= 1
    version = root.write("f.txt", b"two", if_version=version)
    assert kill_idle() >= 1
    with count_requests(root) as calls:
        assert root.read("f.txt") == Versioned(b"two", version)
    assert len(calls) == 1


def _forked_reads(root: StorageRoot, n: int) -> int:
    return sum(root.read_bytes(f"f{i % 4}.txt") == f"file {i % 4}".encode() for i in range(n))


@pytest.mark.s3
@pytest.mark.skipif(sys.platform == "win32", reason="no fork")
def test_a_forked_child_opens_its_own_connections(
    moto_service: MotoService, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """A process forked while the parent holds kept-alive connections never shares one:
    parent and child read concurrently and each gets its own replies."""
    import multiprocessing

    proxy = HTTPFaultProxy(moto_service.url, FaultPlan(rate=0.0), flavor="s3").start()
    try:
        options = {**s3_storage_options, "client_kwargs": {"endpoint_url": proxy.url}}
        root = open_root(s3_root_url, options)
        assert isinstance(root, S3Root) and root._client is not None
        for i in range(4):
            root.write(f"f{i}.txt", f"file {i}".encode())
        assert root._client._idle  # the parent holds a kept-alive connection
        ctx = multiprocessing.get_context("fork")
        results = ctx.Queue()

        def child() -> None:  # forked: the root is not pickled, the process is copied
            results.put(_forked_reads(root, 20))

        children = [ctx.Process(target=child) for _ in range(2)]
        for process in children:
            process.start()
        assert _forked_reads(root, 20) == 20
        assert [results.get(timeout=120) for _ in children] == [20, 20]
        for process in children:
            process.join(timeout=120)
            assert process.exitcode == 0
        assert _forked_reads(root, 4) == 4
    finally:
        proxy.stop()


@pytest.mark.s3
def test_delete_many_removes_only_what_it_names(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """One ``DeleteObjects`` for the named files (a missing one is skipped); every other
    file survives byte for byte."""
    root = open_root(s3_root_url, s3_storage_options)
    assert isinstance(root, S3Root)
    keep = {f"keep/{i}.bin": os.urandom(64) for i in range(3)}
    for path, data in keep.items():
        root.write(path, data)
    for i in range(3):
        root.write(f"drop/{i} +%.bin", b"x")
    with count_requests(root) as calls:
        assert root.delete_many([*(f"drop/{i} +%.bin" for i in range(3)), "drop/gone"]) == 4
    assert len(calls) == 1 and calls.calls[0].startswith("POST ")
    assert [info.path for info in root.list(recursive=True)] == sorted(keep)
    for path, data in keep.items():
        assert root.read_bytes(path) == data
    assert root.delete_many([]) == 0


@pytest.mark.s3
def test_as_many_connections_stay_open_as_requests_were_in_flight(
    moto_service: MotoService,
    s3_root_url: str,
    s3_storage_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """More threads than MAX_CONNECTIONS reading at once (an export's reads) keep every
    connection they opened: the next burst opens none. With only MAX_CONNECTIONS kept,
    16 threads would open a new connection (a TLS handshake on AWS) for 6 requests in
    16. Through the keep-alive proxy: moto closes every connection after its reply."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    proxy = HTTPFaultProxy(moto_service.url, FaultPlan(rate=0.0), flavor="s3").start()
    try:
        options = {**s3_storage_options, "client_kwargs": {"endpoint_url": proxy.url}}
        root = open_root(s3_root_url, {**options, "client": "builtin", "retry": NO_RETRY})
        assert isinstance(root, S3Root) and root._client is not None
        client = root._client
        opened: list[object] = []
        connect = client._connection

        def counting(*args: Any) -> Any:
            conn = connect(*args)
            opened.append(conn)
            return conn

        monkeypatch.setattr(client, "_connection", counting)
        root.write("f.txt", b"x")
        threads = MAX_CONNECTIONS + 6

        def burst() -> None:
            start = threading.Barrier(threads)

            def one(_: int) -> bytes:
                start.wait(30)
                return root.read_bytes("f.txt")

            with ThreadPoolExecutor(threads) as pool:
                assert list(pool.map(one, range(threads))) == [b"x"] * threads

        def idle() -> int:
            return sum(len(conns) for conns in client._idle.values())

        # Until one burst had more than MAX_CONNECTIONS requests in flight at once (the
        # barrier releases all threads together; a slow start may serialize a few).
        for _ in range(20):
            burst()
            if len(opened) > MAX_CONNECTIONS:
                break
        assert len(opened) > MAX_CONNECTIONS
        assert idle() == len(opened)  # none closed for being one too many
        before = len(opened)
        burst()
        assert len(opened) <= max(before, threads)  # reused, at most the new peak added
        assert idle() == len(opened) <= MAX_IDLE
    finally:
        proxy.stop()


# -- requests in flight together ---------------------------------------------------------
def _sent_and_read(root: S3Root) -> list[str]:
    """Record, in order, each request the root's client sends (``sent GET ...``) and
    each reply it reads (``read GET ...``), by wrapping the client's own ``finish``."""
    client = root._client
    assert client is not None
    events: list[str] = []
    client.observers.append(lambda method, url: events.append(f"sent {method} {url}"))
    finish = client.finish

    def recorded(pending: Any, ok: Any = (200,)) -> Any:
        events.append(f"read {pending.method} {pending.target}")
        return finish(pending, ok)

    client.finish = recorded  # type: ignore[method-assign]
    return events


@pytest.mark.s3
def test_started_requests_travel_together_and_each_gets_its_reply(
    moto_service: MotoService, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """Several requests sent before any reply is read each get their own reply, in
    whatever order they are read; a 404 accepted by ``ok`` is a reply, not an error; a
    kept-alive connection that died while idle is replaced; an abandoned request leaves
    no connection behind."""
    proxy = HTTPFaultProxy(moto_service.url, FaultPlan(rate=0.0), flavor="s3").start()
    try:
        options = {**s3_storage_options, "client_kwargs": {"endpoint_url": proxy.url}}
        root = open_root(s3_root_url, {**options, "retry": NO_RETRY})
        assert isinstance(root, S3Root) and root._client is not None
        client, bucket, prefix = root._client, root.bucket, root.prefix
        for i in range(3):
            root.write(f"f{i}.txt", f"file {i}".encode() * (i + 1))
        started = [client.start("GET", bucket, f"{prefix}/f{i}.txt") for i in range(3)]
        missing = client.start("GET", bucket, f"{prefix}/gone.txt")
        listed = client.start("GET", bucket, query=client.list_query(f"{prefix}/", False, None))
        assert client.finish(missing, ok=(200, 404)).status == 404
        objects, _, following = list_page(client.finish(listed).body)
        assert following is None
        assert sorted(o["Key"] for o in objects) == [f"{prefix}/f{i}.txt" for i in range(3)]
        for i in (2, 0, 1):
            assert client.finish(started[i]).body == f"file {i}".encode() * (i + 1)
        idle = sum(len(c) for c in client._idle.values())
        assert idle >= 2  # kept alive through the proxy, back in the pool
        for conns in client._idle.values():
            for conn in conns:
                conn.sock.shutdown(2)  # the server closed them while idle
        again = [client.start("GET", bucket, f"{prefix}/f{i}.txt") for i in range(2)]
        assert [client.finish(p).body for p in reversed(again)] == [b"file 1" * 2, b"file 0"]
        with pytest.raises(S3Error) as raised:
            client.finish(client.start("GET", bucket, f"{prefix}/gone.txt"))
        assert raised.value.status == 404
        dropped = client.start("GET", bucket, f"{prefix}/f0.txt")
        client.abandon(dropped)
        assert dropped.conn.sock.fileno() == -1
        assert all(conn is not dropped.conn for c in client._idle.values() for conn in c)
    finally:
        proxy.stop()


@pytest.mark.s3
def test_the_listing_and_the_cache_file_take_one_round_trip(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """``list_with_cache``: the cache's GET goes first and the listing right behind it,
    both before either reply is read; the cache is loaded before the listing is read.
    A missing cache is one 404 and no bucket probe; the listing equals ``list``."""
    root = open_root(s3_root_url, s3_storage_options)
    assert isinstance(root, S3Root)
    for name in ("MEMORY.md", "logs/2026-12-01.jsonl", "logs/2026-12-02.jsonl", "a b/c+%.md"):
        root.write(name, name.encode())
    expected = root.list("", recursive=True)
    for cache in (None, b"cached \x00 bytes"):
        if cache is not None:
            root.write_cache("index", cache)
        fresh = open_root(s3_root_url, s3_storage_options)
        assert isinstance(fresh, S3Root)
        events = _sent_and_read(fresh)
        loads: list[bytes] = []

        def load(data: bytes, events: list[str] = events, loads: list[bytes] = loads) -> int:
            events.append("load")
            loads.append(data)
            return len(data)

        listing, loaded = fresh.list_with_cache("index", load, lambda _: False)
        assert listing == expected
        assert loaded == (None if cache is None else len(cache))
        assert loads == ([] if cache is None else [cache])
        kinds = [e.split("?")[0].rsplit("/", 1)[-1] if "?" not in e else "list" for e in events]
        sent_read = [e.split()[0] for e in events]
        assert kinds[:2] == [".fsmemory-cache.index", "list"], events
        assert sent_read[:4] == ["sent", "sent", "read", "read"] or (
            sent_read[:5] == ["sent", "sent", "read", "load", "read"]
        ), events
        assert len(events) == (4 if cache is None else 5), events  # no HeadBucket


@pytest.mark.s3
def test_a_listing_with_its_cache_survives_faults(
    moto_service: MotoService, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """Resets, 5xx answers and torn replies of either request: the listing is still
    exact (the retried listing takes over) and the cache is either exact or None
    (a cache that cannot be read is no cache)."""
    root = open_root(s3_root_url, s3_storage_options)
    for i in range(5):
        root.write(f"logs/2026-11-2{i}.jsonl", os.urandom(300))
    cache = os.urandom(200_000)
    root.write_cache("index", cache)
    expected = root.list("", recursive=True)
    plan = FaultPlan.only("reset", "error", "truncate", rate=0.4, seed=11)
    proxy = HTTPFaultProxy(moto_service.url, plan, flavor="s3").start()
    try:
        options = {
            **s3_storage_options,
            "client_kwargs": {"endpoint_url": proxy.url},
            "retry": {"attempts": 20, "base_delay": 0.0, "max_delay": 0.0},
        }
        got = []
        for _ in range(12):
            faulty = open_root(s3_root_url, options)
            assert isinstance(faulty, S3Root)
            listing, loaded = faulty.list_with_cache("index", bytes)
            assert listing == expected
            assert loaded in (None, cache)
            got.append(loaded is not None)
        assert proxy.stats.faults > 0
    finally:
        proxy.stop()
    assert any(got)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.mark.s3
def test_https_endpoints_speak_tls(
    moto_service: MotoService, s3_root_url: str, s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    """Over ``https`` the client verifies the certificate against the given CA bundle
    and every request (one at a time, and the listing sent with the cache file) goes
    through TLS; a certificate it cannot verify fails the request."""
    import socket
    import ssl
    import threading

    cert, key = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    target = ("127.0.0.1", int(moto_service.url.rsplit(":", 1)[1]))

    def relay(secure: Any) -> None:  # one thread per connection: SSL sockets are not
        import select  # safe to read and write from two threads at once

        upstream = socket.create_connection(target)
        try:
            while True:
                ready, _, _ = select.select([secure, upstream], [], [], 30)
                if not ready:
                    return
                if secure in ready:
                    data = secure.recv(65536)
                    while secure.pending():
                        data += secure.recv(secure.pending())
                    if not data:
                        return
                    upstream.sendall(data)
                if upstream in ready:
                    data = upstream.recv(65536)
                    if not data:  # moto closes after each reply: so does the relay
                        return
                    secure.sendall(data)
        except OSError:
            return
        finally:
            upstream.close()
            secure.close()

    def serve() -> None:  # TLS in front of moto
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                secure = context.wrap_socket(client, server_side=True)
            except OSError:
                client.close()
                continue
            threading.Thread(target=relay, args=(secure,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        endpoint = {"endpoint_url": f"https://127.0.0.1:{port}", "verify": str(cert)}
        options = {**s3_storage_options, "client_kwargs": endpoint}
        root = open_root(s3_root_url, options)
        assert isinstance(root, S3Root) and root.client == "builtin"
        root.write("logs/2026-12-02.jsonl", b'{"a": 1}\n')
        root.write_cache("index", b"cache bytes")
        listing, loaded = root.list_with_cache("index", bytes)
        assert [info.path for info in listing] == ["logs/2026-12-02.jsonl"]
        assert loaded == b"cache bytes"
        assert root.read_bytes("logs/2026-12-02.jsonl") == b'{"a": 1}\n'
        untrusted = {**options, "client_kwargs": {**endpoint, "verify": True}, "retry": NO_RETRY}
        with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
            open_root(s3_root_url, untrusted).read_bytes("logs/2026-12-02.jsonl")
    finally:
        listener.close()


class _DropsSecondRequest:
    """An HTTP server on loopback that answers every connection's first request
    (keeping the connection alive) and, on a connection it answered before, reads the
    next request and closes without replying: a kept-alive connection dropped after the
    request went out, which only reading the reply can tell."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: Any) -> None:
        with conn:
            for answered in range(2):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests.append(head.split(b"\r\n", 1)[0] + b" " + body)
                if answered:
                    return  # the request was read: closed without a reply
                reply = b"served"
                conn.sendall(
                    b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nETag: "e"\r\n\r\n%s'
                    % (len(reply), reply)
                )

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_a_kept_alive_connection_dropped_before_the_reply_is_replaced(method: str) -> None:
    """A reused connection the server closes after the request went out fails only
    when its reply is read: the request is sent again on a new connection (with its
    body), for ``request`` and for ``start``/``finish`` alike."""
    server = _DropsSecondRequest()
    try:
        config, reason = resolve_config(
            {
                "key": "k",
                "secret": "s",
                "client_kwargs": {
                    "endpoint_url": f"http://127.0.0.1:{server.port}",
                    "region_name": "us-east-1",
                },
            },
            {},
        )
        assert config is not None, reason
        client = S3Client(config)
        body = b"payload" if method == "PUT" else b""
        assert client.request(method, "bucket", "k", body=body).body == b"served"
        # The one idle connection is reused, dropped after reading the request.
        assert client.request(method, "bucket", "k", body=body).body == b"served"
        assert client.finish(client.start("GET", "bucket", "k")).body == b"served"
        client.close()
    finally:
        server.close()
    sent = [line.split(b" ", 1)[0] for line in server.requests]
    assert sent == [method.encode()] * 3 + [b"GET"] * 2
    if method == "PUT":
        assert all(line.endswith(b" payload") for line in server.requests[:3])
