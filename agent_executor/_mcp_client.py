"""The MCP client side: start an agent's MCP servers and wrap their allowed tools as input tools.

Needs the ``mcp`` SDK (``pip install 'agentshape[mcp]'``); :mod:`agent_executor._mcp_tools` imports
this module only for an agent that lists MCP servers. Each server's connection lives in a task of
its own (:class:`ServerHost`): the SDK's transports cancel the task that entered them when they
break, and that must be the host, never the run.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from contextlib import AsyncExitStack, suppress
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import JsonValue

from agent_contracts._errors import AgentshapeError, ToolExecutionError
from agent_contracts._mcp import McpServer, mcp_tool_name
from agent_executor._run_state import RunFailure
from agent_executor._tools import InputTool

__all__ = ["McpServerError", "McpTool", "ServerHost", "start_server"]


class McpServerError(Exception):
    """An MCP server failed to start, hung, or broke its connection.

    Args:
        server: The server's configured name.
        message: What went wrong.
    """

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server
        """The server's configured name."""


def _render(result: mcp_types.CallToolResult) -> str:
    """Turn a tool result into the text the model reads: every content block, then structure."""
    parts: list[str] = []
    structured = result.structured_content
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
            if structured is not None and _parses_to(block.text, structured):
                structured = None  # the text already carries the structure
        else:
            parts.append(json.dumps(block.model_dump(mode="json", exclude_none=True)))
    if structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def _parses_to(text: str, value: object) -> bool:
    """Whether ``text`` is JSON equal to ``value``."""
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


class McpTool(InputTool):
    """One allowed tool of a running MCP server, offered to the model as ``mcp__<server>__<tool>``.

    Args:
        server: The server's configuration.
        session: The open session to the server.
        remote: The tool as the server listed it.
        stderr: The server's captured standard error (a stdio server), quoted when it breaks.

    Raises:
        InvalidSchemaError: The tool's input schema is not a valid JSON Schema.
    """

    def __init__(
        self,
        server: McpServer,
        session: ClientSession,
        remote: mcp_types.Tool,
        stderr: Any = None,
    ) -> None:
        schema: dict[str, JsonValue] = dict(remote.input_schema)
        super().__init__(
            name=mcp_tool_name(server.name, remote.name),
            description=remote.description or f"The tool {remote.name} of MCP server {server.name}",
            parameters=schema,
        )
        self.server = server
        """The server's configuration."""
        self.remote_name = remote.name
        """The tool's name on the server."""
        self._session = session
        self._stderr = stderr

    async def call(self, arguments: JsonValue) -> str:
        """Validate the arguments and call the tool on its server.

        Returns:
            The result's text blocks, other blocks as JSON, and its structured content as JSON.

        Raises:
            ToolExecutionError: Invalid arguments, the tool reported an error (``isError``) or
                the server refused the call; the model sees it and can react.
            RunFailure: The server crashed, closed the connection or exceeded
                ``call_timeout_s`` (``mcp_server_error``, naming the server).
        """
        checked = self.validate_arguments(arguments)
        timeout = self.server.call_timeout_s
        try:
            with anyio.fail_after(timeout):
                result = await self._session.call_tool(self.remote_name, checked, timeout)
        except TimeoutError:
            self._fail(f"tool {self.remote_name} gave no answer within {timeout} s")
        except MCPError as exc:
            if exc.code in (mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT):
                self._fail(f"tool {self.remote_name} failed: {exc.error.message}")
            raise ToolExecutionError(exc.error.message, tool=self.name) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._fail(f"the connection broke during tool {self.remote_name} ({exc!r})")
        text = _render(result)
        if result.is_error:
            raise ToolExecutionError(text or "the tool reported an error", tool=self.name)
        return text

    def _fail(self, message: str) -> None:
        """End the run with ``mcp_server_error``, quoting the server's last standard error."""
        raise RunFailure(
            "mcp_server_error", str(McpServerError(self.server.name, message)) + _tail(self._stderr)
        )

    def execute(self, arguments: dict[str, JsonValue]) -> str:
        """Not used: an MCP tool is called asynchronously through :meth:`call`.

        Raises:
            ToolExecutionError: Always.
        """
        raise ToolExecutionError("MCP tools are called asynchronously", tool=self.name)


