"""The reserved ``("langgraph", ...)`` namespace: refused by the public put, as LangGraph does.

LangGraph reserves the root label ``"langgraph"`` in ``BaseStore.put``/``aput`` only; its
``batch``/``abatch`` (the internal entry its own code uses) and ``InMemoryStore`` accept a
put there. FsspecStore must answer every call exactly as InMemoryStore does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from fsmemory.integrations.langgraph import FsspecStore

NS = ("langgraph", "checkpoints", "t1")


def _outcome(call: Any) -> tuple[str, Any]:
    """("ok", value) or ("raises", exception type name) of one call."""
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raises", type(exc).__name__)


def _normal(result: Any) -> Any:
    """A batch result without timestamps and scores, for comparing two stores."""
    if isinstance(result, list):
        return [_normal(r) for r in result]
    if hasattr(result, "namespace") and hasattr(result, "value"):
        return (tuple(result.namespace), result.key, result.value)
    return result


def _journey(store: BaseStore) -> list[tuple[str, Any]]:
    """The same calls on any store: public put refused, batch put accepted, then read back."""
    out = [
        _outcome(lambda: store.put(NS, "k", {"v": 1})),
        _outcome(lambda: asyncio.run(store.aput(NS, "k", {"v": 1}))),
        _outcome(lambda: store.put(("langgraph",), "k", {"v": 1})),
        _outcome(lambda: _normal(store.batch([GetOp(NS, "k")]))),
        _outcome(lambda: store.batch([PutOp(NS, "k", {"v": 2, "text": "hello"})])),
        _outcome(lambda: asyncio.run(store.abatch([PutOp(NS, "a", {"v": 3})]))),
        _outcome(lambda: store.batch([PutOp(("langgraph",), "root", {"v": 4})])),
        _outcome(lambda: _normal(store.batch([GetOp(NS, "k")]))),
        _outcome(lambda: _normal(store.get(NS, "a"))),
        _outcome(lambda: _normal(store.get(("langgraph",), "root"))),
        _outcome(
            lambda: sorted(
                _normal(store.batch([SearchOp(("langgraph",), limit=10)]))[0],
                key=repr,
            )
        ),
        _outcome(lambda: store.batch([ListNamespacesOp(limit=10)])),
        _outcome(lambda: store.list_namespaces(prefix=("langgraph",))),
        # The public delete only checks labels in LangGraph: it may remove a reserved item.
        _outcome(lambda: store.delete(NS, "a")),
        _outcome(lambda: _normal(store.get(NS, "a"))),
        _outcome(lambda: store.batch([PutOp(NS, "k", None)])),
        _outcome(lambda: _normal(store.batch([GetOp(NS, "k")]))),
    ]
    return out


def test_reserved_root_label_matches_in_memory_store(
    location: tuple[str, dict[str, Any]],
) -> None:
    url, options = location
    expected = _journey(InMemoryStore())
    # The reference really does refuse the public puts and accept the batch ones.
    assert expected[0] == ("raises", "InvalidNamespaceError")
    assert expected[1] == ("raises", "InvalidNamespaceError")
    assert expected[4] == ("ok", [None])
    assert expected[7] == ("ok", [(NS, "k", {"v": 2, "text": "hello"})])
    assert _journey(FsspecStore(url, storage_options=options)) == expected


def test_reserved_items_survive_a_fresh_store(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path)
    store.batch([PutOp(NS, "k", {"v": 1})])
    assert (tmp_path / "langgraph" / "checkpoints" / "t1" / "k.json").is_file()
    again = FsspecStore(tmp_path)
    item = again.get(NS, "k")
    assert item is not None and item.value == {"v": 1}
    with pytest.raises(InvalidNamespaceError):
        again.put(NS, "k", {"v": 9})
    assert again.get(NS, "k").value == {"v": 1}  # type: ignore[union-attr]
    # Only the root label is let through batch: labels that are not plain folder names
    # are refused there as before (LangGraph's validate_op_namespace, then our own).
    for bad in (("langgraph", "a.b"), ("langgraph", ""), ("langgraph", "..")):
        with pytest.raises(InvalidNamespaceError):
            again.batch([PutOp(bad, "k", {"v": 5})])
