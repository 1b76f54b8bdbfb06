"""``fsmemory export``: the exit code and the one stderr line of each way it can fail."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

import fsmemory.export
from fsmemory._cli_export import add_export_parser
from fsmemory.errors import BackendError, MissingDependencyError
from fsmemory.export import NeedsFullExport


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fsmemory")
    add_export_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--shard", "0/2", "--full"], "--full cannot be combined with --shard"),
        (["--shard", "1/2", "--compact"], "--compact cannot be combined with --shard"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--dest-storage-option", "novalue"], "KEY=VALUE"),
    ],
)
def test_bad_flags_exit_2_before_exporting(
    local_dirs: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    message: str,
) -> None:
    def must_not_run(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("exported despite bad flags")

    monkeypatch.setattr(fsmemory.export, "export_parquet", must_not_run)
    src, dest = local_dirs
    assert _run(["export", src, dest, *flags]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("fsmemory export: ") and message in err


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (NeedsFullExport("another source"), 2, "fsmemory export: another source; rebuild it "),
        (MissingDependencyError("pyarrow", "export"), 1, "fsmemory export: "),
        (ValueError("bad window"), 2, "fsmemory export: bad window"),
        (ImportError("no module x"), 2, "fsmemory export: no module x"),
        (BackendError("bucket said no"), 1, "fsmemory export failed: bucket said no"),
        (OSError("disk full"), 1, "fsmemory export failed: disk full"),
    ],
)
def test_an_export_that_raises_exits_with_its_code_and_one_line(
    local_dirs: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    code: int,
    line: str,
) -> None:
    def failing(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(fsmemory.export, "export_parquet", failing)
    src, dest = local_dirs
    assert _run(["export", src, dest]) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(line) and err.count("\n") == 1


def test_an_unexpected_error_propagates(
    local_dirs: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: Any, **kwargs: Any) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(fsmemory.export, "export_parquet", failing)
    src, dest = local_dirs
    with pytest.raises(KeyError):
        _run(["export", src, dest])
