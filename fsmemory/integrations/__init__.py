"""Adapters that put fsmemory where agents already live, each behind its extra.

* :mod:`fsmemory.integrations.mcp` -- a Model Context Protocol server (``fsmemory mcp``)
  with ``remember``, ``recall``, ``forget``, ``context`` and optionally ``knowledge``
  tools, built on the official ``mcp`` SDK (``pip install 'fsmemory[mcp]'``).
* :mod:`fsmemory.integrations.langgraph` -- :class:`~fsmemory.integrations.langgraph.FsspecStore`,
  a LangGraph ``BaseStore`` keeping one plain JSON file per item on any fsspec URL
  (``pip install 'fsmemory[langgraph]'``).

Nothing is imported here, so ``import fsmemory`` never pulls in ``mcp`` or ``langgraph``:
import the submodule you need.
"""

from __future__ import annotations

__all__: list[str] = []
