"""Azure Blob roots: which client serves which configuration, and behaviour the shared
conformance suite does not pin down (Azurite, on both routes).

The route is resolved from the options and an explicit environment (a plain dict), as
adlfs would resolve the credential; the roots themselves run against Azurite.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fsmemory.errors import BucketNotFoundError, InvalidInputError, KeyNotFoundError
from fsmemory.fs import open_root
from fsmemory.fs.azure import AdlfsRoot, AzureRoot, resolve_route
from fsmemory.testing.cloud_services import AZURITE_KEY, AzuriteService
from fsmemory.testing.faults import FaultPlan, HTTPFaultProxy
from tests.test_fs.forks import check_forked_children

KEY = "a2V5"  # any base64
SAS = "sv=2024-01-01&ss=b&sig=abc%3D"

# -- which route ------------------------------------------------------------------------


def test_connection_string_with_key_takes_obstore_with_its_endpoint() -> None:
    cs = (
        "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;"
        "BlobEndpoint=http://127.0.0.1:1/acct;QueueEndpoint=http://127.0.0.1:2/acct;"
    )
    route = resolve_route("az://c/p", {"connection_string": cs}, {})
    assert route.client == "obstore"
    assert route.config["endpoint"] == "http://127.0.0.1:1/acct"
    assert route.config["account_name"] == "acct"
    assert route.config["credential_type"] == "access_key"
    assert route.config["account_key"] == KEY


def test_connection_string_without_blob_endpoint_builds_it_from_protocol_and_suffix() -> None:
    cs = f"DefaultEndpointsProtocol=https;AccountName=acct;SharedAccessSignature=?{SAS};EndpointSuffix=core.chinacloudapi.cn"
    route = resolve_route("az://c", {"connection_string": cs}, {})
    assert route.client == "obstore"
    assert route.config["endpoint"] == "https://acct.blob.core.chinacloudapi.cn"
    assert route.config["credential_type"] == "sas_token"
    assert route.config["sas_key"] == SAS


def test_connection_string_in_the_environment_wins_over_an_account_key_option() -> None:
    """adlfs connects with the connection string whenever there is one."""
    env = {
        "AZURE_STORAGE_CONNECTION_STRING": "AccountName=other;AccountKey=b3RoZXI=;BlobEndpoint=http://127.0.0.1:9/other"
    }
    route = resolve_route("az://c", {"account_name": "acct", "account_key": KEY}, env)
    assert route.client == "obstore"
    assert route.config["account_name"] == "other"
    assert route.config["account_key"] == "b3RoZXI="


def test_account_name_and_key_from_the_environment() -> None:
    env = {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": KEY}
    route = resolve_route("abfs://c/p", {}, env)
    assert route.client == "obstore"
    assert route.config["endpoint"] == "https://acct.blob.core.windows.net"
    assert route.config["account_key"] == KEY


def test_key_beats_sas_and_account_host_sets_the_endpoint() -> None:
    route = resolve_route(
        "az://c",
        {"account_name": "acct", "sas_token": SAS, "account_host": "acct.blob.example.net"},
        {"AZURE_STORAGE_ACCOUNT_KEY": KEY},
    )
    assert route.client == "obstore"
    assert route.config["credential_type"] == "access_key"
    assert route.config["endpoint"] == "https://acct.blob.example.net"


def test_sas_token_option_leading_question_mark_dropped() -> None:
    route = resolve_route("az://c", {"account_name": "acct", "sas_token": "?" + SAS}, {})
    assert route.client == "obstore"
    assert route.config["sas_key"] == SAS


@pytest.mark.parametrize(
    ("options", "env", "why"),
    [
        ({"account_name": "acct"}, {}, "DefaultAzureCredential"),
        (
            {"account_name": "acct"},
            {"AZURE_STORAGE_CLIENT_ID": "id", "AZURE_STORAGE_CLIENT_SECRET": "s"},
            "service principal",
        ),
        (
            {"account_name": "acct", "client_id": "i", "client_secret": "s", "tenant_id": "t"},
            {},
            "client_id",
        ),
        ({"account_name": "acct", "credential": object()}, {}, "credential"),
        ({"account_name": "acct", "account_key": KEY, "anon": True}, {}, "anon"),
        (
            {"account_name": "acct", "account_key": KEY, "location_mode": "secondary"},
            {},
            "location_mode",
        ),
        ({"connection_string": "UseDevelopmentStorage=true"}, {}, "UseDevelopmentStorage"),
        (
            {"connection_string": "AccountName=a;BlobEndpoint=http://x"},
            {},
            "without AccountName and a key",
        ),
        ({"connection_string": "AccountName=a;AccountKey=k;Weird=1"}, {}, "weird"),
        ({"connection_string": "AccountName=a;AccountKey"}, {}, "cannot parse"),
        # adlfs does not strip variables: a blank connection string is the one it uses
        (
            {"account_name": "acct", "account_key": KEY},
            {"AZURE_STORAGE_CONNECTION_STRING": " "},
            "without AccountName and a key",
        ),
        ({}, {}, "no account name"),
    ],
)
def test_configurations_obstore_does_not_model_take_adlfs(
    options: dict[str, Any], env: dict[str, str], why: str
) -> None:
    route = resolve_route("az://c/p", options, env)
    assert route.client == "adlfs"
    assert why.lower() in route.reason.lower()


def test_account_in_the_url_host_takes_adlfs() -> None:
    route = resolve_route("abfss://c@acct.dfs.core.windows.net/p", {"account_key": KEY}, {"X": "1"})
    assert route.client == "adlfs"


def test_client_choice() -> None:
    options = {"account_name": "acct", "account_key": KEY}
    assert resolve_route("az://c", {**options, "client": "adlfs"}, {}).client == "adlfs"
    assert resolve_route("az://c", options, {"FSMEMORY_AZURE_CLIENT": "adlfs"}).client == "adlfs"
    with pytest.raises(InvalidInputError, match="obstore cannot serve"):
        resolve_route("az://c", {"account_name": "acct", "client": "obstore"}, {})
    with pytest.raises(InvalidInputError, match="must be one of"):
        resolve_route("az://c", {**options, "client": "boto"}, {})


# -- roots on Azurite -------------------------------------------------------------------


@pytest.mark.azure
def test_obstore_route_ignores_azure_variables_obstore_would_read(
    azure_root_url: str,
    azure_storage_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """obstore reads AZURE_* variables adlfs does not: with an endpoint, emulator
    switch, credential type and key in the environment pointing elsewhere, the root
    still talks to the connection string's endpoint with its key."""
    monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", "http://127.0.0.1:9/nowhere")
    monkeypatch.setenv("AZURE_STORAGE_USE_EMULATOR", "true")
    monkeypatch.setenv("AZURE_CREDENTIAL_TYPE", "azure_cli")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "d3Jvbmc=")
    root = open_root(azure_root_url, azure_storage_options)
    assert isinstance(root, AzureRoot)
    version = root.write("a.txt", b"hello", create_only=True)
    assert root.read("a.txt").version == version


