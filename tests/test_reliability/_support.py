"""Helpers for the reliability tests: faulty roots on every backend, and a checker that
compares what a memory holds with what callers were told.

Network backends get a fault-injecting proxy between the client and the real service
(moto, fake-gcs-server, redis-server); local folders and ``memory://`` get a
:class:`~fsmemory.testing.faults.FaultyRoot`. Clients use short timeouts so a held
request costs half a second, and a retry policy with short pauses.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsmemory import KnowledgeMemory
from fsmemory.fs import StorageRoot, open_root
from fsmemory.fs.gcs import GCSRoot
from fsmemory.fs.s3 import S3Root
from fsmemory.testing.faults import FaultPlan, FaultyRoot, HTTPFaultProxy, TCPFaultProxy

#: client timeouts (s) and how long a ``timeout`` fault holds a request
CLIENT_TIMEOUT = 0.5
HOLD = 0.8

#: the retry policy of the fault tests: many short tries (one operation stays < 20 s)
RETRY = {"attempts": 20, "base_delay": 0.005, "max_delay": 0.1, "deadline": 20.0}

BACKENDS = [
    "local",
    "memory",
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("gcs", marks=pytest.mark.gcs),  # gcsfs on fake-gcs-server
    pytest.param("gcs-obstore", marks=pytest.mark.gcs),  # obstore through the XML relay
    pytest.param("redis", marks=pytest.mark.redis),
]
#: the backends reached over a network (retried by their roots)
NETWORK = ("s3", "gcs", "gcs-obstore", "redis")


class Injector:
    """The common face of a proxy and a FaultyRoot: a plan, stats and ``paused()``."""

    plan: FaultPlan

    def __init__(self, target: FaultyRoot | HTTPFaultProxy | TCPFaultProxy) -> None:
        self.target = target

    def set_plan(self, plan: FaultPlan) -> None:
        """Inject according to ``plan`` from now on."""
        self.target.plan = plan

    def paused(self) -> Any:
        """A context in which nothing is injected."""
        return self.target.paused()

    @property
    def faults(self) -> int:
        """Faults injected so far."""
        return self.target.stats.faults

    @property
    def requests(self) -> int:
        """Requests (or root calls) seen so far."""
        return self.target.stats["requests"]


@dataclass
class FaultyBackend:
    """A memory location reachable two ways: through faults, and directly (clean)."""

    name: str
    injector: Injector
    faulty: StorageRoot
    clean: StorageRoot
    stops: list[Any] = field(default_factory=list)

    def memory(self, **kwargs: Any) -> KnowledgeMemory:
        """A KnowledgeMemory over the faulty root."""
        return KnowledgeMemory(self.faulty, **kwargs)

    def fresh(self, **kwargs: Any) -> KnowledgeMemory:
        """A new KnowledgeMemory over the clean root (what a later process would see)."""
        return KnowledgeMemory(self.clean, **kwargs)


def _s3(request: pytest.FixtureRequest, retry: dict[str, Any]) -> FaultyBackend:
    moto = request.getfixturevalue("moto_service")
    options = dict(request.getfixturevalue("s3_storage_options"))
    bucket = f"fsm-{uuid.uuid4().hex[:16]}"
    clean = S3Root.from_url(f"s3://{bucket}/root", options)
    clean.fs.mkdir(bucket)
    proxy = HTTPFaultProxy(moto.url, flavor="s3").start()
    faulty_options = {
        **options,
        "client_kwargs": {"endpoint_url": proxy.url},
        "config_kwargs": {"connect_timeout": CLIENT_TIMEOUT, "read_timeout": CLIENT_TIMEOUT},
        "retry": retry,
    }
    faulty = open_root(f"s3://{bucket}/root", faulty_options)
    return FaultyBackend("s3", Injector(proxy), faulty, clean, [proxy])


def _gcs(request: pytest.FixtureRequest, retry: dict[str, Any]) -> FaultyBackend:
    import aiohttp

    gcs = request.getfixturevalue("fake_gcs_service")
    options = dict(request.getfixturevalue("gcs_storage_options"))
    bucket = f"fsm-{uuid.uuid4().hex[:16]}"
    clean = GCSRoot.from_url(f"gs://{bucket}/root", options)
    clean.fs.mkdir(bucket)
    proxy = HTTPFaultProxy(gcs.url, flavor="gcs").start()
    faulty_options = {
        **options,
        "endpoint_url": proxy.url,
        "requests_timeout": aiohttp.ClientTimeout(
            total=None, sock_connect=CLIENT_TIMEOUT, sock_read=CLIENT_TIMEOUT
        ),
        "retry": retry,
    }
    faulty = open_root(f"gs://{bucket}/root", faulty_options)
    return FaultyBackend("gcs", Injector(proxy), faulty, clean, [proxy])


def _gcs_obstore(request: pytest.FixtureRequest, retry: dict[str, Any]) -> FaultyBackend:
    """GCS's obstore route: faults between obstore and the XML relay (GCS's XML error
    bodies are S3's), the relay in front of fake-gcs-server."""
    options = dict(request.getfixturevalue("gcs_obstore_storage_options"))
    bucket = f"fsm-{uuid.uuid4().hex[:16]}"
    clean = GCSRoot.from_url(f"gs://{bucket}/root", options)
    clean.fs.mkdir(bucket)
    proxy = HTTPFaultProxy(options["endpoint_url"], flavor="s3").start()
    faulty_options = {
        **options,
        "endpoint_url": proxy.url,
        "requests_timeout": CLIENT_TIMEOUT,
        "retry": retry,
    }
    faulty = open_root(f"gs://{bucket}/root", faulty_options)
    assert getattr(faulty, "client", None) == "obstore"
    return FaultyBackend("gcs-obstore", Injector(proxy), faulty, clean, [proxy])


