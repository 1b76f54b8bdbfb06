"""Quickstart: KnowledgeMemory on a temporary local folder.

Run: python examples/quickstart.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fsmemory import KnowledgeMemory


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        km = KnowledgeMemory(Path(tmp) / "agent_memory", max_log_days=30)
        km.remember("Preferred language: Python", category="preferences", persistent=True)
        km.remember("Dark mode: enabled", category="preferences", persistent=True)
        km.remember("Working on Project Atlas today", category="context")
        note = km.remember("Temporary promo code: SPRING", category="context", ttl_days=7)

        print(km.build_context())
        print("\nrecall('dark mode'):", [e.content for e in km.recall("dark mode")])
        print("persistent facts:", km.get_persistent_facts())

        km.forget(note)
        assert km.get(note) is None

        # A second instance (another process, a later session) sees the same memory.
        again = KnowledgeMemory(Path(tmp) / "agent_memory")
        assert again.get_persistent_facts()["preferences"] == [
            "Preferred language: Python",
            "Dark mode: enabled",
        ]
        print("\nfiles:", sorted(p.name for p in (Path(tmp) / "agent_memory").rglob("*")))


if __name__ == "__main__":
    main()