def _tail(stderr: Any) -> str:
    """The last lines a stdio server wrote to standard error, as a suffix for a message."""
    if stderr is None:
        return ""
    try:
        stderr.flush()
        stderr.seek(0)
        lines = [line for line in stderr.read().splitlines() if line.strip()][-5:]
    except (OSError, ValueError):
        return ""
    return "; its stderr ends: " + " | ".join(lines) if lines else ""


async def start_server(server: McpServer, stack: AsyncExitStack) -> list[InputTool]:
    """Start one server on ``stack``, initialise it and wrap its allowed tools.

    Args:
        server: The server's configuration.
        stack: The run's exit stack; closing it shuts the server down.

    Returns:
        One :class:`McpTool` per allowed tool, in the order of ``server.tools``.

    Raises:
        McpServerError: The server cannot be started, does not answer within
            ``start_timeout_s``, lacks an allowed tool, or lists a tool with an invalid schema.
    """
    stderr: Any = None
    try:
        if server.command is not None:
            stderr = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))  # noqa: SIM115
            params = StdioServerParameters(
                command=server.command, args=server.args, env=server.env or None, cwd=server.cwd
            )
            read, write = await stack.enter_async_context(stdio_client(params, errlog=stderr))
        else:
            assert server.url is not None  # one of command and url, by McpServer's validator
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=server.headers))
            transport = streamable_http_client(server.url, http_client=http)
            read, write = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(ClientSession(read, write))
        with anyio.fail_after(server.start_timeout_s):
            await session.initialize()
            listed = await _list_tools(session)
    except TimeoutError:
        message = f"did not start within {server.start_timeout_s} s"
        raise McpServerError(server.name, message + _tail(stderr)) from None
    except (OSError, MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
        raise McpServerError(server.name, f"could not start: {exc!r}{_tail(stderr)}") from exc
    missing = [name for name in server.tools if name not in listed]
    if missing:
        known = ", ".join(sorted(listed)) or "none"
        raise McpServerError(server.name, f"has no tool {', '.join(missing)} (its tools: {known})")
    try:
        return [McpTool(server, session, listed[name], stderr) for name in server.tools]
    except AgentshapeError as exc:
        raise McpServerError(server.name, exc.format_message()) from exc


async def _list_tools(session: ClientSession) -> dict[str, mcp_types.Tool]:
    """Every tool the server lists, following pagination."""
    tools: dict[str, mcp_types.Tool] = {}
    cursor: str | None = None
    while True:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.update((tool.name, tool) for tool in page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _describe(exc: BaseException) -> str:
    """The first real error inside ``exc`` (exception groups unwrapped, cancellations skipped)."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if not isinstance(inner, asyncio.CancelledError):
                return _describe(inner)
    return repr(exc)


class ServerHost:
    """Runs one MCP server's connection in a task of its own, from :meth:`start` to :meth:`close`.

    Args:
        server: The server's configuration.
    """

    def __init__(self, server: McpServer) -> None:
        self.server = server
        """The server's configuration."""
        self._ready: asyncio.Future[list[InputTool]] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> list[InputTool]:
        """Start the server and return its allowed tools.

        Raises:
            McpServerError: As for :func:`start_server`, or the host did not report within
                ``start_timeout_s`` (plus a grace period for spawning).
        """
        self._task = asyncio.create_task(self._serve(), name=f"mcp server {self.server.name}")
        try:
            return await asyncio.wait_for(
                asyncio.shield(self._ready), self.server.start_timeout_s + 5
            )
        except TimeoutError:
            message = f"did not start within {self.server.start_timeout_s} s"
            raise McpServerError(self.server.name, message) from None

    async def _serve(self) -> None:
        """Hold the connection open until :meth:`close`; report a failure to start."""
        try:
            async with AsyncExitStack() as stack:
                tools = await start_server(self.server, stack)
                self._ready.set_result(tools)
                await self._stop.wait()
        except McpServerError as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
        except BaseException as exc:  # a broken transport's cancellation included
            if not self._ready.done():
                error = McpServerError(self.server.name, f"could not start: {_describe(exc)}")
                self._ready.set_exception(error)

    async def close(self, grace_s: float = 15.0) -> None:
        """Shut the server down; after ``grace_s`` seconds its task is cancelled."""
        self._stop.set()
        if self._task is None:
            return
        # On timeout, wait_for has cancelled the host task, which closes the connection.
        with suppress(TimeoutError):
            await asyncio.wait_for(self._task, grace_s)
        if not self._ready.done():
            self._ready.cancel()
