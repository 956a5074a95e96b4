"""The keyword arguments of ``start_session``/``resume_session``, and the request they make.

Both clients take the same arguments (:class:`RunArguments`) and hand them here, so the two
build the same ``POST /runs`` body and the same call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, JsonValue

from agent_contracts._runs import JsonSchema, RunOptions
from agentshape._client_calls import Calls, Exchange, json_schema
from agentshape._client_results import SessionResult

__all__ = ["RunArguments", "run_body", "run_exchange", "run_options"]


class RunArguments(TypedDict, total=False):
    """The keyword arguments of ``start_session`` and ``resume_session`` (all optional)."""

    parameters: Mapping[str, JsonValue] | None
    """Input values, checked against the agent's ``parameters_schema``."""
    output_schema: JsonSchema | type[BaseModel] | None
    """An inline output schema for the run (a Pydantic class is sent as its JSON Schema)."""
    output_schema_name: str | None
    """A registered schema's name instead."""
    output_schema_options: RunOptions | Mapping[str, JsonValue] | None
    """``max_retries``, ``extract_json``... (unset ones fall through to the agent's)."""
    model: str | None
    """The model for this run, such as ``openai:gpt-4.1-mini``."""
    wait: bool | float
    """``True`` (the default) waits for the run's end, a number at most that many seconds,
    ``False`` returns at once (the result then has only the status)."""
    stream: bool
    """Stream the run, so that ``events`` carries its text and partial outputs as written."""
    webhook: str | None
    """An http(s) URL the service POSTs the run's end to, signed with its webhook secret."""
    idempotency_key: str | None
    """The request's ``Idempotency-Key`` (default: a new one a call), so that sending it again
    never starts a second run."""


def run_exchange(
    calls: Calls,
    kind: Literal["start_session", "resume_session"],
    prompt: str | None,
    output_type: type[BaseModel] | None,
    arguments: RunArguments,
    *,
    agent_name: str | None = None,
    session_id: str | None = None,
) -> Exchange[SessionResult[Any]]:
    """Return the call that starts or resumes a session with ``arguments``.

    A start with an ``output_type`` and no schema of its own sends the class as the run's inline
    schema, unless the agent has a fixed ``output_schema`` (which a run may not replace): the
    agent is read first (``GET /agents/{name}``) to tell. A resume never sends it; the session
    keeps its contract.
    """
    output_schema = arguments.get("output_schema")
    output_schema_name = arguments.get("output_schema_name")
    if (
        kind == "start_session"
        and agent_name is not None
        and output_type is not None
        and output_schema is None
        and output_schema_name is None
    ):
        agent = yield from calls.agent_get(agent_name)
        if agent.contract != "agent":
            output_schema = output_type
    body = run_body(
        kind=kind,
        prompt=prompt,
        agent_name=agent_name,
        session_id=session_id,
        parameters=arguments.get("parameters"),
        output_schema=output_schema,
        output_schema_name=output_schema_name,
        output_schema_options=arguments.get("output_schema_options"),
        model=arguments.get("model"),
        stream=arguments.get("stream", False),
        webhook=arguments.get("webhook"),
    )
    return (
        yield from calls.run(
            body,
            wait=arguments.get("wait", True),
            output_type=output_type,
            idempotency_key=arguments.get("idempotency_key"),
        )
    )


def run_body(
    *,
    kind: str,
    prompt: str | None,
    agent_name: str | None = None,
    session_id: str | None = None,
    parameters: Mapping[str, JsonValue] | None,
    output_schema: JsonSchema | type[BaseModel] | None,
    output_schema_name: str | None,
    output_schema_options: RunOptions | Mapping[str, JsonValue] | None,
    model: str | None,
    stream: bool,
    webhook: str | None = None,
) -> dict[str, JsonValue]:
    """Return a ``POST /runs`` body with only what was given (a Pydantic class as its schema)."""
    body: dict[str, JsonValue] = {"type": kind}
    if agent_name is not None:
        body["agent_name"] = agent_name
    if session_id is not None:
        body["session_id"] = session_id
    if prompt is not None:
        body["prompt"] = prompt
    if parameters is not None:
        body["parameters"] = dict(parameters)
    if output_schema is not None:
        body["output_schema"] = json_schema(output_schema)
    if output_schema_name is not None:
        body["output_schema_name"] = output_schema_name
    if output_schema_options is not None:
        body["output_schema_options"] = run_options(output_schema_options)
    if model is not None:
        body["model"] = model
    if stream:
        body["stream"] = True
    if webhook is not None:
        body["webhook"] = webhook
    return body


def run_options(options: RunOptions | Mapping[str, JsonValue] | None) -> JsonValue:
    """Return run options as the request's JSON (only the options that were set)."""
    if options is None:
        return None
    if isinstance(options, RunOptions):
        dumped: JsonValue = options.model_dump(mode="json", exclude_unset=True)
        return dumped
    return dict(options)
