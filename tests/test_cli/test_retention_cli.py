"""``fsmemory context`` and the other reading commands never delete anything; ``prune``
uses the memory's stored retention, which ``retention`` shows and sets (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsmemory.cli import main
from tests.test_memory._history import log_files, snapshot_files, write_history


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "written-before-storing"])
def test_reading_commands_never_delete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stored: bool
) -> None:
    folder = tmp_path / "mem"
    before = write_history(folder, stored=stored)
    store = str(folder)
    for argv in (
        ["context"],
        ["recall", "garden"],
        ["facts"],
        ["recent", "--days", "400"],
        ["stats"],
        ["forget", "no-such-id"],
        ["retention"],
    ):
        code, out, _ = cli(capsys, "--store", store, *argv)
        assert code in (0, 1), argv
        if argv == ["context"]:
            assert "day 59 note about the garden" in out
        after = snapshot_files(folder)
        assert log_files(after) == log_files(before), argv
        assert after.get("fsmemory.json") == before.get("fsmemory.json"), argv


def test_prune_uses_the_stored_retention_and_retention_sets_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "mem"
    before = write_history(folder)
    store = str(folder)
    assert (
        cli(capsys, "--store", store, "retention")[1] == "logs older than 365 day(s) are pruned\n"
    )
    code, out, _ = cli(capsys, "--store", store, "prune", "--json")
    assert code == 0 and json.loads(out) == {"deleted": 0}
    assert log_files(snapshot_files(folder)) == log_files(before)
    code, out, _ = cli(capsys, "--store", store, "retention", "30", "--json")
    assert code == 0 and json.loads(out) == {"retention_days": 30}
    assert log_files(snapshot_files(folder)) == log_files(before)  # setting deletes nothing
    code, out, _ = cli(capsys, "--store", store, "prune")
    assert code == 0 and out.startswith("deleted 29 log file(s)")
    assert len(log_files(snapshot_files(folder))) == 31
    code, out, _ = cli(capsys, "--store", store, "retention", "--keep-all")
    assert code == 0 and "kept until an explicit prune" in out
    assert json.loads((folder / "fsmemory.json").read_text())["retention_days"] is None
    assert cli(capsys, "--store", store, "prune")[1].startswith("deleted 0 ")
    assert cli(capsys, "--store", store, "prune", "--max-days", "1")[1].startswith("deleted 29 ")


@pytest.mark.parametrize(
    "argv",
    [["retention", "-1"], ["retention", "x"], ["retention", "5", "--keep-all"]],
)
def test_bad_retention_arguments_are_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    folder = tmp_path / "mem"
    before = write_history(folder, days=3)
    try:
        code = main(["--store", str(folder), *argv])
    except SystemExit as exc:  # a usage error
        code = int(exc.code or 0)
    capsys.readouterr()
    assert code != 0
    assert snapshot_files(folder) == before


def test_a_damaged_settings_file_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "mem"
    write_history(folder, days=3)
    (folder / "fsmemory.json").write_bytes(b"{oops")
    before = snapshot_files(folder)
    code, _, err = cli(capsys, "--store", str(folder), "prune")
    assert code == 1 and "fsmemory.json is damaged" in err and err.count("\n") == 1
    assert snapshot_files(folder) == before
