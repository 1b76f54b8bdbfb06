"""GCS's two routes: which configurations obstore serves and which go to gcsfs, the
``client`` option, and what the obstore route must keep (the same objects, versions and
tokens as gcsfs, a service-account key used as that account, a cold process without
gcsfs, forked children, a clean interpreter exit, hostile keys, writers of both routes
on one object).

The conformance suites (roots, store, memory, snapshot) run on both routes; this module
covers what they do not. The obstore route reaches fake-gcs-server through the XML relay
of ``tests/test_fs/gcs_fake.py``; the gcsfs route reaches fake-gcs-server itself.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fsmemory.errors import ConflictError, InvalidInputError
from fsmemory.fs import FileInfo, open_root
from fsmemory.fs.gcs import GCSRoot, resolve_route
from fsmemory.testing.conformance import cas_increment_worker
from tests.test_fs.forks import check_forked_children
from tests.test_fs.gcs_fake import GCSXmlRelay

URL = "gs://bucket/root"
EMAIL = "memory@fsmemory-test.iam.gserviceaccount.com"


def _key(**fields: Any) -> dict[str, Any]:
    """A service-account key as Google issues one (the private key is not a real one
    unless ``private_key`` is given)."""
    key = {
        "type": "service_account",
        "project_id": "fsmemory-test",
        "private_key_id": "0123456789abcdef",
        "private_key": "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n",
        "client_email": EMAIL,
        "client_id": "1234567890",
        "token_uri": "https://oauth2.googleapis.com/token",
        "universe_domain": "googleapis.com",
    }
    key.update(fields)
    return {k: v for k, v in key.items() if v is not None}


def _write(path: Path, info: dict[str, Any]) -> str:
    path.write_text(json.dumps(info))
    return str(path)


def _base(tmp_path: Path) -> dict[str, str]:
    """An environment with a home of its own (no gcloud files) and nothing else."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home)}


# -- which route ------------------------------------------------------------------------
def test_obstore_takes_what_gcsfs_would_resolve_the_same_way(tmp_path: Path) -> None:
    """Anonymous access, a service-account key (file or dict, from ``token`` or
    ``GOOGLE_APPLICATION_CREDENTIALS``), an endpoint from the options or
    ``STORAGE_EMULATOR_HOST``: obstore, with exactly that credential and endpoint."""
    env = _base(tmp_path)
    route = resolve_route(URL, {"token": "anon"}, env)
    assert route.client == "obstore", route.reason
    assert route.config["skip_signature"] is True
    assert json.loads(route.config["service_account_key"])["disable_oauth"] is True
    assert route.config["base_url"] == "https://storage.googleapis.com"
    assert "allow_http" not in route.client_options
    assert route.client_options["timeout"].total_seconds() == 70  # connect + read

    route = resolve_route(
        URL, {"token": "anon", "endpoint_url": "http://127.0.0.1:4443/", "project": "p"}, env
    )
    assert route.client == "obstore", route.reason
    assert route.config["base_url"] == "http://127.0.0.1:4443"
    assert route.client_options["allow_http"] is True

    route = resolve_route(URL, {"token": "anon"}, {**env, "STORAGE_EMULATOR_HOST": "127.0.0.1:9"})
    assert route.config["base_url"] == "http://127.0.0.1:9"
    route = resolve_route(
        URL,
        {"token": "anon", "endpoint_url": "https://e.example"},
        {**env, "STORAGE_EMULATOR_HOST": "127.0.0.1:9"},
    )
    assert route.config["base_url"] == "https://e.example"  # the option wins, as in gcsfs

    key_file = _write(tmp_path / "sa.json", _key())
    route = resolve_route(URL, {"token": key_file, "requests_timeout": 5}, env)
    assert route.client == "obstore", route.reason
    assert route.config["service_account"] == key_file
    assert "skip_signature" not in route.config
    assert route.client_options["timeout"].total_seconds() == 5

    route = resolve_route(URL, {"token": _key(), "access": "full_control"}, env)
    assert route.client == "obstore", route.reason
    assert json.loads(route.config["service_account_key"])["client_email"] == EMAIL

    gac = {**env, "GOOGLE_APPLICATION_CREDENTIALS": key_file}
    for options in ({}, {"project": "fsmemory-test"}):
        route = resolve_route(URL, options, gac)
        assert route.client == "obstore", route.reason
        assert route.config["service_account"] == key_file
        assert "GOOGLE_APPLICATION_CREDENTIALS" in route.reason

    bundle = str(tmp_path / "ca.pem")
    Path(bundle).write_text("")
    same = {**env, "REQUESTS_CA_BUNDLE": bundle, "SSL_CERT_FILE": bundle}
    assert resolve_route(URL, {"token": "anon"}, same).client == "obstore"
    harmless = {**env, "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_API_USE_CLIENT_CERTIFICATE": "false"}
    assert resolve_route(URL, {"token": "anon"}, harmless).client == "obstore"


