"""The memory's stored settings: ``fsmemory.json`` at the top of the root.

Retention (how many days of daily logs a memory keeps) is a property of the memory, not
of whichever process opens it, so it is kept with the memory, in a small file a person
can read and edit, that snapshots carry like any other file::

    {
      "fsmemory": 1,
      "retention_days": 365
    }

``retention_days`` is a whole number of days (0 to :data:`MAX_RETENTION_DAYS`), or
``null`` to keep every log until someone prunes with an explicit number of days; a file
without it states no retention. Other keys are kept as they are when the file is
updated. A file that is not this (not JSON, no ``"fsmemory": 1`` marker, a bad value) is
never used to delete anything: automatic retention stops and says why, and an explicit
prune needs an explicit number of days; it is never overwritten either, except a bad
``retention_days`` value, which setting a retention replaces. Changes are
compare-and-swap writes, so two processes setting it at once never leave a torn or
merged file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fsmemory import _jsonutil
from fsmemory._records import NamedTuple
from fsmemory.errors import InvalidInputError
from fsmemory.fs.base import StorageRoot
from fsmemory.memory.layout import SETTINGS_FILE

__all__ = [
    "DEFAULT_EMBED_BATCH",
    "DEFAULT_RETENTION_DAYS",
    "DEFAULT_VECTOR_CACHE_BYTES",
    "MAX_RETENTION_DAYS",
    "Settings",
    "check_retention_days",
    "load",
    "parse",
    "store_retention",
]

#: How many missing vectors one embedder call is given (``KnowledgeMemory(embed_batch_size)``);
#: kept here, not in ``_vectors``, so a memory without an embedder never loads the vectors.
DEFAULT_EMBED_BATCH = 64
#: The most bytes of float32 a memory with an embedder keeps its vectors in between
#: recalls when ``KnowledgeMemory(vector_cache_bytes)`` is not given (less where the
#: process has little memory): 256 MiB holds 170k vectors of 384 floats.
DEFAULT_VECTOR_CACHE_BYTES = 256 << 20
#: The retention of a memory whose creator chose none.
DEFAULT_RETENTION_DAYS = 30
#: The longest retention accepted (about 273 years): any date it reaches back to exists.
MAX_RETENTION_DAYS = 100_000
# A settings file larger than this is not one fsmemory wrote.
_MAX_BYTES = 64 * 1024
_MARKER = "fsmemory"
_KEY = "retention_days"


class Settings(NamedTuple):
    """What the settings file says (an immutable record).

    Attributes:
        retention_set: the file states a retention.
        retention_days: the days of logs kept (None: every log, until an explicit prune);
            meaningful when ``retention_set``.
        problem: why the file cannot be used (damaged, or not fsmemory's), else None.
            A file with a problem never causes a deletion.
    """

    retention_set: bool = False
    retention_days: int | None = None
    problem: str | None = None


def check_retention_days(name: str, value: object) -> int:
    """``value`` as a number of days of retention, or :class:`InvalidInputError`
    (a bool, a non-int, a negative number or more than :data:`MAX_RETENTION_DAYS`)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be a whole number of days, got {value!r}")
    if not 0 <= value <= MAX_RETENTION_DAYS:
        raise InvalidInputError(f"{name} must be between 0 and {MAX_RETENTION_DAYS}, got {value}")
    return value


def parse(data: bytes) -> Settings:
    """The settings in the bytes of a settings file (a problem, never an exception)."""
    record = _record(data)
    if isinstance(record, str):
        return Settings(problem=record)
    if _KEY not in record:
        return Settings()
    value = record[_KEY]
    if value is None:
        return Settings(retention_set=True)
    try:
        days = check_retention_days(_KEY, value)
    except InvalidInputError as exc:
        return Settings(problem=f"{SETTINGS_FILE} is damaged: {exc}")
    return Settings(retention_set=True, retention_days=days)


def _record(data: bytes) -> dict[str, Any] | str:
    """The file's JSON object, or why it is not a settings file of fsmemory's."""
    if len(data) > _MAX_BYTES:
        return f"{SETTINGS_FILE} is not fsmemory's settings file (larger than {_MAX_BYTES} bytes)"
    try:
        record = _jsonutil.loads(data)
    except ValueError:
        return f"{SETTINGS_FILE} is damaged: not valid UTF-8 JSON"
    if type(record) is not dict or type(record.get(_MARKER)) is not int or record[_MARKER] != 1:
        return f'{SETTINGS_FILE} is not fsmemory\'s settings file (no "{_MARKER}": 1 in it)'
    return record


def load(root: StorageRoot) -> Settings:
    """The settings of the memory at ``root`` (no file: nothing stated).

    Raises:
        BackendError: the storage could not be read.
    """
    try:
        data = root.read_bytes(SETTINGS_FILE)
    except FileNotFoundError:
        return Settings()
    return parse(data)


def store_retention(root: StorageRoot, days: int | None, *, only_if_unset: bool) -> Settings:
    """Store ``days`` as the memory's retention (compare-and-swap) and return the
    settings the file holds afterwards.

    Args:
        root: the memory root.
        days: days of logs to keep (None: every log).
        only_if_unset: store only when the file states no retention yet (a retention
            someone chose is then left alone, and so is a damaged file).

    Raises:
        InvalidInputError: ``days`` is out of range, or the file is not fsmemory's or not
            JSON (it is left as it is; with ``only_if_unset`` such a file is reported in
            the result's ``problem`` instead).
        ConflictError: other writers kept changing the file.
    """
    if days is not None:
        check_retention_days("retention_days", days)
    found: list[Settings] = []
    root.update(SETTINGS_FILE, _change(days, only_if_unset, found.append))
    return found[-1] if found else load(root)


def _change(
    days: int | None, only_if_unset: bool, report: Callable[[Settings], None]
) -> Callable[[bytes | None], bytes | None]:
    def change(old: bytes | None) -> bytes | None:
        record: dict[str, Any] = {_MARKER: 1}
        if old is not None:
            current = parse(old)
            if only_if_unset and (current.retention_set or current.problem is not None):
                report(current)
                return None
            kept = _record(old)
            if isinstance(kept, str):
                # Someone's file, or one no program can read: never overwritten.
                raise InvalidInputError(f"{kept}; it was left as it is: fix it or move it away")
            record = {**kept, _MARKER: 1}
        record[_KEY] = days
        data = _jsonutil.dumps(record, indent=True) + b"\n"
        report(parse(data))
        return data

    return change
