"""Hypothesis state machines: a store against a plain dict model (memory, local, sqlite)."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator

import pytest

from fsmemory.store import (
    DiskKnowledgeStore,
    MemoryKnowledgeStore,
    SqliteKnowledgeStore,
    VersionedKnowledgeStore,
)
from fsmemory.testing.store_conformance import store_state_machine

_BASE: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def scratch_dir() -> Iterator[None]:
    """One scratch folder for the local examples of this module."""
    _BASE.append(tempfile.mkdtemp(prefix="fsmemory-sm-"))
    yield
    shutil.rmtree(_BASE.pop(), ignore_errors=True)


def _local() -> VersionedKnowledgeStore:
    return DiskKnowledgeStore(f"{_BASE[-1]}/{uuid.uuid4().hex}", watch="none")


def _sqlite() -> VersionedKnowledgeStore:
    return SqliteKnowledgeStore(f"{_BASE[-1]}/{uuid.uuid4().hex}.db", watch="none")


def _memory() -> VersionedKnowledgeStore:
    return MemoryKnowledgeStore(watch="none")


TestMemoryModel = store_state_machine(_memory).TestCase
TestLocalModel = store_state_machine(_local).TestCase
TestSqliteModel = store_state_machine(_sqlite, max_examples=15).TestCase