def _case(tmp_path: Path, name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The options and environment of one configuration gcsfs must serve."""
    env = _base(tmp_path)
    sa = _write(tmp_path / "sa.json", _key())
    user = {
        "type": "authorized_user",
        "client_id": "id",
        "client_secret": "secret",
        "refresh_token": "refresh",
    }
    cases: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
        "nothing": ({}, env),
        "google_default": ({"token": "google_default"}, env),
        "cloud": ({"token": "cloud"}, env),
        "cache": ({"token": "cache"}, env),
        "browser": ({"token": "browser"}, env),
        "raw token": ({"token": "ya29.an-access-token"}, env),
        "user file": ({"token": _write(tmp_path / "user.json", user)}, env),
        "user dict": ({"token": user}, env),
        "external": (
            {"token": _write(tmp_path / "ext.json", {"type": "external_account"})},
            env,
        ),
        "credentials object": ({"token": object()}, env),
        "not json": ({"token": str(tmp_path)}, env),
        "gac user": ({}, {**env, "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "user.json")}),
        "gac project": (
            {"project": "another"},
            {**env, "GOOGLE_APPLICATION_CREDENTIALS": sa},
        ),
        "gac default project": (
            {},
            {**env, "GOOGLE_APPLICATION_CREDENTIALS": sa, "GCSFS_DEFAULT_PROJECT": "another"},
        ),
        "universe key": ({"token": _key(universe_domain="example.com")}, env),
        "token_uri": ({"token": _key(token_uri="https://sts.example/token")}, env),
        "no key id": ({"token": _key(private_key_id=None)}, env),
        "disable_oauth": ({"token": _key(disable_oauth=True)}, env),
        "requester_pays": ({"token": "anon", "requester_pays": True}, env),
        "version_aware": ({"token": "anon", "version_aware": True}, env),
        "session_kwargs": ({"token": "anon", "session_kwargs": {"trust_env": True}}, env),
        "access": ({"token": sa, "access": "read_only"}, env),
        "requests_timeout": ({"token": "anon", "requests_timeout": "5"}, env),
        "proxy": ({"token": "anon"}, {**env, "HTTPS_PROXY": "http://proxy:3128"}),
        "proxy lower": ({"token": "anon"}, {**env, "https_proxy": "http://proxy:3128"}),
        "ca bundle": ({"token": "anon"}, {**env, "REQUESTS_CA_BUNDLE": "/corp.pem"}),
        "universe": ({"token": "anon"}, {**env, "GOOGLE_CLOUD_UNIVERSE_DOMAIN": "example.com"}),
        "mtls": ({"token": "anon"}, {**env, "GOOGLE_API_USE_CLIENT_CERTIFICATE": "true"}),
        "mtls config": ({"token": "anon"}, {**env, "GOOGLE_API_CERTIFICATE_CONFIG": "/c.json"}),
        "obstore env key": ({"token": sa}, {**env, "GOOGLE_SERVICE_ACCOUNT_KEY": "{}"}),
        "obstore env token": ({"token": "anon"}, {**env, "GOOGLE_BEARER_TOKEN": "t"}),
        "obstore env url": ({"token": "anon"}, {**env, "GOOGLE_BASE_URL": "http://x"}),
        "quota project": ({"token": sa}, {**env, "GOOGLE_CLOUD_QUOTA_PROJECT": "billing"}),
    }
    return cases[name]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("nothing", "default chain"),
        ("google_default", "google_default"),
        ("cloud", "metadata server"),
        ("cache", "'cache'"),
        ("browser", "'browser'"),
        ("raw token", "raw access token"),
        ("user file", "'authorized_user'"),
        ("user dict", "'authorized_user'"),
        ("external", "'external_account'"),
        ("credentials object", "Credentials object"),
        ("not json", "cannot be read"),
        ("gac user", "'authorized_user'"),
        ("gac project", "differs"),
        ("gac default project", "differs"),
        ("universe key", "universe"),
        ("token_uri", "token_uri"),
        ("no key id", "private_key_id"),
        ("disable_oauth", "obstore only"),
        ("requester_pays", "requester_pays"),
        ("version_aware", "version_aware"),
        ("session_kwargs", "session_kwargs"),
        ("access", "access='read_only'"),
        ("requests_timeout", "requests_timeout"),
        ("proxy", "HTTPS_PROXY"),
        ("proxy lower", "HTTPS_PROXY"),
        ("ca bundle", "REQUESTS_CA_BUNDLE"),
        ("universe", "universe domain"),
        ("mtls", "client certificate"),
        ("mtls config", "client certificate"),
        ("obstore env key", "GOOGLE_SERVICE_ACCOUNT_KEY"),
        ("obstore env token", "GOOGLE_BEARER_TOKEN"),
        ("obstore env url", "GOOGLE_BASE_URL"),
        ("quota project", "GOOGLE_CLOUD_QUOTA_PROJECT"),
    ],
)
def test_what_obstore_leaves_to_gcsfs(tmp_path: Path, name: str, reason: str) -> None:
    """Configurations obstore would resolve differently from gcsfs and google-auth
    (other credentials, scope, endpoint, proxy or CA) or does not model go to gcsfs,
    and the reason says why; forcing obstore on them is refused with that reason."""
    options, env = _case(tmp_path, name)
    route = resolve_route(URL, options, env)
    assert route.client == "gcsfs"
    assert reason in route.reason, route.reason
    with pytest.raises(InvalidInputError, match="obstore cannot serve"):
        resolve_route(URL, {**options, "client": "obstore"}, env)


def test_the_gcloud_credentials_file_takes_gcsfs(tmp_path: Path) -> None:
    """``GOOGLE_APPLICATION_CREDENTIALS`` naming gcloud's own file (google-auth then
    asks gcloud for the project): gcsfs, even for a service-account key there."""
    env = _base(tmp_path)
    gcloud = tmp_path / "gcloud"
    gcloud.mkdir()
    adc = _write(gcloud / "application_default_credentials.json", _key())
    route = resolve_route(
        URL, {}, {**env, "CLOUDSDK_CONFIG": str(gcloud), "GOOGLE_APPLICATION_CREDENTIALS": adc}
    )
    assert route.client == "gcsfs" and "gcloud" in route.reason
    certificate = Path(env["HOME"]) / ".config" / "gcloud" / "certificate_config.json"
    certificate.parent.mkdir(parents=True)
    certificate.write_text("{}")
    route = resolve_route(URL, {"token": "anon"}, env)
    assert route.client == "gcsfs" and "client certificate" in route.reason


def test_the_client_choice_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``client`` and ``FSMEMORY_GCS_CLIENT`` pick the route; other values are refused."""
    env = _base(tmp_path)
    assert resolve_route(URL, {"token": "anon", "client": "gcsfs"}, env).client == "gcsfs"
    assert resolve_route(
        URL, {"token": "anon"}, {**env, "FSMEMORY_GCS_CLIENT": "gcsfs"}
    ).client == ("gcsfs")
    forced = {**env, "FSMEMORY_GCS_CLIENT": "gcsfs"}
    assert resolve_route(URL, {"token": "anon", "client": "auto"}, forced).client == "obstore"
    with pytest.raises(InvalidInputError, match="client"):
        resolve_route(URL, {"token": "anon", "client": "boto"}, env)
    with pytest.raises(InvalidInputError, match="client"):
        GCSRoot.from_url(URL, {"token": "anon", "client": "json"})


