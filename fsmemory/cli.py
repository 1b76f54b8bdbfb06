"""The ``fsmemory`` command.

    fsmemory [--store URL] [-o KEY=VALUE ...] COMMAND [--store URL] [-o KEY=VALUE ...] ...

Commands: ``remember``, ``recall``, ``context``, ``facts``, ``recent``, ``forget``,
``prune``, ``retention``, ``stats``, ``demo``, ``completion``, ``mcp`` and ``export``
(which needs pyarrow). Reading commands never delete anything; ``prune`` deletes the
logs older than the memory's stored retention (``retention`` shows or sets it).
``--store`` (default ``$FSMEMORY_STORE``, else ``./agent_memory``) and ``-o`` are
accepted before or after the command. Every command but ``mcp`` takes ``--json``
(:data:`~fsmemory._cli_common.JSON_HELP` says what it prints). Errors print one line on
stderr and exit with status 1 (2 for usage errors). Reading a local store that does not
exist (or is a file) is an error; only ``remember`` and ``demo`` create one.
``python -m fsmemory`` runs the same command.

The public face of this module is :func:`main`. A new subcommand is one ``add(...)``
call in :func:`build_parser` whose handler takes the parsed namespace;
:func:`~fsmemory._cli_common.store_arguments` gives it the shared ``--store``/``-o``
options and :func:`~fsmemory._cli_common.open_memory` the memory they name.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fsmemory import __version__
from fsmemory._cli_common import (
    JSON_HELP,
    CliError,
    count,
    json_object,
    open_memory,
    print_json,
    storage_options_of,
    store_arguments,
    store_of,
)
from fsmemory.errors import FsMemoryError
from fsmemory.memory.entry import KnowledgeEntry
from fsmemory.memory.markdown import escape_line

if TYPE_CHECKING:
    # Imported where a command opens a memory: ``fsmemory export`` never loads the
    # memory layer (nor the MCP integration, see :func:`main`).
    from fsmemory.memory import KnowledgeMemory

__all__ = ["main"]


def _entry_dict(entry: KnowledgeEntry) -> dict[str, Any]:
    return entry.to_dict()


def _show(args: argparse.Namespace, data: Any, lines: Iterable[str]) -> int:
    """What a command prints: ``data`` as JSON with ``--json``, else each of ``lines``
    (a generator is only run then); the exit status, 0."""
    if args.json:
        print_json(data)
    else:
        for line in lines:
            print(line)
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    """Store one fact and print its id."""
    content = sys.stdin.read().rstrip("\n") if args.content == "-" else args.content
    km = open_memory(args, create=True)
    entry_id = km.remember(
        content,
        category=args.category,
        persistent=args.persistent,
        importance=args.importance,
        ttl_days=args.ttl_days,
        metadata=args.metadata,
    )
    return _show(args, {"id": entry_id}, [entry_id])


def cmd_recall(args: argparse.Namespace) -> int:
    """Search and print matching entries."""
    km = open_memory(args)
    found = km.recall(args.query, limit=args.limit, category=args.category)
    return _show(args, [_entry_dict(e) for e in found], _recall_lines(args.query, found))


def _recall_lines(query: str, found: Sequence[KnowledgeEntry]) -> Iterator[str]:
    if not found:
        yield f"No memories found matching {query!r}."
    for i, entry in enumerate(found, 1):
        yield f"{i}. [{entry.category}] {escape_line(entry.content)}  ({entry.id})"


def cmd_context(args: argparse.Namespace) -> int:
    """Print the prompt block, at most ``--max-context-chars`` characters."""
    from fsmemory.integrations.mcp import bound_context

    text = open_memory(args).build_context()
    shown = bound_context(text, args.max_context_chars)
    data = {
        "context": shown,
        "chars": len(shown),
        "total_chars": len(text),
        "truncated": shown is not text,
    }
    return _show(args, data, [shown])


def cmd_facts(args: argparse.Namespace) -> int:
    """Print MEMORY.md facts by category."""
    facts = open_memory(args).get_persistent_facts()
    return _show(args, facts, _fact_lines(facts))


def _fact_lines(facts: dict[str, list[str]]) -> Iterator[str]:
    for category, items in facts.items():
        yield f"## {category}"
        for item in items:
            yield f"- {escape_line(item)}"


def cmd_recent(args: argparse.Namespace) -> int:
    """Print recent log entries, newest first."""
    recent = open_memory(args).get_recent_entries(days=args.days, limit=args.limit)
    lines = (f"[{r['timestamp']}] ({r['category']}) {escape_line(r['content'])}" for r in recent)
    return _show(args, recent, lines)


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget an entry by id (exit status 1 when no entry has it)."""
    forgotten = open_memory(args).forget(args.id)
    if args.json:
        print_json({"id": args.id, "forgotten": forgotten})
    elif forgotten:
        print(f"forgot {args.id}")
    if not forgotten:
        print(f"fsmemory: error: no entry with id {args.id!r}", file=sys.stderr)
    return 0 if forgotten else 1


