"""MEMORY.md: the human-readable, hand-editable file of persistent facts.

Layout (the seed's)::

    # Agent Memory

    ## preferences
    - Preferred language: Python
    - Dark mode: enabled <!-- expires: 2027-01-01T00:00:00.000000Z -->

A fact is always ONE line. Content is escaped so that it can never start a new line,
header or bullet: ``\\`` -> ``\\\\``, newline -> ``\\n``, CR -> ``\\r``, other control and
line-breaking characters -> ``\\xHH``/``\\uHHHH``, and ``<!--`` -> ``\\<!--`` (so content
cannot forge the expiry comment). A person can add, edit or delete bullets; the parser
accepts ``-``/``*``/``+`` bullets, ignores other prose, and merges repeated headers of the
same category.

A person's bytes are never changed: the file is decoded with ``surrogateescape``
(:func:`decode_md`) and encoded back the same way (:func:`encode_md`), so a line that is
not valid UTF-8 survives every rewrite byte for byte. The parser counts such lines
(:attr:`MemoryDocument.invalid_lines`) and shows them with U+FFFD in place of the bad
bytes.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from itertools import repeat
from operator import itemgetter, methodcaller

from fsmemory._records import NamedTuple
from fsmemory.memory.entry import format_timestamp, parse_timestamp
from fsmemory.memory.layout import TITLE

__all__ = [
    "ANY_EXPIRY",
    "TITLE",
    "Fact",
    "MemoryDocument",
    "blocks_of",
    "decode_md",
    "encode_md",
    "escape_line",
    "fact_line",
    "insert_fact",
    "needs_escape",
    "parse_memory_md",
    "plain_blocks",
    "plain_spans",
    "remove_fact",
    "rewrite_memory_md",
    "unescape_line",
]

DEFAULT_CATEGORY = "general"

_NEEDS_ESCAPE = re.compile("[\\\\\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]|<!--")
_HEADER = re.compile(r"^ {0,3}##\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^ {0,3}[-*+]\s+(.*)$")
_AFTER_MARKER = itemgetter(slice(2, None))  # "- text" -> "text"


# Patterns only unusual text needs, compiled on first use (each costs ``re`` a fraction
# of a millisecond, paid by every process that imports this module otherwise): a
# memory of plain facts never compiles them.
@functools.cache
def _escape_seq() -> re.Pattern[str]:
    """An escape sequence of :func:`escape_line` (only text with a backslash has one)."""
    return re.compile(r"\\(\\|n|r|<|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})")


@functools.cache
def _expiry() -> re.Pattern[str]:
    """A bullet's trailing expiry comment (only a line with ``<!--`` can hold one)."""
    return re.compile(r"\s*(?<!\\)<!--\s*expires:\s*(\S+)\s*-->\s*$")


@functools.cache
def _escaped_byte() -> re.Pattern[str]:
    """What surrogateescape decoding makes of bytes that are not UTF-8."""
    return re.compile("[\udc80-\udcff]")


def decode_md(data: bytes) -> str:
    """MEMORY.md bytes as text; invalid UTF-8 bytes become lone surrogates, so that
    :func:`encode_md` gives the very same bytes back."""
    return data.decode("utf-8", errors="surrogateescape")


def encode_md(text: str) -> bytes:
    """The inverse of :func:`decode_md` (bytes a person wrote come back unchanged)."""
    return text.encode("utf-8", errors="surrogateescape")


def _readable(text: str) -> str:
    """``text`` with each escaped invalid byte shown as U+FFFD (what readers see)."""
    if text.isascii() or not _escaped_byte().search(text):
        return text
    return encode_md(text).decode("utf-8", errors="replace")


# The escapes of escape_line with a name (other characters are escaped by their code),
# and what unescape_line makes of each sequence after the backslash.
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "<!--": "\\<!--"}
_UNESCAPES = {"\\": "\\", "n": "\n", "r": "\r", "<": "<"}


def _escape_char(match: re.Match[str]) -> str:
    text = match.group(0)
    named = _ESCAPES.get(text)
    if named is not None:
        return named
    code = ord(text)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def needs_escape(text: str) -> bool:
    """True when :func:`escape_line` would change ``text``."""
    return _NEEDS_ESCAPE.search(text) is not None


def escape_line(text: str) -> str:
    """Render ``text`` as one safe line (reversible with :func:`unescape_line`)."""
    if not _NEEDS_ESCAPE.search(text):
        return text
    return _NEEDS_ESCAPE.sub(_escape_char, text)


