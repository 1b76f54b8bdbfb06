"""Fixtures for the path-store tests."""

from __future__ import annotations

import pytest

# The store conformance suite lives in the package; let pytest explain its failed asserts.
pytest.register_assert_rewrite("fsmemory.testing.store_conformance")
