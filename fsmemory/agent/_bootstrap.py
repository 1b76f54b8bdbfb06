"""Seeding a fresh store with SKILL.md files that explain its layout to the model."""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

from fsmemory.errors import ConflictError
from fsmemory.store import KnowledgeStore, VersionedKnowledgeStore

__all__ = ["DefaultBootstrap", "NoBootstrap", "StoreBootstrap", "skill_files"]

logger = logging.getLogger(__name__)


@runtime_checkable
class StoreBootstrap(Protocol):
    """Prepares a store the first time a session uses it."""

    async def bootstrap(self, store: KnowledgeStore, actor_name: str) -> None:
        """Seed ``store`` (must be safe to run again and from concurrent sessions)."""
        ...


class NoBootstrap:
    """Seeds nothing."""

    def __repr__(self) -> str:
        return "NoBootstrap()"

    async def bootstrap(self, store: KnowledgeStore, actor_name: str) -> None:
        """Do nothing."""
        return None


def skill_files(*, mention_tool: bool = True, actor_name: str = "assistant") -> dict[str, str]:
    """The SKILL.md files :class:`DefaultBootstrap` writes, by path."""
    how = (
        "Use the `knowledge` tool (actions: read, write, append, list, delete) to work "
        "with these files."
        if mention_tool
        else "Your host application reads and writes these files for you."
    )
    root = f"""\
# Knowledge store of {actor_name}

This store keeps what should outlive a single conversation, as plain files.

- `/artifacts/` -- documents and results you produce and may need again.
- `/memory/` -- what you know about the user and past conversations.
- `/log/` -- the record of every conversation, one JSON line per event (read-only).

{how} `list` shows a folder's SKILL.md first: read it before changing the folder.
"""
    artifacts = f"""\
# /artifacts

Finished work worth keeping: reports, drafts, plans, tables, code.

- One file per artifact, with a descriptive name such as `q3-report.md`.
- Prefer updating an existing artifact over creating a near copy.
- Write complete files; nothing here is summarized for you later.

{how}
"""
    memory = f"""\
# /memory

What you remember between conversations.

- `working.md` -- the rolling working memory: facts about the user, their goals and
  preferences, open threads. It is shown to you at the start of each conversation and
  may be rewritten after a conversation ends.
- `conversations/` -- one summary per past conversation, named
  `<UTC timestamp>_<stream>.md`, oldest first.

Keep notes short and factual. Remove what turns out to be wrong.
{how}
"""
    log = f"""\
# /log

One file per conversation stream, `<stream>.jsonl`: every event (user messages, your
answers, tool calls and results, summaries) as one JSON object per line, in order.
It is the full record, also of what was compacted out of your context.

These files are append-only: read them, never rewrite them. {how}
"""
    return {
        "/SKILL.md": root,
        "/artifacts/SKILL.md": artifacts,
        "/memory/SKILL.md": memory,
        "/log/SKILL.md": log,
    }


class DefaultBootstrap:
    """Write ``/SKILL.md``, ``/artifacts/SKILL.md``, ``/memory/SKILL.md`` and
    ``/log/SKILL.md`` -- each only when it does not exist yet.

    Every file is written create-only (``write(..., create_only=True)``), so however many
    sessions bootstrap the same store at once, each file is written exactly once and a
    file a person edited is never overwritten. A store without conditional writes
    (a plain :class:`~fsmemory.store.KnowledgeStore`) falls back to check-then-write.

    Args:
        mention_tool: whether the files tell the model to use the ``knowledge`` tool
            (``KnowledgeConfig`` passes its ``expose_tool``).
    """

    def __init__(self, mention_tool: bool = True) -> None:
        self.mention_tool = mention_tool

    def __repr__(self) -> str:
        return f"DefaultBootstrap(mention_tool={self.mention_tool})"

    async def bootstrap(self, store: KnowledgeStore, actor_name: str) -> None:
        """Seed the missing SKILL.md files."""
        files = skill_files(mention_tool=self.mention_tool, actor_name=actor_name)
        versioned = isinstance(store, VersionedKnowledgeStore)
        for path, text in files.items():
            if versioned:
                assert isinstance(store, VersionedKnowledgeStore)
                try:
                    await store.write(path, text, create_only=True)
                except ConflictError:
                    continue  # already there: written by an earlier or concurrent session
            elif not await store.exists(path):
                await store.write(path, text)
