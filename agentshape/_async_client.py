"""The asynchronous client of ``agentshape serve``: :class:`AsyncClient`, as ``Client``, awaited.

It sends the same calls (:mod:`agentshape._client_calls`) as the blocking ``Client``, with
httpx2's ``AsyncClient``; only the sending differs.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar, overload

import httpx2
from pydantic import BaseModel, JsonValue
from typing_extensions import Unpack

from agent_contracts._runs import JsonSchema
from agentshape._client import DEFAULT_TIMEOUT_S
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

__all__ = ["AsyncAgents", "AsyncClient", "AsyncSchemas"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


class AsyncClient:
    """The asynchronous :class:`Client`: the same calls, awaited.

    Use it as an async context manager, or await :meth:`aclose`, to close its connections.

    Args:
        base_url: The service's address, such as ``http://127.0.0.1:8100``.
        token: The bearer token (``agentshape serve --token`` or ``AGENTSHAPE_TOKEN``).
        timeout: Seconds a request waits for an answer (a waited run adds its wait).
    """

    def __init__(
        self, base_url: str, token: str | None = None, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self._calls = Calls(base_url, token=token, timeout=timeout)
        self._http = httpx2.AsyncClient()
        self.schemas = AsyncSchemas(self)
        """The schema registry: ``list``, ``get``, ``create``, ``delete``."""
        self.agents = AsyncAgents(self)
        """The fleet's agents: ``list``, ``get``, ``check_schema``."""

    @property
    def base_url(self) -> str:
        """The service's address."""
        return self._calls.base_url

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self._http.aclose()

    async def _send(self, exchange: Exchange[T]) -> T:
        request = next(exchange)
        while True:
            try:
                answer = await self._http.send(request)
            except httpx2.TransportError as error:
                exchange.close()
                raise connection_error(request, error) from error
            try:
                request = exchange.send(answer)
            except StopIteration as done:
                result: T = done.value
                return result

    @overload
    async def start_session(
        self,
        agent_name: str,
        prompt: str | None = None,
        *,
        output_type: type[M],
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[M]: ...

    @overload
    async def start_session(
        self,
        agent_name: str,
        prompt: str | None = None,
        *,
        output_type: None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[JsonValue]: ...

    async def start_session(
        self,
        agent_name: str,
        prompt: str | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[Any]:
        """Start a session of an agent; as :meth:`Client.start_session`."""
        return await self._send(
            run_exchange(
                self._calls, "start_session", prompt, output_type, arguments, agent_name=agent_name
            )
        )

    @overload
    async def resume_session(
        self,
        session_id: str,
        prompt: str | None = None,
        *,
        output_type: type[M],
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[M]: ...

    @overload
    async def resume_session(
        self,
        session_id: str,
        prompt: str | None = None,
        *,
        output_type: None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[JsonValue]: ...

    async def resume_session(
        self,
        session_id: str,
        prompt: str | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        **arguments: Unpack[RunArguments],
    ) -> SessionResult[Any]:
        """Continue a session; as :meth:`Client.resume_session`."""
        return await self._send(
            run_exchange(
                self._calls, "resume_session", prompt, output_type, arguments, session_id=session_id
            )
        )

    @overload
    async def get_result(self, session_id: str, output_type: type[M]) -> SessionResult[M]: ...

    @overload
    async def get_result(
        self, session_id: str, output_type: None = None
    ) -> SessionResult[JsonValue]: ...

    async def get_result(
        self, session_id: str, output_type: type[BaseModel] | None = None
    ) -> SessionResult[Any]:
        """Return a session's latest result; as :meth:`Client.get_result`."""
        return await self._send(self._calls.result(session_id, output_type))

    async def create_batch(
        self,
        agent_name: str,
        items: Sequence[Mapping[str, JsonValue]],
        *,
        output_schema: JsonSchema | type[BaseModel] | None = None,
        output_schema_name: str | None = None,
        model: str | None = None,
    ) -> BatchInfo:
        """Start a session per item, run through provider batches; see `Client.create_batch`."""
        return await self._send(
            self._calls.batch_create(
                agent_name,
                items,
                output_schema=output_schema,
                output_schema_name=output_schema_name,
                model=model,
            )
        )

    async def get_batch(self, batch_id: str) -> BatchInfo:
        """Return a batch; as :meth:`Client.get_batch`."""
        return await self._send(self._calls.batch_get(batch_id))

    async def get_run(self, run_id: str) -> RunInfo:
        """Return a run; as :meth:`Client.get_run`."""
        return await self._send(self._calls.run_info(run_id))

    async def cancel(self, run_id: str) -> RunInfo:
        """Cancel a run; as :meth:`Client.cancel`."""
        return await self._send(self._calls.run_info(run_id, cancel=True))

    async def events(self, run_id: str, *, after: int = 0) -> AsyncIterator[ServiceEvent]:
        """Yield a run's events as they happen, up to its end; as :meth:`Client.events`."""
        cursor, reconnects = after, Reconnects(self._calls.timeout)
        opened = False
        while True:
            request = self._calls.events_request(run_id, cursor)
            unavailable: httpx2.Response | None = None
            try:
                answer = await self._http.send(request, stream=True)
                try:
                    if not answer.is_success:
                        await answer.aread()
                        if not (opened and answer.status_code == 503):
                            await self._send(refused(self._calls, answer))
                        unavailable = answer  # reopened while its database is away: again
                    else:
                        opened = True
                        async for sse in httpx2.EventSource(answer):
                            cursor = int(sse.id) if sse.id.isdigit() else cursor
                            reconnects.progressed()
                            event = service_event(sse.event, sse.data, sse.id)
                            yield event
                            if isinstance(event, RunEnded):
                                return
                finally:
                    await answer.aclose()
                broken: httpx2.TransportError = ended_early()
            except httpx2.TransportError as error:
                broken = error
            delay = reconnects.delay()
            if delay is None:
                if unavailable is not None:
                    await self._send(refused(self._calls, unavailable))
                raise connection_error(request, broken) from broken
            await asyncio.sleep(delay)


class AsyncSchemas:
    """The service's schema registry, from an :class:`AsyncClient`; as :class:`Schemas`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def list(self) -> builtins.list[SchemaInfo]:
        """Return the registered schemas; as :meth:`Schemas.list`."""
        return await self._client._send(self._client._calls.schema_list())

    async def get(self, name: str) -> SchemaInfo:
        """Return a registered schema; as :meth:`Schemas.get`."""
        return await self._client._send(self._client._calls.schema_get(name))

    async def create(
        self,
        name: str,
        schema: JsonSchema | type[BaseModel],
        *,
        description: str | None = None,
        replace: bool = False,
    ) -> SchemaInfo:
        """Register a schema; as :meth:`Schemas.create`."""
        return await self._client._send(
            self._client._calls.schema_create(
                name, schema, description=description, replace=replace
            )
        )

    async def delete(self, name: str) -> None:
        """Remove a registered schema; as :meth:`Schemas.delete`."""
        await self._client._send(self._client._calls.schema_delete(name))


class AsyncAgents:
    """The service's agents, from an :class:`AsyncClient`; as :class:`Agents`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def list(self) -> builtins.list[AgentInfo]:
        """Return the fleet's agents; as :meth:`Agents.list`."""
        return await self._client._send(self._client._calls.agent_list())

    async def get(self, name: str) -> AgentInfo:
        """Return an agent's blueprint; as :meth:`Agents.get`."""
        return await self._client._send(self._client._calls.agent_get(name))

    async def create(self, config: Mapping[str, JsonValue]) -> AgentInfo:
        """Create an agent from its config; as :meth:`Agents.create`."""
        return await self._client._send(self._client._calls.agent_write(None, config))

    async def update(
        self, name: str, changes: Mapping[str, JsonValue], *, version: str | None = None
    ) -> AgentInfo:
        """Set the fields named in ``changes``; as :meth:`Agents.update`."""
        calls = self._client._calls
        return await self._client._send(calls.agent_write(name, changes, version=version))

    async def delete(self, name: str, *, version: str | None = None) -> None:
        """Delete an agent's file; as :meth:`Agents.delete`."""
        await self._client._send(self._client._calls.agent_delete(name, version=version))

    async def check_schema(
        self,
        schema: JsonSchema | type[BaseModel],
        kind: Literal["output", "parameters"] = "output",
    ) -> SchemaCheckResult:
        """Check a schema; as :meth:`Agents.check_schema`."""
        return await self._client._send(self._client._calls.agent_check_schema(schema, kind))