def _unescape_seq(match: re.Match[str]) -> str:
    seq = match.group(1)
    named = _UNESCAPES.get(seq)
    return chr(int(seq[1:], 16)) if named is None else named


def unescape_line(text: str) -> str:
    """Invert :func:`escape_line`; unknown backslash sequences are kept as typed."""
    if "\\" not in text:
        return text
    return _escape_seq().sub(_unescape_seq, text)


def fact_line(content: str, expires_at: datetime | None = None) -> str:
    """The bullet line (without newline) that stores ``content`` in MEMORY.md."""
    line = f"- {escape_line(content.strip())}"
    if expires_at is not None:
        line += f" <!-- expires: {format_timestamp(expires_at)} -->"
    return line


class Fact(NamedTuple):
    """One bullet of MEMORY.md (an immutable pair).

    Attributes:
        text: the bullet text as written (escaped form, expiry comment removed).
        expires_at: expiry from the trailing comment, if any.
    """

    text: str
    expires_at: datetime | None = None

    @property
    def content(self) -> str:
        """The fact's content (unescaped)."""
        return unescape_line(self.text)


class MemoryDocument:
    """Parsed MEMORY.md: facts per category in first-appearance order.

    ``last_category`` is the section the file currently ends in (where an appended
    bullet would land). ``invalid_lines`` counts lines that are not valid UTF-8 (fed as
    :func:`decode_md` text); they are parsed with U+FFFD in place of the bad bytes.
    """

    # A plain class, not a dataclass: Python 3.11 compiles a dataclass's generated
    # methods when the module is imported, part of every process's first line.
    __slots__ = ("header_count", "invalid_lines", "last_category", "sections")

    def __init__(
        self,
        sections: dict[str, list[Fact]] | None = None,
        last_category: str | None = None,
        header_count: int = 0,
        invalid_lines: int = 0,
    ) -> None:
        self.sections: dict[str, list[Fact]] = {} if sections is None else sections
        self.last_category = last_category
        self.header_count = header_count
        self.invalid_lines = invalid_lines

    def add(self, category: str, fact: Fact) -> None:
        """Record a bullet under ``category``."""
        self.sections.setdefault(category, []).append(fact)

    def feed(
        self,
        lines: Iterable[str],
        *,
        valid: bool = False,
        known: Mapping[str, str] | None = None,
    ) -> None:
        """Parse more lines (continuing the current section).

        Args:
            lines: lines of MEMORY.md (as :func:`decode_md` text).
            valid: the caller checked that no line holds an invalid byte.
            known: texts the caller already holds (text -> the same text): a bullet
                with such a text shares that string instead of keeping a copy.
        """
        share = (known or {}).get
        sections = self.sections
        facts = sections.get(self.last_category or DEFAULT_CATEGORY)
        new_fact = tuple.__new__
        for raw in lines:
            line = raw.rstrip("\r\n")
            first = line[:1]
            if first == "-" and valid and line[1:2] == " " and "<!--" not in line:
                # The common bullet, parsed without regular expressions.
                text = line[2:].strip()
                if text:
                    if facts is None:
                        facts = sections.setdefault(self.last_category or DEFAULT_CATEGORY, [])
                    facts.append(new_fact(Fact, (share(text, text), None)))
                continue
            if not valid and _escaped_byte().search(line):
                self.invalid_lines += 1
                line = _readable(line)
                first = line[:1]
            if not first or first not in " #-*+":
                continue  # prose or a blank line
            header = _HEADER.match(line)
            if header:
                self.last_category = header.group(1).strip()
                self.header_count += 1
                facts = sections.setdefault(self.last_category, [])
                continue
            bullet = _BULLET.match(line)
            if bullet is None:
                continue
            text = bullet.group(1)
            expires: datetime | None = None
            comment = _expiry().search(text) if "<!--" in text else None
            if comment:
                try:
                    expires = parse_timestamp(comment.group(1))
                except ValueError:
                    expires = None
                text = text[: comment.start()]
            text = text.strip()
            if not text:
                continue
            self.add(self.last_category or DEFAULT_CATEGORY, Fact(text, expires))

    def feed_data(self, data: bytes, *, known: Mapping[str, str] | None = None) -> None:
        """Parse more bytes of MEMORY.md (whole lines; the last one may lack its ``\\n``);
        ``known`` as in :meth:`feed`."""
        try:
            text, valid = data.decode("utf-8"), True
        except UnicodeDecodeError:
            text, valid = decode_md(data), False
        lines = text.split("\n")
        if not valid or "<!--" in text or "\r" in text:
            self.feed(lines, valid=valid, known=known)
            return
        # Runs of plain "- text" bullets (most of a large file) are parsed a run at a
        # time with C-level passes; every other line goes through feed().
        share = (known or {}).get
        plain = list(map(methodcaller("startswith", "- "), lines))
        start = 0
        for end in [i for i, is_bullet in enumerate(plain) if not is_bullet] + [len(lines)]:
            if end > start:
                texts = list(map(str.strip, map(_AFTER_MARKER, lines[start:end])))
                if "" in texts:
                    self.feed(lines[start:end], valid=True, known=known)
                else:
                    facts = self.sections.setdefault(self.last_category or DEFAULT_CATEGORY, [])
                    facts.extend(
                        map(
                            tuple.__new__, repeat(Fact), zip(map(share, texts, texts), repeat(None))
                        )
                    )
            if end < len(lines):
                self.feed(lines[end : end + 1], valid=True, known=known)
            start = end + 1

    def fact_count(self) -> int:
        """Number of bullets."""
        return sum(len(v) for v in self.sections.values())


