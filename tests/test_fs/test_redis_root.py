"""Redis roots beyond the conformance suite: a ``unique`` append whose reply was lost."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fsmemory.errors import BackendError
from fsmemory.fs import RetryPolicy, open_root


@pytest.mark.redis
@pytest.mark.parametrize("landed", [True, False])
def test_a_unique_append_whose_reply_was_lost_lands_once(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, landed: bool
) -> None:
    """The first ``APPEND`` fails without a reply (after it ran, or before): a
    ``unique`` append finds its line or sends it again, and the line is there once; a
    plain append is tried once."""
    retry = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.001)
    root = open_root(
        f"{redis_url}/0/root", {"prefix": f"fsm-{uuid.uuid4().hex[:12]}", "retry": retry}
    )
    try:
        root.write("log.jsonl", b"first\n")
        real = root.fs.append_bytes
        calls: list[bytes] = []

        def flaky(path: str, data: bytes, **kwargs: Any) -> tuple[int, int]:
            calls.append(data)
            if len(calls) == 1:
                if landed:
                    real(path, data, **kwargs)
                raise ConnectionResetError("reply lost")
            return real(path, data, **kwargs)  # type: ignore[no-any-return]

        monkeypatch.setattr(root.fs, "append_bytes", flaky)
        assert root.append("log.jsonl", b"second\n", unique=True) == len(b"first\n")
        assert root.read_bytes("log.jsonl") == b"first\nsecond\n"
        assert len(calls) == (1 if landed else 2)
        calls.clear()
        with pytest.raises(BackendError, match="reply lost"):
            root.append("log.jsonl", b"third\n")
        assert len(calls) == 1
    finally:
        root.delete_tree("")
        root.close()
