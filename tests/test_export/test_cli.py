"""The ``fsmemory export`` subcommand, driven through argparse as the CLI wires it."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from typing import Any

import pytest

from fsmemory._cli_export import add_export_parser
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


def test_wired_into_the_fsmemory_command(
    local_dirs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from fsmemory import cli

    src, dest = local_dirs
    _source(src)
    assert cli.main(["-o", "auto_mkdir=true", "export", src, dest, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3


def _export_process(
    src: str, dest: str, call: str, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``fsmemory export SRC DEST --json`` in a fresh process through ``call`` (of
    ``main``); returns its report and what it loaded."""
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from fsmemory.cli import main\n"
        f"status = {call}\n"
        "heavy = ('fsmemory.memory.knowledge', 'fsmemory.memory._index', "
        "'fsmemory.integrations.mcp', 'fsmemory.memory._rank', 'pyarrow.compute', 'numpy')\n"
        "loaded = sorted(m for m in heavy if m in sys.modules)\n"
        "import numpy  # still importable afterwards\n"
        "print(json.dumps({'status': status, 'loaded': loaded}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "export", src, dest, "--json", "--no-progress", "--full"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    *report, last = done.stdout.strip().splitlines()
    return json.loads("\n".join(report)), json.loads(last)


def test_an_export_process_loads_neither_the_memory_layer_nor_mcp(
    local_dirs: tuple[str, str],
) -> None:
    """``fsmemory export ...`` (one of many shard processes, say) builds only the export
    command's parser: what the other commands need is never imported, nor (with the
    speed-ups on) ``pyarrow.compute``, while the fast and the reference parser both run
    (one line is corrupt); the report and the exit status are those of the full command
    line. numpy loads with pyarrow as usual, so pyarrow converts numpy objects."""
    pytest.importorskip("numpy")
    src, dest = local_dirs
    _source(src)
    env = {k: v for k, v in os.environ.items() if k != "FSMEMORY_NO_SPEEDUPS"}
    expected = ["numpy"] if "numpy" in _loaded_by_pyarrow() else []
    # As the console script runs it: the process is the command's own.
    report, seen = _export_process(src, dest, "main()", env)
    assert seen == {"status": 0, "loaded": expected} and report["rows"] == 3
    # Called with arguments (a library use of the command).
    report, seen = _export_process(src, dest, "main(sys.argv[1:])", env)
    assert seen == {"status": 0, "loaded": expected} and report["rows"] == 3
    assert sorted(r["content"] for r in read_rows(dest)) == ["a", "b", "c"]
    # The full command line still lists every command (and its help names export).
    from fsmemory import cli

    usage = cli.build_parser().format_help()
    assert all(name in usage for name in ("export", "mcp", "remember", "recall"))


def _loaded_by_pyarrow() -> list[str]:
    import subprocess
    import sys

    code = "import sys, pyarrow, pyarrow.parquet, pyarrow.json; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ["numpy"] if done.stdout.strip() == "True" else []


def test_the_switch_takes_the_public_compute_path(local_dirs: tuple[str, str]) -> None:
    """``FSMEMORY_NO_SPEEDUPS=1``: the export's kernels come from the public
    ``pyarrow.compute`` (imported), and the export gives the same rows."""
    src, dest = local_dirs
    _source(src)
    env = {**os.environ, "FSMEMORY_NO_SPEEDUPS": "1"}
    report, seen = _export_process(src, dest, "main()", env)
    assert seen["status"] == 0 and "pyarrow.compute" in seen["loaded"]
    assert report["rows"] == 3
    assert sorted(r["content"] for r in read_rows(dest)) == ["a", "b", "c"]


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


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_source_that_is_not_a_folder_is_one_line_and_exit_1(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    from fsmemory import cli

    source = tmp_path / "nonexistent"
    if kind == "file":
        source.write_text("x")
    dest = tmp_path / "out"
    assert cli.main(["export", str(source), str(dest)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nonexistent" in err
    assert not dest.exists()  # no manifest, nothing


def test_messages_name_cli_flags(
    local_dirs: tuple[str, str], tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = local_dirs
    _source(src)
    assert _run(["export", src, dest]) == 0
    other = tmp_path / "other"
    other.mkdir()
    capsys.readouterr()
    assert _run(["export", str(other), dest]) == 2
    err = capsys.readouterr().err
    assert "--full" in err and "incremental" not in err and err.count("\n") == 1


def test_relative_and_absolute_source_are_the_same(
    local_dirs: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = local_dirs
    _source(src)
    monkeypatch.chdir(os.path.dirname(src))
    assert _run(["export", os.path.basename(src), dest, "--json"]) == 0
    capsys.readouterr()
    assert _run(["export", src, dest, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 0


def test_export_into_the_source_is_refused(
    local_dirs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    src, _ = local_dirs
    _source(src)
    assert _run(["export", src, os.path.join(src, "out")]) == 2
    assert "inside the source" in capsys.readouterr().err
    assert not os.path.exists(os.path.join(src, "out"))


def test_shard_and_compact_flags(
    local_dirs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = local_dirs
    _source(src)
    assert _run(["export", src, dest, "--shard", "0/1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shard"] == "0/1"
    assert _run(["export", src, dest, "--compact", "--json", "--concurrency", "2"]) == 0
    capsys.readouterr()
    for bad in (["--shard", "2/2"], ["--shard", "x"], ["--shard", "0/2", "--full"],
                ["--shard", "0/2", "--compact"], ["--concurrency", "0"]):  # fmt: skip
        with contextlib.suppress(SystemExit):
            assert _run(["export", src, dest, *bad]) == 2
        assert "shard" in capsys.readouterr().err or bad[0] == "--concurrency"


def test_readme_synopsis_lists_every_flag() -> None:
    from pathlib import Path

    import fsmemory.export

    readme = Path(fsmemory.export.__file__).with_name("README.md").read_text()
    synopsis = readme.split("## Command line", 1)[1].split("```", 2)[1]
    parser = argparse.ArgumentParser(prog="fsmemory")
    subparsers = parser.add_subparsers(dest="command")
    add_export_parser(subparsers)
    sub = subparsers.choices["export"]
    flags = {s for a in sub._actions for s in a.option_strings if s.startswith("--")}
    missing = sorted(f for f in flags - {"--help"} if f not in synopsis)
    assert missing == []
