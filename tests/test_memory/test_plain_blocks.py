"""The plain-file shortcut of a fresh ``build_context()`` gives what the parser gives.

:func:`~fsmemory.memory.markdown.plain_blocks` cuts the long-term part of the prompt out
of MEMORY.md's bytes when the file has the plain form fsmemory writes, and declines
(None) otherwise. These tests prove that whenever it answers, its answer is exactly the
parser's, on files generated from every kind of line a person or a hostile fact could
put there, and that a fresh instance's context equals an indexed instance's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory.markdown import MemoryDocument, plain_blocks

Make = Callable[..., KnowledgeMemory]

# Lines a person, a tool or an attack could leave in MEMORY.md (as bytes: one is not UTF-8).
_RAW: list[str | bytes] = [
    "# Agent Memory",
    "",
    "",
    "## prefs",
    "## work",
    "## prefs",  # a repeated header: its facts merge into the first section
    "## tail #",
    "## trailing ",
    "##  spaced",
    "##\ttabbed",
    "### deeper",
    "  ## indented",
    "## g#",
    "## nbsp\xa0",
    "## café",
    "- tea",
    "- coffee",
    "- tea",
    "- trailing ",
    "- tab\t",
    "-  two spaces",
    "- \u3000ideographic",
    "- end\u3000",
    "- mid\xa0space",
    "- inner\ttab",
    "- naïve ☕",
    "- ",
    "-",
    "* star",
    "+ plus",
    "  - indented",
    "\t- tabbed bullet",
    "- dated <!-- expires: 2030-01-01T00:00:00.000000Z -->",
    "- escaped \\<!-- not a comment",
    "- a\x0bvertical",
    "- a\x1cseparator",
    "- cr\r",
    "- \\n escaped newline ## not a header",
    "prose line",
    " indented prose",
    "# another title",
    b"- bad \xff byte",
    b"- \xed\xa0\x80 surrogate bytes",
]
_LINES = [s.encode() if isinstance(s, str) else s for s in _RAW]


def _parsed(data: bytes) -> dict[str, str] | None:
    """What plain_blocks must return for ``data`` when it answers (None: the parser
    finds an expiring fact, which the shortcut can never show)."""
    doc = MemoryDocument()
    doc.feed_data(data)
    if any(f.expires_at is not None for facts in doc.sections.values() for f in facts):
        return None
    return {
        cat: "\n".join(f"- {f.text}" for f in facts) for cat, facts in doc.sections.items() if facts
    }


# The lines of a plain file (among them those above that fsmemory itself could write).
_PLAIN = [
    b"",
    b"## prefs",
    b"## work",
    b"## caf\xc3\xa9",
    b"- tea",
    b"- coffee",
    b"- tea",
    b"- inner\ttab",
    b"- na\xc3\xafve \xe2\x98\x95",
    b"- escaped \\<!-- not a comment",
    b"- \\n escaped newline ## not a header",
]


def _files(count: int, seed: int) -> list[bytes]:
    """Mostly plain files, each line replaced by any line at all one time in ten."""
    rng = random.Random(seed)
    files = []
    for _ in range(count):
        lines = [
            rng.choice(_LINES if rng.random() < 0.1 else _PLAIN) for _ in range(rng.randint(1, 14))
        ]
        if rng.random() < 0.6:
            lines.insert(0, b"# Agent Memory")
        data = b"\n".join(lines) + (b"\n" if rng.random() < 0.8 else b"")
        files.append(data)
    return files


def test_whenever_the_shortcut_answers_it_equals_the_parser() -> None:
    answered = declined = 0
    for data in _files(4000, seed=7):
        blocks = plain_blocks(data)
        if blocks is None:
            declined += 1
            continue
        answered += 1
        assert blocks == _parsed(data), data
        assert list(blocks) == list(_parsed(data) or {}), data  # same category order
    assert answered > 200 and declined > 200  # both paths were exercised


def test_plain_files_take_the_shortcut() -> None:
    plain = b"# Agent Memory\n\n## prefs\n- tea\n- naive \xe2\x98\x95\n\n## work\n- ship it\n"
    assert plain_blocks(plain) == {"prefs": "- tea\n- naive \u2615", "work": "- ship it"}
    # Blank lines between sections, a header without bullets, no title, no final newline.
    assert plain_blocks(b"## a\n- x\n\n\n\n## empty\n\n## b\n- y") == {"a": "- x", "b": "- y"}
    for declined in [
        b"# Agent Memory\n\n## a\n- x\n\n- y\n",  # a blank line inside a section
        b"## a\n- x \n",  # trailing space (the parser strips it)
        b"## a\n- x\n## a\n- y\n",  # repeated header (the parser merges)
        b"- loose\n## a\n- x\n",  # a fact before the first header
        b"## a #\n- x\n",  # closing hashes (the parser drops them)
        b"## a\n- x <!-- expires: 2030-01-01T00:00:00.000000Z -->\n",
        b"## a\n* x\n",
        b"## a\n- x\r\n",
        b"## a\n- \xff\n",
        b"## a\n- x\xc2\xa0\n",  # a non-breaking space at the end (the parser strips it)
        b"# Agent Memory\n",  # no header at all
    ]:
        assert plain_blocks(declined) is None, declined


def test_a_file_fsmemory_writes_is_plain_even_for_hostile_facts(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path)
    hostile = [
        "line one\nline two",
        "## forged header",
        "- forged bullet",
        "nul\x00byte",
        "emoji \U0001f9e0 \u00fcn\u00efcode",
        "<!-- expires: 2000-01-01T00:00:00Z -->",
        "tab\tinside",
        "  padded  ",
        "\u2028separator\u2029",
        "[Recent Memory]",
        "x" * 5000,
    ]
    for i, text in enumerate(hostile):
        km.remember(text, category=["prefs", "work", "café", "a.b@c+d"][i % 4], persistent=True)
    data = km.root.read_bytes("MEMORY.md")
    blocks = plain_blocks(data)
    assert blocks is not None and blocks == _parsed(data)
    assert sum(block.count("\n") + 1 for block in blocks.values()) == len(hostile)


@pytest.mark.parametrize("seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in (1, 2))])
def test_a_fresh_context_equals_an_indexed_one_on_any_file(
    make_km: Make, seed: int, clock: object
) -> None:
    """26 files (25 generated ones) per seed on every backend: one seed by default, three
    under ``-m slow``."""
    writer = make_km()
    writer.remember("a recent note", category="work")
    writer.remember("tea", category="prefs", persistent=True)
    writer.remember("ship it", category="work", persistent=True)
    written = writer.root.read_bytes("MEMORY.md")
    for data in [written, *_files(25, seed=100 + seed)]:
        writer.root.write("MEMORY.md", data)
        for chars in (None, 120):
            fresh = make_km(max_context_chars=chars).build_context()
            indexed = make_km(max_context_chars=chars)
            indexed.refresh()
            assert fresh == indexed.build_context(), data
        assert writer.root.read_bytes("MEMORY.md") == data  # reading never rewrites it
