"""What every ``fsmemory`` subcommand shares: the store options, the memory they name,
argument types, JSON output and the one-line user error.

Part of the command line (the Face layer); :mod:`fsmemory.cli` holds ``main`` only in
its ``__all__``, the commands and these helpers are internal to the command.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fsmemory import _jsonutil
from fsmemory._cliopts import parse_option_argument, parse_storage_options
from fsmemory.fs import split_protocol

if TYPE_CHECKING:
    from fsmemory.memory import KnowledgeMemory

__all__ = [
    "DEFAULT_STORE",
    "JSON_HELP",
    "STORE_ENV",
    "CliError",
    "count",
    "default_store",
    "json_object",
    "open_memory",
    "print_json",
    "storage_options_of",
    "store_arguments",
    "store_of",
]

#: The store used when neither ``--store`` nor :data:`STORE_ENV` names one.
DEFAULT_STORE = "./agent_memory"
#: The environment variable that names the default store (a path or fsspec URL).
STORE_ENV = "FSMEMORY_STORE"

#: How ``--json`` output looks, shown at the end of ``fsmemory --help``.
JSON_HELP = """\
--json: every command but mcp takes it and then prints exactly one JSON document on
stdout, UTF-8, nothing else: recall and recent an array of records; facts an object
{category: [fact, ...]}; every other command an object (remember {"id"}, forget {"id",
"forgotten"}, context {"context", "chars", "total_chars", "truncated"}, prune
{"deleted"}, retention {"retention_days"}, stats the counts, demo {"store", "output",
"stats"}, completion {"shell", "script"}, export the export report). Errors are one line
on stderr and nothing on stdout, exit status 1 (2 for usage errors); forget of an
unknown id prints {"forgotten": false} and exits 1. mcp has no --json: its stdout is the
MCP protocol.

--store defaults to $FSMEMORY_STORE when set (and not empty), else ./agent_memory.
"""


class CliError(Exception):
    """A one-line error for the user (exit status 1)."""


def default_store(environ: Mapping[str, str] | None = None) -> str:
    """The store a command uses without ``--store``: ``$FSMEMORY_STORE`` when it is set
    and not blank, else :data:`DEFAULT_STORE`."""
    value = (os.environ if environ is None else environ).get(STORE_ENV, "")
    return value if value.strip() else DEFAULT_STORE


def store_arguments(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Add ``--store`` and ``-o/--storage-option`` to ``parser``.

    The top-level parser holds the defaults; a subcommand's copies only override what
    is given after the command, so both positions work.
    """
    parser.add_argument(
        "--store",
        dest="store" if top else "sub_store",
        default=default_store() if top else None,
        metavar="URL",
        help=f"memory root: a path or fsspec URL (default ${STORE_ENV}, else {DEFAULT_STORE})",
    )
    parser.add_argument(
        "-o",
        "--storage-option",
        dest="storage_option" if top else "sub_storage_option",
        action="append",
        default=None,
        type=parse_option_argument,
        metavar="KEY=VALUE",
        help="fsspec storage option (repeatable; VALUE may be JSON; a.b=v nests)",
    )


def store_of(args: argparse.Namespace) -> str:
    """The ``--store`` given after the command, else before it, else the default."""
    return str(getattr(args, "sub_store", None) or args.store)


def storage_options_of(args: argparse.Namespace) -> dict[str, Any]:
    """Every ``-o`` option, those before the command first."""
    items = [*(args.storage_option or []), *(getattr(args, "sub_storage_option", None) or [])]
    return parse_storage_options(items)


def _check_local_store(store: str, *, create: bool) -> None:
    protocol, rest = split_protocol(store)
    if protocol not in (None, "file", "local"):
        return  # remote stores report their own errors (a missing bucket, ...)
    path = rest or "."
    if os.path.isfile(path):
        raise CliError(f"--store {store} is a file, not a memory folder")
    if not create and not os.path.isdir(path):
        raise CliError(
            f"no memory at --store {store}: the folder does not exist "
            "(fsmemory remember creates it)"
        )


def open_memory(
    args: argparse.Namespace, *, create: bool = False, **options: Any
) -> KnowledgeMemory:
    """The memory named by ``--store``/``-o``.

    Args:
        args: the parsed command line.
        create: the command may create a local store that does not exist yet.
        options: further :class:`~fsmemory.memory.KnowledgeMemory` arguments.

    Raises:
        CliError: a local store that is a file, or (without ``create``) is missing.
    """
    from fsmemory.memory import KnowledgeMemory

    store = store_of(args)
    _check_local_store(store, create=create)
    return KnowledgeMemory(store, storage_options=storage_options_of(args), **options)


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (one document).

    Text that is not valid Unicode (a lone surrogate read from a hand-edited file) is
    written as a ``\\uXXXX`` escape rather than failing the command.
    """
    try:
        text = _jsonutil.dumps(value, indent=True).decode()
    except TypeError:
        import json

        text = json.dumps(value, indent=2, ensure_ascii=True, default=str)
    print(text)


def json_object(text: str) -> dict[str, Any]:
    """An argparse ``type=`` for a JSON object argument (anything else: usage error)."""
    try:
        value = _jsonutil.loads(text)
    except _jsonutil.JSONDecodeError:
        raise argparse.ArgumentTypeError(f"not valid JSON: {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object ({{...}}), got {text!r}")
    return value


def count(minimum: int) -> Callable[[str], int]:
    """An argparse ``type=`` for a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value

    parse.__name__ = "count"
    return parse
