"""Command-line option parsing shared by every ``fsmemory`` subcommand (the Face layer).

``-o KEY=VALUE`` storage options are parsed here and nowhere else:

* VALUE is parsed as JSON when it can be (``anon=true`` -> ``True``, ``n=3`` -> ``3``),
  else kept as text (``region=eu-west-1``);
* ``a.b=v`` sets key ``b`` of option ``a`` (``client_kwargs.endpoint_url=http://...``),
  as fsspec's nested options need; only the first dot nests.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from fsmemory import _jsonutil

__all__ = ["parse_option", "parse_option_argument", "parse_storage_options"]


def parse_option(text: str) -> tuple[str, Any]:
    """Split one ``KEY=VALUE`` item into ``(key, value)``.

    Args:
        text: The item as typed, e.g. ``"anon=true"``.

    Returns:
        The stripped key and the value, parsed as JSON when it can be, else the raw text.

    Raises:
        ValueError: ``text`` has no ``=`` or an empty key.
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"storage option {text!r} is not KEY=VALUE")
    try:
        value: Any = _jsonutil.loads(raw)
    except _jsonutil.JSONDecodeError:
        value = raw
    return key, value


def parse_option_argument(text: str) -> tuple[str, Any]:
    """:func:`parse_option` as an argparse ``type=`` (a bad item is a usage error, exit 2)."""
    try:
        return parse_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_storage_options(pairs: Iterable[str | tuple[str, Any]]) -> dict[str, Any]:
    """Build a ``storage_options`` dict from ``-o`` items.

    ``["anon=true", "client_kwargs.endpoint_url=http://x"]`` becomes
    ``{"anon": True, "client_kwargs": {"endpoint_url": "http://x"}}``. Items may be raw
    ``KEY=VALUE`` strings or ``(key, value)`` pairs already split by
    :func:`parse_option_argument`. A later plain item replaces an earlier one of the same key.

    Args:
        pairs: The items, in the order given on the command line.

    Returns:
        A new dict (empty when there are no items).

    Raises:
        ValueError: an item is not ``KEY=VALUE``, or one key is used both as a plain option
            and as a nested one (``a=1`` with ``a.b=2``).
    """
    options: dict[str, Any] = {}
    for item in pairs:
        key, value = (item[0].strip(), item[1]) if isinstance(item, tuple) else parse_option(item)
        outer, dot, inner = key.partition(".")
        if not dot:
            if isinstance(options.get(key), dict) and not isinstance(value, dict):
                raise ValueError(f"storage option {key!r} is given both plain and nested")
            options[key] = value
            continue
        if not outer or not inner:
            raise ValueError(f"storage option key {key!r} is not NAME or NAME.KEY")
        nested = options.setdefault(outer, {})
        if not isinstance(nested, dict):
            raise ValueError(f"storage option {outer!r} is given both plain and nested")
        nested[inner] = value
    return options
