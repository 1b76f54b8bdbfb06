"""S3-, GCS- and Azure-specific behaviour beyond the conformance suite."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from fsmemory.errors import (
    BackendError,
    BucketNotFoundError,
    ConflictError,
    InvalidPathError,
    MissingDependencyError,
)
from fsmemory.fs import RetryPolicy, StorageRoot, open_root
from fsmemory.fs.errors import is_transient
from fsmemory.fs.gcs import GCSRoot
from fsmemory.fs.s3 import S3Root


def _independent_fs(root: StorageRoot) -> Any:
    """A second client for the same service, sharing no cache with ``root.fs``."""
    return type(root.fs)(**root.fs.storage_options, skip_instance_cache=True)


def _cross_client_checks(root: StorageRoot) -> None:
    other = _independent_fs(root)
    assert root.list("d") == []
    assert root.list_dirs() == []
    # Another process (here: another client) creates files behind our back.
    other.pipe_file(f"{root.root}/d/new.txt", b"from elsewhere")
    assert [i.path for i in root.list("d")] == ["d/new.txt"]
    assert root.list_dirs() == ["d"]
    # Code using root.fs directly is not served a stale listing either.
    assert [p.rsplit("/", 1)[-1] for p in root.fs.ls(f"{root.root}/d")] == ["new.txt"]
    version = root.read("d/new.txt").version
    other.pipe_file(f"{root.root}/d/new.txt", b"changed elsewhere")
    with pytest.raises(ConflictError):
        root.write("d/new.txt", b"lost update", if_version=version)
    assert root.read_bytes("d/new.txt") == b"changed elsewhere"
    other.rm_file(f"{root.root}/d/new.txt")
    assert root.list("d") == []
    with pytest.raises(FileNotFoundError):  # not the stale cached listing
        root.fs.ls(f"{root.root}/d")


@pytest.mark.s3
def test_s3_sees_other_clients(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    """Listings and versions reflect writes made by another client immediately."""
    root = open_root(s3_root_url, s3_storage_options)
    assert isinstance(root, S3Root)
    assert root.capabilities.conditional_write and not root.capabilities.native_append
    _cross_client_checks(root)


@pytest.mark.gcs
def test_gcs_sees_other_clients(gcs_root_url: str, gcs_storage_options: dict[str, Any]) -> None:
    """Listings and versions reflect writes made by another client immediately."""
    root = open_root(gcs_root_url, gcs_storage_options)
    assert isinstance(root, GCSRoot)
    assert root.capabilities.conditional_write and not root.capabilities.native_append
    _cross_client_checks(root)


@pytest.mark.s3
def test_s3_url_forms(s3_root_url: str, s3_storage_options: dict[str, Any]) -> None:
    """``s3a://``, a bare bucket and a trailing slash address the same objects."""
    bucket = s3_root_url.removeprefix("s3://").split("/")[0]
    whole = open_root(f"s3://{bucket}", s3_storage_options)
    whole.write("root/x.txt", b"x")
    for url in (s3_root_url, s3_root_url + "/", s3_root_url.replace("s3://", "s3a://")):
        root = open_root(url, s3_storage_options)
        assert root.read_bytes("x.txt") == b"x", url
        assert [i.path for i in root.list()] == ["x.txt"]
    assert [i.path for i in whole.list(recursive=True)] == ["root/x.txt"]
    with pytest.raises(InvalidPathError):
        open_root("s3://", s3_storage_options)


@pytest.mark.gcs
def test_gcs_url_forms(gcs_root_url: str, gcs_storage_options: dict[str, Any]) -> None:
    """``gcs://``, a bare bucket and a trailing slash address the same objects."""
    bucket = gcs_root_url.removeprefix("gs://").split("/")[0]
    whole = open_root(f"gs://{bucket}", gcs_storage_options)
    whole.write("root/x.txt", b"x")
    for url in (gcs_root_url, gcs_root_url + "/", gcs_root_url.replace("gs://", "gcs://")):
        root = open_root(url, gcs_storage_options)
        assert root.read_bytes("x.txt") == b"x", url
    with pytest.raises(InvalidPathError):
        open_root("gs://", gcs_storage_options)


@pytest.mark.s3
def test_s3_missing_bucket_is_not_a_conflict(s3_storage_options: dict[str, Any]) -> None:
    """Writing into a bucket that does not exist fails at once instead of retrying CAS."""
    root = open_root("s3://fsm-no-such-bucket-anywhere/x", s3_storage_options)
    for call in (
        lambda: root.write("a", b"x", if_version="abc"),
        lambda: root.update("a", lambda cur: b"x"),
        lambda: root.append("a", b"x"),
    ):
        with pytest.raises(BucketNotFoundError, match="fsm-no-such-bucket-anywhere"):
            call()


@pytest.mark.s3
def test_s3_unreachable_endpoint_is_backend_error() -> None:
    """A dead endpoint surfaces as BackendError (an OSError), not as a conflict."""
    from fsmemory.testing.services import free_port

    options = {
        "anon": False,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{free_port()}"},
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }
    root = open_root("s3://bucket/x", options)
    root.fs.retries = 1  # s3fs's own retry loop (with backoff) on top of botocore's
    with pytest.raises(BackendError) as info:
        root.read("a")
    assert info.value.__cause__ is not None
    with pytest.raises(BackendError):
        root.write("a", b"x", if_version="v")


@pytest.mark.parametrize(
    ("url", "modules", "extra"),
    [("s3://bucket/x", ["s3fs"], "s3fs"), ("gs://bucket/x", ["gcsfs", "gcsfs.core"], "gcsfs")],
)
def test_missing_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch, url: str, modules: list[str], extra: str
) -> None:
    """Without s3fs/gcsfs, opening a root says which extra to install (on S3: when the
    built-in client finds no credentials, here none at all)."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "FSMEMORY_S3_CLIENT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    with pytest.raises(MissingDependencyError) as info:
        open_root(url, {})
    assert f"fsmemory[{extra}]" in str(info.value)
    assert isinstance(info.value, ImportError)


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


@pytest.mark.parametrize(
    ("url", "options", "fallback"),
    [
        (
            "s3://bucket/root",
            {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "https://{host}"}},
            "s3fs",
        ),
        ("gs://bucket/root", {"token": "anon", "endpoint_url": "https://{host}"}, "gcsfs"),
        (
            "az://container/root",
            {"account_name": "acct", "account_key": "a2V5", "account_host": "{host}"},
            "adlfs",
        ),
    ],
)
def test_an_untrusted_certificate_is_a_clear_backend_error(
    tmp_path: Path, url: str, options: dict[str, Any], fallback: str
) -> None:
    """An ``https`` endpoint whose certificate no trusted CA signed, on the obstore
    route: a :class:`BackendError` that says TLS and names the service's fallback
    client (the route for a private CA), not retried, not a raw ``ssl`` error."""
    import json
    import socket
    import ssl
    import threading

    cert, key = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    host = f"127.0.0.1:{listener.getsockname()[1]}"
    handshakes: list[int] = []

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            handshakes.append(1)
            try:
                context.wrap_socket(client, server_side=True).close()
            except OSError:
                client.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        given = json.loads(json.dumps(options).replace("{host}", host))
        retry = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.001)
        root = open_root(url, {**given, "client": "obstore", "retry": retry})
        with pytest.raises(BackendError, match=rf"TLS.* {fallback} route") as info:
            root.read_bytes("MEMORY.md")
        assert not is_transient(info.value)
        assert len(handshakes) == 1
    finally:
        listener.close()
