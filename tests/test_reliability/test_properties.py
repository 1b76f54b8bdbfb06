"""Property-based tests of the public API with hostile input.

Every call either succeeds and round-trips exactly, or raises a documented error
(:class:`InvalidInputError` / :class:`InvalidPathError`, both ValueErrors;
:class:`ContentTooLargeError`); and in both cases nothing else in the memory changes.

Hostile text: any Unicode (lone surrogates included), NUL and other controls, CR/LF,
markdown, MEMORY.md and prompt delimiters, JSON that looks like a log record, long
strings; hostile paths: ``..``, ``%2e%2e``, absolute paths, backslashes, drive letters,
reserved names; hostile URLs. The default run uses ~100 examples per property on local
folders and ``memory://``; ``-m slow`` runs 400 and adds Redis, S3 and GCS.
"""

from __future__ import annotations

import os
import unicodedata
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsmemory import KnowledgeMemory
from fsmemory.errors import (
    ContentTooLargeError,
    InvalidInputError,
    InvalidPathError,
    MissingDependencyError,
)
from fsmemory.fs import StorageRoot, open_root
from fsmemory.store import SyncKnowledgeStore


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


FRAGMENTS = [
    "\x00",
    "\r\n",
    "\r",
    "\n",
    "\n## injected\n- forged bullet\n",
    "# Agent Memory",
    "- ",
    "<!-- expires: 2000-01-01T00:00:00.000000Z -->",
    "<!--",
    "-->",
    "\\n",
    "\\",
    "```",
    "[Long-term Memory]",
    "[Recent Memory]",
    "</memory>",
    "<|im_start|>system",
    "Human:",
    "\n\nAssistant:",
    '{"op": "forget", "id": "x"}',
    '"}\n{"id": "forged"',
    "\u2028",
    "\u2029",
    "\x85",
    "\u202e",
    "\ufeff",
    "\x1b[31m",
    "\t",
    "\ud800",
    "\udfff",
    "é",
    "e\u0301",
    "🧠",
    "  ",
]

_SURROGATE_FREE = [f for f in FRAGMENTS if _encodable(f)]

#: mostly storable text (any character but lone surrogates), sometimes with surrogates
hostile_text = st.one_of(
    st.lists(
        st.one_of(st.sampled_from(_SURROGATE_FREE), st.text(max_size=20)),
        min_size=1,
        max_size=12,
    ).map("".join),
    st.lists(
        st.one_of(st.sampled_from(_SURROGATE_FREE), st.text(max_size=20), st.text(max_size=20)),
        min_size=1,
        max_size=12,
    ).map("".join),
    st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS),
            st.text(st.characters(exclude_categories=()), max_size=20),
        ),
        max_size=12,
    ).map("".join),
)

hostile_category = st.one_of(
    st.sampled_from(["general", "prefs", "a b", " padded\t ", "x" * 64, "é/ü:1", "Ω-2.0"]),
    st.sampled_from(["x" * 65, "## h", "a\nb", "", "[sys]", "a|b", "<c>"]),
    st.text(st.characters(exclude_categories=()), max_size=12),
)

SEGMENTS = [
    "a",
    "b.md",
    "..",
    ".",
    "%2e%2e",
    "%2E%2e",
    "%2f",
    "%5c",
    "...",
    "\\",
    "..\\..",
    "C:",
    "c:\\x",
    "~",
    "\x00",
    "\n",
    ".fsmemory.lock",
    ".fsmemory-tmp-x",
    "\ud800",
    "\u202e",
    " ",
    "é",
    "",
]

hostile_path = st.one_of(
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5).map("/".join),
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5).map(lambda s: "/" + "/".join(s)),
    st.text(st.characters(exclude_categories=()), max_size=16),
)

EXAMPLES = 200
SLOW_EXAMPLES = 1000
_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    "derandomize": True,
}


def _valid_category(category: str) -> bool:
    """The documented category rule (see ``remember``)."""
    if "\n" in category or "\r" in category:
        return False
    cleaned = " ".join(category.split())
    punct = set(" _-./:@+&',")
    return (
        bool(cleaned)
        and len(cleaned) <= 64
        and all(ch.isalnum() or ch in punct for ch in cleaned)
        and not any(unicodedata.category(ch) == "Cs" for ch in cleaned)
    )


def _files(root: StorageRoot) -> dict[str, bytes]:
    return {i.path: root.read_bytes(i.path) for i in root.list("", recursive=True)}


def _roundtrip_property(url: str, options: dict[str, Any], examples: int) -> None:
    root = open_root(url, options)
    km = KnowledgeMemory(root, max_content_bytes=4096)
    acked: dict[str, str] = {}
    seen: list[int] = []

    @settings(max_examples=examples, **_SETTINGS)
    @given(content=hostile_text, category=hostile_category, persistent=st.booleans())
    def check(content: str, category: str, persistent: bool) -> None:
        before = _files(root)
        expect_ok = (
            _valid_category(category)
            and _encodable(content)
            and bool(content.strip())
            and len(content.encode("utf-8")) <= 4096
        )
        try:
            entry_id = km.remember(content, category=category, persistent=persistent)
        except InvalidInputError:
            assert not expect_ok, f"rejected valid input {content!r} / {category!r}"
            assert _files(root) == before, "a rejected call changed the memory"
            return
        assert expect_ok, f"accepted invalid input {content!r} / {category!r}"
        seen.append(1)
        acked[entry_id] = content
        fresh = KnowledgeMemory(root)
        entry = fresh.get(entry_id)
        assert entry is not None and entry.content == content
        assert entry.category == " ".join(category.split())
        if persistent:
            facts = fresh.get_persistent_facts()[entry.category]
            assert content.strip() in facts
        # Nothing else changed: every earlier entry reads back as it was.
        for other, text in acked.items():
            got = fresh.get(other)
            assert got is not None and got.content == text
        assert fresh.stats()["corrupt_lines"] == 0
        context = fresh.build_context()
        for line in context.splitlines():
            assert not line.startswith("- forged") and "\n" not in line

    check()
    print(f"{len(seen)} accepted, {len(acked)} stored")
    assert len(seen) >= examples // 10, f"only {len(seen)} of the examples were accepted"


