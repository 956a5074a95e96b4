"""The FastAPI application: routers per resource, one error shape, runners in the lifespan.

:func:`create_app` wires the services (store, fleet, registry, runners) into the app; every
endpoint but ``GET /health`` and ``GET /ready`` requires the bearer token when one is set. Every
error, whether the service's own, the library's, FastAPI's request validation or an unknown
route, is rendered by one handler as :class:`ErrorBody` with a stable ``error`` code.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI
from starlette.routing import BaseRoute, Route

from agent_coordinator._api import (
    agent_writes,
    agents,
    batches,
    editor,
    reports,
    runs,
    schemas,
    sessions,
)
from agent_coordinator._api.deps import require_token
from agent_coordinator._api.errors import HANDLED, render_error
from agent_coordinator._api.lean_runs import LeanRunCreate
from agent_coordinator._api.limits import BodyLimit
from agent_coordinator._dashboard import DashboardPages
from agent_coordinator._errors import ErrorBody, StoreUnavailable
from agent_coordinator._service.bodies import Health, Ready
from agent_coordinator._service.hosts import AllowedHosts, HostGuard
from agent_coordinator._service.lifespan import serving
from agent_coordinator._service.services import Services

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["create_app"]

READY_WITHIN_S = 10.0
"""Seconds ``GET /ready`` waits for the database's answer before it answers 503 (more than a
PostgreSQL store waits for a connection and then for its diagnosis, so an unreachable database
is named as such)."""


def create_app(
    services: Services, *, mcp_host: str | None = None, hosts: AllowedHosts | None = None
) -> LeanRunCreate:
    """Build the API over ``services``; its runner (if any) starts and stops with the app.

    Args:
        services: The store, execution, token, limits and in-process runner.
        mcp_host: Also serve the MCP server at ``/mcp`` (streamable HTTP, the same token),
            for this address; needs the ``mcp`` extra.
        hosts: The ``Host`` names answered, ``/mcp`` included (421 for others; a browser's
            cross-site POST, PUT, PATCH or DELETE is 403); if not given, the loopback names
            and ``mcp_host``.

    Returns:
        The ASGI application: the FastAPI app (its ``app``) behind the lean ``POST /runs``.
    """
    routes: list[BaseRoute] = []
    managers: list[StreamableHTTPSessionManager] = []
    if mcp_host is not None:
        # here, not at the top: the MCP server needs the optional ``mcp`` extra
        from agent_coordinator._mcp_server import mcp_route

        route, manager = mcp_route(services)
        routes.append(route)
        managers.append(manager)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with serving(services, managers):
            yield

    app = FastAPI(
        title="agentshape coordinator",
        version="0.1.0",
        description="Runs, sessions, validated results and the schema registry of an agent fleet.",
        lifespan=lifespan,
        responses={"default": {"model": ErrorBody, "description": "Any error"}},
    )
    app.state.services = services
    for kind in (*HANDLED, Exception):
        app.add_exception_handler(kind, render_error)
    app.add_middleware(BodyLimit, max_bytes=services.limits.max_body_bytes)
    app.add_middleware(DashboardPages)  # the pages for browsers; the API for everyone else
    # Outermost: a foreign Host or a cross-site change is refused before anything reads it.
    if hosts is None:
        hosts = AllowedHosts.for_address(mcp_host) if mcp_host else AllowedHosts()
    app.add_middleware(HostGuard, allowed=hosts)
    app.router.routes.extend(routes)
    secured = [Depends(require_token)]
    modules = (runs, sessions, batches, schemas, editor, agents, agent_writes, reports)
    for module in modules:
        app.include_router(module.router, dependencies=secured)

    @app.get("/health", tags=["health"])
    async def health() -> Health:
        """Answer ``ok`` while the process is up, without asking the database (no token needed)."""
        return Health()

    @app.get(
        "/ready",
        tags=["health"],
        responses={503: {"model": ErrorBody, "description": "StoreUnavailable, with the reason"}},
    )
    async def ready() -> Ready:
        """Answer ``ready`` when the database answers too; 503 ``StoreUnavailable`` when not.

        No token needed: for a load balancer, which takes the service out of rotation while the
        database cannot be used (unreachable, its file removed or replaced, or no answer within
        :data:`READY_WITHIN_S` seconds).
        """
        store = services.store
        # A database that stops answering (a frozen host, a network that drops packets without
        # a reset) holds a statement forever: a probe gets its 503 in time instead. Not
        # wait_for, which also waits for the cancelled call to wind down (a frozen database
        # holds that up too: 20 s and more).
        probe = asyncio.ensure_future(store.call(store.ready))
        try:
            done, _ = await asyncio.wait((probe,), timeout=READY_WITHIN_S)
        finally:
            if not probe.done():
                probe.cancel()
        if not done:
            raise StoreUnavailable(
                f"the database at {store.url} did not answer within {READY_WITHIN_S:g} s"
            )
        probe.result()
        return Ready()

    # Every route by path and methods, for a 405's Allow (the app's own list holds the
    # included routers as units).
    every = [*app.router.routes, *(route for m in modules for route in m.router.routes)]
    app.state.method_routes = [route for route in every if isinstance(route, Route)]
    # In front of everything: a well-formed POST /runs is answered without the middlewares and
    # the router, by the host guard's and the body limit's rules and the route's own code.
    return LeanRunCreate(app, services=services, hosts=hosts)
