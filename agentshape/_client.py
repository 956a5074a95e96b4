"""The blocking client of ``agentshape serve``: :class:`Client`, its schemas and agents.

::

    from agentshape import Client

    with Client("http://127.0.0.1:8100", token="...") as client:
        result = client.start_session("reviewer", "Review PR 1", output_type=Review)
        result.output  # a Review, validated by the service and again here

It sends what :mod:`agentshape._client_calls` yields and turns a request that gets no answer
into :class:`~agentshape._client_errors.APIConnectionError`.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar, overload

import httpx2
from pydantic import BaseModel, JsonValue
from typing_extensions import Unpack

from agent_contracts._runs import JsonSchema
from agentshape._client_calls import Calls, Exchange, Reconnects, refused
from agentshape._client_errors import connection_error, ended_early
from agentshape._client_events import RunEnded, ServiceEvent, service_event
from agentshape._client_results import (
    AgentInfo,
    BatchInfo,
    RunInfo,
    SchemaCheckResult,
    SchemaInfo,
    SessionResult,
)
from agentshape._run_arguments import RunArguments, run_exchange

__all__ = ["DEFAULT_TIMEOUT_S", "Agents", "Client", "Schemas"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

DEFAULT_TIMEOUT_S = 30.0
"""Seconds a request waits for an answer, not counting a waited run's wait."""