def cmd_prune(args: argparse.Namespace) -> int:
    """Delete old daily logs."""
    deleted = open_memory(args).prune_logs(args.max_days)
    return _show(args, {"deleted": deleted}, [f"deleted {deleted} log file(s)"])


def cmd_retention(args: argparse.Namespace) -> int:
    """Show the memory's retention, or store a new one (nothing is deleted now)."""
    km = open_memory(args)
    if args.keep_all and args.days is not None:
        raise CliError("give DAYS or --keep-all, not both")
    if args.keep_all or args.days is not None:
        km.set_retention(None if args.keep_all else args.days)
    days = km.max_log_days
    if days is None:
        text = "logs are kept until an explicit prune --max-days"
    else:
        text = f"logs older than {days} day(s) are pruned"
    return _show(args, {"retention_days": days}, [text])


def cmd_stats(args: argparse.Namespace) -> int:
    """Print counts."""
    stats = open_memory(args).stats()
    return _show(args, stats, (f"{key}: {value}" for key, value in stats.items()))


# The demo's session, (content, category, persistent, importance): these stay in the
# memory; _DEMO_NOTE is remembered and then forgotten, to show forget().
_DEMO_FACTS: tuple[tuple[str, str, bool, float], ...] = (
    ("Preferred language: Python", "preferences", True, 0.9),
    ("Dark mode: enabled", "preferences", True, 0.7),
    ("Works at Acme Corp", "personal", True, 0.8),
    ("Working on Project Atlas today", "context", False, 0.5),
    ("Investigating a timeout in the payment service", "technical", False, 0.6),
)
_DEMO_NOTE = ("Note with a newline\n## and a fake header that cannot escape", "context", False, 0.2)


def _demo_entries_present(km: KnowledgeMemory) -> dict[tuple[str, str, bool], KnowledgeEntry]:
    """The live entries of ``km`` that the demo writes, keyed by (category, content,
    persistent): the oldest of each, whoever wrote it."""
    wanted = {(category, content, persistent) for content, category, persistent, _ in _DEMO_FACTS}
    wanted.add((_DEMO_NOTE[1], _DEMO_NOTE[0], _DEMO_NOTE[2]))
    found: dict[tuple[str, str, bool], KnowledgeEntry] = {}
    for entry in km.entries():
        key = (entry.category, entry.content, entry.persistent)
        if key in wanted:
            found.setdefault(key, entry)
    return found


