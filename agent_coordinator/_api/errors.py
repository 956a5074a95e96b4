"""The one exception handler: every error, whoever raised it, becomes the one error body.

The service's own errors, the library's, FastAPI's request validation and Starlette's HTTP errors
(an unknown route, a wrong method) are each mapped onto :class:`ServiceError` and answered as
:class:`ErrorBody` with its stable ``error`` code; anything else is a logged 500
``InternalError``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match, Route

from agent_contracts._errors import AgentshapeError
from agent_coordinator._errors import (
    ErrorBody,
    ErrorDetail,
    ServiceError,
    Unprocessable,
    from_library,
)

__all__ = ["HANDLED", "render_error"]

logger = logging.getLogger(__name__)

HANDLED: tuple[type[Exception], ...] = (
    ServiceError,
    AgentshapeError,
    RequestValidationError,
    HTTPException,
)
"""The errors answered where they are raised; any other reaches the server's error handler, which
answers 500 ``InternalError`` and logs it."""

_HTTP_CODES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
}


def _as_service_error(error: Exception, content_type: str | None = None) -> ServiceError:
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
                    message=_not_json(content_type) if _body_not_read(e) else str(e["msg"]),
                )
                for e in error.errors()
            ],
        )
    if isinstance(error, HTTPException):
        code = _HTTP_CODES.get(error.status_code, "HttpError")
        message = str(error.detail)
        if isinstance(error.__cause__, RecursionError):  # FastAPI's "error parsing the body"
            message = "the request body is nested deeper than the JSON parser allows"
        wrapped = ServiceError(code, message)
        wrapped.status_code = error.status_code
        return wrapped
    logger.exception("unexpected error", exc_info=error)
    return ServiceError("InternalError", "the service failed unexpectedly; see its log")


def _body_not_read(error: Mapping[str, object]) -> bool:
    """Whether FastAPI found no JSON object where a JSON body was due (not even an empty one)."""
    return error.get("loc") == ("body",) and error.get("type") == "model_attributes_type"


def _not_json(content_type: str | None) -> str:
    """Say what a JSON body sent as something else needs (curl's -d sends a form)."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return "the body is not a JSON object"
    said = f"Content-Type {media!r}" if media else "no Content-Type"
    return f"the body must be a JSON object sent with Content-Type: application/json, not {said}"


def _allowed_methods(request: Request) -> str:
    """Return every method the request's path takes (Starlette names only the first route's)."""
    routes: list[Route] = request.app.state.method_routes
    methods: set[str] = set()
    for route in routes:
        if route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods or set()
    return ", ".join(sorted(methods))


async def render_error(request: Request, error: Exception) -> JSONResponse:
    """Answer ``error`` with the one error body; the app's handler for every exception.

    Args:
        request: The request that failed (a 405's ``Allow`` lists the methods its path takes).
        error: What was raised while answering it.

    Returns:
        The error body with the error's status; an HTTP error keeps its own headers (a 405's
        ``Allow``, a 401's ``WWW-Authenticate``).
    """
    service_error = _as_service_error(error, request.headers.get("content-type"))
    body: ErrorBody = service_error.body()
    headers = dict(error.headers or {}) if isinstance(error, HTTPException) else None
    if headers is not None and service_error.status_code == 405:
        headers["Allow"] = _allowed_methods(request)
    return JSONResponse(
        body.model_dump(mode="json"), status_code=service_error.status_code, headers=headers
    )
