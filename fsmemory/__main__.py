"""``python -m fsmemory``: the ``fsmemory`` command (see :mod:`fsmemory.cli`)."""

import sys

from fsmemory.cli import main

if __name__ == "__main__":
    sys.exit(main())
