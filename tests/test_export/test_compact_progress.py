"""Progress while ``compact`` merges small Parquet files: the library reports each file
(stage ``"rewrite"``) and ``fsmemory export --compact`` draws it as the export's bar."""

from __future__ import annotations

import io
import os
import sys

import pytest

from fsmemory.cli import main
from fsmemory.export import ExportProgress, export_parquet
from fsmemory.fs import open_root

from .conftest import lines, record, write_log

pytest.importorskip("pyarrow")


def _small_files(src: str, dest: str, runs: int) -> None:
    """``runs`` incremental exports of two tenants: ``runs`` small files in one partition."""
    root = open_root(os.path.join(src, "solo"))
    other = open_root(os.path.join(src, "other"))
    for run in range(runs):
        write_log(root, "2026-03-10", lines([record(f"r{run}", n=run, id=f"s{run}")]))
        write_log(other, "2026-03-10", lines([record(f"o{run}", n=run, id=f"o{run}")]))
        export_parquet(src, dest)


def test_the_library_reports_each_merged_file(local_dirs: tuple[str, str]) -> None:
    src, dest = local_dirs
    _small_files(src, dest, 6)
    seen: list[ExportProgress] = []
    report = export_parquet(src, dest, compact=True, progress=seen.append)
    rewrite = [p for p in seen if p.stage == "rewrite"]
    assert report.parts_compacted == 6
    assert [p.parts_done for p in rewrite] == list(range(7))
    assert {p.parts_total for p in rewrite} == {6}
    # Without compaction (nothing to merge or rewrite) no rewrite stage is reported.
    seen.clear()
    write_log(
        open_root(os.path.join(src, "solo")), "2026-03-11", lines([record("x", day="2026-03-11")])
    )
    export_parquet(src, dest, progress=seen.append)
    assert seen and all(p.stage == "read" and p.parts_total == 0 for p in seen)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_compact_command_draws_a_progress_bar(
    local_dirs: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = local_dirs
    _small_files(src, dest, 4)
    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    assert main(["export", src, dest, "--compact"]) == 0
    text = fake.getvalue()
    assert text.startswith("\r[")
    assert "merging small Parquet files  4/4 files" in text
    assert "[########################] 100% merging" in text
    assert text.endswith("\r\x1b[K")  # the bar is cleared before the summary
    assert "4 small Parquet files merged" in capsys.readouterr().out
    # --no-progress and a stderr that is not a terminal draw nothing.
    _small_files(src, dest, 2)
    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    assert main(["export", src, dest, "--compact", "--no-progress"]) == 0
    assert fake.getvalue() == ""
