"""Every call of the Python client, written once without I/O: requests out, answers in.

Each call is a generator (:data:`Exchange`) that yields its requests and is sent each answer, so
the blocking and async clients cannot drift apart. An answer of the wrong shape is an
:class:`~agentshape._client_errors.APIError`. A wait longer than the service's longest per
request is the same request sent again with its ``Idempotency-Key``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2
from pydantic import BaseModel, JsonValue, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from agent_contracts._runs import JsonSchema
from agentshape._client_errors import APIError, api_error, library_error
from agentshape._client_results import (
    TERMINAL_STATES,
    AgentInfo,
    BatchInfo,
    RunInfo,
    SchemaCheckResult,
    SchemaInfo,
    SessionResult,
    pending_result,
    session_result,
)

__all__ = ["WAIT_PER_REQUEST_S", "Calls", "Exchange", "Reconnects", "json_schema", "refused"]

T = TypeVar("T")

Exchange = Generator[httpx2.Request, httpx2.Response, T]
"""A call: yields requests, is sent their answers, returns the result."""

WAIT_PER_REQUEST_S = 60.0
"""The longest one ``POST /runs?wait=`` waits (the service allows 120 s) before it is sent again,
so that no proxy between gives up on a quiet connection first."""

_RUN = TypeAdapter(RunInfo)
_SCHEMA = TypeAdapter(SchemaInfo)
_SCHEMAS = TypeAdapter(list[SchemaInfo])
_AGENT = TypeAdapter(AgentInfo)
_AGENTS = TypeAdapter(list[AgentInfo])
_CHECK = TypeAdapter(SchemaCheckResult)
_BATCH = TypeAdapter(BatchInfo)


class Calls:
    """The client's calls against one service, as :data:`Exchange` generators.

    Args:
        base_url: The service's address, such as ``http://127.0.0.1:8100``.
        token: The bearer token, when the service has one.
        timeout: Seconds to wait for an answer (a waited run adds its wait).
    """

    def __init__(self, base_url: str, *, token: str | None, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._headers = {"accept": "application/json"}
        if token is not None:
            self._headers["authorization"] = f"Bearer {token}"

    # Runs and sessions ------------------------------------------------------------------------

    def run(
        self,
        body: dict[str, JsonValue],
        *,
        wait: bool | float,
        output_type: type[BaseModel] | None,
        idempotency_key: str | None,
    ) -> Exchange[SessionResult[Any]]:
        """Start or resume a session (``POST /runs``), waiting for its end as asked.

        Args:
            body: The request body.
            wait: ``True`` waits for the end however long it takes, a number at most that many
                seconds, ``False`` not at all.
            output_type: The Pydantic class the result is validated into.
            idempotency_key: The request's key (default: a new one).

        Returns:
            The result; a run that had not ended has its status and no data.
        """
        key = idempotency_key or uuid.uuid4().hex
        budget = None if wait is True else 0.0 if wait is False else max(float(wait), 0.0)
        deadline = None if budget is None else time.monotonic() + budget
        schema_name = body.get("output_schema_name")
        while True:
            left = WAIT_PER_REQUEST_S if deadline is None else deadline - time.monotonic()
            wait_s = round(min(max(left, 0.0), WAIT_PER_REQUEST_S), 3)
            answer = yield self._request(
                "POST",
                "/runs",
                params={"wait": wait_s} if wait_s > 0 else None,
                json=body,
                headers={"idempotency-key": key},
                timeout=self.timeout + wait_s,
            )
            data = yield from self.checked(
                answer, schema_name=schema_name if isinstance(schema_name, str) else None
            )
            run = _parsed(_RUN, data, answer)
            if run.status in TERMINAL_STATES:
                break
            if deadline is not None and time.monotonic() >= deadline:
                return pending_result(run)
        inline = data.get("result") if isinstance(data, dict) else None
        if isinstance(inline, dict):
            return _session_result(inline, output_type, answer)
        return (yield from self.result(run.session_id, output_type))

    def result(
        self, session_id: str, output_type: type[BaseModel] | None
    ) -> Exchange[SessionResult[Any]]:
        """Read a session's latest result (``GET /sessions/{id}/result``)."""
        answer = yield self._request("GET", f"/sessions/{_segment(session_id)}/result")
        return _session_result((yield from self.checked(answer)), output_type, answer)

    def run_info(self, run_id: str, *, cancel: bool = False) -> Exchange[RunInfo]:
        """Read a run (``GET /runs/{id}``), or ask for its cancellation (``POST .../cancel``)."""
        path = f"/runs/{_segment(run_id)}"
        answer = yield (
            self._request("POST", f"{path}/cancel") if cancel else self._request("GET", path)
        )
        return _parsed(_RUN, (yield from self.checked(answer)), answer)

    def events_request(self, run_id: str, after: int) -> httpx2.Request:
        """Return the request for a run's server-sent events after cursor ``after``.

        A run's events can be minutes apart (a long model call), so only the connection and
        each write are bounded by the timeout, not each read.
        """
        return self._request(
            "GET",
            f"/runs/{_segment(run_id)}/events",
            params={"after": after} if after else None,
            headers={"accept": "text/event-stream"},
            timeout=httpx2.Timeout(self.timeout, read=None),
        )

    # Batches ------------------------------------------------------------------------------------

    def batch_create(
        self,
        agent_name: str,
        items: Sequence[Mapping[str, JsonValue]],
        *,
        output_schema: JsonSchema | type[BaseModel] | None,
        output_schema_name: str | None,
        model: str | None,
    ) -> Exchange[BatchInfo]:
        """Store a batch (``POST /batches``); a Pydantic class is sent as its JSON Schema."""
        body: dict[str, JsonValue] = {
            "agent_name": agent_name,
            "items": [dict(item) for item in items],
        }
        if output_schema is not None:
            body["output_schema"] = json_schema(output_schema)
        if output_schema_name is not None:
            body["output_schema_name"] = output_schema_name
        if model is not None:
            body["model"] = model
        answer = yield self._request("POST", "/batches", json=body)
        checked = yield from self.checked(answer, schema_name=output_schema_name)
        return _parsed(_BATCH, checked, answer)

    def batch_get(self, batch_id: str) -> Exchange[BatchInfo]:
        """Read a batch (``GET /batches/{id}``)."""
        answer = yield self._request("GET", f"/batches/{_segment(batch_id)}")
        return _parsed(_BATCH, (yield from self.checked(answer)), answer)

    # Schemas ------------------------------------------------------------------------------------

    def schema_list(self) -> Exchange[list[SchemaInfo]]:
        """List the registered schemas (``GET /schemas``)."""
        answer = yield self._request("GET", "/schemas")
        return _parsed(_SCHEMAS, (yield from self.checked(answer)), answer)

    def schema_get(self, name: str) -> Exchange[SchemaInfo]:
        """Read a registered schema with its content (``GET /schemas/{name}``)."""
        answer = yield self._request("GET", f"/schemas/{_segment(name)}")
        return _parsed(_SCHEMA, (yield from self.checked(answer, schema_name=name)), answer)

    def schema_create(
        self,
        name: str,
        schema: JsonSchema | type[BaseModel],
        *,
        description: str | None,
        replace: bool,
    ) -> Exchange[SchemaInfo]:
        """Register a schema (``POST /schemas``); a Pydantic class is sent as its JSON Schema."""
        body: dict[str, JsonValue] = {
            "name": name,
            "schema": json_schema(schema),
            "replace": replace,
        }
        if description is not None:
            body["description"] = description
        answer = yield self._request("POST", "/schemas", json=body)
        return _parsed(_SCHEMA, (yield from self.checked(answer, schema_name=name)), answer)

    def schema_delete(self, name: str) -> Exchange[None]:
        """Remove a registered schema (``DELETE /schemas/{name}``)."""
        answer = yield self._request("DELETE", f"/schemas/{_segment(name)}")
        yield from self.checked(answer, schema_name=name)

    # Agents -------------------------------------------------------------------------------------

    def agent_list(self) -> Exchange[list[AgentInfo]]:
        """List the fleet's agents (``GET /agents``)."""
        answer = yield self._request("GET", "/agents")
        return _parsed(_AGENTS, (yield from self.checked(answer)), answer)

    def agent_get(self, name: str) -> Exchange[AgentInfo]:
        """Read an agent's blueprint with its contracts (``GET /agents/{name}``)."""
        answer = yield self._request("GET", f"/agents/{_segment(name)}")
        return _parsed(_AGENT, (yield from self.checked(answer)), answer)

    def agent_write(
        self, name: str | None, config: Mapping[str, JsonValue], *, version: str | None = None
    ) -> Exchange[AgentInfo]:
        """Create an agent, or change the fields of ``config`` in one.

        ``POST /agents`` when ``name`` is ``None``, else ``PATCH /agents/{name}``; ``version``
        goes as ``If-Match``.
        """
        path = "/agents" if name is None else f"/agents/{_segment(name)}"
        headers = {} if version is None else {"if-match": f'"{version}"'}
        answer = yield self._request(
            "POST" if name is None else "PATCH", path, json=dict(config), headers=headers
        )
        return _parsed(_AGENT, (yield from self.checked(answer)), answer)

    def agent_delete(self, name: str, *, version: str | None = None) -> Exchange[None]:
        """Delete an agent's file (``DELETE /agents/{name}``); ``version`` goes as ``If-Match``."""
        headers = {} if version is None else {"if-match": f'"{version}"'}
        answer = yield self._request("DELETE", f"/agents/{_segment(name)}", headers=headers)
        yield from self.checked(answer)

    def agent_check_schema(
        self, schema: JsonSchema | type[BaseModel], kind: str
    ) -> Exchange[SchemaCheckResult]:
        """Check a schema as ``agentshape list`` does (``POST /agents/validate-schema``)."""
        body: dict[str, JsonValue] = {"schema": json_schema(schema), "kind": kind}
        answer = yield self._request("POST", "/agents/validate-schema", json=body)
        return _parsed(_CHECK, (yield from self.checked(answer)), answer)

    # The exchange's parts -----------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int | float] | None = None,
        json: JsonValue = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx2.Timeout | None = None,
    ) -> httpx2.Request:
        bound = (
            timeout
            if isinstance(timeout, httpx2.Timeout)
            else httpx2.Timeout(timeout if timeout is not None else self.timeout)
        )
        return httpx2.Request(
            method,
            f"{self.base_url}{path}",
            params=params,
            json=json,
            headers={**self._headers, **(headers or {})},
            extensions={"timeout": bound.as_dict()},
        )

    def checked(
        self, answer: httpx2.Response, *, schema_name: str | None = None
    ) -> Exchange[JsonValue]:
        """Return an answer's JSON, or raise its typed error.

        A ``SchemaNotFound`` answer is followed by ``GET /schemas``, so the error lists the
        registered names as the library's own does.

        Raises:
            AgentshapeError: The answer's typed error (see :mod:`agentshape._client_errors`).
            APIError: The answer is a success whose body is not JSON.
        """
        if answer.is_success:
            if answer.status_code == 204:
                return None
            try:
                value: JsonValue = answer.json()
            except ValueError as not_json:
                raise APIError(
                    "the answer is not JSON",
                    status=answer.status_code,
                    code="NotJSON",
                    url=str(answer.request.url),
                    body=answer.text[:2000],
                ) from not_json
            return value
        error = api_error(answer)
        known: list[str] = []
        if error.code == "SchemaNotFound":
            listed = yield self._request("GET", "/schemas")
            if listed.is_success:
                try:
                    known = [entry.name for entry in _SCHEMAS.validate_json(listed.content)]
                except PydanticValidationError:
                    known = []
        typed = library_error(error, schema_name=schema_name, known_schemas=known)
        if typed is error:
            raise error
        raise typed from error