def test_a_configuration_obstore_refuses_takes_gcsfs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """When obstore refuses to build the store (a key it cannot parse, say), the root
    takes gcsfs with the same options and says why; forcing obstore raises instead."""
    import fsmemory.fs._cloud as cloud

    def refuse(store_class: str, bucket: str, route: Any) -> Any:
        raise ValueError("GCP credential error: cannot decode the key")

    monkeypatch.setattr(cloud, "shared_store", refuse)
    monkeypatch.delenv("FSMEMORY_GCS_CLIENT", raising=False)
    options = {"token": "anon", "endpoint_url": "http://127.0.0.1:9"}
    with caplog.at_level("INFO", logger="fsmemory.fs.gcs"):
        root = GCSRoot.from_url(URL, options)
    assert root.client == "gcsfs"
    assert "obstore refused the configuration (GCP credential error" in caplog.text
    with pytest.raises(InvalidInputError, match="obstore refused"):
        GCSRoot.from_url(URL, {**options, "client": "obstore"})


# -- both routes on one bucket ----------------------------------------------------------
@pytest.fixture
def routes(
    gcs_root_url: str,
    gcs_storage_options: dict[str, Any],
    gcs_obstore_storage_options: dict[str, Any],
) -> tuple[GCSRoot, GCSRoot]:
    """The same root through obstore (the relay) and through gcsfs (fake-gcs-server)."""
    fast = open_root(gcs_root_url, gcs_obstore_storage_options)
    slow = open_root(gcs_root_url, gcs_storage_options)
    assert isinstance(fast, GCSRoot) and isinstance(slow, GCSRoot)
    assert (fast.client, slow.client) == ("obstore", "gcsfs")
    return fast, slow


