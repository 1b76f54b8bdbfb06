"""What ``from fsmemory import KnowledgeMemory`` (a user's first line) builds, and that
the internal records it builds cheaply still behave as before.

Python 3.11 compiles every generated method of a dataclass (``__init__``, ``__repr__``,
``__eq__``, and for a frozen one ``__setattr__``, ``__delattr__``, ``__hash__``) when
the class is defined: about 2.5M instructions for a mutable one and 3.5M for a frozen
one, in a first line of about 200M. So the first line defines dataclasses only where
users see them; internal immutable records are NamedTuples and internal mutable state
plain slotted classes (benchmarks/run.py measures the line).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

import fsmemory
from fsmemory.fs.base import Capabilities, FileInfo, Versioned
from fsmemory.memory import _settings
from fsmemory.memory._tail import FileCursor, Verified, read_verified
from fsmemory.memory.entry import RememberResult
from fsmemory.memory.markdown import Fact, MemoryDocument, parse_memory_md

#: the dataclasses a user meets (the storage roots' FileInfo, Versioned and Capabilities
#: and the memory's RememberResult are NamedTuples: immutable records, cheaper to define)
PUBLIC_DATACLASSES = {"fsmemory.memory.entry.KnowledgeEntry"}

DATACLASSES_BUILT = """
import dataclasses, json, sys
from fsmemory import KnowledgeMemory
built = set()
for name, module in list(sys.modules.items()):
    if name.startswith("fsmemory"):
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == name:
                if dataclasses.is_dataclass(value):
                    built.add(f"{name}.{value.__qualname__}")