def cmd_demo(args: argparse.Namespace) -> int:
    """A short scripted session on the store: remember, recall, forget, build context.

    Running it again changes nothing: a fact of the demo that is already live in the
    store (same category, text and persistence, written by the demo or anyone else) is
    not written again, and when every one of them is there nothing is written at all (the
    remember-and-forget of the demo's note included). A note left live by a run that
    stopped before its forget is forgotten. Nothing else in the store is changed.
    """
    from fsmemory.memory.layout import log_name_for

    km = open_memory(args, create=True)
    print(f"fsmemory {__version__} demo on {km.storage_dir}\n")
    present = _demo_entries_present(km)
    moments: list[datetime] = []  # when the demo's entries were written: their logs
    wrote = False
    for content, category, persistent, importance in _DEMO_FACTS:
        kind = "persistent" if persistent else "daily log"
        found = present.get((category, content, persistent))
        if found is not None:
            moments.append(found.created_at)
            print(f"already here [{category}] {escape_line(content)}  ({kind}, id {found.id})")
            continue
        entry_id = km.remember(content, category, persistent, importance=importance)
        moments.append(datetime.now(tz=UTC))
        wrote = True
        print(f"remembered [{category}] {escape_line(content)}  ({kind}, id {entry_id})")
    content, category, persistent, importance = _DEMO_NOTE
    leftover = present.get((category, content, persistent))
    note_id = ""
    if leftover is not None:  # a run that stopped before its forget
        note_id = leftover.id
        print(f"left by an earlier run [{category}] {escape_line(content)}  (id {note_id})")
    elif wrote:
        note_id = km.remember(content, category, persistent, importance=importance)
        print(f"remembered [{category}] {escape_line(content)}  (daily log, id {note_id})")
    print("\nrecall('python preferences'):")
    for i, entry in enumerate(km.recall("python preferences", limit=3), 1):
        print(f"  {i}. [{entry.category}] {escape_line(entry.content)}")
    if note_id:
        km.forget(note_id)
        print(f"\nforgot {note_id}")
    else:
        print("\nevery fact of the demo was already here: nothing written this time")
    print("\nbuild_context():\n")
    print(km.build_context())
    stats = km.stats()
    print(
        f"\n{stats['entries']} live entries, {stats['persistent_facts']} persistent facts, "
        f"{stats['log_files']} log file(s) in {km.storage_dir}"
    )
    logs = " and ".join(
        f"{km.storage_dir}/{name}" for name in sorted(set(map(log_name_for, moments)))
    )
    print(f"(files: {km.storage_dir}/MEMORY.md and {logs})")
    return 0


def cmd_demo_command(args: argparse.Namespace) -> int:
    """``fsmemory demo``: :func:`cmd_demo`, its transcript printed, or with ``--json``
    captured into ``{"store", "output": [line, ...], "stats"}``."""
    if not args.json:
        return cmd_demo(args)
    transcript = io.StringIO()
    with contextlib.redirect_stdout(transcript):
        status = cmd_demo(args)
    km = open_memory(args)
    print_json(
        {"store": km.storage_dir, "output": transcript.getvalue().splitlines(), "stats": km.stats()}
    )
    return status


