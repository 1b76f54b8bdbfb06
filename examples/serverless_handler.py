"""A Lambda-style handler that keeps each user's memory as a snapshot on blob storage.

On a cold start the function restores the user's memory from one URL into local scratch
space, remembers what the event says, answers with the built context, and the snapshot
is saved incrementally after each change. Many invocations for the same user may run at
once: each save is a small delta under a unique name, and the next restore merges them.
An invocation uploads its deltas only; a save folds them into a new base once
``compact_after`` deltas wait or they pass a quarter of the base, and that base carries
the search index's cache, so a restored memory's first recall parses only what came
after it.

Build ``KnowledgeMemory`` inside the handler, on the same scratch path for the same
user. In a warm container the second construction revalidates the folder it restored
before (a listing and a head read) instead of downloading the snapshot again, and
anything written to the folder after the last save is kept and saved.

In production the snapshot URL would be ``s3://my-bucket/users/{user_id}.snapshot``:
credentials come from the function's role (or ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY``), a custom endpoint (MinIO, R2, moto) from
``AWS_ENDPOINT_URL``, or pass ``storage_options``. Run locally against memory:// or a
folder:

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
# Lambda's /tmp in production; a fresh folder per run here
SCRATCH = os.environ.get("SCRATCH_DIR") or tempfile.mkdtemp(prefix="fsmemory-scratch-")
# e.g. {"key": ..., "secret": ..., "client_kwargs": {"endpoint_url": ...}}; empty: the
# AWS_* environment variables and the function's role
STORAGE_OPTIONS: dict[str, Any] = {}


def memory_for(user_id: str) -> KnowledgeMemory:
    """The user's memory: restored on a cold start, revalidated in a warm container."""
    return KnowledgeMemory(
        os.path.join(SCRATCH, user_id),
        backend=FsspecBackend(
            f"{SNAPSHOT_ROOT}/{user_id}.snapshot", storage_options=STORAGE_OPTIONS
        ),
    )


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    """Remember the facts in ``event`` for ``event["user_id"]`` and return the context
    (and, with ``event["query"]``, what recall finds)."""
    memory = memory_for(str(event["user_id"]))
    ids = [
        memory.remember(
            fact["content"],
            category=fact.get("category", "general"),
            persistent=bool(fact.get("persistent", False)),
        )
        for fact in event.get("remember", [])
    ]
    found = [e.content for e in memory.recall(event["query"])] if event.get("query") else []
    memory.flush()  # saves hand edits too; a no-op when remember() already saved
    return {"stored": ids, "context": memory.build_context(), "recall": found}


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
    # A later invocation (warm here; on another machine it would restore cold) sees
    # everything.
    result = handler(
        {
            "user_id": "42",
            "remember": [
                {"content": "Timezone is PST", "category": "preferences", "persistent": True},
            ],
            "query": "invoice",
        }
    )
    print(result["context"])
    assert "Prefers dark mode" in result["context"] and "Timezone is PST" in result["context"]
    assert result["recall"] == ["Asked about invoice #881"]


if __name__ == "__main__":
    main()
