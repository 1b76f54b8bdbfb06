"""Former name of :mod:`fsmemory.memory._replica` (``SnapshotSync`` is now
:class:`~fsmemory.memory._replica.SnapshotReplica`); kept so old imports keep working."""

from __future__ import annotations

from fsmemory.memory._replica import DELTA_FORMAT, SnapshotReplica, apply_delta, fold_state

__all__ = ["DELTA_FORMAT", "SnapshotSync", "apply_delta", "fold_state"]

#: the former name of :class:`~fsmemory.memory._replica.SnapshotReplica`
SnapshotSync = SnapshotReplica