def _same(a: FileInfo | None, b: FileInfo | None) -> bool:
    """The same path, size and change token, and times within the second (a ``HEAD``
    gives whole seconds, an XML listing milliseconds, the JSON API microseconds)."""
    assert a is not None and b is not None
    assert a.mtime is not None and b.mtime is not None
    return (a.path, a.size, a.token) == (b.path, b.size, b.token) and abs(a.mtime - b.mtime) < 1


@pytest.mark.gcs
def test_both_routes_see_the_same_objects_versions_and_tokens(
    routes: tuple[GCSRoot, GCSRoot],
) -> None:
    """A version read through one route is a valid ``if_version`` on the other, a stale
    one fails on both; listings, ``stat`` and reads agree on sizes, tokens and
    versions."""
    fast, slow = routes
    version = fast.write("shared.txt", b"from obstore")
    assert version.isdigit()
    assert slow.read("shared.txt").version == version == fast.read("shared.txt").version
    assert _same(slow.stat("shared.txt"), fast.stat("shared.txt"))
    newer = slow.write("shared.txt", b"from gcsfs", if_version=version)
    assert fast.read("shared.txt") == slow.read("shared.txt")
    assert fast.read("shared.txt").version == newer
    with pytest.raises(ConflictError):
        fast.write("shared.txt", b"stale", if_version=version)
    with pytest.raises(ConflictError):
        slow.write("shared.txt", b"stale", if_version=version)
    latest = fast.write("shared.txt", b"obstore again", if_version=newer)
    with pytest.raises(ConflictError):
        slow.write("shared.txt", b"x", create_only=True)
    fast.write("d/a.md", b"aa")
    slow.write("d/b.md", b"bbb")
    listed = fast.list("", recursive=True), slow.list("", recursive=True)
    assert len(listed[0]) == len(listed[1]) == 3
    assert all(_same(a, b) for a, b in zip(*listed, strict=True))
    assert sorted(fast.list_names("")[1]) == sorted(slow.list_names("")[1]) == ["d"]
    assert fast.read_range("shared.txt", 3, 7) == slow.read_range("shared.txt", 3, 7) == b"tore"
    assert slow.read("shared.txt").version == latest
    # the same bytes written again: a new version, the same change token (the MD5)
    again = slow.write("d/a.md", b"aa")
    assert fast.read("d/a.md").version == again
    assert fast.stat("d/a.md").token == slow.stat("d/a.md").token  # type: ignore[union-attr]
    assert fast.delete_many(["d/a.md", "d/b.md", "d/missing.md"]) == 2
    assert slow.list("d") == []
    assert fast.delete("shared.txt") is True
    assert slow.stat("shared.txt") is None
    assert slow.delete("shared.txt") is False


