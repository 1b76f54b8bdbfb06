"""Tests of fsmemory.sanitizers."""
