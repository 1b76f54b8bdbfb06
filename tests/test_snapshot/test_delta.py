"""Unit tests of the delta algebra: apply_delta, fold_state, merge_delta."""

from __future__ import annotations

from typing import Any

import pytest

from fsmemory import SnapshotError, _jsonutil
from fsmemory.memory._replica import (
    DELTA_FORMAT,
    SnapshotReplica,
    _Folder,
    _WholeSnapshot,
    apply_delta,
    fold_state,
    merge_delta,
)
from fsmemory.snapshot import IncrementalBackend, SnapshotState, encode_file, pack_archive

MD = "# Agent Memory\n\n## a\n- one\n- two\n\n## b\n- three\n"


def delta(**sections: Any) -> dict[str, Any]:
    return {"format": DELTA_FORMAT, "version": 1, **sections}


def test_append_unions_lines_and_repairs_a_missing_newline() -> None:
    folder = _Folder({"logs/2026-01-01.jsonl": b'{"id": "1"}\n{"id": "2"}'})
    apply_delta(folder, delta(append={"logs/2026-01-01.jsonl": '{"id": "2"}\n{"id": "3"}\n'}))
    assert folder.files["logs/2026-01-01.jsonl"] == b'{"id": "1"}\n{"id": "2"}\n{"id": "3"}\n'
    apply_delta(folder, delta(append={"logs/2026-01-01.jsonl": '{"id": "3"}\n'}))
    assert folder.files["logs/2026-01-01.jsonl"].count(b'"3"') == 1
    apply_delta(folder, delta(append={"logs/2026-01-02.jsonl": '{"id": "4"}\n\n'}))
    assert folder.files["logs/2026-01-02.jsonl"] == b'{"id": "4"}\n'


def test_put_then_delete_order_within_and_across_deltas() -> None:
    folder = _Folder({"x.txt": b"old", "gone.txt": b"bye"})
    apply_delta(folder, delta(put={"x.txt": encode_file(b"\xffnew")}, delete=["gone.txt"]))
    assert folder.files == {"x.txt": b"\xffnew"}
    # deletes run before puts inside one delta: a delete + put of one path keeps the put
    apply_delta(folder, delta(delete=["x.txt"], put={"x.txt": encode_file(b"again")}))
    assert folder.files == {"x.txt": b"again"}


def test_md_add_adds_every_bullet_and_md_remove_removes_one() -> None:
    """A fact remembered again has a bullet of its own, as in a plain folder."""
    folder = _Folder({"MEMORY.md": MD.encode()})
    apply_delta(folder, delta(md_add=[["a", "- one"], ["c", "- four"], ["c", "- four"]]))
    text = folder.files["MEMORY.md"].decode()
    assert text.count("- one") == 2 and text.count("- four") == 2 and "## c" in text
    apply_delta(folder, delta(md_remove=[["a", "- one"]]))
    assert folder.files["MEMORY.md"].decode().count("- one") == 1
    apply_delta(folder, delta(md_remove=[["a", "- two"], ["z", "- missing"]]))
    text = folder.files["MEMORY.md"].decode()
    assert "- two" not in text and "- one" in text and "- three" in text


def test_md_changes_keep_bytes_that_are_not_utf8() -> None:
    raw = b"# Agent Memory\n\nkept \xff\xfe prose\n\n## a\n- caf\xe9\n"
    folder = _Folder({"MEMORY.md": raw})
    apply_delta(folder, delta(md_add=[["a", "- new"]]))
    assert b"kept \xff\xfe prose\n" in folder.files["MEMORY.md"]
    assert b"- caf\xe9\n" in folder.files["MEMORY.md"]
    assert b"- new\n" in folder.files["MEMORY.md"]


def test_fold_state_applies_deltas_in_order_and_validates() -> None:
    base = pack_archive({"MEMORY.md": MD.encode(), "n.txt": b"1"})
    deltas = [
        ("d1", _jsonutil.dumps(delta(put={"n.txt": encode_file(b"2")}))),
        ("d2", _jsonutil.dumps(delta(put={"n.txt": encode_file(b"3")}, md_add=[["b", "- x"]]))),
    ]
    files = fold_state(SnapshotState(base, deltas))
    assert files["n.txt"] == b"3" and b"- x" in files["MEMORY.md"]
    for bad in (
        b"not json",
        b'{"format": "other"}',
        _jsonutil.dumps(delta(put={"../escape": encode_file(b"x")})),
        _jsonutil.dumps(delta(md_add=[["a", "- two\n## forged"]])),
        _jsonutil.dumps(delta(md_add=[["a"]])),
        _jsonutil.dumps(delta(append={"logs/2026-01-01.jsonl": 5})),
    ):
        with pytest.raises(SnapshotError):
            fold_state(SnapshotState(base, [("bad", bad)]))


