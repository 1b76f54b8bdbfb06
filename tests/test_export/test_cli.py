"""The ``fsmemory export`` subcommand, driven through argparse as the CLI wires it."""

from __future__ import annotations

import argparse
import json

import pytest

from fsmemory.export._cli import add_export_parser, parse_storage_options
from fsmemory.fs import open_root

from .conftest import lines, read_rows, record, write_log


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fsmemory")
    add_export_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def _source(src: str) -> None:
    root = open_root(src)
    write_log(root, "2026-03-10", lines([record("a"), record("b", n=1)]) + b"{oops\n")
    write_log(root, "2026-03-11", lines([record("c", day="2026-03-11")]))


def test_summary_line(local_dirs: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    src, dest = local_dirs
    _source(src)
    assert _run(["export", src, dest]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 1
    assert "3 rows" in out and "Parquet files" in out and " s" in out
    assert "1 corrupt lines skipped" in out
    assert "\r" not in err  # no progress bar when stderr is not a terminal
    assert len(read_rows(dest)) == 3


def test_json_full_since(local_dirs: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    src, dest = local_dirs
    _source(src)
    assert _run(["export", src, dest, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["rows"] == 3 and first["corrupt_lines"] == 1
    assert first["corrupt_samples"][0]["line"] == 3
    assert _run(["export", src, dest, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 0
    assert _run(["export", src, dest, "--full", "--since", "2026-03-11", "--json"]) == 0
    rebuilt = json.loads(capsys.readouterr().out)
    assert rebuilt["full"] and rebuilt["rows"] == 1
    assert len(read_rows(dest)) == 1


def test_bad_input_exit_codes(
    local_dirs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = local_dirs
    assert _run(["export", src, dest, "--since", "not-a-date"]) == 2
    assert "since" in capsys.readouterr().err
    assert _run(["export", src, dest, "-o", "novalue"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


def test_storage_options_are_json_when_they_can_be() -> None:
    assert parse_storage_options(["anon=true", "n=3", "endpoint_url=http://x:1", "s=a=b"]) == {
        "anon": True, "n": 3, "endpoint_url": "http://x:1", "s": "a=b",
    }  # fmt: skip
    assert parse_storage_options(['client_kwargs={"region_name": "x"}']) == {
        "client_kwargs": {"region_name": "x"}
    }
    assert parse_storage_options(["client_kwargs.endpoint_url=http://h:1", ("anon", False)]) == {
        "client_kwargs": {"endpoint_url": "http://h:1"}, "anon": False,
    }  # fmt: skip


def test_wired_into_the_fsmemory_command(
    local_dirs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from fsmemory import cli

    src, dest = local_dirs
    _source(src)
    assert cli.main(["-o", "auto_mkdir=true", "export", src, dest, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3


def test_progress_bar_on_a_terminal(
    local_dirs: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    src, dest = local_dirs
    _source(src)
    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    assert _run(["export", src, dest]) == 0
    text = fake.getvalue()
    assert "lines" in text and "files" in text and text.startswith("\r[")