@pytest.mark.azure
@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_missing_container_is_named(azurite_service: AzuriteService, route: str) -> None:
    options = {**azurite_service.azure_storage_options(), "client": route}
    root = open_root(f"az://fsm-missing-{uuid.uuid4().hex[:8]}/p", options)
    with pytest.raises(BucketNotFoundError, match="fsm-missing"):
        root.read("x.txt")
    with pytest.raises(BucketNotFoundError, match="fsm-missing"):
        root.list("", recursive=True)
    with pytest.raises(BucketNotFoundError, match="fsm-missing"):
        root.list_dirs("")
    with pytest.raises(BucketNotFoundError, match="fsm-missing"):
        root.write("x.txt", b"1")
    with pytest.raises(BucketNotFoundError, match="fsm-missing"):
        root.append("log", b"1\n")


@pytest.mark.azure
def test_hostile_version_token_never_reaches_a_header(
    azure_root_url: str, azure_storage_options: dict[str, Any]
) -> None:
    """A CR/LF in if_version is refused before any request; the blob keeps its bytes."""
    root = open_root(azure_root_url, azure_storage_options)
    version = root.write("v.txt", b"original")
    for token in (f"{version}\r\nx-ms-meta-evil: 1", "0x1\n", "\x00"):
        with pytest.raises((InvalidInputError, KeyNotFoundError, ValueError)):
            root.write("v.txt", b"forged", if_version=token)
    got = root.read("v.txt")
    assert got.data == b"original" and got.version == version


