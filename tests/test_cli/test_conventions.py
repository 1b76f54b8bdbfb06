"""The conventions users of a command line and of a library expect: --json everywhere,
FSMEMORY_STORE, ``python -m fsmemory``, shell completion, a bounded context, a quiet
library logger, a one-name public face."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.cli import build_parser, main

ONE_MB_NOTE = "start of the big note " + "x" * 1_000_000 + " end of the big note"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def python(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = str(tmp_path / "mem")
    km = KnowledgeMemory(path)
    km.remember("Prefers dark mode", "preferences", persistent=True)
    km.remember("Lunch at noon", "context")
    return path


# -- the public face and the logger ----------------------------------------------------------


def test_the_cli_module_exports_main_only() -> None:
    import fsmemory.cli

    assert fsmemory.cli.__all__ == ["main"]


def test_the_package_logger_is_silent_until_the_host_configures_logging(tmp_path: Path) -> None:
    """Without a handler of its own, Python's last-resort handler printed the library's
    warnings on the host's stderr; with the NullHandler nothing is printed until the
    host turns logging on, and then the records arrive as usual."""
    warn = "import logging, fsmemory\nlogging.getLogger('fsmemory.memory.knowledge').warning('hello')\n"
    quiet = python("-c", warn, cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = python("-c", "import logging\nlogging.basicConfig()\n" + warn, cwd=tmp_path)
    assert "WARNING:fsmemory.memory.knowledge:hello" in loud.stderr
    code = "import logging, fsmemory\nprint([type(h).__name__ for h in logging.getLogger('fsmemory').handlers])"
    assert python("-c", code, cwd=tmp_path).stdout.strip() == "['NullHandler']"


def test_the_command_shows_warnings_and_a_library_call_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "mem" / "logs"
    logs.mkdir(parents=True)
    good = '{"id":"a","timestamp":"2026-12-01T10:00:00.000000Z","category":"x","content":"ok"}'
    (logs / "2026-12-01.jsonl").write_text(good + "\n{oops\n")
    done = python("-m", "fsmemory", "--store", str(tmp_path / "mem"), "recall", "ok", cwd=tmp_path)
    assert done.returncode == 0 and "[x] ok" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line]
    assert len(warnings) == 1 and warnings[0].startswith("fsmemory: warning: skipping corrupt line")
    for cache in (tmp_path / "mem").glob(".fsmemory-cache*"):
        cache.unlink()
    code, out, err = cli(capsys, "--store", str(tmp_path / "mem"), "recall", "ok")
    assert code == 0 and "[x] ok" in out and err == ""


# -- --json on every command ---------------------------------------------------------------


def test_every_command_but_mcp_takes_json() -> None:
    commands = subcommands()
    assert {"context", "forget", "demo", "completion", "export"} <= set(commands)
    for name, parser in commands.items():
        options = {o for a in parser._actions for o in a.option_strings}
        assert ("--json" in options) == (name != "mcp"), name


JSON_RUNS: list[tuple[list[str], type]] = [
    (["remember", "Tea, no sugar"], dict),
    (["recall", "dark"], list),
    (["context"], dict),
    (["facts"], dict),
    (["recent"], list),
    (["forget", "no-such-id"], dict),
    (["prune"], dict),
    (["retention"], dict),
    (["stats"], dict),
    (["demo"], dict),
    (["completion", "bash"], dict),
]


@pytest.mark.parametrize(("argv", "kind"), JSON_RUNS, ids=[r[0][0] for r in JSON_RUNS])
def test_json_output_is_one_document(
    capsys: pytest.CaptureFixture[str], store: str, argv: list[str], kind: type
) -> None:
    code, out, err = cli(capsys, "--store", store, *argv, "--json")
    value = json.loads(out)  # the whole of stdout is one JSON document
    assert isinstance(value, kind)
    if argv[0] == "forget":
        assert code == 1 and value == {"id": "no-such-id", "forgotten": False}
        assert err.count("\n") == 1 and "no entry" in err
    else:
        assert code == 0 and err == "", err


def test_json_shapes_of_the_commands_that_lacked_it(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    code, out, _ = cli(capsys, "--store", store, "context", "--json")
    context = json.loads(out)
    assert code == 0 and "Prefers dark mode" in context["context"]
    assert context["chars"] == context["total_chars"] == len(context["context"])
    assert context["truncated"] is False
    entry_id = KnowledgeMemory(store).recall("lunch")[0].id
    code, out, _ = cli(capsys, "--store", store, "forget", entry_id, "--json")
    assert code == 0 and json.loads(out) == {"id": entry_id, "forgotten": True}
    assert KnowledgeMemory(store).recall("lunch") == []
    code, out, _ = cli(capsys, "--store", store, "demo", "--json")
    demo = json.loads(out)
    assert code == 0 and demo["store"] == store
    assert any("recall('python preferences')" in line for line in demo["output"])
    assert demo["stats"]["persistent_facts"] == KnowledgeMemory(store).stats()["persistent_facts"]


def test_json_errors_leave_stdout_empty(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "nothing-here")
    for argv in (["context"], ["forget", "x"], ["stats"]):
        code, out, err = cli(capsys, "--store", missing, *argv, "--json")
        assert (code, out) == (1, "") and err.count("\n") == 1 and "no memory" in err


def test_json_of_text_that_is_not_valid_unicode(capsys: pytest.CaptureFixture[str]) -> None:
    """A lone surrogate (a hand-edited file read with surrogateescape, say) is written as
    an escape, not a traceback."""
    from fsmemory._cli_common import print_json

    print_json({"content": "bad \ud800 text"})
    assert json.loads(capsys.readouterr().out) == {"content": "bad \ud800 text"}


def test_help_documents_the_json_shape_and_the_store_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exactly one JSON document" in text and '{"id", "forgotten"}' in text
    assert "FSMEMORY_STORE" in text


# -- FSMEMORY_STORE ----------------------------------------------------------------------------


def test_fsmemory_store_is_the_default_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FSMEMORY_STORE", str(tmp_path / "from-env"))
    assert cli(capsys, "remember", "Lives where the variable says")[0] == 0
    assert [e.content for e in KnowledgeMemory(str(tmp_path / "from-env")).entries()] == [
        "Lives where the variable says"
    ]
    assert not (tmp_path / "agent_memory").exists()
    # --store wins, before or after the command.
    assert cli(capsys, "--store", str(tmp_path / "flag"), "remember", "a")[0] == 0
    assert cli(capsys, "remember", "b", "--store", str(tmp_path / "flag"))[0] == 0
    assert len(KnowledgeMemory(str(tmp_path / "flag")).entries()) == 2
    assert len(KnowledgeMemory(str(tmp_path / "from-env")).entries()) == 1
    # A blank variable is no store: the usual default.
    monkeypatch.setenv("FSMEMORY_STORE", "  ")
    assert cli(capsys, "remember", "c")[0] == 0
    assert (tmp_path / "agent_memory" / "logs").is_dir()


def test_fsmemory_store_that_is_a_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("not a folder")
    monkeypatch.setenv("FSMEMORY_STORE", str(tmp_path / "afile"))
    code, out, err = cli(capsys, "stats")
    assert code == 1 and out == "" and err.count("\n") == 1 and "is a file" in err


# -- python -m fsmemory ------------------------------------------------------------------------


def test_python_dash_m_fsmemory(tmp_path: Path) -> None:
    version = python("-m", "fsmemory", "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("fsmemory ")
    env = {**os.environ, "FSMEMORY_STORE": str(tmp_path / "mem")}
    stored = python(
        "-m", "fsmemory", "remember", "Ran as a module", "--json", cwd=tmp_path, env=env
    )
    assert stored.returncode == 0, stored.stderr
    entry_id = json.loads(stored.stdout)["id"]
    found = python("-m", "fsmemory", "recall", "module", "--json", cwd=tmp_path, env=env)
    assert [e["id"] for e in json.loads(found.stdout)] == [entry_id]
    bad = python("-m", "fsmemory", "recall", cwd=tmp_path)
    assert bad.returncode == 2 and "usage: fsmemory" in bad.stderr


def test_a_closed_stdout_ends_the_command_quietly(tmp_path: Path) -> None:
    km = KnowledgeMemory(str(tmp_path / "mem"))
    for i in range(300):
        km.remember(f"note number {i} " + "y" * 200, "context")
    reader = subprocess.Popen(
        [sys.executable, "-m", "fsmemory", "--store", str(tmp_path / "mem"), "recent", "-n", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.read(10)
    reader.stdout.close()  # as `| head -c 10` does
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 141
    assert "Broken pipe" not in err and "Traceback" not in err


# -- shell completion --------------------------------------------------------------------------


def test_completion_scripts_cover_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    for shell in ("bash", "zsh", "fish"):
        code, out, _ = cli(capsys, "completion", shell)
        assert code == 0
        for name in subcommands():
            assert name in out, (shell, name)
        assert "max-context-chars" in out and "storage-option" in out


def test_completion_of_an_unknown_shell_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for shell in ("powershell", "bash; rm -rf /", ""):
        with pytest.raises(SystemExit) as exc:
            main(["completion", shell])
        assert exc.value.code == 2
        assert "invalid choice" in capsys.readouterr().err


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def _bash_complete(script: str, words: list[str], tmp_path: Path) -> list[str]:
    """The candidates the bash script offers for the last of ``words``."""
    (tmp_path / "fsmemory.bash").write_text(script)
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (
        f"source {tmp_path / 'fsmemory.bash'}\n"
        f"COMP_WORDS=({quoted})\nCOMP_CWORD={len(words) - 1}\n"
        "_fsmemory\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run(
        ["bash", "--norc", "-c", program], capture_output=True, text=True, cwd=tmp_path, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


@needs_bash
def test_the_bash_script_parses_and_completes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, script, _ = cli(capsys, "completion", "bash")
    assert code == 0
    (tmp_path / "check.bash").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "check.bash")]).returncode == 0
    assert _bash_complete(script, ["fsmemory", "re"], tmp_path) == [
        "remember",
        "recall",
        "recent",
        "retention",
    ]
    assert "--max-context-chars" in _bash_complete(script, ["fsmemory", "context", "--"], tmp_path)
    # The command is found past the options before it, values included.
    after = _bash_complete(
        script, ["fsmemory", "--store", "x", "-o", "a=1", "recall", "--"], tmp_path
    )
    assert "--limit" in after and "--max-context-chars" not in after
    assert _bash_complete(script, ["fsmemory", "export", "s", "d", "--table", ""], tmp_path) == [
        "memory",
        "events",
    ]
    assert _bash_complete(script, ["fsmemory", "completion", "f"], tmp_path) == ["fish"]
    (tmp_path / "folder-to-find").mkdir()
    assert _bash_complete(script, ["fsmemory", "--store", "folder-to"], tmp_path) == [
        "folder-to-find"
    ]
    # A word with shell syntax in it is completed against, never run.
    assert _bash_complete(script, ["fsmemory", "$(touch pwned)"], tmp_path) == []
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_zsh_and_fish_scripts_parse(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, shell: str
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    code, script, _ = cli(capsys, "completion", shell)
    path = tmp_path / f"fsmemory.{shell}"
    path.write_text(script)
    done = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True)
    assert code == 0 and done.returncode == 0, done.stderr


def test_the_zsh_script_registers_and_fish_completes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if shutil.which("zsh") is None or shutil.which("fish") is None:
        pytest.skip("zsh or fish is not installed")
    (tmp_path / "_fsmemory").write_text(cli(capsys, "completion", "zsh")[1])
    program = "autoload -U compinit; compinit -u; source ./_fsmemory; print ${_comps[fsmemory]}"
    zsh = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, cwd=tmp_path)
    assert zsh.stdout.strip() == "_fsmemory", zsh.stderr
    (tmp_path / "fsmemory.fish").write_text(cli(capsys, "completion", "fish")[1])
    (tmp_path / "a-file").write_text("")

    def fish(line: str) -> list[str]:
        program = f"source fsmemory.fish; complete -C {line!r}"
        done = subprocess.run(
            ["fish", "-N", "-c", program], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert fish("fsmemory re") == ["recall", "recent", "remember", "retention"]
    assert fish("fsmemory export a b --table ") == ["events", "memory"]
    assert "a-file" in fish("fsmemory --store ")
    assert fish("fsmemory context --max") == ["--max-context-chars"]


def test_fish_descriptions_are_quoted() -> None:
    from fsmemory._cli_completion import completion_script

    parser = argparse.ArgumentParser(prog="fsmemory")
    sub = parser.add_subparsers()
    p = sub.add_parser("odd", help="it's a \\ test")
    p.add_argument("--flag", help="can't stop; more")
    script = completion_script(parser, "fish")
    assert "-d 'it\\'s a \\\\ test'" in script
    assert "-l flag -x -d 'can\\'t stop'" in script
    with pytest.raises(ValueError, match="powershell"):
        completion_script(parser, "powershell")


# -- a bounded context -------------------------------------------------------------------------


def _with_big_note(tmp_path: Path) -> str:
    path = str(tmp_path / "big")
    km = KnowledgeMemory(path)
    km.remember("Prefers dark mode", "preferences", persistent=True)
    km.remember(ONE_MB_NOTE, "context")
    km.remember("Small note after the big one", "context")
    return path


def test_a_1_mb_note_does_not_print_a_1_mb_context(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = _with_big_note(tmp_path)
    code, out, _ = cli(capsys, "--store", store, "context")
    text = out.removesuffix("\n")
    assert code == 0 and len(text) <= 20_000
    assert "Prefers dark mode" in text and "Small note after the big one" in text
    assert "start of the big note" in text and "end of the big note" not in text
    assert "more characters]" in text
    assert text.splitlines()[-1].startswith("[context truncated: ")
    code, out, _ = cli(capsys, "--store", store, "context", "--json")
    shown = json.loads(out)
    assert shown["truncated"] is True and shown["chars"] == len(shown["context"]) <= 20_000
    assert shown["total_chars"] > 1_000_000


def test_max_context_chars(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = _with_big_note(tmp_path)
    code, out, _ = cli(capsys, "--store", store, "context", "--max-context-chars", "500")
    assert code == 0 and len(out.removesuffix("\n")) <= 500 and "[context truncated" in out
    code, out, _ = cli(capsys, "--store", store, "context", "--max-context-chars", "0")
    assert code == 0 and "end of the big note" in out and "truncated" not in out
    for bad in ("-1", "10", "abc", "1e9"):
        with pytest.raises(SystemExit) as exc:
            main(["--store", store, "context", "--max-context-chars", bad])
        assert exc.value.code == 2
        assert "--max-context-chars" in capsys.readouterr().err


@pytest.mark.parametrize("bound", [200, 201, 999, 5000, 20_000])
def test_bound_context_always_fits(bound: int) -> None:
    from fsmemory.integrations.mcp import bound_context

    texts: list[Any] = [
        "a" * 100_000,
        "\n".join(["short line"] * 10_000),
        "\n".join(f"- line {i} " + "z" * (i * 37 % 3_000) for i in range(400)),
        "\n" * 50_000,
    ]
    for text in texts:
        out = bound_context(text, bound)
        assert len(out) <= bound and out.endswith("recall finds a memory by its words]")
    assert bound_context("fits", bound) == "fits"
    with pytest.raises(ValueError):
        bound_context("x" * 1000, 199)
    with pytest.raises(ValueError):
        bound_context("x", -1)
