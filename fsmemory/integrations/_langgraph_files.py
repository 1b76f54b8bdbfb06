"""The files of :class:`~fsmemory.integrations.langgraph.FsspecStore`: where a namespace
and a key live (folder and file names), what JSON a value may hold, and the item record
read from and written to each file."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.store.base import InvalidNamespaceError, Item, SearchItem

from fsmemory import _jsonutil
from fsmemory.errors import InvalidInputError, InvalidPathError
from fsmemory.fs import validate_path

__all__ = [
    "SUFFIX",
    "Record",
    "check_json",
    "item_path",
    "namespace_dir",
    "namespace_of",
    "string_leaves",
]

#: the file suffix of an item
SUFFIX = ".json"
_KEY_SAFE = frozenset("-_@+=,")
_MAX_NAME_BYTES = 200
_HASH_MARK = "~~"


# -- paths -------------------------------------------------------------------------------
def _check_label(label: object, namespace: tuple[Any, ...]) -> str:
    if not isinstance(label, str):
        raise InvalidNamespaceError(
            f"namespace labels must be strings, got {type(label).__name__} in {namespace!r}"
        )
    if "/" in label or "\\" in label:
        raise InvalidNamespaceError(
            f"namespace label {label!r} contains a slash; labels are folder names"
        )
    try:
        validate_path(label)
    except InvalidPathError as exc:
        raise InvalidNamespaceError(f"namespace label {label!r} is not allowed: {exc}") from None
    return label


def namespace_dir(namespace: Sequence[str]) -> str:
    ns = tuple(namespace)
    for label in ns:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace {ns!r}: labels are non-empty strings without '.' or NUL"
            )
        _check_label(label, ns)
    return "/".join(ns)


def _encode_key(key: str) -> str:
    parts: list[str] = []
    for i, ch in enumerate(key):
        if (ch == "." and i > 0) or ch in _KEY_SAFE or (ch.isalnum() and ch.isprintable()):
            parts.append(ch)
            continue
        try:
            raw = ch.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(f"key {key!r} is not valid Unicode (lone surrogate)") from None
        parts.append("".join(f"~{b:02X}" for b in raw))
    name = "".join(parts)
    if not name:
        return _HASH_MARK
    if len(name.encode("utf-8")) > _MAX_NAME_BYTES:
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=16).hexdigest()
        head = name.encode("utf-8")[: _MAX_NAME_BYTES - 40].decode("utf-8", errors="ignore")
        cut = head.rfind("~", max(0, len(head) - 2))
        if cut != -1:
            head = head[:cut]
        name = f"{head}{_HASH_MARK}{digest}"
    return name


def item_path(namespace: Sequence[str], key: str) -> str:
    """The root-relative path of an item: ``"users/42/prefs.json"``.

    Raises:
        InvalidNamespaceError: a label is not a plain folder name, or the namespace is empty.
        InvalidInputError: ``key`` is not a str or holds a lone surrogate.
    """
    if not isinstance(key, str):
        raise InvalidInputError(f"key must be a str, not {type(key).__name__}")
    if not namespace:
        raise InvalidNamespaceError("namespace cannot be empty")
    return f"{namespace_dir(namespace)}/{_encode_key(key)}{SUFFIX}"


def namespace_of(path: str) -> tuple[str, ...] | None:
    """The namespace a listed file belongs to, or None when it is not an item file."""
    if not path.endswith(SUFFIX):
        return None
    parts = path.split("/")
    if len(parts) < 2 or any("." in p for p in parts[:-1]):
        return None
    return tuple(parts[:-1])


# -- JSON --------------------------------------------------------------------------------
def check_json(value: Any, where: str, depth: int = 0) -> None:
    """Reject what JSON cannot hold faithfully (it would come back changed)."""
    if depth > 200:
        raise InvalidInputError(f"{where} is nested too deeply")
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{where} holds {value!r}, which JSON cannot represent")
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidInputError(f"{where} has a non-string key {k!r}")
            check_json(v, where, depth + 1)
        return
    if isinstance(value, list | tuple):
        for v in value:
            check_json(v, where, depth + 1)
        return
    raise InvalidInputError(f"{where} holds a {type(value).__name__}, which is not JSON")


def string_leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            string_leaves(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            string_leaves(v, out)


@dataclass(frozen=True, slots=True)
class Record:
    """One stored item, as parsed from its file."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None = None
    expires_at: datetime | None = None
    index: Literal[False] | list[str] | None = None
    #: per-record derived data (search words), computed once per parsed version
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_bytes(self) -> bytes:
        doc: dict[str, Any] = {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }
        if self.ttl_minutes is not None:
            doc["ttl_minutes"] = self.ttl_minutes
            doc["expires_at"] = None if self.expires_at is None else self.expires_at.isoformat()
        if self.index is not None:
            doc["index"] = self.index
        try:
            return _jsonutil.dumps(doc, indent=True) + b"\n"
        except TypeError as exc:
            raise InvalidInputError(f"value is not JSON-serializable: {exc}") from exc

    @classmethod
    def from_bytes(cls, data: bytes) -> Record:
        doc = _jsonutil.loads(data)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        namespace, key, value = doc.get("namespace"), doc.get("key"), doc.get("value")
        if not isinstance(namespace, list) or not all(isinstance(p, str) for p in namespace):
            raise ValueError("'namespace' is not a list of strings")
        if not isinstance(key, str):
            raise ValueError("'key' is not a string")
        if not isinstance(value, dict):
            raise ValueError("'value' is not an object")
        created = _parse_time(doc.get("created_at"), "created_at")
        updated = _parse_time(doc.get("updated_at"), "updated_at")
        ttl = doc.get("ttl_minutes")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise ValueError("'ttl_minutes' is not a number")
        expires_raw = doc.get("expires_at")
        expires = None if expires_raw is None else _parse_time(expires_raw, "expires_at")
        index = doc.get("index")
        if index is not None and index is not False and not isinstance(index, list):
            raise ValueError("'index' is not false or a list")
        return cls(
            tuple(namespace),
            key,
            value,
            created,
            updated,
            None if ttl is None else float(ttl),
            expires,
            index,
        )

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def search_item(self, score: float | None = None) -> SearchItem:
        # A copy: the record stays cached, and a caller may change what it gets.
        value = _jsonutil.loads(_jsonutil.dumps(self.value))
        return SearchItem(self.namespace, self.key, value, self.created_at, self.updated_at, score)


def _parse_time(raw: object, name: str) -> datetime:
    if not isinstance(raw, str):
        raise ValueError(f"{name!r} is not a timestamp")
    moment = datetime.fromisoformat(raw)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
