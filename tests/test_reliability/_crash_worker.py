"""Child process of the crash tests: write in a loop until killed.

Usage: ``python _crash_worker.py '<json spec>'`` with ``mode`` (``remember``, ``store`` or
``snapshot``), ``url``, ``options``, ``tag`` and, for ``snapshot``, ``scratch``.

Prints ``ready`` once set up, then one line per write that *returned* (its id or key),
flushed at once: the parent treats exactly those as acknowledged.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any


def _writer(spec: dict[str, Any]) -> Callable[[int], str]:
    mode = spec["mode"]
    url = spec["url"]
    options: dict[str, Any] = spec.get("options") or {}
    tag = spec["tag"]
    if mode == "remember":
        from fsmemory import KnowledgeMemory

        km = KnowledgeMemory(url, storage_options=options)

        def remember(i: int) -> str:
            return km.remember(f"{tag} entry {i}", category="crash", persistent=i % 4 == 0)

        return remember
    if mode == "store":
        from fsmemory.store import SyncKnowledgeStore

        store = SyncKnowledgeStore(url, watch="none", **options)

        def save(i: int) -> str:
            key = f"{tag}-{i}"
            store.append("/events.jsonl", json.dumps({"key": key}) + "\n")
            store.write(f"/notes/{key}.md", f"note {key}\n" * (1 + i % 7))
            return key

        return save
    if mode == "snapshot":
        from fsmemory import KnowledgeMemory
        from fsmemory.snapshot import FsspecBackend

        km = KnowledgeMemory(spec["scratch"], backend=FsspecBackend(url, storage_options=options))

        def saved(i: int) -> str:
            return km.remember(f"{tag} entry {i}", persistent=i % 3 == 0)

        return saved
    raise SystemExit(f"unknown mode {mode!r}")


def main() -> None:
    """Set up, say ``ready``, then write and acknowledge until killed."""
    os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    spec = json.loads(sys.argv[1])
    write = _writer(spec)
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for i in range(10**9):
        key = write(i)
        out.write(key + "\n")
        out.flush()


if __name__ == "__main__":
    main()
