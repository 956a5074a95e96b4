"""What every handler needs, as FastAPI dependencies: the services and auth."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from agent_coordinator._errors import Unauthorized
from agent_coordinator._service.services import Services, bearer_matches

__all__ = ["ServicesDep", "check_token", "require_token"]


async def _services(request: Request) -> Services:
    # async, like require_token: FastAPI runs a plain-def dependency in a worker thread
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(_services)]
"""The app's services, for a handler's signature."""


def check_token(authorization: str, token: str | None) -> None:
    """Check an ``Authorization`` header against the service's token (constant-time).

    Args:
        authorization: The header's value (empty when there is none).
        token: The service's token; ``None``: every request passes.

    Raises:
        Unauthorized: The service has a token and the header does not carry it (401).
    """
    if token is not None and not bearer_matches(authorization, token):
        raise Unauthorized("Unauthorized", "a valid 'Authorization: Bearer <token>' is required")


async def require_token(request: Request) -> None:
    """Check the bearer token when the service has one (compared in constant time)."""
    # The services read here, not through ServicesDep: every request solves this dependency,
    # and a sub-dependency is solved again for it each time.
    check_token(request.headers.get("authorization", ""), (await _services(request)).token)
