"""``POST /runs`` answered without the router and FastAPI's dependency solving, when that is safe.

Starting a run is the request a service answers most; going through the router, the dependencies
and FastAPI's request handling costs CPU per run that ``bench/service.py``'s
``service_cpu_vs_library`` target has no room for. :class:`LeanRunCreate` sits inside the host
guard and the body limit (both still apply) and answers a ``POST /runs`` it can answer exactly as
the route would, with the route's own code (:func:`check_token`, :func:`submit_and_wait`,
:func:`run_answer`, :func:`model_response` and, for an error, :func:`render_error`). That is
a request with

- a JSON body (``Content-Type: application/json``) of a given ``Content-Length`` that is a valid
  :class:`RunCreate`;
- no query, or a single ``wait`` written as a plain decimal within the route's bounds;
- at most one ``Authorization`` header, and at most one ``Idempotency-Key`` of 1 to
  :data:`MAX_IDEMPOTENCY_KEY_CHARS` characters.

Every other request goes on to the app unchanged (one whose body was read has it replayed), so the
answers to malformed requests (FastAPI's 422 with its error list, its 400 for a body it cannot
parse) stay the framework's own; so does a request FastAPI records OpenTelemetry spans for. The
route itself stays, for those and for ``/docs``.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_coordinator._api.deps import check_token
from agent_coordinator._api.errors import HANDLED, render_error
from agent_coordinator._api.model_text import model_response
from agent_coordinator._service.bodies import MAX_IDEMPOTENCY_KEY_CHARS, MAX_WAIT_S, RunCreate
from agent_coordinator._service.runs import submit_and_wait
from agent_coordinator._service.services import Services
from agent_coordinator._service.views import run_answer

__all__ = ["LeanRunCreate"]

# What FastAPI parses as the same float for every spelling it matches; any other spelling (an
# exponent, a sign, spaces, "inf") goes to FastAPI.
_WAIT = re.compile(rb"(?:wait=((?:0|[1-9][0-9]{0,2})(?:\.[0-9]{1,6})?))?")


@dataclass(frozen=True)
class _Form:
    """What a ``POST /runs`` the lean path can answer says besides its body."""

    authorization: str
    key: str | None
    wait_s: float


def _form(scope: Scope) -> _Form | None:
    """Return the request's token, key and wait, or ``None`` if the route must answer it."""
    matched = _WAIT.fullmatch(scope["query_string"])
    if matched is None:
        return None
    wait_s = float(matched[1]) if matched[1] is not None else 0.0
    if wait_s > MAX_WAIT_S:
        return None
    content_type = length = authorization = key = None
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
        elif name == b"transfer-encoding":
            return None
    if content_type != b"application/json" or length is None or not length.isdigit():
        return None
    # Headers are text as Starlette decodes them (latin-1), as the route sees them.
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
    """ASGI middleware answering a well-formed ``POST /runs`` itself; anything else goes on.

    Args:
        app: The app behind it, whose ``POST /runs`` route answers what this does not.
        services: The services the route uses.
    """

    def __init__(self, app: ASGIApp, *, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a ``POST /runs`` the route would answer the same way; pass on the rest."""
        form = None
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/runs"
            and not scope.get("root_path")
            # OpenTelemetry configured: FastAPI's request span names the route it matched
            and scope.get("fastapi.telemetry") is None
        ):
            form = _form(scope)
        if form is None:
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
        await response(scope, receive, send)
