"""Object-store cold open + first recall at 10k entries, fresh processes, against the
raw floor of the same requests.

    python benchmarks/bench_s3_cold.py [--service s3|azure|gcs|all] [--rounds N]
                                       [--size N] [--base PATH]

For each service (S3 on moto, Azure Blob on Azurite, GCS on fake-gcs-server behind the
XML relay of ``tests/test_fs/gcs_fake.py``, which both GCS routes go through, so both
pay its hop): one memory of ``--size`` entries
over 20 daily logs (its index cache file written by a first open). Then ``--rounds``
rounds, each running every system once, in a fresh process and in alternating order:

* ``fsmemory (obstore)``: ``KnowledgeMemory(url, storage_options)`` + ``recall`` (the
  default route);
* ``fsmemory (s3fs forced)`` / ``(adlfs forced)`` / ``(gcsfs forced)``: the same
  through the fallback library (what the fallback costs);
* ``fsmemory at --base``: the same code path of another checkout (e.g. the commit
  before a change, through its own ``benchmarks/peers/cold_worker.py``), default route;
* ``floor: obstore list + cache GET``: obstore directly (import included), the listing
  of the memory and the GET of its index cache file sent together (two threads) -- the
  requests a cached cold open cannot do without; for a memory too small to keep an
  index cache (``--size`` in the hundreds), the listing and a GET of every file
  (8 threads).

Times exclude ``import fsmemory`` (as ``benchmarks/run.py`` does) but include importing
the client library. Before each round the bytecode of every fsmemory checkout measured is
brought up to date (``compileall``), as installing the package does: with
``PYTHONDONTWRITEBYTECODE`` set, a module edited since its ``.pyc`` was written is
compiled again by every fresh process, inside the timed window (``fsmemory/fs/gcs.py``
and ``_obstore.py`` take ~10 ms of CPU to compile, a third of the GCS floor), a cost no
installed copy pays. Prints one Markdown table per service: medians, p90 and ratios
to the floor.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

RESULT = "RESULT "

#: the floor: obstore's store built, the listing and the cache GET sent together
FLOOR = """
import json, sys, threading, time
params = json.loads(sys.argv[1])
t0 = time.perf_counter()
import obstore
if params["service"] == "s3":
    from obstore.store import S3Store
    store = S3Store(params["bucket"], endpoint=params["endpoint"], access_key_id="testing",
                    secret_access_key="testing", region="us-east-1",
                    client_options={"allow_http": True}, retry_config={"max_retries": 0})
elif params["service"] == "gcs":
    from obstore.store import GCSStore
    store = GCSStore(params["bucket"], config={"base_url": params["endpoint"],
                     "service_account_key": params["key"], "skip_signature": True},
                     client_options={"allow_http": True}, retry_config={"max_retries": 0})
else:
    from obstore.store import AzureStore
    store = AzureStore(params["bucket"], account_name=params["account"],
                       account_key=params["key"], endpoint=params["endpoint"],
                       client_options={"allow_http": True}, retry_config={"max_retries": 0})
box = {}
def get():
    try:
        cache = params["prefix"] + "/.fsmemory-cache.index"
        box["cache"] = bytes(obstore.get(store, cache).bytes())
    except FileNotFoundError:  # a memory too small to keep an index cache
        box["cache"] = None
thread = threading.Thread(target=get)
thread.start()
pages = obstore.list(store, params["prefix"] + "/", chunk_size=1000)
listing = [o for batch in pages for o in batch]
thread.join()
if box["cache"] is None:  # then every file is read
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as pool:
        box["cache"] = list(pool.map(lambda o: bytes(obstore.get(store, o["path"]).bytes()),
                                     listing))
