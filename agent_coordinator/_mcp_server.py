"""agentshape as an MCP server: agents as tools whose output is enforced, over stdio or HTTP.

:func:`build_mcp_server` turns the service's :class:`Services` (the same store, runners, fleet
and registry as the HTTP API) into an ``mcp`` SDK server, so a session started over MCP is the
same session ``GET /sessions/{id}`` and the dashboard show. Tools:

- ``start_agent_session`` / ``resume_agent_session`` store a run, wait for its end (reporting
  progress, cancelling the run when the client cancels the call) and answer with the body of
  ``GET /sessions/{id}/result`` as ``structuredContent``; a failed run is a result with
  ``isError`` and the run's failure body, never a protocol error;
- ``get_session_result``, ``list_agents``, ``list_schemas``.

Errors a request can cause (unknown agent or schema, invalid schema, bad parameters) are tool
results with ``isError`` whose text is the HTTP API's error body, with the same ``error`` codes.
Resources: ``agent://{name}`` (the blueprint) and ``schema://{name}`` (a registered schema).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent
from mcp_types import Resource as McpResource
from pydantic import BaseModel, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_contracts._errors import AgentshapeError
from agent_contracts._runs import JsonSchema, RunOptions
from agent_contracts._version import __version__
from agent_coordinator._errors import (
    ErrorDetail,
    NotFound,
    ServiceError,
    Unauthorized,
    Unprocessable,
    from_library,
)
from agent_coordinator._service.bodies import AgentSummary, RunCreate, SchemaSummary, SessionResult
from agent_coordinator._service.hosts import AllowedHosts, HostGuard
from agent_coordinator._service.lifespan import serving
from agent_coordinator._service.runs import submit_run, wait_for_end
from agent_coordinator._service.services import Services, bearer_matches
from agent_coordinator._service.views import (
    agent_detail,
    agent_summary,
    result_event,
    session_result,
)
from agent_coordinator._store.records import TERMINAL, RunRecord

__all__ = ["AgentList", "SchemaList", "TokenGuard", "build_mcp_server", "mcp_app", "mcp_route"]

_TICK_S = 1.0
"""How often a waiting tool call reports progress."""

Outcome = Annotated[CallToolResult, SessionResult]


class AgentList(BaseModel):
    """``list_agents``: the fleet's agents, by name."""

    agents: list[AgentSummary] = Field(default_factory=list)


class SchemaList(BaseModel):
    """``list_schemas``: the registry's schemas, by name."""

    schemas: list[SchemaSummary] = Field(default_factory=list)


def _error(error: ServiceError) -> CallToolResult:
    """A tool error carrying the HTTP API's error body (same ``error`` code)."""
    text = error.body().model_dump_json()
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _outcome(run: RunRecord) -> CallToolResult:
    """The session result of an ended run: ``isError`` when the run did not complete."""
    body = session_result(run).model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=run.status != "completed",
    )


def _invalid(error: PydanticValidationError) -> Unprocessable:
    return Unprocessable(
        "InvalidRequest",
        "the tool arguments are not valid",
        details=[
            ErrorDetail(
                path="$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]),
                message=str(e["msg"]),
            )
            for e in error.errors()
        ],
    )


class _Server(MCPServer[Any]):
    """The SDK's server with resources listed from the fleet and the registry as they are now."""

    def __init__(self, services: Services) -> None:
        super().__init__(
            name="agentshape",
            version=__version__,
            log_level="WARNING",
            instructions=(
                "Start agent sessions whose output is validated against a JSON Schema. "
                "list_agents shows the agents; start_agent_session runs one and answers with "
                "the validated result, or with isError and the validation errors."
            ),
        )
        self.services = services

    async def list_resources(self) -> list[McpResource]:
        """List every agent's blueprint and every registered schema."""
        listed = await super().list_resources()
        for config in self.services.execution.fleet.configs:
            listed.append(
                McpResource(
                    uri=f"agent://{config.id}",
                    name=config.id,
                    description=config.description or None,
                    mime_type="application/json",
                )
            )
        entries = await asyncio.to_thread(self.services.execution.registry.list)
        for entry in entries:
            listed.append(
                McpResource(
                    uri=f"schema://{entry.name}",
                    name=entry.name,
                    description=entry.description,
                    mime_type="application/schema+json",
                )
            )
        return listed