print(json.dumps(sorted(built)))
"""


def test_the_first_line_defines_only_public_dataclasses() -> None:
    """Run as an installed package runs (``-S``: no editable finder), in a fresh process."""
    checkout = Path(fsmemory.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), *site.getsitepackages()])}
    done = subprocess.run(
        [sys.executable, "-S", "-c", DATACLASSES_BUILT],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    built = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "fsmemory.memory.entry.KnowledgeEntry" in built  # the check sees dataclasses
    assert built <= PUBLIC_DATACLASSES, sorted(built - PUBLIC_DATACLASSES)


def test_each_memory_document_starts_with_its_own_sections() -> None:
    first, second = MemoryDocument(), MemoryDocument()
    first.add("prefs", Fact("dark mode"))
    assert second.sections == {}
    assert (second.last_category, second.header_count, second.invalid_lines) == (None, 0, 0)
    doc = MemoryDocument(last_category="prefs", header_count=2, invalid_lines=1)
    assert (doc.sections, doc.last_category, doc.header_count, doc.invalid_lines) == (
        {},
        "prefs",
        2,
        1,
    )
    parsed = parse_memory_md("# Memory\n\n## prefs\n- dark mode\n")
    assert parsed.sections == {"prefs": [Fact("dark mode")]}
    assert parsed.last_category == "prefs"
    with pytest.raises(AttributeError):
        first.extra = 1  # type: ignore[attr-defined]  # slotted: no stray attributes


def test_the_public_records_keep_their_fields_keywords_and_immutability() -> None:
    info = FileInfo(path="a.md", size=3, mtime=None, token="t")
    assert (info.path, info.size, info.mtime, info.token) == ("a.md", 3, None, "t")
    assert info == FileInfo("a.md", 3, None, "t") and hash(info) == hash(
        FileInfo("a.md", 3, None, "t")
    )
    assert info != FileInfo("a.md", 4, None, "t")
    versioned = Versioned(data=b"x", version="1")
    assert (versioned.data, versioned.version) == (b"x", "1")
    caps = Capabilities(conditional_write=True, native_append=False)
    assert (caps.atomic_write, caps.ranged_read, caps.watch, caps.cheap_lock, caps.local_io) == (
        True,
        True,
        False,
        False,
        False,
    )
    result = RememberResult(id="", stored=False, rejected_by="duplicate")
    assert (result.id, result.stored, result.rejected_by) == ("", False, "duplicate")
    assert RememberResult("x", True) == RememberResult(id="x", stored=True, rejected_by=None)
    for record, name in ((info, "size"), (versioned, "data"), (caps, "watch"), (result, "id")):
        with pytest.raises(AttributeError):
            setattr(record, name, 1)
        with pytest.raises(AttributeError):
            record.extra = 1  # type: ignore[union-attr]


def test_a_file_cursor_keeps_its_fields_and_defaults() -> None:
    info = FileInfo("logs/2026-01-01.jsonl", 6, None, "t")
    cursor = FileCursor(info, 3, b"abc")
    assert (cursor.info, cursor.parsed_upto, cursor.tail, cursor.complete, cursor.crc) == (
        info,
        3,
        b"abc",
        True,
        None,
    )
    after = FileCursor.after(info, b"abc\ndef", 4, complete=False)
    assert (after.parsed_upto, after.tail, after.complete) == (4, b"abc\n", False)
    grown = FileInfo(info.path, 8, None, "u")
    after.advance(b"de", grown)
    assert (after.parsed_upto, after.tail, after.info) == (6, b"abc\nde", grown)
    with pytest.raises(AttributeError):
        cursor.extra = 1  # type: ignore[attr-defined]


def test_settings_and_verified_are_immutable_records() -> None:
    stated = _settings.parse(b'{"fsmemory": 1, "retention_days": 7}')
    assert stated == _settings.Settings(retention_set=True, retention_days=7)
    assert _settings.parse(b"{}").problem is not None
    assert _settings.Settings() == _settings.Settings(False, None, None)
    with pytest.raises(AttributeError):
        stated.retention_days = 1  # type: ignore[misc]
    found = Verified(b"x", True, 1)
    assert (found.data, found.appended, found.upto, found.whole) == (b"x", True, 1, None)
    with pytest.raises(AttributeError):
        found.upto = 2  # type: ignore[misc]


def test_read_verified_still_proves_an_append(tmp_path: Path) -> None:
    root = fsmemory.open_root(tmp_path / "m")
    root.write("logs/a.jsonl", b"one\n")
    first = root.stat("logs/a.jsonl")
    assert first is not None
    cursor = FileCursor.after(first, b"one\n", 4)
    root.append("logs/a.jsonl", b"two\n")
    grown = root.stat("logs/a.jsonl")
    assert grown is not None
    got = read_verified(root, cursor, grown)
    assert (got.data, got.appended, got.upto) == (b"two\n", True, 8)


PATTERNS_COMPILED = """
import json, sys
from fsmemory import KnowledgeMemory
km = KnowledgeMemory(sys.argv[1])
km.remember("Prefers dark mode", category="preferences", persistent=True)
km.remember("Deploys on Fridays")
assert [e.content for e in km.recall("dark mode")] == ["Prefers dark mode"]
assert "Deploys on Fridays" in km.build_context()
from fsmemory.memory import markdown
lazy = (markdown._escape_seq, markdown._expiry, markdown._escaped_byte)
print(json.dumps([f.__name__ for f in lazy if f.cache_info().currsize]))
"""


def test_plain_facts_never_compile_the_patterns_of_unusual_text(tmp_path: Path) -> None:
    """A fresh process's first line and a first use of a memory of plain facts compile
    neither the expiry, escape-sequence nor invalid-byte pattern."""
    checkout = Path(fsmemory.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), *site.getsitepackages()])}
    done = subprocess.run(
        [sys.executable, "-S", "-c", PATTERNS_COMPILED, str(tmp_path / "m")],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_expiries_escapes_and_invalid_bytes_are_still_parsed() -> None:
    from fsmemory.memory.markdown import (
        MemoryDocument,
        escape_line,
        fact_text_of,
        remove_fact,
        unescape_line,
    )

    doc = MemoryDocument()
    doc.feed_data(
        b"# Memory\n\n## prefs\n- dark mode <!-- expires: 2030-01-02T03:04:05Z -->\n"
        b"- a\\\\b \\n c\n- caf\xe9 \xff\n"
    )
    facts = doc.sections["prefs"]
    assert facts[0].text == "dark mode"
    assert facts[0].expires_at is not None and facts[0].expires_at.year == 2030
    assert facts[1].content == "a\\b \n c"
    assert facts[2].text == "caf\ufffd \ufffd" and doc.invalid_lines == 1
    assert unescape_line(escape_line("x\\y\u2028z")) == "x\\y\u2028z"
    assert fact_text_of("- gone <!-- expires: 2030-01-02T03:04:05Z -->") == "gone"
    text = "# Memory\n\n## prefs\n- keep\n- gone <!-- expires: 2030-01-02T03:04:05Z -->\n"
    assert remove_fact(text, "prefs", "gone") == "# Memory\n\n## prefs\n- keep\n"
