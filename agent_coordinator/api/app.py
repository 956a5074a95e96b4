"""The FastAPI application: routers per resource, one error shape, runners in the lifespan.

:func:`create_app` wires the services (store, fleet, registry, runners) into the app; every
endpoint but ``GET /health`` and ``GET /ready`` requires the bearer token when one is set. Every
error, whether the service's own, the library's, FastAPI's request validation or an unknown
route, is rendered by one handler as :class:`ErrorBody` with a stable ``error`` code.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute

from agent_contracts.errors import AgentshapeError
from agent_coordinator.api import (
    agent_writes,
    agents,
    editor,
    reports,
    runs,
    schemas,
    sessions,
)
from agent_coordinator.api.bodies import Health, Ready
from agent_coordinator.api.deps import Services, require_token
from agent_coordinator.api.limits import BodyLimit
from agent_coordinator.dashboard import DashboardPages
from agent_coordinator.errors import (
    ErrorBody,
    ErrorDetail,
    ServiceError,
    Unprocessable,
    from_library,
)

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["create_app", "serving"]

logger = logging.getLogger(__name__)

_HTTP_CODES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
}


def _as_service_error(error: Exception) -> ServiceError:
    if isinstance(error, ServiceError):
        return error
    if isinstance(error, AgentshapeError):
        return from_library(error)
    if isinstance(error, RequestValidationError):
        return Unprocessable(
            "InvalidRequest",
            "the request is not valid",
            details=[
                ErrorDetail(
                    path="$"
                    + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]),
                    message=str(e["msg"]),
                )
                for e in error.errors()
            ],
        )
    if isinstance(error, HTTPException):
        code = _HTTP_CODES.get(error.status_code, "HttpError")
        wrapped = ServiceError(code, str(error.detail))
        wrapped.status_code = error.status_code
        return wrapped
    logger.exception("unexpected error", exc_info=error)
    return ServiceError("InternalError", "the service failed unexpectedly; see its log")


async def _render(request: Request, error: Exception) -> JSONResponse:
    """The one exception handler: every error becomes the one error body."""
    service_error = _as_service_error(error)
    body: ErrorBody = service_error.body()
    return JSONResponse(body.model_dump(mode="json"), status_code=service_error.status_code)


@asynccontextmanager
async def serving(
    services: Services, managers: Sequence[StreamableHTTPSessionManager] = ()
) -> AsyncIterator[None]:
    """Run what an app needs while it serves: store threads, MCP sessions, the runner, the sweeper.

    Args:
        services: The services; their runner and retention sweeper (if any) start, and stop at
            the end.
        managers: MCP session managers to run alongside.
    """
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=32, thread_name_prefix="store")
    )
    async with AsyncExitStack() as stack:
        for manager in managers:
            await stack.enter_async_context(manager.run())
        if services.runner is not None:
            services.runner.start()
        if services.sweeper is not None:
            services.sweeper.start()
        try:
            yield
        finally:
            if services.sweeper is not None:
                await services.sweeper.stop()
            if services.runner is not None:
                await services.runner.stop()


def create_app(services: Services, *, mcp_host: str | None = None) -> FastAPI:
    """Build the API over ``services``; its runner (if any) starts and stops with the app.

    Args:
        services: The store, execution, token, limits and in-process runner.
        mcp_host: Also serve the MCP server at ``/mcp`` (streamable HTTP, the same token),
            for this address; needs the ``mcp`` extra.

    Returns:
        The ASGI application.
    """
    routes: list[BaseRoute] = []
    managers: list[StreamableHTTPSessionManager] = []
    if mcp_host is not None:
        from agent_coordinator.mcp_server import mcp_route

        route, manager = mcp_route(services, host=mcp_host)
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
    for kind in (ServiceError, AgentshapeError, RequestValidationError, HTTPException, Exception):
        app.add_exception_handler(kind, _render)
    app.add_middleware(BodyLimit, max_bytes=services.limits.max_body_bytes)
    app.add_middleware(DashboardPages)  # the pages for browsers; the API for everyone else
    app.router.routes.extend(routes)
    secured = [Depends(require_token)]
    for module in (runs, sessions, schemas, editor, agents, agent_writes, reports):
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
        database cannot be used (unreachable, or its file removed or replaced).
        """
        await services.store.call(services.store.ready)
        return Ready()

    return app