class Reconnects:
    """When a run's broken event stream is opened again, and when the client gives up.

    A stream breaks when the service restarts or a proxy drops a quiet connection; the events
    go on from the last one's ``id``. The first reconnect is at once, the next ones back off
    (up to 5 s apart); after ``timeout`` seconds without an event the stream is given up.

    Args:
        timeout: Seconds without an event (and without a connection) before giving up.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._since: float | None = None
        self._delay = 0.0

    def progressed(self) -> None:
        """Note that an event came: the next break is retried at once again."""
        self._since = None
        self._delay = 0.0

    def delay(self) -> float | None:
        """Return how long to wait before reconnecting, or ``None`` to give up."""
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if now - self._since > self.timeout:
            return None
        delay = self._delay
        self._delay = min(max(delay * 2, 0.25), 5.0)
        return delay


def json_schema(schema: JsonSchema | type[BaseModel]) -> JsonSchema:
    """Return a schema as JSON: a Pydantic class's JSON Schema, or the schema itself."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        value: JsonSchema = schema.model_json_schema()
        return value
    return schema


def refused(calls: Calls, answer: httpx2.Response) -> Exchange[None]:
    """Raise the typed error of an answer that refused a stream (never returns)."""
    yield from calls.checked(answer)


def _parsed(adapter: TypeAdapter[T], value: JsonValue, answer: httpx2.Response) -> T:
    """Return an answer's JSON read as ``adapter``'s type."""
    try:
        return adapter.validate_python(value)
    except PydanticValidationError as error:
        raise _unexpected(answer, value, error) from error


def _session_result(
    body: JsonValue, output_type: type[BaseModel] | None, answer: httpx2.Response
) -> SessionResult[Any]:
    """Return a result body read into a :class:`SessionResult` (see :func:`session_result`)."""
    try:
        return session_result(body, output_type)
    except PydanticValidationError as error:  # the body's shape; the output's is raised apart
        raise _unexpected(answer, body, error) from error


def _unexpected(
    answer: httpx2.Response, value: JsonValue, error: PydanticValidationError
) -> APIError:
    """Return an answer of the wrong shape (another service, or a proxy, answered) as an error."""
    first = error.errors()[0]
    where = ".".join(map(str, first["loc"])) or "the top"
    return APIError(
        f"the answer is not what agentshape serve sends: {first['msg']} at {where}",
        status=answer.status_code,
        code="UnexpectedAnswer",
        url=str(answer.request.url),
        body=value,
    )


def _segment(value: str) -> str:
    """Return ``value`` as one path segment (a ``/`` or ``?`` in an id cannot reach elsewhere)."""
    return quote(value, safe="")
