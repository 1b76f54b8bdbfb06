"""fsmemory's test suite (a package so shared fixture modules import as ``tests.*``)."""
