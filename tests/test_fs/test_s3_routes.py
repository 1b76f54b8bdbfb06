"""S3's two routes: which configurations obstore serves and which go to s3fs, the
``client`` option, and what the obstore route must keep (a cold process without s3fs,
forked children, a clean interpreter exit, the listing sent with the cache file,
batched deletes; TLS failures: ``test_cloud_roots.py``).

The conformance suite and the request-count, fault and snapshot tests run on both
routes; this module covers what they do not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fsmemory.errors import BackendError, InvalidInputError, KeyNotFoundError
from fsmemory.fs import NO_RETRY, open_root
from fsmemory.fs.s3 import S3Root, obstore_config
from fsmemory.testing.cloud_services import MotoService
from fsmemory.testing.requests import count_requests
from tests.test_fs.aws_fake import HostileServer, PairingRelay
from tests.test_fs.forks import check_forked_children

KEYS = {"AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret"}


def _files(tmp_path: Path, credentials: str = "", config: str = "") -> dict[str, str]:
    (tmp_path / "credentials").write_text(textwrap.dedent(credentials))
    (tmp_path / "config").write_text(textwrap.dedent(config))
    return {
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
    }


# -- which route ------------------------------------------------------------------------
def test_obstore_takes_what_botocore_would_resolve_the_same_way(tmp_path: Path) -> None:
    """Keys from the options beat the environment's; the environment's are used as
    they are (session token included); the region comes from ``region_name``, then
    ``AWS_DEFAULT_REGION`` (not ``AWS_REGION``, which botocore ignores), then the
    profile; a custom endpoint means path-style requests and a default region."""
    files = _files(
        tmp_path, config="[default]\nregion = eu-west-3\n[profile work]\nregion = ap-south-1\n"
    )
    env = {**files, **KEYS}
    settings, _ = obstore_config({"key": "OPT", "secret": "optsecret", "token": "t"}, env)
    assert settings is not None
    config = settings["config"]
    assert (config["access_key_id"], config["secret_access_key"]) == ("OPT", "optsecret")
    assert config["session_token"] == "t" and config["region"] == "eu-west-3"
    assert settings["bucket_style"] == "virtual" and "endpoint" not in config
    settings, _ = obstore_config(
        {}, {**env, "AWS_SESSION_TOKEN": "tok", "AWS_REGION": "x-1", "AWS_DEFAULT_REGION": "y-2"}
    )
    assert settings is not None
    assert settings["config"]["access_key_id"] == "ENVKEY"
    assert settings["config"]["session_token"] == "tok"
    assert settings["config"]["region"] == "y-2"
    settings, _ = obstore_config({}, {**env, "AWS_DEFAULT_PROFILE": "work", "AWS_PROFILE": "x"})
    assert settings is not None and settings["config"]["region"] == "ap-south-1"
    options = {
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000/", "region_name": "r-1"},
        "config_kwargs": {"connect_timeout": 1, "read_timeout": 2.5},
    }
    settings, _ = obstore_config(options, env)
    assert settings is not None
    assert settings["config"]["endpoint"] == "http://127.0.0.1:9000"
    assert settings["config"]["region"] == "r-1" and settings["bucket_style"] == "path"
    assert settings["client_options"]["allow_http"] is True
    assert settings["client_options"]["timeout"].total_seconds() == 3.5  # the whole request
    settings, _ = obstore_config({}, {**KEYS, "AWS_ENDPOINT_URL_S3": "https://minio.example"})
    assert settings is not None and settings["config"]["region"] == "us-east-1"
    settings, _ = obstore_config({"anon": True, "endpoint_url": "https://e.example"}, {})
    assert settings is not None and settings["config"]["skip_signature"] is True
    lambda_env = {
        **KEYS,
        "AWS_SESSION_TOKEN": "t",
        "AWS_REGION": "eu-central-1",
        "AWS_DEFAULT_REGION": "eu-central-1",
        "AWS_LAMBDA_FUNCTION_NAME": "f",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
        "AWS_XRAY_DAEMON_ADDRESS": "169.254.79.129:2000",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    settings, why = obstore_config({}, lambda_env)
    assert settings is not None, why
    no_files = {"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": "/nx"}
    eks = {**no_files, "AWS_WEB_IDENTITY_TOKEN_FILE": "/t", "AWS_ROLE_ARN": "arn:r"}
    settings, why = obstore_config({}, {**eks, "AWS_DEFAULT_REGION": "us-west-2"})
    assert settings is not None and "access_key_id" not in settings["config"], why
    same_bundle = {**KEYS, "AWS_DEFAULT_REGION": "us-west-2", **no_files}
    bundle = str(tmp_path / "ca.pem")
    Path(bundle).write_text("")
    settings, why = obstore_config(
        {}, {**same_bundle, "AWS_CA_BUNDLE": bundle, "SSL_CERT_FILE": bundle}
    )
    assert settings is not None, why


@pytest.mark.parametrize(
    ("options", "credentials", "config", "env", "reason"),
    [
        ({}, "", "", {}, "no credentials"),  # the instance metadata service
        ({}, "[default]\naws_access_key_id = k\naws_secret_access_key = s\n", "", {}, "shared"),
        ({"profile": "work"}, "", "", {}, "profile"),
        (
            {},
            "",
            "[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = x\n",
            KEYS,
            "role_arn",
        ),
        ({}, "", "[default]\nsso_session = corp\n", KEYS, "sso_session"),
        ({}, "", "[default]\ncredential_process = /bin/creds\n", KEYS, "credential_process"),
        ({}, "", "[default]\nendpoint_url = http://minio:9000\n", KEYS, "endpoint_url"),
        ({}, "", "[default]\nca_bundle = /corp.pem\n", KEYS, "ca_bundle"),
        ({}, "", "[default]\nuse_fips_endpoint = true\n", KEYS, "use_fips_endpoint"),
        ({}, "", "[default]\ns3 =\n  addressing_style = virtual\n", KEYS, "s3"),
        ({}, "", "[default]\nservices = local\n", KEYS, "services"),
        ({}, "", "", {**KEYS, "AWS_USE_FIPS_ENDPOINT": "true"}, "AWS_USE_FIPS_ENDPOINT"),
        ({}, "", "", {**KEYS, "AWS_USE_DUALSTACK_ENDPOINT": "true"}, "DUALSTACK"),
        ({}, "", "", {**KEYS, "AWS_CA_BUNDLE": "/corp.pem"}, "AWS_CA_BUNDLE"),
        ({}, "", "", {**KEYS, "HTTPS_PROXY": "http://proxy:3128"}, "HTTPS_PROXY"),
        ({}, "", "", {**KEYS, "https_proxy": "http://proxy:3128"}, "HTTPS_PROXY"),
        ({}, "", "", {**KEYS, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, "IGNORE"),
        ({}, "", "", {**KEYS, "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS": "1"}, "MULTIREGION"),
        ({}, "", "", {**KEYS, "AWS_DEFAULT_REGION": "cn-north-1"}, "partition"),
        ({"key": "k", "secret": "s", "requester_pays": True}, "", "", {}, "requester_pays"),
        ({"key": "k", "secret": "s", "version_aware": True}, "", "", {}, "version_aware"),
        ({"key": "k", "secret": "s", "client_kwargs": {"verify": "/ca.pem"}}, "", "", {}, "verify"),
        (
            {"key": "k", "secret": "s", "config_kwargs": {"signature_version": "s3"}},
            "",
            "",
            {},
            "signature_version",
        ),
        ({"key": "k"}, "", "", {"AWS_DEFAULT_REGION": "us-east-1"}, "only one of key"),
    ],
)
def test_what_obstore_leaves_to_s3fs(
    tmp_path: Path,
    options: dict[str, Any],
    credentials: str,
    config: str,
    env: dict[str, str],
    reason: str,
) -> None:
    """Configurations obstore would resolve differently from botocore (other
    credentials, endpoint, CA, region or partition) or does not model go to s3fs, and
    the reason says why."""
    settings, why = obstore_config(options, {**_files(tmp_path, credentials, config), **env})
    assert settings is None
    assert reason in why


@pytest.mark.s3
def test_the_client_option(
    s3_root_url: str, s3_storage_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``client`` picks the route (default: obstore when it can); both routes see the
    same objects and versions; ``FSMEMORY_S3_CLIENT`` sets the default; ``"builtin"``
    still means the fast route."""
    fast = open_root(s3_root_url, s3_storage_options)
    forced = open_root(s3_root_url, {**s3_storage_options, "client": "s3fs"})
    assert isinstance(fast, S3Root) and isinstance(forced, S3Root)
    assert (fast.client, forced.client) == ("obstore", "s3fs")
    version = fast.write("shared.txt", b"from obstore")
    assert forced.read("shared.txt").version == version
    assert forced.stat("shared.txt").token == fast.stat("shared.txt").token  # type: ignore[union-attr]
    forced.write("shared.txt", b"from s3fs", if_version=version)
    assert fast.read_bytes("shared.txt") == b"from s3fs"
    fast.write("shared.txt", b"obstore again", if_version=forced.read("shared.txt").version)
    monkeypatch.setenv("FSMEMORY_S3_CLIENT", "s3fs")
    assert open_root(s3_root_url, s3_storage_options).client == "s3fs"  # type: ignore[attr-defined]
    chosen = open_root(s3_root_url, {**s3_storage_options, "client": "builtin"})
    assert chosen.client == "obstore"  # type: ignore[attr-defined]
    monkeypatch.delenv("FSMEMORY_S3_CLIENT")
    with pytest.raises(InvalidInputError, match="requester_pays"):
        open_root(s3_root_url, {**s3_storage_options, "client": "obstore", "requester_pays": True})
    with pytest.raises(InvalidInputError, match="client"):
        open_root(s3_root_url, {**s3_storage_options, "client": "boto"})
    unusual = open_root(s3_root_url, {**s3_storage_options, "requester_pays": False})
    assert unusual.client == "s3fs"  # type: ignore[attr-defined]