t1 = time.perf_counter()
assert listing and box["cache"]
print("RESULT " + json.dumps({"first": (t1 - t0) * 1000, "files": len(listing)}))
"""


def _compile_bytecode(checkout: Path) -> None:
    """Write the ``.pyc`` of every module of ``checkout``'s fsmemory package whose
    bytecode is missing or older than its source (see the module docs)."""
    import compileall

    compileall.compile_dir(checkout / "fsmemory", quiet=1)


def _run(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT):
            result: dict[str, Any] = json.loads(line[len(RESULT) :])
            return result
    raise RuntimeError(f"{argv[:3]} failed: {done.stderr[-2000:]}")


@contextlib.contextmanager
def _s3() -> Iterator[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """``(url, storage options, fallback name, floor parameters)`` on a fresh moto."""
    from fsmemory.fs.s3 import S3Root
    from fsmemory.testing.cloud_services import start_moto

    moto = start_moto()
    try:
        options = moto.s3_storage_options()
        bucket = "bench-cold"
        S3Root.from_url(f"s3://{bucket}", options).fs.mkdir(bucket)
        endpoint = options["client_kwargs"]["endpoint_url"]
        floor = {"service": "s3", "bucket": bucket, "endpoint": endpoint, "prefix": "mem"}
        yield f"s3://{bucket}/mem", options, "s3fs", floor
    finally:
        moto.stop()


@contextlib.contextmanager
def _azure() -> Iterator[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """The same on a fresh Azurite."""
    from fsmemory.testing.cloud_services import AZURITE_ACCOUNT, AZURITE_KEY, start_azurite

    azurite = start_azurite()
    try:
        container = "bench-cold"
        azurite.create_container(container)
        floor = {
            "service": "azure",
            "bucket": container,
            "account": AZURITE_ACCOUNT,
            "key": AZURITE_KEY,
            "endpoint": azurite.blob_endpoint,
            "prefix": "mem",
        }
        yield f"az://{container}/mem", azurite.azure_storage_options(), "adlfs", floor
    finally:
        azurite.stop()


@contextlib.contextmanager
def _gcs() -> Iterator[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """The same on a fresh fake-gcs-server behind the XML relay (obstore speaks GCS's
    XML API, fake-gcs-server only the JSON API; the relay passes JSON through, so gcsfs
    takes the same hop), anonymous."""
    from fsmemory.fs.gcs import _ANONYMOUS_KEY, GCSRoot
    from fsmemory.testing.cloud_services import start_fake_gcs
    from tests.test_fs.gcs_fake import GCSXmlRelay

    server = start_fake_gcs()
    relay = GCSXmlRelay(server.url)
    try:
        bucket = "bench-cold"
        GCSRoot.from_url(f"gs://{bucket}", server.gcs_storage_options()).fs.mkdir(bucket)
        options = {"endpoint_url": relay.url, "token": "anon", "project": "fsmemory-test"}
        floor = {
            "service": "gcs",
            "bucket": bucket,
            "endpoint": relay.url,
            "key": _ANONYMOUS_KEY,
            "prefix": "mem",
        }
        yield f"gs://{bucket}/mem", options, "gcsfs", floor
    finally:
        relay.stop()
        server.stop()


SERVICES: dict[str, Callable[[], Any]] = {"s3": _s3, "azure": _azure, "gcs": _gcs}
TITLES = {"s3": "S3 (moto)", "azure": "Azure Blob (Azurite)", "gcs": "GCS (fake-gcs-server)"}


def _measure(service: str, args: argparse.Namespace) -> dict[str, list[float]]:
    py = sys.executable
    cold = str(HERE / "peers" / "cold_worker.py")
    with SERVICES[service]() as (url, options, fallback, floor):
        gen = {"size": args.size, "now": time.time(), "url": url, "storage_options": options}
        _run([py, str(HERE / "peers" / "fsmemory_worker.py"), "cold-gen", json.dumps(gen)])
        params = {"system": "fsmemory", "url": url, "op": "recall"}

        def worker(client: str, script: str = cold) -> list[str]:
            opts = {**options, "client": client}
            return [py, script, "cold", json.dumps({**params, "storage_options": opts})]

        systems = {
            "fsmemory (obstore)": worker("obstore"),
            f"fsmemory ({fallback} forced)": worker(fallback),
            "floor: obstore list + cache GET": [py, "-c", FLOOR, json.dumps(floor)],
        }
        if args.base is not None:
            base_worker = str(args.base / "benchmarks" / "peers" / "cold_worker.py")
            systems[f"fsmemory at {args.base.name} (before)"] = [
                py,
                base_worker,
                "cold",
                json.dumps({**params, "storage_options": options}),
            ]
        _run(systems["fsmemory (obstore)"])  # writes the index cache file
        times: dict[str, list[float]] = {name: [] for name in systems}
        env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEMORY_")}
        names = list(systems)
        checkouts = [ROOT] if args.base is None else [ROOT, args.base]
        for i in range(args.rounds):
            for checkout in checkouts:  # a source edited meanwhile is compiled now
                _compile_bytecode(checkout)
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                times[name].append(_run(systems[name], env)["first"])
    return times


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> None:
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--service", choices=[*SERVICES, "all"], default="all")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--base", type=Path, default=None)
    args = parser.parse_args()
    services = list(SERVICES) if args.service == "all" else [args.service]
    for service in services:
        times = _measure(service, args)
        floor = statistics.median(times["floor: obstore list + cache GET"])
        print(
            f"\n{TITLES[service]}: cold open + first recall at {args.size:,} entries "
            f"({args.rounds} rounds, fresh processes)\n"
        )
        print("| system | median ms | p90 ms | min ms | / floor |")
        print("|---|---|---|---|---|")
        for name, values in times.items():
            med = statistics.median(values)
            print(
                f"| {name} | {med:.1f} | {_p90(values):.1f} | {min(values):.1f} "
                f"| {med / floor:.2f}x |"
            )


if __name__ == "__main__":
    main()
