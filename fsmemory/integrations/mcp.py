"""A Model Context Protocol server for a memory on any fsspec URL (``fsmemory mcp``).

Run it as a command an MCP client starts (Claude Desktop, Claude Code, Cursor, ...)::

    fsmemory --store ./agent_memory mcp
    fsmemory mcp --store s3://bucket/users/42 -o anon=false --defang --dedupe

It speaks MCP over stdio and offers these tools:

* ``remember(content, category="general", persistent=false, importance=0.5,
  ttl_days=null)`` -- save a fact; returns its id.
* ``recall(query="", limit=5, category=null)`` -- ranked search; each hit shows its id.
* ``forget(id)`` -- remove one memory.
* ``context()`` -- the prompt block of :meth:`KnowledgeMemory.build_context`.
* ``knowledge(action, path, content=null)`` -- only with ``--knowledge``: the path store
  of :class:`fsmemory.agent.KnowledgeTool` on the same URL, where MEMORY.md and the logs
  are read-only.

Bad arguments (a wrong type, an out-of-range number, an empty or oversized content, a
category that could forge markdown) come back as a tool error with a message the model
can act on; the server keeps running. ``--defang`` runs the
:mod:`fsmemory.sanitizers` pre-save hooks (lone surrogates dropped, prompt delimiters
neutralised) and ``--dedupe`` rejects near-duplicates, as the ``pre_save`` and
``dedupe`` options of :class:`~fsmemory.memory.KnowledgeMemory` do.

From Python, :func:`create_server` returns the SDK's ``MCPServer`` to run or embed.
Needs ``pip install 'fsmemory[mcp]'``; importing this module does not import the SDK.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fsmemory.errors import MissingDependencyError
from fsmemory.memory import KnowledgeMemory
from fsmemory.sanitizers import PreSaveHook, defang_delimiters, strip_surrogates

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["add_mcp_parser", "create_server", "memory_from_options", "run_mcp_command"]

_DESCRIPTION = """\
Serve the memory at --store to an MCP client over stdio (tools: remember, recall, forget,
context; knowledge with --knowledge). Configure the client to start this command, e.g.
  {"command": "fsmemory", "args": ["--store", "/home/me/agent_memory", "mcp"]}
--store and -o may be given before or after 'mcp'.
"""


def _require_sdk() -> None:
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("mcp", "mcp") from exc


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fsmemory")
    except PackageNotFoundError:
        return ""


def memory_from_options(
    url: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    defang: bool = False,
    dedupe: bool = False,
    dedupe_threshold: float = 0.9,
    max_log_days: int | None = None,
) -> KnowledgeMemory:
    """The :class:`KnowledgeMemory` the server uses, built from its command-line flags.

    Args:
        url: the memory root (a path or any fsspec URL).
        storage_options: fsspec options (credentials, endpoint, ...).
        defang: run :func:`~fsmemory.sanitizers.strip_surrogates` and
            :func:`~fsmemory.sanitizers.defang_delimiters` on content before it is saved.
        dedupe: reject exact and near duplicates of live memories.
        dedupe_threshold: similarity in [0, 1] at which a text counts as a duplicate.
        max_log_days: the retention stored when the memory has none yet (see
            :class:`KnowledgeMemory`); None: the memory's own, or 30 days. The
            ``context`` tool and every read never delete anything.

    Raises:
        InvalidInputError: an option is out of range.
    """
    hooks: list[PreSaveHook] | None = [strip_surrogates, defang_delimiters] if defang else None
    return KnowledgeMemory(
        url,
        storage_options=storage_options,
        pre_save=hooks,
        dedupe=dedupe,
        dedupe_threshold=dedupe_threshold,
        max_log_days=max_log_days,
    )


def create_server(
    memory: KnowledgeMemory, *, knowledge: bool = False, name: str = "fsmemory"
) -> MCPServer:
    """An MCP server offering ``remember``, ``recall``, ``forget`` and ``context`` on
    ``memory`` (and ``knowledge`` on the same root when ``knowledge`` is true).

    Run it with ``server.run("stdio")`` (or any transport the SDK offers).

    Raises:
        MissingDependencyError: the ``mcp`` SDK is not installed.
    """
    _require_sdk()
    from fsmemory.integrations._mcp_tools import MemoryTools, build_server
    from fsmemory.store import FsspecKnowledgeStore

    store = FsspecKnowledgeStore(memory.root, watch="none") if knowledge else None
    return build_server(MemoryTools(memory, store), name=name, version=_version())


def add_mcp_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``mcp`` subcommand and its flags on an argparse ``subparsers`` object
    and return its parser.

    The command line adds ``--store``/``-o`` and a handler that calls
    :func:`run_mcp_command`. Registering does not import the SDK.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp",
        help="serve the memory to an MCP client (Claude Desktop, Claude Code, ...) over stdio",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--defang",
        action="store_true",
        help="strip lone surrogates and neutralise prompt delimiters before saving",
    )
    parser.add_argument(
        "--dedupe", action="store_true", help="reject exact and near duplicates of memories"
    )
    parser.add_argument(
        "--dedupe-threshold",
        type=float,
        default=0.9,
        metavar="X",
        help="similarity (0-1) at which --dedupe rejects a text (default 0.9)",
    )
    parser.add_argument(
        "--max-log-days",
        type=int,
        default=None,
        metavar="DAYS",
        help="retention to store when the memory has none yet (default: the memory's own, "
        "else 30); reading never deletes",
    )
    parser.add_argument(
        "--knowledge",
        action="store_true",
        help="also offer the 'knowledge' tool: plain files on the same root",
    )
    parser.add_argument("--name", default="fsmemory", help="server name shown to the client")
    return parser


def run_mcp_command(
    args: argparse.Namespace, url: str, storage_options: Mapping[str, Any] | None = None
) -> int:
    """Serve the memory at ``url`` over stdio until the client closes stdin.

    Args:
        args: the parsed flags of :func:`add_mcp_parser`.
        url: the memory root.
        storage_options: fsspec options for ``url``.

    Returns:
        The exit status (0).

    Raises:
        MissingDependencyError: the ``mcp`` SDK is not installed.
        InvalidInputError: a bad option.
    """
    _require_sdk()
    memory = memory_from_options(
        url,
        storage_options,
        defang=args.defang,
        dedupe=args.dedupe,
        dedupe_threshold=args.dedupe_threshold,
        max_log_days=getattr(args, "max_log_days", None),
    )
    server = create_server(memory, knowledge=args.knowledge, name=args.name)
    server.run("stdio")
    return 0