@pytest.mark.azure
@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_ambiguous_conditional_writes_are_recognised(
    azurite_service: AzuriteService, azure_root_url: str, route: str
) -> None:
    """30 % of PUTs land and then lose their reply: every compare-and-swap increment is
    applied exactly once. obstore: the marker in the blob's metadata tells a landed write
    apart (Azure refuses metadata names holding '-'); adlfs: the content does, and
    azure-core must not resend the PUT by itself (its 412 would read as a lost race and
    the increment would be applied twice)."""
    plan = FaultPlan.only("ambiguous", rate=0.3, seed=3, methods=frozenset({"PUT"}))
    with HTTPFaultProxy(azurite_service.url, plan) as proxy:
        cs = (
            f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={proxy.url}/devstoreaccount1;"
        )
        root = open_root(azure_root_url, {"connection_string": cs, "client": route})
        assert isinstance(root, AzureRoot if route == "obstore" else AdlfsRoot)
        with proxy.paused():
            root.write("counter", b"0")
        for _ in range(20):
            root.update("counter", lambda b: str(int(b or b"0") + 1).encode())
        assert proxy.stats.faults >= 3
        with proxy.paused():
            assert root.read_bytes("counter") == b"20"


@pytest.mark.azure
def test_adlfs_route_writes_names_with_question_marks_to_their_own_blob(
    azure_root_url: str,
    azure_storage_options: dict[str, Any],
    azure_adlfs_storage_options: dict[str, Any],
) -> None:
    """adlfs reads a path as a URL: ``notes?`` and ``a?#b`` went to the blobs ``notes``
    and ``a#b``, overwriting them. Their neighbours keep their bytes; both routes see
    the same names."""
    adl = open_root(azure_root_url, azure_adlfs_storage_options)
    obs = open_root(azure_root_url, azure_storage_options)
    assert isinstance(adl, AdlfsRoot) and isinstance(obs, AzureRoot)
    neighbours = {"q/notes": b"keep me\n", "q/a#b.md": b"and me\n"}
    for name, data in neighbours.items():
        obs.write(name, data)
    adl.write("q/notes?", b"question\n")
    adl.write("q/a?#b.md", b"hash\n")
    adl.append("q/log?", b"line\n")
    for name, data in neighbours.items():
        assert obs.read_bytes(name) == data
        assert adl.read_bytes(name) == data
    assert obs.read_bytes("q/notes?") == b"question\n"
    assert obs.read_bytes("q/a?#b.md") == b"hash\n"
    assert obs.read_bytes("q/log?") == b"line\n"
    names = ["q/a#b.md", "q/a?#b.md", "q/log?", "q/notes", "q/notes?"]
    assert [i.path for i in adl.list("q")] == names
    assert [i.path for i in obs.list("q")] == names
    assert adl.delete("q/notes?") is True
    assert obs.read_bytes("q/notes") == b"keep me\n"


@pytest.mark.azure
@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_ranges_at_and_past_the_end(
    azure_root_url: str, azurite_service: AzuriteService, route: str
) -> None:
    """A reader tailing a log reads exactly at the end, past it, and an empty blob."""
    options = {**azurite_service.azure_storage_options(), "client": route}
    root = open_root(azure_root_url, options)
    root.write("log", b"0123456789")
    root.write("empty", b"")
    assert root.read_range("log", 10) == b""
    assert root.read_range("log", 11) == b""
    assert root.read_range("log", 9) == b"9"
    assert root.read_range("log", 8, 20) == b"89"
    assert root.read_range("empty", 0) == b""
    assert root.read_range("empty", 1) == b""
    assert root.read_ranges([("log", 10, None), ("log", 3, 5), ("nope", 0, None)]) == [
        b"",
        b"34",
        None,
    ]
    with pytest.raises(KeyNotFoundError):
        root.read_range("nope", 5)


@pytest.mark.azure
def test_fs_of_the_obstore_route_is_adlfs_on_the_same_container(
    azure_root_url: str, azure_storage_options: dict[str, Any]
) -> None:
    root = open_root(azure_root_url, azure_storage_options)
    assert isinstance(root, AzureRoot)
    root.write("x/y.txt", b"seen by adlfs")
    assert root.fs.cat_file(f"{root.root}/x/y.txt") == b"seen by adlfs"