def cmd_completion(args: argparse.Namespace) -> int:
    """Print the shell completion script of the command (see ``completion --help``)."""
    from fsmemory._cli_completion import completion_script

    script = completion_script(build_parser(), args.shell)
    if args.json:
        print_json({"shell": args.shell, "script": script})
    else:
        sys.stdout.write(script)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the memory to an MCP client over stdio until it disconnects."""
    from fsmemory.integrations.mcp import run_mcp_command

    return run_mcp_command(args, store_of(args), storage_options_of(args))


def _top_parser() -> tuple[
    argparse.ArgumentParser, argparse._SubParsersAction[argparse.ArgumentParser]
]:
    """The command's own parser (its options, no commands yet) and its subparsers."""
    parser = argparse.ArgumentParser(
        prog="fsmemory",
        description="Long-term memory for LLM agents, as plain files on any fsspec URL.",
        epilog=JSON_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fsmemory {__version__}")
    store_arguments(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    return parser, sub


def _export_parser() -> argparse.ArgumentParser:
    """:func:`build_parser` with the ``export`` command only, for a command line that
    starts with it: an export process (one of many shards, say) then imports neither the
    memory layer nor the MCP integration that the other commands' parsers load."""
    from fsmemory._cli_export import add_export_parser

    parser, sub = _top_parser()
    add_export_parser(sub)
    return parser


COMPLETION_HELP = """\
Print a completion script for the fsmemory command (commands, options, and the
choices of options that have them; --store completes file names). Load it with:
  bash:  source <(fsmemory completion bash)            (e.g. in ~/.bashrc)
  zsh:   source <(fsmemory completion zsh)             (after compinit, in ~/.zshrc)
  fish:  fsmemory completion fish > ~/.config/fish/completions/fsmemory.fish
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fsmemory`` command."""
    parser, sub = _top_parser()

    def add(
        name: str, func: Callable[[argparse.Namespace], int], help_: str, json_flag: bool = True
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=func)
        store_arguments(p)
        if json_flag:
            p.add_argument(
                "--json", action="store_true", help="print one JSON document (see fsmemory -h)"
            )
        return p

    p = add("remember", cmd_remember, "store a fact")
    p.add_argument("content", help="the text to remember; - reads it from stdin")
    p.add_argument(
        "-c", "--category", default="general", help="category of the fact (default general)"
    )
    p.add_argument("-p", "--persistent", action="store_true", help="also keep in MEMORY.md")
    p.add_argument("-i", "--importance", type=float, default=0.5, help="0 to 1 (default 0.5)")
    p.add_argument("--ttl-days", type=float, default=None, help="forget it after this many days")
    p.add_argument(
        "--metadata",
        type=json_object,
        default=None,
        metavar="JSON",
        help='a JSON object stored with the entry, e.g. \'{"source": "chat"}\'',
    )

    p = add("recall", cmd_recall, "search the memory")
    p.add_argument("query", help="keywords to search for")
    p.add_argument(
        "-n", "--limit", type=count(1), default=5, help="at most this many results (default 5)"
    )
    p.add_argument("-c", "--category", default=None, help="only this category")

    p = add("context", cmd_context, "print the prompt context block")
    from fsmemory.integrations.mcp import DEFAULT_MAX_CONTEXT_CHARS, context_chars

    p.add_argument(
        "--max-context-chars",
        type=context_chars,
        default=DEFAULT_MAX_CONTEXT_CHARS,
        metavar="N",
        help=f"print at most N characters: long notes shortened, then the end left off, "
        f"with a marker line (default {DEFAULT_MAX_CONTEXT_CHARS:,}; 0: no bound)",
    )
    add("facts", cmd_facts, "print persistent facts by category")
    p = add("recent", cmd_recent, "print recent entries, newest first")
    p.add_argument(
        "--days", type=count(1), default=7, help="entries of the last DAYS days (default 7)"
    )
    p.add_argument(
        "-n", "--limit", type=count(1), default=50, help="at most this many (default 50)"
    )
    p = add("forget", cmd_forget, "forget an entry by id")
    p.add_argument("id", help="the entry id printed by remember (or md-... for a hand edit)")
    p = add("prune", cmd_prune, "delete old daily logs")
    p.add_argument(
        "--max-days",
        type=count(0),
        default=None,
        help="delete logs older than this many days (default: the memory's stored "
        "retention, see 'retention'; 30 when none is stored)",
    )
    p = add("retention", cmd_retention, "show or set how many days of logs the memory keeps")
    p.add_argument(
        "days",
        nargs="?",
        type=count(0),
        default=None,
        help="store this retention in the memory's fsmemory.json (every process honours it)",
    )
    p.add_argument(
        "--keep-all",
        action="store_true",
        help="store 'keep every log' (only prune --max-days deletes logs then)",
    )
    add("stats", cmd_stats, "print counts")
    add("demo", cmd_demo_command, "run a short scripted session and print the result")
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=COMPLETION_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=cmd_completion)
    p.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete in")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    from fsmemory._cli_export import add_export_parser

    add_export_parser(sub)
    from fsmemory.integrations.mcp import add_mcp_parser

    p = add_mcp_parser(sub)
    p.set_defaults(func=cmd_mcp)
    store_arguments(p)
    return parser


def _log_warnings_to_stderr() -> None:
    """The command's own process shows fsmemory's warnings and errors on stderr, one line
    each (``fsmemory: warning: skipping corrupt line ...``); a library call of
    :func:`main` leaves the host's logging alone."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LevelFormatter("fsmemory: %(levelname)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("fsmemory")
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


class _LevelFormatter(logging.Formatter):
    """Level names in lower case and a record on one line (no traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        """``fsmemory: warning: message``."""
        record.levelname = record.levelname.lower()
        record.exc_info = record.exc_text = None
        return " ".join(super().format(record).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = _export_parser() if words[:1] == ["export"] else build_parser()
    args = parser.parse_args(words)
    # Started as the command (no argv given): the process is the command's own.
    args.own_process = argv is None
    if args.own_process:
        _log_warnings_to_stderr()
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except BrokenPipeError:
        # The reader of stdout went away (``fsmemory recent | head``): stop quietly, as
        # other Unix tools do, without the error Python prints when stdout is flushed.
        if args.own_process:
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (kept for the exit flush)
        return 141
    except (CliError, FsMemoryError, ValueError, OSError, ImportError) as exc:
        # One line, never a traceback: a missing extra prints its pip install line.
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"fsmemory: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fsmemory: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