class Client:
    """A blocking client of ``agentshape serve``: sessions, results, events, schemas, agents.

    Use it as a context manager, or call :meth:`close`, to close its connections.

    Args:
        base_url: The service's address, such as ``http://127.0.0.1:8100``.
        token: The bearer token (``agentshape serve --token`` or ``AGENTSHAPE_TOKEN``).
        timeout: Seconds a request waits for an answer (a waited run adds its wait).
    """

    def __init__(
        self, base_url: str, token: str | None = None, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self._calls = Calls(base_url, token=token, timeout=timeout)
        self._http = httpx2.Client()
        self.schemas = Schemas(self)
        """The schema registry: ``list``, ``get``, ``create``, ``delete``."""
        self.agents = Agents(self)
        """The fleet's agents: ``list``, ``get``, ``check_schema``."""

    @property
    def base_url(self) -> str:
        """The service's address."""
        return self._calls.base_url

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections."""
        self._http.close()

    def _send(self, exchange: Exchange[T]) -> T:
        request = next(exchange)
        while True:
            try:
                answer = self._http.send(request)
            except httpx2.TransportError as error:
                exchange.close()
                raise connection_error(request, error) from error
            try:
                request = exchange.send(answer)
            except StopIteration as done:
                result: T = done.value
                return result

    @overload
    def start_session(
        self,
        agent_name: str,
        prompt: str | None = None,
        *,
        output_type: type[M],
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[M]: ...

    @overload
    def start_session(
        self,
        agent_name: str,
        prompt: str | None = None,
        *,
        output_type: None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[JsonValue]: ...

    def start_session(
        self,
        agent_name: str,
        prompt: str | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[Any]:
        """Start a session of an agent and, by default, wait for its result.

        Args:
            agent_name: The agent to run.
            prompt: The task (an agent with parameters may need none, where the service
                allows it).
            output_type: A Pydantic class the result is validated into here too
                (``result.output`` is an instance of it). Sent as the run's inline schema when
                neither ``output_schema`` nor ``output_schema_name`` is given and the agent has
                no fixed ``output_schema`` of its own.
            **arguments: ``parameters``, ``output_schema``, ``output_schema_name``,
                ``output_schema_options``, ``model``, ``wait``, ``stream``, ``webhook``,
                ``idempotency_key`` (see :class:`RunArguments`).

        Returns:
            The session's result: completed, failed or cancelled; or, when the wait ran out,
            queued or running (ask again with :meth:`get_result`).

        Raises:
            SchemaNotFoundError: ``output_schema_name`` is not registered.
            InvalidSchemaError: The inline schema is not a valid JSON Schema.
            InputValidationError: The parameters break the agent's ``parameters_schema``.
            ConfigError: The request is not valid (the service's ``InvalidRequest`` or
                ``ConfigError``, every problem listed).
            OutputValidationError: The result does not fit ``output_type``.
            APIError: Any other error answer, such as ``AgentNotFound`` (404).
            APIConnectionError: The service could not be reached or did not answer in time.
        """
        return self._send(
            run_exchange(
                self._calls, "start_session", prompt, output_type, arguments, agent_name=agent_name
            )
        )

    @overload
    def resume_session(
        self,
        session_id: str,
        prompt: str | None = None,
        *,
        output_type: type[M],
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[M]: ...

    @overload
    def resume_session(
        self,
        session_id: str,
        prompt: str | None = None,
        *,
        output_type: None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[JsonValue]: ...

    def resume_session(
        self,
        session_id: str,
        prompt: str | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[Any]:
        """Continue a session with a new prompt and, by default, wait for its result.

        Without ``parameters``, ``output_schema`` and ``output_schema_name`` the run keeps the
        session's; ``output_type`` only validates the result here (it is not sent).

        Args:
            session_id: The session to continue.
            prompt: The next message.
            output_type: A Pydantic class the result is validated into.
            **arguments: As :meth:`start_session`.

        Returns:
            The session's result, as :meth:`start_session` returns it.

        Raises:
            APIError: ``SessionNotFound`` (404), ``SessionBusy`` (409, a run of the session
                has not ended), or another error answer.
            APIConnectionError: The service could not be reached or did not answer in time.
            AgentshapeError: Each of :meth:`start_session`'s other errors.
        """
        return self._send(
            run_exchange(
                self._calls, "resume_session", prompt, output_type, arguments, session_id=session_id
            )
        )

    @overload
    def get_result(self, session_id: str, output_type: type[M]) -> SessionResult[M]: ...

    @overload
    def get_result(self, session_id: str, output_type: None = None) -> SessionResult[JsonValue]: ...

    def get_result(
        self, session_id: str, output_type: type[BaseModel] | None = None
    ) -> SessionResult[Any]:
        """Return a session's latest result.

        Args:
            session_id: The session.
            output_type: A Pydantic class the result is validated into.

        Raises:
            APIError: ``SessionNotFound`` (404), ``ResultNotReady`` (409, the run has not ended).
            OutputValidationError: The result does not fit ``output_type``.
            APIConnectionError: The service could not be reached or did not answer in time.
        """
        return self._send(self._calls.result(session_id, output_type))

    def create_batch(
        self,
        agent_name: str,
        items: Sequence[Mapping[str, JsonValue]],
        *,
        output_schema: JsonSchema | type[BaseModel] | None = None,
        output_schema_name: str | None = None,
        model: str | None = None,
    ) -> BatchInfo:
        """Start a session per item, run by the service's runners through a provider batch.

        Read each item's result with :meth:`get_result` (its ``session_id``), once
        :meth:`get_batch` says it has ended.

        Args:
            agent_name: The agent every item runs (one without input tools).
            items: Each item: ``{"id": ..., "prompt": ..., "parameters": {...}}`` (``id``
                unique in the batch; a prompt, parameters or both).
            output_schema: An inline schema for every item (a Pydantic class is sent as its
                JSON Schema).
            output_schema_name: A registered schema's name for every item (not with
                ``output_schema``).
            model: The model, whose provider must have a batch API.

        Returns:
            The stored batch: ``queued``, with each item's session and run ids.

        Raises:
            APIError: ``AgentNotFound`` (404), ``InvalidRequest`` (422: no items, too many, an
                id given twice, both schema fields), ``BatchNotSupported`` (400).
            SchemaNotFoundError: ``output_schema_name`` is not registered.
            InputValidationError: An item's parameters break the agent's parameters schema.
            APIConnectionError: The service could not be reached or did not answer in time.
        """
        return self._send(
            self._calls.batch_create(
                agent_name,
                items,
                output_schema=output_schema,
                output_schema_name=output_schema_name,
                model=model,
            )
        )

    def get_batch(self, batch_id: str) -> BatchInfo:
        """Return a batch: its status, its items' sessions and the provider's request counts.

        Raises:
            APIError: ``BatchNotFound`` (404).
            APIConnectionError: The service could not be reached or did not answer in time.
        """
        return self._send(self._calls.batch_get(batch_id))

    def get_run(self, run_id: str) -> RunInfo:
        """Return a run: its status, timings and error.

        Raises:
            APIError: ``RunNotFound`` (404).
            APIConnectionError: The service could not be reached or did not answer in time.
        """
        return self._send(self._calls.run_info(run_id))

    def cancel(self, run_id: str) -> RunInfo:
        """Cancel a run: a queued one at once, a running one when its runner stops it.

        The service waits up to 5 seconds for a running run's runner to stop it (within about
        a second, its model call cancelled) before it answers.

        Returns:
            The run as it is now: ``cancelled``, or still ``running`` with ``cancel_requested``
            set when its runner has not stopped it within the wait.

        Raises:
            APIError: ``RunNotFound`` (404), ``RunNotCancellable`` (409, it has ended).
            APIConnectionError: The service could not be reached or did not answer in time.
        """
        return self._send(self._calls.run_info(run_id, cancel=True))

    def events(self, run_id: str, *, after: int = 0) -> Iterator[ServiceEvent]:
        """Yield a run's events as they happen, up to its end (:class:`RunEnded`, last).

        A streamed run's text deltas and partial outputs come as the library's stream events;
        see :mod:`agentshape._client_events`. A stream that breaks (the service restarted, a
        proxy dropped it) is opened again from the last event's ``id``, so no event is lost or
        repeated; so is one the service, opening it again, answers 503 (its database is away).

        Args:
            run_id: The run.
            after: Yield only the events after this cursor (a :class:`RunEvent`'s ``id``).

        Raises:
            APIError: ``RunNotFound`` (404); ``StoreUnavailable`` (503) when the stream could not
                be opened again within ``timeout`` seconds for that (or when it first opens).
            APIConnectionError: The service could not be reached, or the stream broke off and
                could not be opened again within ``timeout`` seconds.
        """
        cursor, reconnects = after, Reconnects(self._calls.timeout)
        opened = False
        while True:
            request = self._calls.events_request(run_id, cursor)
            unavailable: httpx2.Response | None = None
            try:
                answer = self._http.send(request, stream=True)
                try:
                    if not answer.is_success:
                        answer.read()
                        if not (opened and answer.status_code == 503):
                            self._send(refused(self._calls, answer))
                        unavailable = answer  # reopened while its database is away: again
                    else:
                        opened = True
                        for sse in httpx2.EventSource(answer):
                            cursor = int(sse.id) if sse.id.isdigit() else cursor
                            reconnects.progressed()
                            event = service_event(sse.event, sse.data, sse.id)
                            yield event
                            if isinstance(event, RunEnded):
                                return
                finally:
                    answer.close()
                broken: httpx2.TransportError = ended_early()
            except httpx2.TransportError as error:
                broken = error
            delay = reconnects.delay()
            if delay is None:
                if unavailable is not None:
                    self._send(refused(self._calls, unavailable))
                raise connection_error(request, broken) from broken
            time.sleep(delay)


class Schemas:
    """The service's schema registry, from a :class:`Client`."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def list(self) -> builtins.list[SchemaInfo]:
        """Return the registered schemas, by name (without their content)."""
        return self._client._send(self._client._calls.schema_list())

    def get(self, name: str) -> SchemaInfo:
        """Return a registered schema with its content.

        Raises:
            SchemaNotFoundError: No schema has that name (with the registered names).
        """
        return self._client._send(self._client._calls.schema_get(name))

    def create(
        self,
        name: str,
        schema: JsonSchema | type[BaseModel],
        *,
        description: str | None = None,
        replace: bool = False,
    ) -> SchemaInfo:
        """Register a schema (a Pydantic class is registered as its JSON Schema).

        Raises:
            InvalidSchemaError: The schema is not valid under its draft (with the fault's path).
            SchemaRegistryError: The name is taken (without ``replace``) or not allowed.
        """
        return self._client._send(
            self._client._calls.schema_create(
                name, schema, description=description, replace=replace
            )
        )

    def delete(self, name: str) -> None:
        """Remove a registered schema.

        Raises:
            SchemaNotFoundError: No schema has that name.
        """
        self._client._send(self._client._calls.schema_delete(name))


class Agents:
    """The service's agents, from a :class:`Client`."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def list(self) -> builtins.list[AgentInfo]:
        """Return the fleet's agents, by name (without their prompts and contracts)."""
        return self._client._send(self._client._calls.agent_list())

    def get(self, name: str) -> AgentInfo:
        """Return an agent's blueprint with its contracts.

        Raises:
            APIError: ``AgentNotFound`` (404, with a did-you-mean).
        """
        return self._client._send(self._client._calls.agent_get(name))

    def create(self, config: Mapping[str, JsonValue]) -> AgentInfo:
        """Create an agent from its config (the blueprint or the ``kb.agent/1`` form).

        Raises:
            ConfigError: The config has problems ``agentshape list`` reports (all of them), or
                its ``id``/``name`` cannot name a folder.
            APIError: ``AgentExists`` (409) when the id is taken.
        """
        return self._client._send(self._client._calls.agent_write(None, config))

    def update(
        self, name: str, changes: Mapping[str, JsonValue], *, version: str | None = None
    ) -> AgentInfo:
        """Set the fields named in ``changes`` (``None`` removes one), keeping the rest of the file.

        Args:
            name: The agent.
            changes: Blueprint-form fields and their new values.
            version: The ``version`` of the agent as last read; a change made since is refused.

        Raises:
            ConfigError: The agent would not load with the change (nothing is written).
            APIError: ``AgentNotFound`` (404), ``AgentFileChanged`` (409).
        """
        calls = self._client._calls
        return self._client._send(calls.agent_write(name, changes, version=version))

    def delete(self, name: str, *, version: str | None = None) -> None:
        """Delete an agent's file (its sessions and results stay).

        Raises:
            APIError: ``AgentNotFound`` (404), ``AgentBusy`` (409, a run of it is queued or
                running), ``AgentFileChanged`` (409, ``version`` is stale).
        """
        self._client._send(self._client._calls.agent_delete(name, version=version))

    def check_schema(
        self,
        schema: JsonSchema | type[BaseModel],
        kind: Literal["output", "parameters"] = "output",
    ) -> SchemaCheckResult:
        """Check a schema as ``agentshape list`` checks an agent's (every error and warning)."""
        return self._client._send(self._client._calls.agent_check_schema(schema, kind))