async def _follow(services: Services, run: RunRecord, ctx: Context) -> RunRecord:
    """Wait for a run to end, reporting progress; cancel the run when the call is cancelled."""
    ticks = 0
    events_seen = 0
    latest = ""
    try:
        while run.status not in TERMINAL:
            await ctx.report_progress(ticks, None, f"run {run.id} is {run.status}{latest}")
            run = await wait_for_end(services, run.id, _TICK_S)
            events = await services.store.call_in_thread(
                services.store.events_after, run.id, events_seen
            )
            if events:
                events_seen = events[-1].id
                latest = f" (last event: {events[-1].type})"
            ticks += 1
        ended = result_event(run)
        if ended is not None:
            await ctx.report_progress(ticks, None, json.dumps(ended, ensure_ascii=False))
        return run
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), contextlib.suppress(ServiceError):
            await services.store.call_in_thread(services.store.request_cancel, run.id)
        raise


async def _start(services: Services, body: dict[str, Any], ctx: Context) -> CallToolResult:
    try:
        request = RunCreate.model_validate(body)
    except PydanticValidationError as error:
        return _error(_invalid(error))
    try:
        run = await submit_run(services, request, None)
    except ServiceError as error:
        return _error(error)
    except AgentshapeError as error:
        return _error(from_library(error))
    return _outcome(await _follow(services, run, ctx))


def build_mcp_server(services: Services) -> MCPServer[Any]:
    """Return the MCP server over ``services`` (its runners must be started by the caller).

    Args:
        services: The store, execution (fleet and registry), limits and notifier the HTTP API
            uses; runs are executed by whichever runners serve that store.

    Returns:
        An ``mcp`` SDK server: ``run_stdio_async()`` for stdio, ``streamable_http_app()`` for HTTP.
    """
    server = _Server(services)

    @server.tool(
        description=(
            "Start a session of an agent and wait for its validated result. The output matches "
            "the agent's own output schema, the inline output_schema, or the registered schema "
            "output_schema_name; when the model fails the contract after its retry, the result "
            "has isError with the validation errors ('$.path: message') and the last output. "
            "An agent with parameters may be started on them alone (no prompt)."
        )
    )
    async def start_agent_session(
        agent_name: str,
        ctx: Context,
        prompt: str | None = None,
        parameters: dict[str, JsonValue] | None = None,
        output_schema: JsonSchema | None = None,
        output_schema_name: str | None = None,
        output_schema_options: RunOptions | None = None,
        model: str | None = None,
    ) -> Outcome:
        body: dict[str, Any] = {
            "type": "start_session",
            "agent_name": agent_name,
            "output_schema": output_schema,
            "output_schema_name": output_schema_name,
            "output_schema_options": output_schema_options,
            "model": model,
        }
        if prompt is not None:
            body["prompt"] = prompt
        if parameters is not None:
            body["parameters"] = parameters
        return await _start(services, body, ctx)

    @server.tool(
        description=(
            "Continue a session with a new prompt (same conversation, same contract) and wait "
            "for the validated result."
        )
    )
    async def resume_agent_session(session_id: str, prompt: str, ctx: Context) -> Outcome:
        body = {"type": "resume_session", "session_id": session_id, "prompt": prompt}
        return await _start(services, body, ctx)

    @server.tool(
        description="Return a session's latest result, as GET /sessions/{id}/result gives it."
    )
    async def get_session_result(session_id: str) -> Outcome:
        session = await services.store.call_in_thread(services.store.get_session, session_id)
        if session is None:
            return _error(NotFound("SessionNotFound", f"no session {session_id!r}"))
        runs = await services.store.call_in_thread(services.store.session_runs, session_id)
        if not runs:
            return _error(NotFound("SessionNotFound", f"session {session_id!r} has no runs"))
        try:
            return _outcome(runs[-1])
        except ServiceError as error:  # ResultNotReady while the latest run has not ended
            return _error(error)

    @server.tool(description="List the fleet's agents with their models and contracts.")
    def list_agents() -> AgentList:
        return AgentList(agents=[agent_summary(c) for c in services.execution.fleet.configs])

    @server.tool(description="List the registered output schemas.")
    async def list_schemas() -> SchemaList:
        entries = await asyncio.to_thread(services.execution.registry.list)
        return SchemaList(schemas=[SchemaSummary(**entry.model_dump()) for entry in entries])

    @server.resource("agent://{name}", mime_type="application/json")
    def agent_blueprint(name: str) -> str:
        """An agent's blueprint with its contracts (as ``GET /agents/{name}``)."""
        try:
            return agent_detail(services.execution.config(name)).model_dump_json(indent=2)
        except ServiceError as error:
            raise ResourceNotFoundError(error.body().message) from error

    @server.resource("schema://{name}", mime_type="application/schema+json")
    def registered_schema(name: str) -> str:
        """A registered output schema."""
        try:
            return json.dumps(services.execution.registry.get(name), indent=2)
        except AgentshapeError as error:
            raise ResourceNotFoundError(error.format_message()) from error

    return server


