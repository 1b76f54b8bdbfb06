"""The BLAKE2b speed-up of :mod:`fsmemory._speedups`: the built-in ``_blake2`` module
while speed-ups are on, ``hashlib``'s under ``FSMEMORY_NO_SPEEDUPS=1``, and the same
text hashes either way (vectors are keyed by them)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from fsmemory import _speedups

TEXTS = ["", "plain", "line\nbreak", "NUL \x00 here", "lone \ud800 surrogate", "é" * 5000]


@pytest.fixture(autouse=True)
def _fresh_choice() -> Iterator[None]:
    _speedups.blake2b.cache_clear()
    yield
    _speedups.blake2b.cache_clear()


def test_the_switch_picks_hashlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_speedups.ENV, "1")
    assert _speedups.blake2b() is hashlib.blake2b


def test_speed_ups_on_take_the_builtin_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_speedups.ENV, raising=False)
    assert _speedups.blake2b().__module__ == "_blake2"
    # decided once per process: a later switch does not change it
    monkeypatch.setenv(_speedups.ENV, "1")
    assert _speedups.blake2b().__module__ == "_blake2"


def test_an_interpreter_without_it_takes_hashlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_speedups.ENV, raising=False)
    monkeypatch.setitem(sys.modules, "_blake2", None)
    assert _speedups.blake2b() is hashlib.blake2b


def test_both_paths_give_the_same_text_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsmemory.memory._vectors import text_hash

    monkeypatch.delenv(_speedups.ENV, raising=False)
    fast = [text_hash(t) for t in TEXTS]
    _speedups.blake2b.cache_clear()
    monkeypatch.setenv(_speedups.ENV, "1")
    public = [text_hash(t) for t in TEXTS]
    assert fast == public
    expected = [
        hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        for t in TEXTS
    ]
    assert public == expected


def test_hashing_a_text_does_not_load_openssl() -> None:
    code = (
        "import sys; from fsmemory.memory._vectors import text_hash; text_hash('x'); "
        "print('_hashlib' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != _speedups.ENV}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert out.strip() == "False"
