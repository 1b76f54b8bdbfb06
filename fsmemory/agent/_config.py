"""``KnowledgeConfig``: what a session does with its knowledge store."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from fsmemory.agent._aggregate import AggregateStrategy, AggregateTrigger
from fsmemory.agent._bootstrap import DefaultBootstrap, StoreBootstrap
from fsmemory.agent._compact import DEFAULT_COMPACT_TRIGGER_EVENTS, CompactStrategy, CompactTrigger
from fsmemory.store import FsspecKnowledgeStore, KnowledgeStore

__all__ = ["KnowledgeConfig"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, init=False)
class KnowledgeConfig:
    """The knowledge bundle of a :class:`~fsmemory.agent.KnowledgeSession`.

    ``KnowledgeConfig(store=...)`` does four things; only the first has no switch:

    1. registers the store for the memory policies (``WorkingMemoryPolicy``, ...);
    2. gives the model the ``knowledge`` tool (``expose_tool=False`` turns it off);
    3. seeds SKILL.md files on first use (``bootstrap=NoBootstrap()`` turns it off;
       the default ``DefaultBootstrap(mention_tool=expose_tool)`` only mentions the
       tool when there is one);
    4. appends every event to ``/log/<stream_id>.jsonl`` (``write_event_log=False``).

    Attributes:
        store: a :class:`~fsmemory.store.KnowledgeStore`, or a URL / local folder to
            open one on.
        expose_tool: offer the ``knowledge`` tool to the model.
        write_event_log: append each turn's new events to ``/log/<stream_id>.jsonl``.
        compact: a compaction strategy (``TailWindowCompact``, ``SummarizeCompact``).
        compact_trigger: when it fires. Default when only ``compact`` is given:
            ``CompactTrigger(max_events=2 * compact.target)`` for a strategy with a
            ``target``, else ``CompactTrigger(max_events=200)``.
        aggregate: an aggregation strategy (``WorkingMemoryAggregate``,
            ``ConversationSummaryAggregate``).
        aggregate_trigger: when it fires. Default when only ``aggregate`` is given:
            ``AggregateTrigger(on_end=True)``.
        bootstrap: how the store is seeded (see above).
        storage_options: when ``store`` is a URL: fsspec options for it (credentials,
            endpoint, ...).

    Raises:
        ValueError: a trigger without its strategy, or a value of the wrong kind.
    """

    store: KnowledgeStore
    expose_tool: bool = True
    write_event_log: bool = True
    compact: CompactStrategy | None = None
    compact_trigger: CompactTrigger | None = None
    aggregate: AggregateStrategy | None = None
    aggregate_trigger: AggregateTrigger | None = None
    bootstrap: StoreBootstrap | None = None
    storage_options: Mapping[str, Any] | None = None

    def __init__(
        self,
        store: KnowledgeStore | str | os.PathLike[str],
        expose_tool: bool = True,
        write_event_log: bool = True,
        compact: CompactStrategy | None = None,
        compact_trigger: CompactTrigger | None = None,
        aggregate: AggregateStrategy | None = None,
        aggregate_trigger: AggregateTrigger | None = None,
        bootstrap: StoreBootstrap | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        # Written out (not generated) so that a URL or folder is a valid ``store`` for
        # type checkers too; ``self.store`` is always the opened KnowledgeStore.
        values = {
            "store": store,
            "expose_tool": expose_tool,
            "write_event_log": write_event_log,
            "compact": compact,
            "compact_trigger": compact_trigger,
            "aggregate": aggregate,
            "aggregate_trigger": aggregate_trigger,
            "bootstrap": bootstrap,
            "storage_options": storage_options,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        store: object = self.store
        if isinstance(store, str | os.PathLike):
            options = dict(self.storage_options or {})
            object.__setattr__(
                self, "store", FsspecKnowledgeStore(os.fspath(store), storage_options=options)
            )
        elif not isinstance(store, KnowledgeStore):
            raise ValueError(f"store must be a KnowledgeStore or a URL, not {type(store).__name__}")
        elif self.storage_options:
            raise ValueError("storage_options is for a store given as a URL, not a store object")
        if self.compact_trigger is not None and self.compact is None:
            raise ValueError(
                "compact_trigger was given without compact=: pass a CompactStrategy "
                "(TailWindowCompact or SummarizeCompact) for the trigger to run"
            )
        if self.aggregate_trigger is not None and self.aggregate is None:
            raise ValueError(
                "aggregate_trigger was given without aggregate=: pass an "
                "AggregateStrategy (WorkingMemoryAggregate or ConversationSummaryAggregate)"
            )
        if self.compact is not None and not isinstance(self.compact, CompactStrategy):
            raise ValueError("compact must have an async compact(events, ctx, store) method")
        if self.aggregate is not None and not isinstance(self.aggregate, AggregateStrategy):
            raise ValueError("aggregate must have an async aggregate(events, ctx, store) method")
        if self.compact_trigger is not None and not isinstance(
            self.compact_trigger, CompactTrigger
        ):
            raise ValueError("compact_trigger must be a CompactTrigger")
        if self.aggregate_trigger is not None:
            if not isinstance(self.aggregate_trigger, AggregateTrigger):
                raise ValueError("aggregate_trigger must be an AggregateTrigger")
            if not self.aggregate_trigger.fires_ever:
                warnings.warn(
                    "AggregateTrigger() has nothing enabled, so aggregation never runs: "
                    "set every_n_turns, every_n_events or on_end=True",
                    stacklevel=3,
                )
        if self.bootstrap is not None and not isinstance(self.bootstrap, StoreBootstrap):
            raise ValueError("bootstrap must have an async bootstrap(store, actor_name) method")

    @property
    def effective_compact_trigger(self) -> CompactTrigger | None:
        """The trigger compaction runs with (the documented default when omitted)."""
        return _trigger_of(self.compact, self.compact_trigger, self._default_compact_trigger)

    def _default_compact_trigger(self) -> CompactTrigger:
        target = getattr(self.compact, "target", None)
        if isinstance(target, int) and not isinstance(target, bool) and target > 0:
            return CompactTrigger(max_events=2 * target)
        return CompactTrigger(max_events=DEFAULT_COMPACT_TRIGGER_EVENTS)

    @property
    def effective_aggregate_trigger(self) -> AggregateTrigger | None:
        """The trigger aggregation runs with (``on_end=True`` when omitted)."""
        return _trigger_of(
            self.aggregate, self.aggregate_trigger, functools.partial(AggregateTrigger, on_end=True)
        )

    @property
    def effective_bootstrap(self) -> StoreBootstrap:
        """The bootstrap used: the given one, or ``DefaultBootstrap(mention_tool=
        expose_tool)``."""
        if self.bootstrap is not None:
            return self.bootstrap
        return DefaultBootstrap(mention_tool=self.expose_tool)


def _trigger_of(strategy: object, given: T | None, default: Callable[[], T]) -> T | None:
    """When a strategy runs: never without ``strategy`` (None), else on the ``given``
    trigger, or on ``default()`` when none was given."""
    if strategy is None:
        return None
    return given if given is not None else default()