class TokenGuard:
    """An ASGI wrapper answering 401 (the API's error body) unless the bearer token matches.

    Args:
        app: The ASGI app to guard.
        token: The token, or ``None`` to let every request through.
    """

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on when its token matches; answer 401 otherwise."""
        if self.token is not None and scope["type"] == "http":
            header = Headers(scope=scope).get("authorization", "")
            if not bearer_matches(header, self.token):
                body = Unauthorized(
                    "Unauthorized", "a valid 'Authorization: Bearer <token>' is required"
                ).body()
                response = JSONResponse(body.model_dump(mode="json"), status_code=401)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def mcp_route(services: Services) -> tuple[Route, StreamableHTTPSessionManager]:
    """Return the streamable-HTTP route ``/mcp`` over ``services`` and its session manager.

    The route checks the services' token as the API does; the caller must run the session
    manager (``async with manager.run()``) while the app serves, start the runners, and guard
    the ``Host`` with :class:`~agent_coordinator._service.hosts.HostGuard` (the SDK's own check is
    off, so one check with one ``--allowed-host`` list serves the API and ``/mcp`` alike).
    """
    server = build_mcp_server(services)
    server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    manager = server.session_manager
    endpoint = TokenGuard(StreamableHTTPASGIApp(manager), services.token)
    return Route("/mcp", endpoint=endpoint), manager


def mcp_app(services: Services, *, hosts: AllowedHosts) -> Starlette:
    """Return an ASGI app serving only ``/mcp`` (and ``/health``, ``/ready``), with the runners.

    ``/health`` and ``/ready`` answer as the API's do: the process is up; the database answers
    too (else 503 ``StoreUnavailable`` with the reason, in the one error body).

    Args:
        services: What the tools use; its runner (if any) starts and stops with the app.
        hosts: The ``Host`` names answered (421 for others, 403 for a cross-site POST).
    """
    route, manager = mcp_route(services)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def ready(request: Request) -> JSONResponse:
        try:
            await services.store.call(services.store.ready)
        except ServiceError as error:
            body = error.body().model_dump(mode="json")
            return JSONResponse(body, status_code=error.status_code)
        return JSONResponse({"status": "ready"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with serving(services, [manager]):
            yield

    return Starlette(
        routes=[route, Route("/health", health), Route("/ready", ready)],
        lifespan=lifespan,
        middleware=[Middleware(HostGuard, allowed=hosts)],
    )
