"""The harness examples run offline as scripts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> str:
    return subprocess.run(
        [sys.executable, *args], check=True, capture_output=True, text=True, timeout=120, cwd=ROOT
    ).stdout


def test_journal_companion(tmp_path: Path) -> None:
    out = _run("examples/journal_companion.py", "--state", str(tmp_path / "journal-state"))
    assert "half marathon" in out.split("run 2")[1]
    assert (tmp_path / "journal-state" / "memory" / "working.md").exists()
    assert (tmp_path / "journal-state" / "SKILL.md").exists()


def test_long_history() -> None:
    out = _run("examples/long_history.py", "--turns", "400")
    assert "the log replays into the live history: ok" in out
    assert "events per model call: max 80" in out


def test_bench_harness_runs() -> None:
    out = _run("benchmarks/bench_harness.py", "--sizes", "200", "--repeat", "2", "--turns", "2")
    assert "assemble()" in out and "seed/ours" in out


def test_journal_reply_survives_a_real_response() -> None:
    """With a real client the converters add a Usage record after the answer; the
    example must still print the answer, not the usage record's empty text."""
    import importlib.util

    from fsmemory.agent import from_anthropic_response, from_openai_response
    from fsmemory.agent.events import Usage

    spec = importlib.util.spec_from_file_location(
        "journal", ROOT / "examples" / "journal_companion.py"
    )
    assert spec is not None and spec.loader is not None
    journal = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(journal)
    openai_events = from_openai_response(
        {
            "model": "gpt-4o",
            "choices": [
                {"message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
        }
    )
    anthropic_events = from_anthropic_response(
        {
            "model": "claude-sonnet-4-5",
            "role": "assistant",
            "content": [{"type": "text", "text": "Hello!"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 3},
        }
    )
    for events in (openai_events, anthropic_events):
        assert isinstance(events[-1], Usage) and events[-1].text() == ""
        assert journal.reply_text(events) == "Hello!"
