"""Folding deltas into a snapshot's files: a log that many deltas append to grows in
place, and every line lands exactly as the plain copy-and-search fold put it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fsmemory.memory._delta import DELTA_FORMAT, Folder, _holds_line, apply_delta, fold_state
from fsmemory.snapshot.backends import SnapshotState

# Lines from a small alphabet, so that lines often repeat and contain one another.
_LINE = st.binary(min_size=0, max_size=6).map(lambda b: bytes(97 + x % 3 for x in b))
_TEXT = st.lists(st.one_of(_LINE, st.just(b"\r"), st.just(b" ")), max_size=8).map(
    lambda parts: b"\n".join(parts)
)


def _reference_append(files: dict[str, bytes], path: str, chunk: bytes) -> None:
    """The fold before logs grew in place: copy the file to search it, copy it again to
    append."""
    existing = files.get(path, b"")
    lines = [ln for ln in chunk.split(b"\n") if ln.strip()]
    framed = b"\n" + existing + b"\n"
    new = [ln for ln in lines if b"\n" + ln + b"\n" not in framed]
    if not new:
        return
    if existing and not existing.endswith(b"\n"):
        existing += b"\n"
    files[path] = existing + b"\n".join(new) + b"\n"


@settings(max_examples=300, deadline=None)
@given(data=_TEXT, line=_LINE.filter(bool))
def test_holds_line_is_the_framed_search(data: bytes, line: bytes) -> None:
    assert _holds_line(data, line) == (b"\n" + line + b"\n" in b"\n" + data + b"\n")
    assert _holds_line(bytearray(data), line) == _holds_line(data, line)


@settings(max_examples=200, deadline=None)
@given(start=_TEXT, chunks=st.lists(_TEXT, max_size=8))
def test_appends_give_the_bytes_the_copying_fold_gave(start: bytes, chunks: list[bytes]) -> None:
    folder = Folder({"logs/2026-12-03.jsonl": start, "other.txt": b"kept"})
    expected = {"logs/2026-12-03.jsonl": start, "other.txt": b"kept"}
    for chunk in chunks:
        folder.append_lines("logs/2026-12-03.jsonl", chunk)
        _reference_append(expected, "logs/2026-12-03.jsonl", chunk)
        assert bytes(folder.get("logs/2026-12-03.jsonl")) == expected["logs/2026-12-03.jsonl"]
    files = folder.files
    assert files == expected
    assert all(type(v) is bytes for v in files.values())


def test_put_and_delete_drop_a_log_grown_in_place() -> None:
    folder = Folder({"a.jsonl": b"x\n"})
    folder.append_lines("a.jsonl", b"y\n")
    folder.put("a.jsonl", b"fresh\n")
    folder.append_lines("a.jsonl", b"z\n")
    assert folder.files == {"a.jsonl": b"fresh\nz\n"}
    folder.append_lines("a.jsonl", b"w\n")
    folder.delete("a.jsonl")
    assert folder.files == {}
    folder.append_lines("a.jsonl", b"v")
    assert folder.files == {"a.jsonl": b"v\n"}


def test_many_deltas_on_a_large_log_keep_every_line_once() -> None:
    """A base whose log holds 5,000 lines and 200 deltas of two lines each (one of them
    a line the log already holds): 400 lines more, none twice, the base's bytes first."""
    base_log = b"".join(b'{"id": "%d"}\n' % i for i in range(5000))
    deltas = [
        (
            f"d{i}",
            json.dumps(
                {
                    "format": DELTA_FORMAT,
                    "id": f"delta-{i}",
                    "append": {"logs/2026-12-03.jsonl": f'{{"id": "new-{i}"}}\n{{"id": "{i}"}}\n'},
                }
            ).encode(),
        )
        for i in range(200)
    ]
    state = SnapshotState(base=None, deltas=deltas)
    files = fold_state(state, base={"logs/2026-12-03.jsonl": base_log})
    out = files["logs/2026-12-03.jsonl"]
    assert type(out) is bytes and out.startswith(base_log)
    lines = out.splitlines()
    assert len(lines) == 5200 and len(set(lines)) == 5200
    assert lines[5000:] == [b'{"id": "new-%d"}' % i for i in range(200)]


def test_a_memory_md_append_is_read_back_for_bullets() -> None:
    folder = Folder({})
    apply_delta(folder, {"append": {"MEMORY.md": "# Memory\n"}})
    apply_delta(folder, {"md_add": [["general", "- a fact"]]})
    assert b"- a fact" in folder.files["MEMORY.md"]