HOSTILE = [
    "a b.md",
    "a+b.md",
    "a%20b.md",
    "100%.md",
    "q?x=1&y=2.md",
    "hash#frag.md",
    "semi;colon,comma.md",
    "tilde~star*.md",
    "équipe/naïve 日本.md",
    "quote'\"<tag>&amp;.md",
    "dir with space/+plus+/x.md",
]


@pytest.mark.gcs
def test_hostile_keys_round_trip_through_both_routes(
    routes: tuple[GCSRoot, GCSRoot],
) -> None:
    """Keys with spaces, ``+``, ``%``, ``?``, ``#``, XML's special characters and
    non-ASCII letters name the same object on both routes, in listings, reads, ranged
    reads, conditional writes and deletes."""
    fast, slow = routes
    for i, name in enumerate(HOSTILE):
        writer, reader = (fast, slow) if i % 2 == 0 else (slow, fast)
        version = writer.write(name, name.encode())
        assert reader.read(name).data == name.encode()
        assert reader.read(name).version == version
        assert reader.read_range(name, 1, 3) == name.encode()[1:3]
        reader.write(name, name.encode() + b"!", if_version=version)
    expected = sorted(HOSTILE)
    assert [i.path for i in fast.list("", recursive=True)] == expected
    assert [i.path for i in slow.list("", recursive=True)] == expected
    assert [i.path for i in fast.list("dir with space/+plus+")] == ["dir with space/+plus+/x.md"]
    assert fast.list_dirs("dir with space") == slow.list_dirs("dir with space") == ["+plus+"]
    assert fast.stat("a+b.md") != fast.stat("a b.md")
    assert fast.read_bytes("a+b.md") == b"a+b.md!"
    assert fast.delete_tree("dir with space") == 1
    assert slow.stat("dir with space/+plus+/x.md") is None
    for i, name in enumerate(HOSTILE[:-1]):
        assert (fast, slow)[i % 2].delete(name) is True
    assert fast.list("", recursive=True) == slow.list("", recursive=True) == []


@pytest.mark.gcs
def test_a_root_whose_prefix_holds_a_space_and_a_plus(
    gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
) -> None:
    """The root's own prefix may hold what a URL encodes: listings find its files."""
    url = f"{gcs_root_url}/my notes+x"
    root = open_root(url, gcs_obstore_storage_options)
    root.write("a.md", b"1")
    root.write("sub/b.md", b"2")
    assert [i.path for i in root.list("", recursive=True)] == ["a.md", "sub/b.md"]
    assert root.list_dirs() == ["sub"]
    assert root.delete_tree("") == 2


