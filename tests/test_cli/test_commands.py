"""Every ``fsmemory`` subcommand, run as a user runs it: output, exit status, errors."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory, _jsonutil
from fsmemory.cli import build_parser, main

COMMANDS = ("remember", "recall", "context", "facts", "recent", "forget", "prune", "stats", "demo")
READERS = [  # commands that read an existing store, with their other arguments
    ["recall", "x"],
    ["context"],
    ["facts"],
    ["recent"],
    ["forget", "some-id"],
    ["prune"],
    ["stats"],
]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "mem")


# -- one smoke test per subcommand -----------------------------------------------------------


def test_remember_then_every_reader(capsys: pytest.CaptureFixture[str], store: str) -> None:
    code, out, _ = cli(
        capsys, "--store", store, "remember", "Prefers dark mode", "-c", "preferences", "-p"
    )
    assert code == 0 and len(out.strip()) == 26  # the entry id
    entry_id = out.strip()
    assert (
        cli(
            capsys,
            "--store",
            store,
            "remember",
            "Lunch at noon",
            "--json",
            "--metadata",
            '{"k": 1}',
        )[0]
        == 0
    )
    km = KnowledgeMemory(store)
    assert km.get(entry_id) is not None and km.get(entry_id).persistent  # type: ignore[union-attr]

    code, out, _ = cli(capsys, "--store", store, "recall", "dark mode")
    assert code == 0 and out == f"1. [preferences] Prefers dark mode  ({entry_id})\n"
    code, out, _ = cli(capsys, "--store", store, "recall", "dark", "--json")
    assert [e["id"] for e in _jsonutil.loads(out)] == [entry_id]
    code, out, _ = cli(capsys, "--store", store, "recall", "nothing-like-it")
    assert out == "No memories found matching 'nothing-like-it'.\n"

    code, out, _ = cli(capsys, "--store", store, "context")
    assert code == 0 and out.startswith("[Long-term Memory]\n## preferences\n- Prefers dark mode\n")
    assert "Lunch at noon" in out

    code, out, _ = cli(capsys, "--store", store, "facts")
    assert out == "## preferences\n- Prefers dark mode\n"
    assert _jsonutil.loads(cli(capsys, "--store", store, "facts", "--json")[1]) == {
        "preferences": ["Prefers dark mode"]
    }

    code, out, _ = cli(capsys, "--store", store, "recent", "--days", "1", "-n", "1")
    assert code == 0 and out.count("\n") == 1 and "(general) Lunch at noon" in out
    recent = _jsonutil.loads(cli(capsys, "--store", store, "recent", "--json")[1])
    assert [r["content"] for r in recent] == ["Lunch at noon", "Prefers dark mode"]
    assert recent[0]["metadata"] == {"k": 1}

    stats = _jsonutil.loads(cli(capsys, "--store", store, "stats", "--json")[1])
    assert stats["entries"] == 2 and stats["persistent_facts"] == 1
    code, out, _ = cli(capsys, "--store", store, "stats")
    assert "entries: 2\n" in out

    code, out, _ = cli(capsys, "--store", store, "prune", "--max-days", "0")
    assert code == 0 and out == "deleted 0 log file(s)\n"  # today's log is kept
    assert _jsonutil.loads(cli(capsys, "--store", store, "prune", "--json")[1]) == {"deleted": 0}

    code, out, _ = cli(capsys, "--store", store, "forget", entry_id)
    assert (code, out) == (0, f"forgot {entry_id}\n")
    code, out, err = cli(capsys, "--store", store, "forget", entry_id)
    assert (code, out, err) == (1, "", f"fsmemory: error: no entry with id {entry_id!r}\n")
    assert KnowledgeMemory(store).get_persistent_facts() == {}


def test_demo(capsys: pytest.CaptureFixture[str], store: str) -> None:
    code, out, _ = cli(capsys, "--store", store, "demo")
    assert code == 0
    assert "recall('python preferences'):\n  1. [preferences] Preferred language: Python" in out
    assert "[Long-term Memory]" in out and f"{store}/MEMORY.md" in out
    assert KnowledgeMemory(store).stats()["entries"] == 5  # six remembered, one forgotten


def test_every_subcommand_is_registered() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(COMMANDS) <= set(sub.choices)


def test_every_option_has_help() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in {"": parser, **sub.choices}.items():
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"fsmemory {name} {action.dest} has no help"


# -- typos never succeed silently (issue 13.7) -----------------------------------------------


@pytest.mark.parametrize("argv", READERS, ids=lambda a: a[0])
def test_reading_a_missing_local_store_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    missing = tmp_path / "does" / "not" / "exist"
    code, out, err = cli(capsys, "--store", str(missing), *argv)
    assert (code, out) == (1, "")
    assert err == (
        f"fsmemory: error: no memory at --store {missing}: the folder does not exist "
        "(fsmemory remember creates it)\n"
    )
    assert not missing.exists() and not missing.parent.exists()  # nothing was created


@pytest.mark.parametrize("argv", [*READERS, ["remember", "x"], ["demo"]], ids=lambda a: a[0])
def test_a_file_as_store_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_bytes(b"a person's file\r\n")
    code, out, err = cli(capsys, "--store", str(afile), *argv)
    assert (code, out, err) == (
        1,
        "",
        f"fsmemory: error: --store {afile} is a file, not a memory folder\n",
    )
    assert afile.read_bytes() == b"a person's file\r\n"


def test_remember_creates_the_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    new = tmp_path / "new" / "mem"
    assert cli(capsys, "--store", str(new), "remember", "first")[0] == 0
    assert cli(capsys, "--store", str(new), "stats", "--json")[0] == 0
    assert (new / "logs").is_dir()


# -- smaller expectations ------------------------------------------------------------------


def test_store_and_options_after_the_subcommand(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    assert cli(capsys, "remember", "late store", "--store", store)[0] == 0
    code, out, _ = cli(capsys, "--store", "elsewhere", "facts", "--store", store, "--json")
    assert code == 0  # the one after the command wins
    code, out, _ = cli(capsys, "recall", "late", "--store", store, "-o", "auto_mkdir=true")
    assert code == 0 and "late store" in out
    code, _, err = cli(capsys, "-o", "a=1", "stats", "--store", store, "-o", "a.b=2")
    assert code == 1 and "storage option 'a' is given both plain and nested" in err


def test_remember_dash_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("from a pipe\nsecond line\n"))
    assert cli(capsys, "--store", store, "remember", "-", "-c", "notes")[0] == 0
    assert [e.content for e in KnowledgeMemory(store).recall("pipe")] == [
        "from a pipe\nsecond line"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["remember", "x", "--metadata", "[1]"], "argument --metadata: expected a JSON object"),
        (["remember", "x", "--metadata", "{bad"], "argument --metadata: not valid JSON"),
        (["recent", "--days", "-1"], "argument --days: must be 1 or more, got -1"),
        (["recall", "x", "-n", "0"], "argument -n/--limit: must be 1 or more, got 0"),
        (["prune", "--max-days", "-3"], "argument --max-days: must be 0 or more, got -3"),
        (["recent", "--days", "soon"], "argument --days: expected a whole number"),
        (
            ["-o", "novalue", "stats"],
            "argument -o/--storage-option: storage option 'novalue' is not KEY=VALUE",
        ),
    ],
)
def test_bad_arguments_name_the_option(
    capsys: pytest.CaptureFixture[str], store: str, argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--store", store, *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not Path(store).exists()


def test_library_errors_are_one_line(capsys: pytest.CaptureFixture[str], store: str) -> None:
    code, out, err = cli(capsys, "--store", store, "remember", "x", "-i", "7")
    assert code == 1 and out == "" and err.startswith("fsmemory: error: ") and err.count("\n") == 1


# -- a missing extra is one line for every subcommand (issue 13.9) -------------------------

_WITHOUT_EXTRAS = """
import contextlib, io, sys
for name in ("s3fs", "gcsfs", "redis"):
    sys.modules[name] = None  # as if the extra were not installed
from fsmemory.cli import main
for argv in {cases!r}:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    print(repr((argv[1], argv[2], code, err.getvalue())))
"""


def test_missing_extra_is_one_line_for_every_subcommand() -> None:
    extras = {
        # no credentials obstore models here: the s3fs and gcsfs routes, whose extras
        # are named
        "s3://bucket/users/1": "s3fs",
        "gs://bucket/users/1": "gcsfs",
        "redis://127.0.0.1:1/0/u": "redis",
    }
    arguments: dict[str, list[str]] = {
        "remember": ["x"],
        "recall": ["x"],
        "forget": ["some-id"],
    }
    cases = [
        ["--store", url, name, *arguments.get(name, [])] for url in extras for name in COMMANDS
    ]
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS.format(cases=cases)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Traceback" not in result.stderr
    rows: list[Any] = [eval(line) for line in result.stdout.splitlines()]
    assert len(rows) == len(cases)
    for url, command, code, err in rows:
        assert code == 1, (url, command)
        assert err.count("\n") == 1 and err.startswith("fsmemory: error: "), (url, command, err)
        if extras[url] != "redis":  # redis:// goes through fsspec's entry point first
            assert f"pip install 'fsmemory[{extras[url]}]'" in err, (url, command, err)
