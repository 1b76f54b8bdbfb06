"""The MCP server and the LangGraph store: start-up, tool round trips, put/get/search.

    python benchmarks/bench_integrations.py [--quick | --smoke] [--items 1000]

MCP: ``fsmemory --store DIR mcp`` is started as a subprocess and driven by the SDK's
stdio client; "start to first tool list" runs from spawning the process to the answer
of ``tools/list`` (Python start-up and the SDK import included), and a
``remember`` + ``recall`` pair is timed over the open session.

LangGraph: :class:`~fsmemory.integrations.langgraph.FsspecStore` on a local folder and
on ``memory://``, beside LangGraph's ``InMemoryStore`` in the same run. ``put`` writes
N distinct items into one namespace, ``get`` reads each, ``search`` lists the namespace
of N items (warm: the cache holds every item; limit 10), with a filter and with a
keyword query. Each operation is timed on its own; the table shows medians. The last
row is the part of a search spent in the storage root's listing of the folder (a stat
per file on local folders), which is what tells a changed item from a cached one.
Nothing is asserted: machines here are noisy, compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from fsmemory.integrations.langgraph import FsspecStore


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# -- MCP -----------------------------------------------------------------------------------
def _server(store: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    exe = shutil.which("fsmemory", path=os.path.dirname(sys.executable))
    prefix = [exe] if exe else [sys.executable, "-m", "fsmemory.cli"]
    return StdioServerParameters(
        command=prefix[0], args=[*prefix[1:], "--store", str(store), "mcp"]
    )


async def _mcp_once(store: Path, calls: int) -> tuple[float, list[float]]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    start = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(_server(store), errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            first_list = time.perf_counter() - start
            pairs = []
            for i in range(calls):
                t0 = time.perf_counter()
                await session.call_tool("remember", {"content": f"fact number {i}"})
                await session.call_tool("recall", {"query": f"number {i}", "limit": 3})
                pairs.append(time.perf_counter() - t0)
    return first_list, pairs


def bench_mcp(tmp: Path, starts: int, calls: int) -> list[tuple[str, str, str]]:
    """Rows (what, measured, target) for the MCP server."""
    firsts: list[float] = []
    pairs: list[float] = []
    for i in range(starts):
        first, round_trips = asyncio.run(_mcp_once(tmp / f"mcp-{i}", calls if i == 0 else 0))
        firsts.append(first)
        pairs.extend(round_trips)
    return [
        (
            f"MCP start to first tool list (median of {starts})",
            f"{_median_ms(firsts):.0f} ms (min {min(firsts) * 1000:.0f})",
            "<= 1000 ms",
        ),
        (
            f"MCP remember + recall over stdio (median of {calls})",
            f"{_median_ms(pairs):.1f} ms",
            "-",
        ),
    ]


# -- LangGraph -----------------------------------------------------------------------------
def bench_store(store: BaseStore, items: int, searches: int) -> dict[str, float]:
    """Median milliseconds per operation."""
    ns = ("bench", "user-1")
    puts = [
        _timed(lambda i=i: store.put(ns, f"item-{i}", {"n": i % 10, "text": f"note {i} about tea"}))
        for i in range(items)
    ]
    gets = [_timed(lambda i=i: store.get(ns, f"item-{i}")) for i in range(0, items, 10)]
    store.search(ns, limit=10)  # warm
    plain = [_timed(lambda: store.search(ns, limit=10)) for _ in range(searches)]
    filtered = [
        _timed(lambda: store.search(ns, filter={"n": {"$gte": 7}}, limit=10))
        for _ in range(searches)
    ]
    query = [_timed(lambda: store.search(ns, query="tea 42", limit=10)) for _ in range(searches)]
    listing = float("nan")
    if isinstance(store, FsspecStore):  # the part of a search spent listing the folder
        folder = "/".join(ns)
        listing = _median_ms(
            [_timed(lambda: store.root.list(folder, recursive=True)) for _ in range(searches)]
        )
    return {
        "put": _median_ms(puts),
        "get": _median_ms(gets),
        "search": _median_ms(plain),
        "search(filter)": _median_ms(filtered),
        "search(query)": _median_ms(query),
        "  of which: folder listing": listing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to test the code")
    parser.add_argument("--items", type=int, default=1000, help="items in the namespace")
    args = parser.parse_args()
    starts, calls, searches = (3, 20, 20) if args.quick else (7, 50, 50)
    if args.smoke:
        starts, calls, searches, args.items = 1, 2, 2, 20

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rows = bench_mcp(tmp, starts, calls)
        stores: dict[str, BaseStore] = {
            "FsspecStore local": FsspecStore(tmp / "lg"),
            "FsspecStore memory://": FsspecStore(f"memory://bench-{uuid.uuid4().hex}"),
            "InMemoryStore": InMemoryStore(),
        }
        results = {name: bench_store(s, args.items, searches) for name, s in stores.items()}

    print("## Integrations: MCP server and LangGraph store\n")
    print("| what | measured | target |")
    print("|---|---|---|")
    for what, measured, target in rows:
        print(f"| {what} | {measured} | {target} |")
    targets = {"put": "<= 1 ms (local)", "search": "<= 10 ms warm (local)"}
    print(f"\n{args.items} items in one namespace, median ms per operation:\n")
    names = list(results)
    print("| operation | " + " | ".join(names) + " | local / InMemoryStore | target |")
    print("|---|" + "---|" * (len(names) + 2))
    for op in results[names[0]]:
        cells = " | ".join(
            "-" if results[n][op] != results[n][op] else f"{results[n][op]:.3f}" for n in names
        )
        reference = results["InMemoryStore"][op]
        ratio = "-" if reference != reference else f"{results[names[0]][op] / reference:.0f}x"
        print(f"| {op} | {cells} | {ratio} | {targets.get(op, '-')} |")


if __name__ == "__main__":
    main()