def _redis(request: pytest.FixtureRequest, retry: dict[str, Any]) -> FaultyBackend:
    redis_url = request.getfixturevalue("redis_url")
    name = f"t-{uuid.uuid4().hex[:12]}"
    clean = open_root(f"{redis_url}/0/{name}")
    proxy = TCPFaultProxy(redis_url).start()
    faulty = open_root(
        f"{proxy.url}/0/{name}",
        {
            "socket_timeout": CLIENT_TIMEOUT,
            "socket_connect_timeout": CLIENT_TIMEOUT,
            "retry": retry,
        },
    )
    return FaultyBackend("redis", Injector(proxy), faulty, clean, [proxy])


def make_faulty_backend(
    request: pytest.FixtureRequest, name: str, tmp_path: Path, retry: dict[str, Any] | None = None
) -> FaultyBackend:
    """A fresh, empty memory location on backend ``name`` with a fault injector."""
    policy = dict(RETRY if retry is None else retry)
    if name == "s3":
        return _s3(request, policy)
    if name == "gcs":
        return _gcs(request, policy)
    if name == "gcs-obstore":
        return _gcs_obstore(request, policy)
    if name == "redis":
        return _redis(request, policy)
    if name == "local":
        clean = open_root(str(tmp_path / f"t-{uuid.uuid4().hex[:12]}"))
    elif name == "memory":
        clean = open_root(f"memory://t-{uuid.uuid4().hex[:12]}")
    else:
        raise AssertionError(name)
    wrapper = FaultyRoot(clean)
    return FaultyBackend(name, Injector(wrapper), wrapper, clean)


# -- what is stored ------------------------------------------------------------------------


@dataclass
class Stored:
    """The raw content of a memory: log records, MEMORY.md and the problems found."""

    records: list[dict[str, Any]]
    memory_md: str
    torn_lines: int
    files: dict[str, bytes]

    @property
    def ids(self) -> list[str]:
        """Ids of the entry records (forget records left out), in file order."""
        return [r["id"] for r in self.records if "op" not in r and "id" in r]


def read_stored(root: StorageRoot) -> Stored:
    """Everything under ``root``, parsed strictly (a line that is not JSON is torn)."""
    files = {info.path: root.read_bytes(info.path) for info in root.list("", recursive=True)}
    records: list[dict[str, Any]] = []
    torn = 0
    for path in sorted(p for p in files if p.startswith("logs/")):
        for line in files[path].split(b"\n"):
            if not line.strip():
                continue
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                torn += 1
    md = files.get("MEMORY.md", b"").decode("utf-8")
    return Stored(records, md, torn, files)


def bullet_count(memory_md: str, text: str) -> int:
    """How many MEMORY.md bullets hold exactly ``text`` (plain text without escapes)."""
    return sum(
        1
        for line in memory_md.splitlines()
        if line.startswith("- ") and line[2:].split(" <!--", 1)[0] == text
    )
