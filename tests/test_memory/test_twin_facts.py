"""A fact remembered twice, with and without a TTL: forgetting one keeps the other.

Each record holds the bullet of its own expiry, so ``forget`` removes that bullet and
never the twin's (which would forget an acknowledged fact nobody asked to forget).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fsmemory import KnowledgeMemory
from fsmemory.memory.markdown import remove_fact


@pytest.mark.parametrize("ttl_first", [True, False])
@pytest.mark.parametrize("forget_first", [True, False])
def test_forgetting_one_twin_keeps_the_other(
    make_km: Callable[..., KnowledgeMemory], ttl_first: bool, forget_first: bool
) -> None:
    km = make_km()
    ttls: list[Any] = [1, None] if ttl_first else [None, 1]
    a = km.remember("My PIN is 4321", category="notes", persistent=True, ttl_days=ttls[0])
    b = km.remember("My PIN is 4321", category="notes", persistent=True, ttl_days=ttls[1])
    gone, kept = (a, b) if forget_first else (b, a)
    assert km.forget(gone)
    for reader in (km, make_km(), make_km(index_cache=False)):
        assert reader.get(gone) is None
        entry = reader.get(kept)
        assert entry is not None and entry.content == "My PIN is 4321"
        assert reader.get_persistent_facts() == {"notes": ["My PIN is 4321"]}
    assert km.forget(kept)
    for reader in (km, make_km(), make_km(index_cache=False)):
        assert reader.get(kept) is None
        assert reader.get_persistent_facts() == {}


def test_remove_fact_matches_the_expiry_it_is_given() -> None:
    text = "# Agent Memory\n\n## notes\n- x <!-- expires: 2026-01-01T00:00:00.000000Z -->\n- x\n"
    from datetime import UTC, datetime

    when = datetime(2026, 1, 1, tzinfo=UTC)
    assert remove_fact(text, "notes", "x", expires=when) == "# Agent Memory\n\n## notes\n- x\n"
    assert remove_fact(text, "notes", "x", expires=None) == (
        "# Agent Memory\n\n## notes\n- x <!-- expires: 2026-01-01T00:00:00.000000Z -->\n"
    )
    assert remove_fact(text, "notes", "x", expires=datetime(2027, 1, 1, tzinfo=UTC)) is None
    assert remove_fact(text, "notes", "x") == (
        "# Agent Memory\n\n## notes\n- x <!-- expires: 2026-01-01T00:00:00.000000Z -->\n"
    )