# One pass over the bytes of a MEMORY.md that finds every line break after a space or
# tab (group "bad") and every line that is not a ``- <text>`` bullet. (Bytes: UTF-8 never
# holds these ASCII bytes inside a character, and a file with non-ASCII whitespace is
# not plain.)
_PLAIN_SCAN = re.compile(rb"\n(?:(?<=[ \t]\n)(?P<bad>)|(?!- [^\s]))")
# Characters str.strip() removes, other than space, tab and line breaks, that a plain
# file never holds.
_ASCII_SPACE_CONTROLS = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
_UNICODE_SPACES = (
    "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def plain_blocks(data: bytes) -> dict[str, str] | None:
    """The bullets of a MEMORY.md in the plain form fsmemory writes, one block of lines
    per category, found without parsing a bullet at a time; None when the file needs
    :class:`MemoryDocument` (which then gives the same answer, only slower).

    Plain: valid UTF-8 without CR, unescaped ``<!--`` (so no expiry comment) or whitespace other
    than space, tab and LF; before the first ``## <category>`` header only lines that
    give no fact and no header (the title, prose, blank lines); from it on only headers
    (each category once, not ending in ``#``), ``- <text>`` bullets and blank lines that
    no bullet of the same section follows, with no whitespace around a header's or
    bullet's text. For such a file ``{category: "- a\\n- b"}`` holds exactly the facts
    :meth:`MemoryDocument.feed_data` finds, in the same order (categories without
    bullets left out), so the long-term part of a prompt is cut from the file's bytes.
    """
    spans = plain_spans(data)
    return None if spans is None else blocks_of(data, spans)


def blocks_of(data: bytes, spans: Iterable[tuple[str, int, int]]) -> dict[str, str]:
    """``{category: block}`` of the :func:`plain_spans` of ``data`` (one copy per block).

    Raises:
        UnicodeDecodeError: a span that does not cut ``data`` at character boundaries.
    """
    view = memoryview(data)
    return {name: str(view[start:end], "utf-8") for name, start, end in spans}


def plain_spans(data: bytes) -> list[tuple[str, int, int]] | None:
    """Where :func:`plain_blocks` finds each category's bullets: ``(category, start,
    end)`` byte offsets into ``data``, in file order, categories without bullets left
    out; None when the file is not plain."""
    if not _plain_characters(data):
        return None
    shift = 0
    if data.startswith(b"## "):
        data, shift = b"\n" + data, 1  # (a file fsmemory writes starts with its title)
    first = data.find(b"\n## ")
    if first < 0:
        return None
    preamble = MemoryDocument()
    preamble.feed(data[:first].decode("utf-8").split("\n"), valid=True)
    if preamble.sections or preamble.header_count:
        return None
    headers = _plain_headers(data, first)
    return None if headers is None else _plain_sections(data, headers, shift)


def _plain_characters(data: bytes) -> bool:
    """Whether ``data`` holds only what a plain MEMORY.md may (see :func:`plain_blocks`):
    valid UTF-8 without CR, unescaped ``<!--``, trailing blanks or whitespace other than
    space, tab and LF."""
    if not data.isascii():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        if any(c in text for c in _UNICODE_SPACES):
            return False
    if b"\r" in data or data[-1:] in (b" ", b"\t"):
        return False
    if b"<" in data and data.count(b"<!--") != data.count(b"\\<!--"):
        return False  # a comment that may be an expiry (escaped ones are content)
    return not any(c in data for c in _ASCII_SPACE_CONTROLS)


def _plain_headers(data: bytes, first: int) -> list[int] | None:
    """The offsets of the ``## `` headers of ``data`` from its first (at the line
    break at ``first``) on, and ``len(data) + 1`` last; None when a line from there on
    is neither a header, a ``- `` bullet nor a blank line no bullet follows."""
    headers: list[int] = []
    size = len(data)
    for match in _PLAIN_SCAN.finditer(data, first):
        at = match.end()
        if match.lastgroup == "bad":
            return None
        if data.startswith(b"## ", at) and at + 3 < size and not data[at + 3 : at + 4].isspace():
            headers.append(at)
        elif at < size and data[at] != 0x0A:
            return None  # neither a bullet, a header nor a blank line
        else:
            while at < size and data[at] == 0x0A:
                at += 1
            if data.startswith(b"- ", at):
                return None  # a blank line inside a section
    headers.append(size + 1)
    return headers


def _plain_sections(
    data: bytes, headers: list[int], shift: int
) -> list[tuple[str, int, int]] | None:
    """The ``(category, start, end)`` of the bullets under each header of ``data``
    (offsets less ``shift``), sections without bullets left out; None when a category
    comes twice or ends in ``#``."""
    spans: list[tuple[str, int, int]] = []
    names: set[str] = set()
    for at, following in itertools.pairwise(headers):
        eol = data.find(b"\n", at, following)
        if eol < 0:
            eol = following - 1
        name = data[at + 3 : eol].decode("utf-8")
        if name in names or name.endswith("#"):
            return None
        names.add(name)
        start, end = eol + 1, following - 1
        while start < end and data[start] == 0x0A:
            start += 1
        while end > start and data[end - 1] == 0x0A:
            end -= 1
        if end > start:
            spans.append((name, start - shift, end - shift))
    return spans


def parse_memory_md(text: str) -> MemoryDocument:
    """Parse the whole of MEMORY.md."""
    doc = MemoryDocument()
    doc.feed(text.splitlines())
    return doc


def _split_lines(text: str) -> list[str]:
    return text.split("\n") if text else []


def _section_spans(lines: list[str]) -> list[tuple[str | None, int, int]]:
    """(category, start, end) per section; the preamble has category None."""
    spans: list[tuple[str | None, int, int]] = []
    current: str | None = None
    start = 0
    for i, line in enumerate(lines):
        header = _HEADER.match(line)
        if header:
            spans.append((current, start, i))
            current = header.group(1).strip()
            start = i
    spans.append((current, start, len(lines)))
    return spans


def insert_fact(text: str | None, category: str, line: str) -> str:
    """Return MEMORY.md with ``line`` added at the end of ``category``'s section
    (created at the end of the file when missing)."""
    if not text or not text.strip():
        return f"{TITLE}\n\n## {category}\n{line}\n"
    lines = _split_lines(text.rstrip("\n"))
    target = None
    for cat, start, end in _section_spans(lines):
        if cat == category:
            target = (start, end)
    if target is None:
        return "\n".join([*lines, "", f"## {category}", line]) + "\n"
    start, end = target
    insert_at = end
    while insert_at > start + 1 and not lines[insert_at - 1].strip():
        insert_at -= 1
    lines.insert(insert_at, line)
    return "\n".join(lines) + "\n"


class _AnyExpiry:
    """The default of :func:`remove_fact`'s ``expires``: a bullet of any expiry."""

    def __repr__(self) -> str:
        return "ANY_EXPIRY"


#: :func:`remove_fact` matches a bullet whatever its expiry comment says.
ANY_EXPIRY = _AnyExpiry()


def _bullet_expiry(body: str) -> datetime | _AnyExpiry | None:
    comment = _expiry().search(body)
    if comment is None:
        return None
    try:
        return parse_timestamp(comment.group(1))
    except ValueError:
        return ANY_EXPIRY  # unreadable: no record's expiry can equal it


def remove_fact(
    text: str,
    category: str,
    fact_text: str,
    *,
    expires: datetime | _AnyExpiry | None = ANY_EXPIRY,
) -> str | None:
    """Return MEMORY.md without the last bullet ``fact_text`` in ``category``
    (None when no such bullet exists). A section left without bullets is removed.

    ``expires``: only a bullet with this expiry comment (None: a bullet without one)
    is removed; the same text with another expiry is another record's fact.
    """
    lines = _split_lines(text)
    spans = _section_spans(lines)
    for cat, start, end in reversed(spans):
        name = None if cat is None else _readable(cat)
        if name != category and not (cat is None and category == DEFAULT_CATEGORY):
            continue
        for i in range(end - 1, start - 1, -1):
            bullet = _BULLET.match(lines[i])
            if bullet is None:
                continue
            candidate = _readable(_expiry().sub("", bullet.group(1)).strip())
            if candidate == fact_text and (
                expires is ANY_EXPIRY or _bullet_expiry(bullet.group(1)) == expires
            ):
                del lines[i]
                section = lines[start + 1 : end - 1] if cat is not None else []
                if cat is not None and all(not x.strip() for x in section):
                    del lines[start : end - 1]
                return "\n".join(lines).rstrip("\n") + "\n"
    return None


def _unexpired(body: list[str], now: datetime) -> list[str]:
    """The lines of ``body`` but the bullets whose expiry comment is at or before
    ``now`` (an unreadable expiry is kept)."""
    kept = []
    for line in body:
        bullet = _BULLET.match(line)
        if bullet:
            comment = _expiry().search(bullet.group(1))
            if comment:
                try:
                    if parse_timestamp(comment.group(1)) <= now:
                        continue
                except ValueError:
                    pass
        kept.append(line)
    return kept


def rewrite_memory_md(text: str, now: datetime | None = None) -> str:
    """Tidy MEMORY.md: merge repeated headers of a category into one section (first
    appearance order) and, when ``now`` is given, drop bullets expired at ``now``.
    Prose lines are kept in their section."""
    lines = _split_lines(text.rstrip("\n"))
    preamble: list[str] = []
    order: list[str] = []
    bodies: dict[str, list[str]] = {}
    for cat, start, end in _section_spans(lines):
        body = lines[start:end] if cat is None else lines[start + 1 : end]
        kept = body if now is None else _unexpired(body, now)
        while kept and not kept[-1].strip():
            kept.pop()
        while cat is not None and kept and not kept[0].strip():
            kept.pop(0)
        if cat is None:
            preamble = kept
            continue
        if cat not in bodies:
            order.append(cat)
            bodies[cat] = []
        bodies[cat].extend(kept)
    if not preamble:
        preamble = [TITLE]
    out = list(preamble)
    for cat in order:
        if not any(_BULLET.match(x) for x in bodies[cat]) and not any(
            x.strip() for x in bodies[cat]
        ):
            continue
        out.extend(["", f"## {cat}", *bodies[cat]])
    return "\n".join(out) + "\n"


def bullet_line(fact: Fact) -> str:
    """The canonical bullet line of a parsed fact (``- text`` plus its expiry comment)."""
    line = f"- {fact.text}"
    if fact.expires_at is not None:
        line += f" <!-- expires: {format_timestamp(fact.expires_at)} -->"
    return line


def outline(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Split MEMORY.md into its bullets as ``(category, canonical line)`` pairs and the
    other non-blank lines (prose; the ``# Agent Memory`` title is not prose), both in
    file order. Repeated headers of one
    category count as one section."""
    bullets: list[tuple[str, str]] = []
    prose: list[str] = []
    doc = MemoryDocument()
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if _HEADER.match(line):
            doc.feed([line])
            continue
        if _BULLET.match(line):
            before = doc.fact_count()
            doc.feed([line])
            if doc.fact_count() > before:
                cat = doc.last_category or DEFAULT_CATEGORY
                bullets.append((cat, bullet_line(doc.sections[cat][-1])))
            continue
        if line.strip() and line.strip() != TITLE:
            prose.append(line)
    return bullets, prose


def has_bullet(text: str, category: str, line: str) -> bool:
    """True when MEMORY.md ``text`` has the canonical bullet ``line`` under ``category``."""
    return (category, line) in set(outline(text)[0])


def fact_text_of(line: str) -> str:
    """The escaped fact text of a bullet line (bullet marker and expiry comment removed)."""
    match = _BULLET.match(line)
    body = match.group(1) if match else line
    return _expiry().sub("", body).strip()