# -- process life -------------------------------------------------------------------------
def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FSMEMORY_S3_CLIENT"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


@pytest.mark.s3
def test_a_cold_process_imports_no_s3fs(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """A fresh process opens a memory on S3, remembers and recalls without importing
    s3fs, aiobotocore, aiohttp or botocore; ``root.fs`` still works, built on first
    use."""
    script = textwrap.dedent(
        f"""
        import sys
        from fsmemory import KnowledgeMemory
        km = KnowledgeMemory({s3_root_url!r}, storage_options={s3_storage_options!r})
        km.remember("the user prefers tea", persistent=True)
        assert [e.content for e in km.recall("tea")] == ["the user prefers tea"]
        km.build_context()
        assert km.root.client == "obstore"
        heavy = ("s3fs", "aiobotocore", "aiohttp", "botocore")
        loaded = [name for name in heavy if name in sys.modules]
        assert not loaded, loaded
        names = km.root.fs.ls({s3_root_url.removeprefix("s3://")!r})
        assert any(name.endswith("MEMORY.md") for name in names), names
        assert "s3fs" in sys.modules
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.s3
def test_a_forked_child_reads_and_exits_cleanly(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """obstore runs a tokio runtime: a child forked after the parent used the root
    reads and writes through the same root object and exits 0, and the parent goes on
    working."""
    root = open_root(s3_root_url, s3_storage_options)
    assert isinstance(root, S3Root) and root.client == "obstore"
    check_forked_children(root)


@pytest.mark.s3
def test_the_interpreter_exits_cleanly_after_obstore_calls(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """A serverless handler's process ends right after its requests (the cache GET on
    its thread included): ten fresh interpreters, every one exits with status 0."""
    script = textwrap.dedent(
        f"""
        from fsmemory import KnowledgeMemory
        km = KnowledgeMemory({s3_root_url!r}, storage_options={s3_storage_options!r})
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


# -- requests -------------------------------------------------------------------------
@pytest.mark.s3
def test_the_listing_and_the_cache_file_travel_together(
    moto_service: MotoService, s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """``list_with_cache`` sends the cache's GET and the listing at once: a relay that
    holds every request until a second one is in flight sees them as a pair (sent one
    after the other, each would wait alone). The listing equals ``list``; the cache is
    loaded whatever ``want`` says; a missing cache is one 404 and no bucket probe."""
    root = open_root(s3_root_url, s3_storage_options)
    for name in ("MEMORY.md", "logs/2026-12-01.jsonl", "a b/c+%.md"):
        root.write(name, name.encode())
    expected = root.list("", recursive=True)
    relay = PairingRelay(moto_service.url, wait=2.0)
    try:
        options = {**s3_storage_options, "client_kwargs": {"endpoint_url": relay.url}}
        for cache in (None, b"cached \x00 bytes"):
            if cache is not None:
                root.write_cache("index", cache)
            fresh = open_root(s3_root_url, options)
            assert isinstance(fresh, S3Root) and fresh.client == "obstore"
            before = (relay.paired, relay.alone)
            with count_requests(fresh) as calls:
                listing, loaded = fresh.list_with_cache("index", bytes, lambda _: False)
            assert listing == expected
            assert loaded == cache
            assert len(calls) == 2, calls.calls
            assert (relay.paired - before[0], relay.alone - before[1]) == (2, 0)
    finally:
        relay.stop()


@pytest.mark.s3
def test_delete_many_removes_only_what_it_names(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """One batch delete for the named files (a missing one is skipped); every other
    file survives byte for byte."""
    root = open_root(s3_root_url, s3_storage_options)
    assert isinstance(root, S3Root) and root.client == "obstore"
    keep = {f"keep/{i}.bin": os.urandom(64) for i in range(3)}
    for path, data in keep.items():
        root.write(path, data)
    for i in range(3):
        root.write(f"drop/{i} +%.bin", b"x")
    with count_requests(root) as calls:
        assert root.delete_many([*(f"drop/{i} +%.bin" for i in range(3)), "drop/gone"]) == 4
    assert len(calls) == 1
    assert [info.path for info in root.list(recursive=True)] == sorted(keep)
    for path, data in keep.items():
        assert root.read_bytes(path) == data
    assert root.delete_many([]) == 0


@pytest.mark.s3
def test_no_retry_policy_means_one_request(s3_storage_options: dict[str, Any]) -> None:
    """obstore's own retries are off: with ``NO_RETRY`` a 503 is one request."""
    server = HostileServer(b"HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\n\r\n")
    try:
        options = {
            "key": "k",
            "secret": "s",
            "client_kwargs": {"endpoint_url": server.url},
            "client": "obstore",
            "retry": NO_RETRY,
        }
        with pytest.raises(BackendError):
            open_root("s3://bucket/root", options).read_bytes("MEMORY.md")
        assert len(server.requests) == 1
    finally:
        server.close()


@pytest.mark.s3
def test_hostile_key_names_do_not_steer_the_error_mapping(
    s3_root_url: str, s3_storage_options: dict[str, Any]
) -> None:
    """obstore's messages quote the key: a missing key whose name spells a missing
    bucket, a certificate failure or a redirect is still a missing key, and an existing
    one reads back."""
    root = open_root(s3_root_url, {**s3_storage_options, "retry": NO_RETRY})
    assert isinstance(root, S3Root) and root.client == "obstore"
    names = [
        "<Code>NoSuchBucket</Code>.md",
        "status code: 404 <Code>NoSuchBucket</Code> ContainerNotFound",
        "certificate UnknownIssuer tls handshake.md",
        "redirect without LOCATION timed out connection.md",
    ]
    for name in names:
        assert root.stat(name) is None
        with pytest.raises(KeyNotFoundError):
            root.read_bytes(name)
        assert root.delete(name) is False
        root.write(name, name.encode())
        assert root.read_bytes(name) == name.encode()
    assert sorted(i.path for i in root.list("", recursive=True)) == sorted(names)
