"""``POST /runs`` answered in front of FastAPI, past its middlewares and router, when that is safe.

Starting a run is the request a service answers most; going through the middlewares (each
wrapping ``send`` and ``receive``), the router, the dependencies and FastAPI's request handling
costs CPU per run that ``bench/service.py``'s ``service_cpu_vs_library`` target has no room for.
:class:`LeanRunCreate` is the ASGI app the server runs: it answers a ``POST /runs`` it can answer
exactly as the app behind it would, with the route's own code (:func:`check_token`,
:func:`submit_and_wait`, :func:`run_answer`, :func:`model_response` and, for an error,
:func:`render_error`). That is a request

- whose ``Host``, ``Origin`` and ``Sec-Fetch-Site`` the host guard lets through
  (:meth:`AllowedHosts.refusal`), with a ``Content-Length`` within the body limit;
- with a JSON body (``Content-Type: application/json``) that is a valid :class:`RunCreate`;
- with no query, or a single ``wait`` written as a plain decimal within the route's bounds;
- with at most one ``Authorization`` header, and at most one ``Idempotency-Key`` of 1 to
  :data:`MAX_IDEMPOTENCY_KEY_CHARS` characters;

while the app is as :func:`~agent_coordinator._api.app.create_app` built it (no middleware
added since, no OpenTelemetry instrumentation wrapping it) and no OpenTelemetry provider is
configured (FastAPI then records the request's spans and metrics, naming the route it matched).

Every other request goes on to the app unchanged (one whose body was read has it replayed), so
the answers to refused and malformed requests (the guard's 421 and 403, the body limit's 413,
FastAPI's 422 with its error list, its 400 for a body it cannot parse) stay the app's own. An
unexpected error is answered as the app's error middleware answers it (a 500 ``InternalError``,
logged) and raised on to the server. The route itself stays, for those and for ``/docs``.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from fastapi import FastAPI
from opentelemetry import metrics, trace
from opentelemetry._logs import get_logger_provider
from pydantic import ValidationError
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from agent_coordinator._api.deps import check_token
from agent_coordinator._api.errors import HANDLED, render_error
from agent_coordinator._api.model_text import model_response
from agent_coordinator._service.bodies import MAX_IDEMPOTENCY_KEY_CHARS, MAX_WAIT_S, RunCreate
from agent_coordinator._service.hosts import AllowedHosts
from agent_coordinator._service.runs import submit_and_wait
from agent_coordinator._service.services import Services
from agent_coordinator._service.views import run_answer

__all__ = ["LeanRunCreate"]

# What FastAPI parses as the same float for every spelling it matches; any other spelling (an
# exponent, a sign, spaces, "inf") goes to FastAPI.
_WAIT = re.compile(rb"(?:wait=((?:0|[1-9][0-9]{0,2})(?:\.[0-9]{1,6})?))?")

# The OpenTelemetry API's stand-ins until a provider is set: while all three are, FastAPI
# records nothing for a request.
_UNSET_PROVIDERS = frozenset(
    {
        ("opentelemetry.trace", "ProxyTracerProvider"),
        ("opentelemetry.metrics._internal", "_ProxyMeterProvider"),
        ("opentelemetry._logs._internal", "ProxyLoggerProvider"),
    }
)


def _telemetry_configured() -> bool:
    """Tell whether an OpenTelemetry tracer, meter or logger provider has been set."""
    providers: tuple[object, ...] = (
        trace.get_tracer_provider(),
        metrics.get_meter_provider(),
        get_logger_provider(),
    )
    return any(
        (type(provider).__module__, type(provider).__name__) not in _UNSET_PROVIDERS
        for provider in providers
    )


@dataclass(frozen=True)
class _Form:
    """What a ``POST /runs`` the lean path can answer says besides its body."""

    authorization: str
    key: str | None
    wait_s: float


def _form(scope: Scope, hosts: AllowedHosts, max_body_bytes: int) -> _Form | None:
    """Return the request's token, key and wait, or ``None`` if the app must answer it."""
    matched = _WAIT.fullmatch(scope["query_string"])
    if matched is None:
        return None
    wait_s = float(matched[1]) if matched[1] is not None else 0.0
    if wait_s > MAX_WAIT_S:
        return None
    content_type = length = authorization = key = host = origin = fetch_site = None
    for name, value in scope["headers"]:
        if name == b"content-type":
            if content_type is not None:
                return None
            content_type = value
        elif name == b"content-length":
            if length is not None:
                return None
            length = value
        elif name == b"authorization":
            if authorization is not None:
                return None
            authorization = value
        elif name == b"idempotency-key":
            if key is not None:
                return None
            key = value
        elif name == b"host":
            if host is not None:
                return None
            host = value
        elif name == b"origin":
            if origin is not None:
                return None
            origin = value
        elif name == b"sec-fetch-site":
            if fetch_site is not None:
                return None
            fetch_site = value
        elif name == b"transfer-encoding":
            return None
    if content_type != b"application/json" or length is None or not length.isdigit():
        return None
    if int(length) > max_body_bytes:
        return None  # the body limit's 413
    # Headers are text as Starlette decodes them (latin-1), as the guard and the route see them.
    refusal = hosts.refusal(
        None if host is None else host.decode("latin-1"),
        method="POST",
        origin=None if origin is None else origin.decode("latin-1"),
        fetch_site=None if fetch_site is None else fetch_site.decode("latin-1"),
    )
    if refusal is not None:
        return None  # the host guard's 421 or 403
    given_key = None if key is None else key.decode("latin-1")
    if given_key is not None and not 0 < len(given_key) <= MAX_IDEMPOTENCY_KEY_CHARS:
        return None
    return _Form(
        authorization=(authorization or b"").decode("latin-1"), key=given_key, wait_s=wait_s
    )


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """Read the whole body; return the messages received and it (``None``: the client left)."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return messages, b"".join(chunks)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """Return a ``receive`` that gives ``messages`` again, then what ``receive`` gives."""
    pending = deque(messages)

    async def replayed() -> Message:
        if pending:
            return pending.popleft()
        return await receive()

    return replayed


class LeanRunCreate:
    """The ASGI app in front of the service's FastAPI app: answers a well-formed ``POST /runs``.

    Anything else goes on to the FastAPI app.

    Args:
        app: The app as :func:`~agent_coordinator._api.app.create_app` built it, whose middlewares
            and ``POST /runs`` route answer what this does not.
        services: The services the route uses.
        hosts: The ``Host`` names the app's host guard answers.
    """

    def __init__(self, app: FastAPI, *, services: Services, hosts: AllowedHosts) -> None:
        self.app = app
        self.services = services
        self.hosts = hosts
        self._middleware = list(app.user_middleware)
        self._built: bool | None = None

    def _as_built(self) -> bool:
        """Tell whether the app's middleware stack is the one this stands in for."""
        if self._built is None:
            stack = self.app.middleware_stack
            if stack is None:
                return False  # built on the app's first request (its lifespan's, when served)
            # OpenTelemetry's FastAPI instrumentation wraps the stack FastAPI builds: it replaces
            # the app's own build_middleware_stack, and its stack's outermost layer is a
            # ServerErrorMiddleware too (around its OpenTelemetryMiddleware).
            self._built = (
                type(stack) is ServerErrorMiddleware
                and "build_middleware_stack" not in vars(self.app)
                and self.app.user_middleware == self._middleware
            )
        return self._built

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a ``POST /runs`` the app would answer the same way; pass on the rest."""
        form = None
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/runs"
            and not scope.get("root_path")
        ):
            form = _form(scope, self.hosts, self.services.limits.max_body_bytes)
        if form is None or not self._as_built() or _telemetry_configured():
            await self.app(scope, receive, send)
            return
        messages, raw = await _read_body(receive)
        body = None
        if raw is not None:
            try:
                body = RunCreate.model_validate_json(raw)
            except ValidationError:
                body = None  # FastAPI's own answer names every problem
        if body is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        try:
            check_token(form.authorization, self.services.token)
            run = await submit_and_wait(self.services, body, form.key, form.wait_s)
            response = model_response(*run_answer(run))
        except HANDLED as error:
            response = await render_error(Request(scope), error)
        except Exception as error:
            # As the app's ServerErrorMiddleware: the one error body, then the server logs it.
            await (await render_error(Request(scope), error))(scope, receive, send)
            raise
        await response(scope, receive, send)
