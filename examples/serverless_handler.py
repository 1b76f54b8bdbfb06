"""A Lambda-style handler that keeps each user's memory as a snapshot on blob storage.

On a cold start the function restores the user's memory from one URL into local scratch
space, remembers what the event says, answers with the built context, and the snapshot
is saved incrementally after each change. Many invocations for the same user may run at
once: each save is a small delta under a unique name, and the next restore merges them.

In production the snapshot URL would be ``s3://my-bucket/users/{user_id}.snapshot``
(credentials from the function's role). Run locally against memory:// or a folder:

    python examples/serverless_handler.py                 # memory://
    SNAPSHOT_ROOT=/tmp/snapshots python examples/serverless_handler.py
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from fsmemory import KnowledgeMemory
from fsmemory.snapshot import FsspecBackend

SNAPSHOT_ROOT = os.environ.get("SNAPSHOT_ROOT", "memory://agent-snapshots/users")
SCRATCH = os.environ.get("SCRATCH_DIR", tempfile.gettempdir())


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    """Remember the facts in ``event`` for ``event["user_id"]`` and return the context."""
    user_id = str(event["user_id"])
    memory = KnowledgeMemory(
        os.path.join(SCRATCH, "fsmemory-scratch", user_id),
        backend=FsspecBackend(f"{SNAPSHOT_ROOT}/{user_id}.snapshot"),
    )
    ids = [
        memory.remember(
            fact["content"],
            category=fact.get("category", "general"),
            persistent=bool(fact.get("persistent", False)),
        )
        for fact in event.get("remember", [])
    ]
    return {"stored": ids, "context": memory.build_context()}


def main() -> None:
    handler(
        {
            "user_id": "42",
            "remember": [
                {"content": "Prefers dark mode", "category": "preferences", "persistent": True},
                {"content": "Asked about invoice #881", "category": "context"},
            ],
        }
    )
    # A later (cold) invocation, possibly on another machine, sees everything.
    result = handler(
        {
            "user_id": "42",
            "remember": [
                {"content": "Timezone is PST", "category": "preferences", "persistent": True},
            ],
        }
    )
    print(result["context"])
    assert "Prefers dark mode" in result["context"] and "Timezone is PST" in result["context"]


if __name__ == "__main__":
    main()
