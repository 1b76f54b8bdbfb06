"""Helpers for testing fsmemory and code built on it.

* :mod:`fsmemory.testing.conformance` -- the storage-layer conformance suite
  (``StorageRootTests``) that every backend runs.
* :mod:`fsmemory.testing.cloud_services` -- throwaway S3 (moto) and GCS
  (fake-gcs-server) emulators on loopback.
* :mod:`fsmemory.testing.services` -- other throwaway test services (redis-server).
* :mod:`fsmemory.testing.store_conformance` -- the path-store conformance suite
  (``KnowledgeStoreTests``).
* :mod:`fsmemory.testing.faults` -- fault injection: HTTP and TCP proxies in front of
  the emulators and redis-server, and ``FaultyRoot`` for local and memory roots.
* :mod:`fsmemory.testing.requests` -- count the requests a storage root sends.

Nothing is imported here: pick the submodule you need, so ``import fsmemory.testing``
stays free of pytest, moto and friends.
"""

from __future__ import annotations

__all__: list[str] = []
