"""The ``fsmemory`` command.

    fsmemory [--store URL] [-o KEY=VALUE ...] COMMAND ...

Commands: ``remember``, ``recall``, ``context``, ``facts``, ``recent``, ``forget``,
``prune``, ``stats``, ``demo`` (and ``export`` when pyarrow is installed). Listings take
``--json``. Errors print one line on stderr and exit with status 1 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from fsmemory import __version__
from fsmemory._cliopts import parse_option_argument, parse_storage_options
from fsmemory.errors import FsMemoryError
from fsmemory.memory import KnowledgeEntry, KnowledgeMemory

__all__ = ["main"]

DEFAULT_STORE = "./agent_memory"


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return parse_storage_options(args.storage_option or [])


def _memory(args: argparse.Namespace) -> KnowledgeMemory:
    return KnowledgeMemory(args.store, storage_options=_options(args))


def _entry_dict(entry: KnowledgeEntry) -> dict[str, Any]:
    return entry.to_dict()


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def _one_line(text: str) -> str:
    from fsmemory.memory import escape_line

    return escape_line(text)


def cmd_remember(args: argparse.Namespace) -> int:
    """Store one fact and print its id."""
    km = _memory(args)
    metadata = json.loads(args.metadata) if args.metadata else None
    entry_id = km.remember(
        args.content,
        category=args.category,
        persistent=args.persistent,
        importance=args.importance,
        ttl_days=args.ttl_days,
        metadata=metadata,
    )
    if args.json:
        _print_json({"id": entry_id})
    else:
        print(entry_id)
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    """Search and print matching entries."""
    km = _memory(args)
    found = km.recall(args.query, limit=args.limit, category=args.category)
    if args.json:
        _print_json([_entry_dict(e) for e in found])
        return 0
    if not found:
        print(f"No memories found matching {args.query!r}.")
        return 0
    for i, entry in enumerate(found, 1):
        print(f"{i}. [{entry.category}] {_one_line(entry.content)}  ({entry.id})")
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    """Print the prompt block."""
    print(_memory(args).build_context())
    return 0


def cmd_facts(args: argparse.Namespace) -> int:
    """Print MEMORY.md facts by category."""
    facts = _memory(args).get_persistent_facts()
    if args.json:
        _print_json(facts)
        return 0
    for category, items in facts.items():
        print(f"## {category}")
        for item in items:
            print(f"- {_one_line(item)}")
    return 0


def cmd_recent(args: argparse.Namespace) -> int:
    """Print recent log entries, newest first."""
    recent = _memory(args).get_recent_entries(days=args.days, limit=args.limit)
    if args.json:
        _print_json(recent)
        return 0
    for record in recent:
        print(f"[{record['timestamp']}] ({record['category']}) {_one_line(record['content'])}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget an entry by id."""
    if _memory(args).forget(args.id):
        print(f"forgot {args.id}")
        return 0
    print(f"fsmemory: no entry with id {args.id!r}", file=sys.stderr)
    return 1


def cmd_prune(args: argparse.Namespace) -> int:
    """Delete old daily logs."""
    deleted = _memory(args).prune_logs(args.max_days)
    if args.json:
        _print_json({"deleted": deleted})
    else:
        print(f"deleted {deleted} log file(s)")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    """Print counts."""
    stats = _memory(args).stats()
    if args.json:
        _print_json(stats)
        return 0
    for key, value in stats.items():
        print(f"{key}: {value}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """A short scripted session on the store: remember, recall, forget, build context."""
    km = _memory(args)
    print(f"fsmemory {__version__} demo on {km.storage_dir}\n")
    script: list[tuple[str, str, bool, float]] = [
        ("Preferred language: Python", "preferences", True, 0.9),
        ("Dark mode: enabled", "preferences", True, 0.7),
        ("Works at Acme Corp", "personal", True, 0.8),
        ("Working on Project Atlas today", "context", False, 0.5),
        ("Investigating a timeout in the payment service", "technical", False, 0.6),
        ("Note with a newline\n## and a fake header that cannot escape", "context", False, 0.2),
    ]
    ids = []
    for content, category, persistent, importance in script:
        entry_id = km.remember(content, category, persistent, importance=importance)
        ids.append(entry_id)
        kind = "persistent" if persistent else "daily log"
        print(f"remembered [{category}] {_one_line(content)}  ({kind}, id {entry_id})")
    print("\nrecall('python preferences'):")
    for i, entry in enumerate(km.recall("python preferences", limit=3), 1):
        print(f"  {i}. [{entry.category}] {_one_line(entry.content)}")
    km.forget(ids[-1])
    print(f"\nforgot {ids[-1]}")
    print("\nbuild_context():\n")
    print(km.build_context())
    stats = km.stats()
    print(
        f"\n{stats['entries']} live entries, {stats['persistent_facts']} persistent facts, "
        f"{stats['log_files']} log file(s) in {km.storage_dir}"
    )
    print(
        f"(files: {km.storage_dir}/MEMORY.md and {km.storage_dir}/logs/"
        f"{datetime.now(tz=UTC):%Y-%m-%d}.jsonl)"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fsmemory`` command."""
    parser = argparse.ArgumentParser(
        prog="fsmemory",
        description="Long-term memory for LLM agents, as plain files on any fsspec URL.",
    )
    parser.add_argument("--version", action="version", version=f"fsmemory {__version__}")
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help=f"memory root: a path or fsspec URL (default {DEFAULT_STORE})",
    )
    parser.add_argument(
        "-o",
        "--storage-option",
        action="append",
        type=parse_option_argument,
        metavar="KEY=VALUE",
        help="fsspec storage option (repeatable; VALUE may be JSON; a.b=v nests)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, func: Callable[[argparse.Namespace], int], help_: str, json_flag: bool = True
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=func)
        if json_flag:
            p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    p = add("remember", cmd_remember, "store a fact")
    p.add_argument("content")
    p.add_argument("-c", "--category", default="general")
    p.add_argument("-p", "--persistent", action="store_true", help="also keep in MEMORY.md")
    p.add_argument("-i", "--importance", type=float, default=0.5)
    p.add_argument("--ttl-days", type=float, default=None)
    p.add_argument("--metadata", default=None, help="a JSON object")

    p = add("recall", cmd_recall, "search the memory")
    p.add_argument("query")
    p.add_argument("-n", "--limit", type=int, default=5)
    p.add_argument("-c", "--category", default=None)

    add("context", cmd_context, "print the prompt context block", json_flag=False)
    add("facts", cmd_facts, "print persistent facts by category")
    p = add("recent", cmd_recent, "print recent entries, newest first")
    p.add_argument("--days", type=int, default=7)
    p.add_argument("-n", "--limit", type=int, default=50)
    p = add("forget", cmd_forget, "forget an entry by id", json_flag=False)
    p.add_argument("id")
    p = add("prune", cmd_prune, "delete old daily logs")
    p.add_argument("--max-days", type=int, default=None)
    add("stats", cmd_stats, "print counts")
    add("demo", cmd_demo, "run a short scripted session and print the result", json_flag=False)
    try:
        from fsmemory.export._cli import add_export_parser
    except ImportError:
        pass
    else:
        add_export_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (FsMemoryError, ValueError, OSError, json.JSONDecodeError) as exc:
        message = str(exc) or type(exc).__name__
        print(f"fsmemory: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fsmemory: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
