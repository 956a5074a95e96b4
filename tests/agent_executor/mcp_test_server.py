"""An MCP server for the tests, written with the mcp SDK's server API; run as a stdio script.

``python mcp_test_server.py MODE``: ``ok`` serves its tools; ``crash`` serves them but the
``crash`` tool kills the process; ``hang_start`` never answers the handshake; ``http`` serves
streamable HTTP on a free loopback port, which it prints (one line) once it is bound. With
``MCP_TEST_PID_FILE`` set it writes its process id there.
"""

from __future__ import annotations

import os
import socket
import sys
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("agentshape-test")


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def crash() -> str:
    """Kill the server process mid-call."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never return."""
    time.sleep(3600)
    return "unreachable"


if __name__ == "__main__":
    if "MCP_TEST_PID_FILE" in os.environ:  # lets a test check that the server was shut down
        with open(os.environ["MCP_TEST_PID_FILE"], "w", encoding="utf-8") as pid_file:
            pid_file.write(str(os.getpid()))
    if sys.argv[1:] == ["hang_start"]:
        time.sleep(3600)
    if sys.argv[1:] == ["http"]:  # streamable HTTP at http://127.0.0.1:PORT/mcp
        # Bound here and kept: a port found free and closed again can be taken by another
        # process before the server binds it, and the test would talk to that process.
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        listening.listen(64)
        print(listening.getsockname()[1], flush=True)
        app = server.streamable_http_app()
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])
        sys.exit(0)
    server.run("stdio")