def test_merge_delta_adds_what_only_the_folder_has() -> None:
    remote = {"MEMORY.md": MD.encode(), "logs/2026-01-01.jsonl": b'{"id": "r"}\n'}
    local = {
        "MEMORY.md": (MD + "- five\n").encode(),
        "logs/2026-01-01.jsonl": b'{"id": "l"}\n',
        "only.bin": b"\x00\x01",
    }
    merged = _Folder(dict(remote))
    d = merge_delta(local, remote)
    assert d is not None
    apply_delta(merged, d)
    assert merged.files["only.bin"] == b"\x00\x01"
    assert merged.files["logs/2026-01-01.jsonl"] == b'{"id": "r"}\n{"id": "l"}\n'
    assert b"- five" in merged.files["MEMORY.md"] and b"- three" in merged.files["MEMORY.md"]
    assert merge_delta(remote, remote) is None


def test_merge_delta_keeps_the_side_with_more_prose() -> None:
    remote = {"MEMORY.md": MD.encode()}
    local = {"MEMORY.md": b"# Agent Memory\n\nA note by hand.\n\n## a\n- mine\n"}
    merged = _Folder(dict(remote))
    d = merge_delta(local, remote)
    assert d is not None
    apply_delta(merged, d)
    text = merged.files["MEMORY.md"].decode()
    assert "A note by hand." in text
    assert all(f"- {w}" in text for w in ("mine", "one", "two", "three"))


@pytest.mark.parametrize(
    ("local", "remote"),
    [
        ({"a.txt": b"mine"}, {"a.txt": b"theirs"}),
        ({"MEMORY.md": b"# Agent Memory\n\nmine\n"}, {"MEMORY.md": b"# Agent Memory\n\ntheirs\n"}),
        ({"logs/2026-01-01.jsonl": b"\xff\n"}, {"logs/2026-01-01.jsonl": b"{}\n"}),
    ],
)
def test_merge_delta_refuses_what_it_cannot_keep_whole(
    local: dict[str, bytes], remote: dict[str, bytes]
) -> None:
    with pytest.raises(SnapshotError, match="nothing was changed"):
        merge_delta(local, remote)


class Blob:
    def __init__(self) -> None:
        self.data: bytes | None = None

    def load_bytes(self) -> bytes | None:
        return self.data

    def save_bytes(self, data: bytes) -> None:
        self.data = data


def test_whole_snapshot_adapter_is_an_incremental_backend_that_always_folds() -> None:
    blob = Blob()
    adapter = _WholeSnapshot(blob)
    assert isinstance(adapter, IncrementalBackend)
    assert not isinstance(blob, IncrementalBackend)
    assert adapter.compact_after == 1
    assert adapter.load_state() == SnapshotState(None)
    state = adapter.save_base(b"{}", folded=(), expected=SnapshotState(None))
    assert blob.data == b"{}" and state.version == adapter.load_state().version
    with pytest.raises(SnapshotError):
        adapter.save_delta(b"{}")


def test_replica_rejects_bad_options(tmp_path: Any) -> None:
    from fsmemory import InvalidInputError
    from fsmemory.fs import open_root

    root = open_root(str(tmp_path))
    with pytest.raises(ValueError):
        SnapshotReplica(root, Blob(), on_corrupt="ignore")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        SnapshotReplica(root, Blob(), compact_after=0)


def test_a_two_method_backend_folds_every_save_whatever_the_threshold(tmp_path: Any) -> None:
    from fsmemory import KnowledgeMemory
    from fsmemory.snapshot import unpack_archive

    blob = Blob()
    km = KnowledgeMemory(tmp_path / "a", backend=blob, snapshot_compact_after=50)
    assert km._replica is not None and km._replica.compact_after == 1
    km.remember("one")
    km.remember("two")
    assert km._replica.folds == 2
    assert blob.data is not None
    log = next(v for k, v in unpack_archive(blob.data).items() if k.startswith("logs/"))
    assert b"one" in log and b"two" in log


def test_warm_memos_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from fsmemory import KnowledgeMemory
    from fsmemory.memory import _replica
    from fsmemory.snapshot import FsspecBackend

    monkeypatch.setattr(_replica, "_MEMO_BYTES", 1)
    monkeypatch.setattr(_replica, "_MEMOS", _replica.OrderedDict())
    for user in ("u1", "u2", "u3"):
        url = f"memory://memos/{tmp_path.name}/{user}.snapshot"
        km = KnowledgeMemory(tmp_path / user, backend=FsspecBackend(url))
        km.remember(f"fact of {user}")
        km.remember(f"second fact of {user}")
    assert len(_replica._MEMOS) == 1  # only the most recent folder is remembered


@pytest.mark.parametrize("many", [False, True])
def test_append_union_is_the_same_for_few_and_many_lines(many: bool) -> None:
    path = "logs/2026-01-01.jsonl"
    base = b"".join(b'{"id": "%d"}\n' % i for i in range(40))
    extra = [b'{"id": "%d"}' % i for i in range(35, 35 + (30 if many else 6))]
    folder = _Folder({path: base})
    apply_delta(folder, delta(append={path: (b"\n".join(extra) + b"\n").decode()}))
    lines = folder.files[path].split(b"\n")[:-1]
    assert lines == [b'{"id": "%d"}' % i for i in range(35 + len(extra))]
    apply_delta(folder, delta(append={path: '{"id": "0"}\n{"id": "new"}\n'}))
    assert folder.files[path].split(b"\n")[-2:] == [b'{"id": "new"}', b""]
    assert folder.files[path].count(b'{"id": "0"}\n') == 1
