"""MCP servers as input tools, tied to a run's lifetime: :func:`execute_with_mcp`.

An agent that lists ``mcp_servers`` has them started when a run starts (never at ``Agent()``),
once per run, and shut down when it ends, however it ends (completed, failed, timed out or
cancelled). Their allowed tools join the run's input tools; ``submit_result`` stays forced on the
last step as for any input tool. A server that cannot start fails the run with
``mcp_server_error`` naming it; one that crashes or hangs during a call does too (see
:class:`agent_executor._mcp_client.McpTool`).

The ``mcp`` SDK is imported only for an agent that lists servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from importlib.util import find_spec

from agent_contracts._errors import ConfigError
from agent_contracts._mcp import McpServer
from agent_contracts._runs import RunError
from agent_executor._analytics import AnalyticsSink
from agent_executor._run import RunOutcome, execute
from agent_executor._run_state import RunSpec
from agent_executor._tools import InputTool

__all__ = ["execute_with_mcp", "require_mcp_sdk"]


def require_mcp_sdk(servers: Sequence[McpServer], agent_id: str) -> None:
    """Check that the ``mcp`` SDK is installed when an agent lists MCP servers, with distinct names.

    Raises:
        ConfigError: Servers are listed but the SDK is missing (the message names the extra),
            or two servers share a name.
    """
    names = [server.name for server in servers]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"agent {agent_id!r} lists MCP server {repeated[0]!r} twice")
    if servers and find_spec("mcp") is None:
        raise ConfigError(
            f"agent {agent_id!r} lists MCP servers but the mcp SDK is not installed; "
            "install it with: pip install 'agentshape[mcp]'"
        )


async def execute_with_mcp(
    servers: Sequence[McpServer], spec: RunSpec, sink: AnalyticsSink
) -> RunOutcome:
    """Run :func:`~agent_executor._run.execute` with the agent's MCP servers started around it.

    Args:
        servers: The agent's MCP servers (none: just ``execute``).
        spec: The resolved run; the servers' tools are added to its input tools.
        sink: Where analytics events go.

    Returns:
        The run's outcome; a server that fails to start makes it a failed run with
        ``mcp_server_error``, without any model call.
    """
    if not servers:
        return await execute(spec, sink)
    from agent_executor._mcp_client import McpServerError, ServerHost

    hosts: list[ServerHost] = []
    try:
        tools: list[InputTool] = []
        try:
            for server in servers:
                hosts.append(ServerHost(server))
                tools.extend(await hosts[-1].start())
        except McpServerError as exc:
            error = RunError(type="mcp_server_error", message=str(exc))
            spec = replace(spec, precheck=spec.precheck or error)
        return await execute(replace(spec, tools=[*spec.tools, *tools]), sink)
    finally:
        for host in hosts:
            await host.close()