@pytest.mark.gcs
def test_the_relay_answers_as_gcs_does(
    gcs_xml_relay: GCSXmlRelay, gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
) -> None:
    """The fixture's replies that the suites rely on: generation headers, user
    metadata, 412 on a failed generation match, ``NoSuchKey``/``NoSuchBucket`` bodies,
    ``Content-Range``, a truncated listing continued by its token."""
    import http.client
    from urllib.parse import quote

    bucket = gcs_root_url.removeprefix("gs://").split("/")[0]
    host, port = gcs_xml_relay.url.removeprefix("http://").split(":")

    def ask(method: str, path: str, body: bytes = b"", **headers: str) -> Any:
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request(method, path, body=body or None, headers=headers)
        reply = conn.getresponse()
        data = reply.read()
        conn.close()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, data

    key = f"/{bucket}/{quote('x y+z.txt')}"
    status, head, _ = ask("PUT", key, b"hello", **{"x-goog-meta-owner": "me"})
    assert status == 200 and head["x-goog-generation"].isdigit()
    assert head["etag"] == '"5d41402abc4b2a76b9719d911017c592"'  # MD5 of b"hello"
    generation = head["x-goog-generation"]
    status, _, body = ask("PUT", key, b"again", **{"x-goog-if-generation-match": "0"})
    assert status == 412 and b"<Code>PreconditionFailed</Code>" in body
    status, head, body = ask("GET", key, Range="bytes=1-3")
    assert (status, body, head["content-range"]) == (206, b"ell", "bytes 1-3/5")
    assert head["x-goog-meta-owner"] == "me" and head["x-goog-generation"] == generation
    assert head["x-goog-stored-content-length"] == "5" and head["x-goog-metageneration"] == "1"
    status, _, body = ask("GET", key, Range="bytes=9-")
    assert status == 416 and b"InvalidRange" in body
    status, _, body = ask("GET", f"/{bucket}/missing")
    assert status == 404 and b"<Code>NoSuchKey</Code>" in body
    status, _, body = ask("GET", "/no-such-bucket-here/missing")
    assert status == 404 and b"<Code>NoSuchBucket</Code>" in body
    for i in range(3):
        ask("PUT", f"/{bucket}/p/{i}", b"x")
    status, _, body = ask("GET", f"/{bucket}?list-type=2&prefix=p%2F&max-keys=2")
    text = body.decode()
    assert status == 200 and "<IsTruncated>true</IsTruncated>" in text
    assert text.count("<Key>") == 2 and "<Generation>" in text
    token = text.split("<NextContinuationToken>")[1].split("<")[0]
    status, _, body = ask(
        "GET", f"/{bucket}?list-type=2&prefix=p%2F&continuation-token={quote(token)}"
    )
    assert body.decode().count("<Key>") == 1 and "<Key>p/2</Key>" in body.decode()
    status, _, body = ask("GET", f"/{bucket}?list-type=2&delimiter=%2F&prefix=x+y")
    assert "<Key>x y+z.txt</Key>" in body.decode()  # '+' in a query is a space
    status, _, _ = ask("DELETE", key)
    assert status == 204
    status, _, body = ask("DELETE", key)
    assert status == 404 and b"NoSuchKey" in body


# -- credentials ------------------------------------------------------------------------
def _rsa_key() -> tuple[str, Any]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return pem, private.public_key()


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


