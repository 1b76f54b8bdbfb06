"""A Model Context Protocol server for a memory on any fsspec URL (``fsmemory mcp``).

Run it as a command an MCP client starts (Claude Desktop, Claude Code, Cursor, ...)::

    fsmemory --store ./agent_memory mcp
    fsmemory mcp --store s3://bucket/users/42 -o anon=false --defang --dedupe

It speaks MCP over stdio and offers these tools:

* ``remember(content, category="general", persistent=false, importance=0.5,
  ttl_days=null)`` -- save a fact; returns its id.
* ``recall(query="", limit=5, category=null)`` -- ranked search; each hit shows its id.
* ``forget(id)`` -- remove one memory.
* ``context()`` -- the prompt block of :meth:`KnowledgeMemory.build_context`, at most
  ``--max-context-chars`` characters (default 20,000; see :func:`bound_context`).
* ``knowledge(action, path, content=null)`` -- only with ``--knowledge``: the path store
  of :class:`fsmemory.agent.KnowledgeTool` on the same URL, where MEMORY.md and the logs
  are read-only.

Arguments are validated strictly, whatever the SDK would coerce: a JSON type other than
the declared one (``"persistent": "yes"``, ``"limit": "5"``) and an argument the tool
does not declare are refused. Bad arguments (those, an out-of-range number, an empty or
oversized content, a category that could forge markdown) come back as a tool error with
a message the model can act on; the server keeps running. ``--defang`` runs the
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

__all__ = [
    "DEFAULT_MAX_CONTEXT_CHARS",
    "add_mcp_parser",
    "bound_context",
    "create_server",
    "memory_from_options",
    "run_mcp_command",
]

#: The default bound of the ``context`` tool and of ``fsmemory context`` (characters):
#: about 5,000 tokens, a small part of any model's window.
DEFAULT_MAX_CONTEXT_CHARS = 20_000
#: The smallest bound accepted (room for the truncation marker and some text); 0 means
#: no bound.
MIN_MAX_CONTEXT_CHARS = 200

_DESCRIPTION = """\
Serve the memory at --store to an MCP client over stdio (tools: remember, recall, forget,
context; knowledge with --knowledge). Configure the client to start this command, e.g.
  {"command": "fsmemory", "args": ["--store", "/home/me/agent_memory", "mcp"]}
--store and -o may be given before or after 'mcp'.
"""


def context_chars(text: str) -> int:
    """An argparse ``type=`` for ``--max-context-chars``: 0 (no bound) or at least
    :data:`MIN_MAX_CONTEXT_CHARS`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value != 0 and value < MIN_MAX_CONTEXT_CHARS:
        raise argparse.ArgumentTypeError(
            f"must be 0 (no bound) or {MIN_MAX_CONTEXT_CHARS} or more, got {value}"
        )
    return value


def bound_context(text: str, max_chars: int | None = DEFAULT_MAX_CONTEXT_CHARS) -> str:
    """``text`` (a :meth:`~fsmemory.memory.KnowledgeMemory.build_context` block) cut to
    at most ``max_chars`` characters, with a marker line saying so.

    A text that fits is returned as it is. Otherwise every line longer than an eighth of
    the room is shortened first, ending in ``[... N more characters]`` (so one huge note
    does not push every other memory out), then whole lines are left off the end, and a
    last line ``[context truncated: T characters, at most M shown; ...]`` follows.

    Args:
        text: the context block.
        max_chars: the bound; None or 0: no bound. Otherwise at least
            :data:`MIN_MAX_CONTEXT_CHARS`.

    Raises:
        ValueError: ``max_chars`` is negative or too small for the marker.
    """
    if max_chars is not None and (max_chars < 0 or 0 < max_chars < MIN_MAX_CONTEXT_CHARS):
        raise ValueError(
            f"max_chars must be 0 or at least {MIN_MAX_CONTEXT_CHARS}, got {max_chars}"
        )
    if not max_chars or len(text) <= max_chars:
        return text
    marker = (
        f"[context truncated: {len(text):,} characters, at most {max_chars:,} shown; "
        "recall finds a memory by its words]"
    )
    room = max_chars - len(marker) - 1
    cap = max(80, room // 8)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if len(line) > cap:
            keep = cap - len(f" [... {len(line):,} more characters]")
            lines[i] = f"{line[:keep]} [... {len(line) - keep:,} more characters]"
    short = "\n".join(lines)
    if len(short) > room:
        cut = short.rfind("\n", 0, room + 1)
        short = short[: cut if cut > room // 2 else room]
    return f"{short}\n{marker}"


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
    memory: KnowledgeMemory,
    *,
    knowledge: bool = False,
    name: str = "fsmemory",
    max_context_chars: int | None = DEFAULT_MAX_CONTEXT_CHARS,
) -> MCPServer:
    """An MCP server offering ``remember``, ``recall``, ``forget`` and ``context`` on
    ``memory`` (and ``knowledge`` on the same root when ``knowledge`` is true).

    Run it with ``server.run("stdio")`` (or any transport the SDK offers).
    ``max_context_chars`` bounds what the ``context`` tool returns (:func:`bound_context`;
    None or 0: no bound).

    Raises:
        MissingDependencyError: the ``mcp`` SDK is not installed.
    """
    _require_sdk()
    from fsmemory.integrations._mcp_tools import MemoryTools, build_server
    from fsmemory.store import FsspecKnowledgeStore

    store = FsspecKnowledgeStore(memory.root, watch="none") if knowledge else None
    if max_context_chars is not None and (
        max_context_chars < 0 or 0 < max_context_chars < MIN_MAX_CONTEXT_CHARS
    ):  # a bad bound fails here, not at the first call of the tool
        raise ValueError(
            f"max_context_chars must be 0 or at least {MIN_MAX_CONTEXT_CHARS}, "
            f"got {max_context_chars}"
        )
    tools = MemoryTools(memory, store, max_context_chars=max_context_chars)
    return build_server(tools, name=name, version=_version())


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
    parser.add_argument(
        "--max-context-chars",
        type=context_chars,
        default=DEFAULT_MAX_CONTEXT_CHARS,
        metavar="N",
        help=f"the 'context' tool returns at most N characters, long notes shortened "
        f"and a marker line added (default {DEFAULT_MAX_CONTEXT_CHARS:,}; 0: no bound)",
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
    server = create_server(
        memory,
        knowledge=args.knowledge,
        name=args.name,
        max_context_chars=getattr(args, "max_context_chars", DEFAULT_MAX_CONTEXT_CHARS),
    )
    server.run("stdio")
    return 0
