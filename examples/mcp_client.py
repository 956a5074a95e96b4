"""Call agents as MCP tools: start ``agentshape mcp`` over stdio, as a desktop client does.

Needs the ``server`` and ``mcp`` extras. From a folder holding an ``agents/`` fleet:

    python examples/mcp_client.py                          # the offline test model
    python examples/mcp_client.py openai:gpt-4.1-mini      # a real one (OPENAI_API_KEY)
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent

COUNT = {
    "type": "object",
    "required": ["count"],
    "properties": {"count": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}


async def main(model: str) -> None:
    """List the fleet, start a session, resume it, and see a refusal."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentshape", "mcp", "--agents-dir", "agents", "--model", model],
        env=dict(os.environ),
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        print("tools:", sorted(tool.name for tool in tools.tools))
        agents = await session.call_tool("list_agents", {})
        print("agents:", agents.structured_content)
        started = await session.call_tool(
            "start_agent_session",
            {"agent_name": "summarizer", "prompt": "Summarize: the build is red."},
        )
        result = started.structured_content or {}
        print("started:", result.get("status"), result.get("result_data"))
        resumed = await session.call_tool(
            "resume_agent_session",
            {"session_id": result["session_id"], "prompt": "Shorter, please."},
        )
        print("resumed:", (resumed.structured_content or {}).get("result_data"))
        # The agent has its own contract: a caller's schema is refused, as a tool error.
        refused = await session.call_tool(
            "start_agent_session",
            {"agent_name": "summarizer", "prompt": "Count.", "output_schema": COUNT},
        )
        why = [block.text for block in refused.content if isinstance(block, TextContent)]
        print("refused:", refused.is_error, *why)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "test"))
