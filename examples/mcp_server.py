"""Drive ``fsmemory mcp`` the way Claude Desktop or Claude Code do: start the command and
talk MCP to it over stdio with the official SDK client.

Needs ``pip install 'fsmemory[mcp]'``. Runs offline on a temporary folder. To use the
server from a real client, put the command in its configuration (see the README):

    {"mcpServers": {"memory": {"command": "fsmemory",
                               "args": ["--store", "/home/me/agent_memory", "mcp"]}}}

Run: python examples/mcp_server.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def server_command(store: Path) -> StdioServerParameters:
    """``fsmemory --store STORE mcp --defang``, from this Python's environment."""
    exe = shutil.which("fsmemory", path=os.path.dirname(sys.executable))
    prefix = [exe] if exe else [sys.executable, "-m", "fsmemory.cli"]
    return StdioServerParameters(
        command=prefix[0], args=[*prefix[1:], "--store", str(store), "mcp", "--defang"]
    )


async def session_demo(store: Path) -> None:
    async with (
        stdio_client(server_command(store)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        print("tools:", ", ".join(t.name for t in tools))

        for args in (
            {"content": "Prefers dark mode", "category": "preferences", "persistent": True},
            {"content": "Deploys on Fridays are forbidden", "importance": 0.9},
        ):
            result = await session.call_tool("remember", args)
            print("remember ->", result.content[0].text)

        result = await session.call_tool("recall", {"query": "dark mode", "limit": 3})
        print("recall ->", result.content[0].text)

        # Bad input is a tool error the model can read; the server keeps running.
        result = await session.call_tool("recall", {"query": "x", "limit": "many"})
        print("bad limit -> is_error =", result.is_error)
        assert result.is_error

        result = await session.call_tool("context", {})
        print("context ->\n" + result.content[0].text)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "agent_memory"
        asyncio.run(session_demo(store))
        print("\nMEMORY.md on disk:\n" + (store / "MEMORY.md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