def test_remember_roundtrips_hostile_text_memory() -> None:
    """remember() on memory://: exact round trip or a documented error, nothing else."""
    _roundtrip_property(f"memory://prop-{uuid.uuid4().hex[:8]}", {}, EXAMPLES)


def test_remember_roundtrips_hostile_text_local(tmp_path: Path) -> None:
    """remember() on a local folder: exact round trip or a documented error."""
    _roundtrip_property(str(tmp_path / "mem"), {}, EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend",
    [
        "local",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("s3", marks=pytest.mark.s3),
        pytest.param("gcs", marks=pytest.mark.gcs),
    ],
)
def test_remember_roundtrips_hostile_text_every_backend(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """The same property on every backend, more examples."""
    from tests.test_memory.conftest import backend_location

    url, options = backend_location(request, backend, tmp_path)
    examples = SLOW_EXAMPLES if backend == "local" else 100
    _roundtrip_property(url, options, examples)


@pytest.mark.parametrize(
    "size", [2 * 1024 * 1024, pytest.param(10 * 1024 * 1024, marks=pytest.mark.slow)]
)
def test_megabytes_of_content(tmp_path: Path, size: int) -> None:
    """A string of megabytes (2 MB by default, 10 MB under ``-m slow``; the default limit
    is 1 MB): over the default limit it is refused with a clear error and nothing is
    written; under a raised limit it round-trips exactly."""
    text = "ä\n<!--" * (size // 7 + 1)  # 7 bytes of UTF-8 per repetition
    assert len(text.encode()) >= size
    km = KnowledgeMemory(tmp_path / "small")
    with pytest.raises(ContentTooLargeError, match="limit") as info:
        km.remember(text)
    assert isinstance(info.value, ValueError)
    assert _files(km.root) == {}
    big = KnowledgeMemory(tmp_path / "big", max_content_bytes=16 * 1024 * 1024)
    entry_id = big.remember(text, persistent=True)
    entry = KnowledgeMemory(tmp_path / "big").get(entry_id)
    assert entry is not None and entry.content == text


def _store_property(tmp_path: Path, examples: int) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "outside.txt").write_text("do not touch")
    root_dir = sandbox / "root"
    # A small file limit, so some writes and appends hit it (ContentTooLargeError).
    store = SyncKnowledgeStore(str(root_dir), watch="none", max_file_bytes=128)
    written: dict[str, str] = {}

    def outside() -> set[str]:
        found = set()
        for dirpath, _dirs, files in os.walk(sandbox):
            for name in files:
                full = os.path.join(dirpath, name)
                if not full.startswith(str(root_dir) + os.sep):
                    found.add(full)
        return found

    baseline = outside()

    @settings(max_examples=examples, **_SETTINGS)
    @given(path=hostile_path, content=hostile_text)
    def check(path: str, content: str) -> None:
        before = {p: store.read(p) for p in written}
        try:
            store.write(path, content)
        except (InvalidPathError, InvalidInputError) as exc:
            assert isinstance(exc, ValueError)
            assert {p: store.read(p) for p in written} == before
        else:
            assert store.read(path) == content
            written["/" + "/".join(s for s in path.split("/") if s)] = content
        assert outside() == baseline, "a write escaped the store's root"
        for p, text in written.items():
            assert store.read(p) == text
        norm = "/" + "/".join(s for s in path.split("/") if s)
        try:
            store.append(path, content)
        except (InvalidPathError, InvalidInputError):
            assert norm not in written or store.read(norm) == written[norm]
        else:
            written[norm] = written.get(norm, "") + content
            assert store.read(norm) == written[norm]
        assert outside() == baseline

    check()
    assert (sandbox / "outside.txt").read_text() == "do not touch"


def test_path_store_hostile_paths(tmp_path: Path) -> None:
    """Path-store writes and appends with hostile paths and text, under a 128-byte file
    limit: stored inside the root exactly, or a documented ValueError (InvalidPathError,
    InvalidInputError, ContentTooLargeError) and nothing changed; nothing outside the
    root is ever created or changed."""
    _store_property(tmp_path, EXAMPLES)


@pytest.mark.slow
def test_path_store_hostile_paths_many(tmp_path: Path) -> None:
    """The same with more examples."""
    _store_property(tmp_path, SLOW_EXAMPLES)


URLS = [
    "",
    "   ",
    "\x00",
    "a\x00b",
    "s3://",
    "s3:///key",
    "gs://",
    "gcs:///",
    "memory://",
    "memory://../../x",
    "nosuchprotocol://x/y",
    "file://",
]


@settings(max_examples=60, **_SETTINGS)
@given(
    url=st.one_of(
        st.sampled_from(URLS),
        st.text(st.characters(exclude_categories=()), max_size=12).map("memory://".__add__),
        st.text(st.characters(exclude_categories=()), max_size=12).map("nosuch://".__add__),
    )
)
def test_hostile_urls_open_or_raise_documented_errors(url: str) -> None:
    """open_root either opens a root or raises a documented ValueError (no other crash,
    no network: only URLs that cannot reach a host are generated)."""
    try:
        root = open_root(url)
    except (InvalidPathError, InvalidInputError, MissingDependencyError, ValueError):
        return
    assert isinstance(root, StorageRoot)
