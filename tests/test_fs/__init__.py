"""Tests of the storage layer (fsmemory.fs)."""