@pytest.mark.gcs
@pytest.mark.parametrize("source", ["token", "GOOGLE_APPLICATION_CREDENTIALS"])
def test_a_service_account_key_signs_as_that_account(
    source: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gcs_xml_relay: GCSXmlRelay,
    gcs_root_url: str,
) -> None:
    """With a service-account key, every request carries a bearer token signed by that
    key (RS256, ``kid`` the key's id) for that account, as the key's holder: nothing
    else is asked for a token (no metadata server, no token exchange)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    pem, public = _rsa_key()
    key_file = _write(tmp_path / "sa.json", _key(private_key=pem))
    options: dict[str, Any] = {"endpoint_url": gcs_xml_relay.url}
    if source == "token":
        options["token"] = key_file
    else:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", key_file)
    root = open_root(gcs_root_url, options)
    assert isinstance(root, GCSRoot) and root.client == "obstore"
    before = len(gcs_xml_relay.authorizations)
    root.write("signed.txt", b"by the account")
    assert root.read_bytes("signed.txt") == b"by the account"
    sent = gcs_xml_relay.authorizations[before:]
    assert len(sent) == 2 and all(a and a.startswith("Bearer ") for a in sent), sent
    for authorization in sent:
        assert authorization is not None
        head, claims, signature = authorization.removeprefix("Bearer ").split(".")
        header = json.loads(_b64(head))
        assert header["alg"] == "RS256" and header["kid"] == "0123456789abcdef"
        payload = json.loads(_b64(claims))
        assert payload["iss"] == payload["sub"] == EMAIL
        public.verify(
            _b64(signature), f"{head}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256()
        )


@pytest.mark.gcs
def test_anonymous_access_sends_no_credentials(
    gcs_xml_relay: GCSXmlRelay, gcs_root_url: str
) -> None:
    """``token="anon"`` reads and lists without an ``Authorization`` header (a public
    bucket refuses a bad one) and never asks a metadata server for a token."""
    root = open_root(gcs_root_url, {"token": "anon", "endpoint_url": gcs_xml_relay.url})
    root.write("public.txt", b"anyone")
    before = len(gcs_xml_relay.authorizations)
    assert root.read_bytes("public.txt") == b"anyone"
    assert [i.path for i in root.list("")] == ["public.txt"]
    assert root.stat("public.txt") is not None
    assert gcs_xml_relay.authorizations[before:] == [None, None, None]


# -- processes --------------------------------------------------------------------------
def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FSMEMORY_GCS_CLIENT"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


@pytest.mark.gcs
def test_a_cold_process_imports_no_gcsfs(
    gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
) -> None:
    """A fresh process opens a memory on GCS, remembers and recalls without importing
    gcsfs, aiohttp or google-auth; ``root.fs`` still works, built on first use; the
    interpreter exits cleanly."""
    script = textwrap.dedent(
        f"""
        import sys
        from fsmemory import KnowledgeMemory
        km = KnowledgeMemory({gcs_root_url!r}, storage_options={gcs_obstore_storage_options!r})
        km.remember("the user prefers tea", persistent=True)
        assert [e.content for e in km.recall("tea")] == ["the user prefers tea"]
        km.build_context()
        assert km.root.client == "obstore"
        heavy = ("gcsfs", "aiohttp", "google.auth")
        loaded = [name for name in heavy if name in sys.modules]
        assert not loaded, loaded
        names = km.root.fs.ls({gcs_root_url.removeprefix("gs://")!r})
        assert any(name.endswith("MEMORY.md") for name in names), names
        assert "gcsfs" in sys.modules
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.gcs
def test_a_cold_open_and_recall_load_nothing_only_gcsfs_uses(
    gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
) -> None:
    """A fresh process's open + first recall on the obstore route (the listing sent with
    the cache GET included) loads none of what only the gcsfs route needs: ``asyncio``
    (its batch deletes), ``base64`` (the MD5s of its JSON listings), gcsfs's stack. A
    serverless cold start pays every such import inside its first request."""
    from fsmemory import KnowledgeMemory

    KnowledgeMemory(gcs_root_url, storage_options=gcs_obstore_storage_options).remember(
        "the user prefers tea", persistent=True
    )
    script = textwrap.dedent(
        f"""
        import json, sys
        from fsmemory import KnowledgeMemory
        before = set(sys.modules)
        km = KnowledgeMemory({gcs_root_url!r}, storage_options={gcs_obstore_storage_options!r})
        found = [e.content for e in km.recall("tea")]
        km.root.list_with_cache("index", bytes)
        unwanted = ("asyncio", "base64", "gcsfs", "aiohttp", "google.auth", "fsspec")
        loaded = [m for m in unwanted if m in sys.modules and m not in before]
        print(json.dumps([km.root.client, found, loaded]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        "obstore",
        ["the user prefers tea"],
        [],
    ]


@pytest.mark.gcs
@pytest.mark.slow
def test_the_interpreter_exits_cleanly_after_obstore_calls(
    gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
) -> None:
    """A serverless handler's process ends right after its requests (the cache GET on
    its thread included): ten fresh interpreters, every one exits with status 0."""
    script = textwrap.dedent(
        f"""
        from fsmemory import KnowledgeMemory
        km = KnowledgeMemory({gcs_root_url!r}, storage_options={gcs_obstore_storage_options!r})
        assert km.root.client == "obstore"
        km.remember("exit cleanly", persistent=True)
        km.recall("exit")
        km.root.list_with_cache("index", bytes)
        """
    )
    for _ in range(10):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_env()
        )
        assert done.returncode == 0, done.stderr


@pytest.mark.gcs
def test_a_forked_child_reads_and_writes_through_gcsfs(
    gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
) -> None:
    """obstore's runtime does not survive fork: a child forked after the parent used
    the root reads and writes through the same root object (now on gcsfs) and exits 0;
    roots it opens take gcsfs; the parent goes on working on obstore."""
    root = open_root(gcs_root_url, gcs_obstore_storage_options)
    assert isinstance(root, GCSRoot) and root.client == "obstore"

    def on_gcsfs() -> bool:
        fresh = open_root(gcs_root_url, gcs_obstore_storage_options)
        return root.client == "gcsfs" and fresh.client == "gcsfs"  # type: ignore[attr-defined]

    check_forked_children(root, on_gcsfs)
    assert root.client == "obstore"


PROCESSES = 4
INCREMENTS = 25


@pytest.mark.gcs
def test_writers_of_both_routes_lose_no_increment(
    gcs_root_url: str,
    gcs_storage_options: dict[str, Any],
    gcs_obstore_storage_options: dict[str, Any],
) -> None:
    """4 spawned processes, two on each route, increment one object by compare-and-swap
    25 times each: it ends at 100 (a generation read on one route guards a write on
    the other)."""
    root = open_root(gcs_root_url, gcs_obstore_storage_options)
    root.write("counter", b"0")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        jobs = [
            pool.apply_async(
                cas_increment_worker,
                (
                    gcs_root_url,
                    gcs_obstore_storage_options if i % 2 else gcs_storage_options,
                    "counter",
                    INCREMENTS,
                ),
            )
            for i in range(PROCESSES)
        ]
        applied = sum(job.get(timeout=240) for job in jobs)
    assert applied == PROCESSES * INCREMENTS
    assert int(root.read_bytes("counter")) == PROCESSES * INCREMENTS


@pytest.mark.gcs
def test_threads_on_the_obstore_route_lose_no_append(
    gcs_root_url: str, gcs_obstore_storage_options: dict[str, Any]
) -> None:
    """8 threads append 10 lines each to one object through one obstore root: every
    line lands exactly once."""
    from concurrent.futures import ThreadPoolExecutor

    root = open_root(gcs_root_url, gcs_obstore_storage_options)

    def appender(worker: int) -> None:
        for i in range(10):
            root.append("log.jsonl", f"{worker}-{i}\n".encode())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(appender, range(8)))
    lines = root.read_bytes("log.jsonl").decode().splitlines()
    assert sorted(lines) == sorted(f"{w}-{i}" for w in range(8) for i in range(10))
