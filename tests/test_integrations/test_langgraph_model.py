"""FsspecStore against LangGraph's own InMemoryStore on random operation sequences.

Both stores get the same put/delete/get/search(filter)/list_namespaces calls and must
give the same answers. Two differences of InMemoryStore are normalised, not compared:

* InMemoryStore keeps a namespace once anything touched it (a ``get`` of a missing item,
  or deleting its last item); a folder of files has no such ghosts, so namespaces
  without items are dropped from the model before ``list_namespaces``.
* Without a query InMemoryStore returns insertion order and FsspecStore newest first
  (LangGraph specifies no order): whole result sets are compared, and a page
  (``limit``/``offset``) must be the same slice of FsspecStore's own full order and as
  long as InMemoryStore's page.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytest.importorskip("langgraph")

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test
from langgraph.store.memory import InMemoryStore

from fsmemory.integrations.langgraph import FsspecStore

LABELS = st.sampled_from(["users", "1", "10", "docs", "a", "b", "ü"])
NAMESPACES = st.lists(LABELS, min_size=1, max_size=3).map(tuple)
PREFIXES = st.lists(LABELS, min_size=0, max_size=2).map(tuple)
KEYS = st.sampled_from(["k", "K", "prefs", "a/b", "..", "", "x y", "ü"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(alphabet="abxy", max_size=3),
)
VALUES = st.fixed_dictionaries(
    {"n": st.integers(-3, 3), "tag": st.sampled_from(["x", "y", "z"])},
    optional={
        "extra": SCALARS,
        "meta": st.fixed_dictionaries({}, optional={"lang": st.sampled_from(["en", "de"])}),
        "list": st.lists(st.integers(0, 2), max_size=2),
    },
)
FILTERS = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tag": st.sampled_from(["x", "y", "z"])}),
    st.fixed_dictionaries(
        {
            "n": st.one_of(
                st.integers(-3, 3),
                st.dictionaries(
                    st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]),
                    st.integers(-3, 3),
                    min_size=1,
                    max_size=2,
                ),
            )
        }
    ),
    st.fixed_dictionaries({"meta": st.fixed_dictionaries({"lang": st.sampled_from(["en", "de"])})}),
    st.fixed_dictionaries({"list": st.lists(st.integers(0, 2), max_size=2)}),
)


def _key(item: Any) -> tuple[Any, ...]:
    return (item.namespace, item.key, repr(sorted(item.value.items())))


def compare_with_in_memory_store(url: str, options: dict[str, Any], examples: int) -> None:
    """Run the state machine with a fresh root under ``url`` per example."""

    class Model(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.ours = FsspecStore(f"{url}/{uuid.uuid4().hex[:10]}", storage_options=options)
            self.ref = InMemoryStore()

        def _prune_ghosts(self) -> None:
            for ns in [ns for ns, items in self.ref._data.items() if not items]:
                del self.ref._data[ns]

        @rule(ns=NAMESPACES, key=KEYS, value=VALUES)
        def put(self, ns: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
            self.ours.put(ns, key, value)
            self.ref.put(ns, key, value)

        @rule(ns=NAMESPACES, key=KEYS)
        def delete(self, ns: tuple[str, ...], key: str) -> None:
            self.ours.delete(ns, key)
            self.ref.delete(ns, key)

        @rule(ns=NAMESPACES, key=KEYS)
        def get(self, ns: tuple[str, ...], key: str) -> None:
            mine, theirs = self.ours.get(ns, key), self.ref.get(ns, key)
            assert (mine is None) == (theirs is None)
            if mine is not None and theirs is not None:
                assert (mine.namespace, mine.key, mine.value) == (
                    theirs.namespace,
                    theirs.key,
                    theirs.value,
                )

        @rule(
            prefix=PREFIXES,
            filter_=FILTERS,
            limit=st.integers(1, 6),
            offset=st.integers(0, 4),
        )
        def search(
            self, prefix: tuple[str, ...], filter_: dict[str, Any] | None, limit: int, offset: int
        ) -> None:
            everything = self.ours.search(prefix, filter=filter_, limit=10_000)
            reference = self.ref.search(prefix, filter=filter_, limit=10_000)
            assert sorted(map(_key, everything)) == sorted(map(_key, reference))
            page = self.ours.search(prefix, filter=filter_, limit=limit, offset=offset)
            assert list(map(_key, page)) == list(map(_key, everything[offset : offset + limit]))
            ref_page = self.ref.search(prefix, filter=filter_, limit=limit, offset=offset)
            assert len(page) == len(ref_page)

        @rule(
            prefix=st.one_of(
                st.none(), st.lists(LABELS | st.just("*"), min_size=1, max_size=2).map(tuple)
            ),
            suffix=st.one_of(st.none(), st.lists(LABELS | st.just("*"), min_size=1, max_size=2)),
            max_depth=st.one_of(st.none(), st.integers(1, 3)),
            limit=st.integers(1, 20),
            offset=st.integers(0, 3),
        )
        def list_namespaces(
            self,
            prefix: tuple[str, ...] | None,
            suffix: list[str] | None,
            max_depth: int | None,
            limit: int,
            offset: int,
        ) -> None:
            self._prune_ghosts()
            kwargs: dict[str, Any] = {
                "prefix": prefix,
                "suffix": None if suffix is None else tuple(suffix),
                "max_depth": max_depth,
                "limit": limit,
                "offset": offset,
            }
            assert self.ours.list_namespaces(**kwargs) == self.ref.list_namespaces(**kwargs)

    run_state_machine_as_test(
        Model,
        settings=settings(
            max_examples=examples,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_same_answers_as_in_memory_store(
    location: tuple[str, dict[str, Any]], request: pytest.FixtureRequest
) -> None:
    url, options = location
    local = url.startswith("/") or url.startswith("memory://")
    compare_with_in_memory_store(url, options, examples=60 if local else 15)