@pytest.mark.azure
@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_batch_delete_with_a_blob_already_gone(
    azure_root_url: str, azurite_service: AzuriteService, route: str
) -> None:
    """Azure fails a whole blob batch when one blob is gone: the others are still
    deleted, the gone one does not count, and files outside the batch keep their bytes."""
    options = {**azurite_service.azure_storage_options(), "client": route}
    root = open_root(azure_root_url, options)
    for name in ("d/a", "d/b", "keep"):
        root.write(name, name.encode())
    deleted = root.delete_many(["d/a", "d/gone", "d/b"])
    # adlfs's batched rm cannot tell a gone blob either: the generic root counts the paths.
    assert deleted == 2 if route == "obstore" else deleted in (2, 3)
    assert root.list("d") == []
    assert root.read_bytes("keep") == b"keep"


# -- missing packages -------------------------------------------------------------------

_HIDE = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None
from fsmemory.errors import MissingDependencyError
from fsmemory.fs import open_root

def refused(url, options):
    try:
        open_root(url, options)
    except MissingDependencyError as exc:
        return exc
    raise AssertionError("no MissingDependencyError")
"""


def _hidden(hidden: list[str], body: str, env: dict[str, str] | None = None) -> None:
    import os
    import subprocess
    import sys
    import textwrap

    code = _HIDE.format(hidden=hidden) + textwrap.dedent(body)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_")}
    environ["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    environ.update(env or {})
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environ
    )
    assert result.returncode == 0, result.stderr


KEYED = {"account_name": "acct", "account_key": "a2V5"}


def test_without_obstore_or_adlfs_the_extra_is_named() -> None:
    _hidden(
        ["obstore", "adlfs"],
        f"""
        exc = refused("az://c/p", {KEYED!r})
        assert exc.extra == "azure", exc
        assert "pip install 'fsmemory[azure]'" in str(exc)
        """,
    )


def test_without_obstore_a_key_falls_back_to_adlfs_unless_obstore_is_forced() -> None:
    _hidden(
        ["obstore"],
        f"""
        from fsmemory.fs.azure import AdlfsRoot
        assert isinstance(open_root("az://c/p", {KEYED!r}), AdlfsRoot)
        exc = refused("az://c/p", {{**{KEYED!r}, "client": "obstore"}})
        assert exc.extra == "azure", exc
        """,
    )


def test_without_adlfs_entra_id_says_to_install_adlfs() -> None:
    _hidden(
        ["adlfs"],
        """
        exc = refused("az://c/p", {"account_name": "acct"})
        assert exc.module == "adlfs" and "pip install 'fsmemory[adlfs]'" in str(exc), exc
        from fsmemory.fs.azure import AzureRoot
        assert isinstance(open_root("az://c/p", {"account_name": "acct", "sas_token": "sv=1"}), AzureRoot)
        """,
    )


# -- the emulator launcher --------------------------------------------------------------


@pytest.mark.azure
def test_azurite_starts_serves_and_stops() -> None:
    """A fresh Azurite answers blob requests and is gone, with its folder, after stop()."""
    import socket

    from fsmemory.testing.cloud_services import start_azurite
    from fsmemory.testing.services import start_or_skip

    service = start_or_skip(start_azurite)
    workdir = service.workdir
    try:
        service.create_container("launcher")
        root = open_root("az://launcher/x", service.azure_storage_options())
        root.write("k", b"v", create_only=True)
        assert root.read_bytes("k") == b"v"
    finally:
        service.stop()
    assert not service.running
    assert workdir is not None and not workdir.exists()
    with pytest.raises(OSError), socket.create_connection((service.host, service.port), 0.5):
        pass
    service.stop()  # idempotent


def test_missing_azurite_skips_or_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing azurite-blob skips, unless FSMEMORY_REQUIRE_SERVICES=1 makes it an error."""
    from fsmemory.testing.cloud_services import AZURITE_ENV, start_azurite
    from fsmemory.testing.services import ServiceUnavailableError, start_or_skip

    monkeypatch.setenv(AZURITE_ENV, "/nonexistent/azurite-blob")
    monkeypatch.delenv("FSMEMORY_REQUIRE_SERVICES", raising=False)
    with pytest.raises(pytest.skip.Exception):
        start_or_skip(start_azurite)
    monkeypatch.setenv("FSMEMORY_REQUIRE_SERVICES", "1")
    with pytest.raises(ServiceUnavailableError, match="azurite"):
        start_or_skip(start_azurite)


@pytest.mark.azure
@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_sas_token_from_a_connection_string(
    azurite_service: AzuriteService, azure_root_url: str, route: str
) -> None:
    """A container SAS with read/write/delete/list works, compare-and-swap included; a
    read-only SAS reads, and its writes fail as a final BackendError leaving the blob
    byte for byte as it was."""
    from datetime import UTC, datetime, timedelta

    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    from fsmemory.errors import BackendError, ConflictError
    from fsmemory.testing.cloud_services import AZURITE_ACCOUNT

    container = azure_root_url.split("/")[2]

    def options(permission: str) -> dict[str, Any]:
        sas = generate_container_sas(
            AZURITE_ACCOUNT,
            container,
            account_key=AZURITE_KEY,
            permission=ContainerSasPermissions.from_string(permission),
            expiry=datetime.now(UTC) + timedelta(hours=1),
        )
        cs = (
            f"AccountName={AZURITE_ACCOUNT};SharedAccessSignature={sas};"
            f"BlobEndpoint={azurite_service.blob_endpoint};"
        )
        return {"connection_string": cs, "client": route}

    writer = open_root(azure_root_url, options("rwdlc"))
    assert isinstance(writer, AzureRoot if route == "obstore" else AdlfsRoot)
    v1 = writer.write("s.txt", b"one", create_only=True)
    v2 = writer.write("s.txt", b"two", if_version=v1)
    with pytest.raises(ConflictError):
        writer.write("s.txt", b"three", if_version=v1)
    assert [i.path for i in writer.list("")] == ["s.txt"]
    reader = open_root(azure_root_url, options("rl"))
    assert reader.read("s.txt").data == b"two"
    with pytest.raises(BackendError):
        reader.write("s.txt", b"forbidden")
    got = writer.read("s.txt")
    assert got.data == b"two" and got.version == v2


# -- processes ----------------------------------------------------------------------------


@pytest.mark.azure
@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_a_forked_child_reads_and_writes(
    azure_root_url: str, azurite_service: AzuriteService, route: str
) -> None:
    """A child forked after the parent used the root (obstore's tokio runtime, adlfs's
    event-loop thread) reads and writes through the same root object and exits 0; the
    parent goes on working."""
    options = {**azurite_service.azure_storage_options(), "client": route}
    root = open_root(azure_root_url, options)
    check_forked_children(root)


@pytest.mark.azure
@pytest.mark.parametrize("route", ["obstore", "adlfs"])
def test_the_interpreter_exits_cleanly(
    azure_root_url: str, azurite_service: AzuriteService, route: str
) -> None:
    """Fresh interpreters that remember into an az:// memory and return exit 0, with
    nothing on stderr (no abort at exit, no unclosed-session warnings)."""
    import subprocess
    import sys
    import textwrap

    options = {**azurite_service.azure_storage_options(), "client": route}
    code = textwrap.dedent(
        f"""
        from fsmemory import KnowledgeMemory
        km = KnowledgeMemory({azure_root_url!r}, storage_options={options!r})
        km.remember("from a short-lived process", persistent=True)
        assert km.recall("short-lived")
        """
    )
    for _ in range(4):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == "", result.stderr


@pytest.mark.azure
def test_roots_of_one_container_share_one_store(
    azure_root_url: str, azurite_service: AzuriteService
) -> None:
    """Opening the same container again (a warm worker per invocation) reuses the
    obstore store and its connections; another container or other credentials get
    their own."""
    options = azurite_service.azure_storage_options()
    a = open_root(azure_root_url, options)
    b = open_root(azure_root_url.rsplit("/", 1)[0] + "/other-prefix", options)
    assert isinstance(a, AzureRoot) and isinstance(b, AzureRoot)
    assert a.store is b.store
    assert a.storage_key() != b.storage_key()  # other prefix: other files
    assert open_root(azure_root_url, options).storage_key() == a.storage_key()
    other = open_root(f"az://fsm-{uuid.uuid4().hex[:12]}/root", options)
    assert isinstance(other, AzureRoot) and other.store is not a.store
    other_key = {"account_name": "devstoreaccount1", "account_key": AZURITE_KEY[:-4] + "AA=="}
    keyed = open_root(azure_root_url, other_key)
    assert isinstance(keyed, AzureRoot) and keyed.store is not a.store
