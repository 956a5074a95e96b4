"""``agents:start_session`` in this process: a parent agent runs a child agent of its fleet.

An agent whose config lists the tool (``tools: [agents:start_session]``) may call it with an
``agent_name``, a ``prompt`` and optionally ``parameters``, an inline ``output_schema`` or an
``output_schema_name``. The service stores each child as a session of its own
(``agent_coordinator._children``); the command line runs it here, in the same process, with the
same rules: the child's own contract (a caller's schema cannot replace an agent's fixed
``output_schema``), its ``parameters_schema``, at most :data:`MAX_DEPTH` levels of children and
:data:`MAX_CHILDREN` children a session. The parent receives the child's ``result_data`` as
indented JSON, else its ``result_text``; a child that fails, or cannot start, is an error tool
result naming why, which the parent's model reads.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping

from pydantic import JsonValue

from agent_contracts._config import AgentConfig, suggest_key
from agent_contracts._errors import AgentshapeError, ToolExecutionError
from agent_contracts._runs import RunRequest, RunResult
from agent_executor._result import format_child_result
from agent_executor._tools.base import InputTool

__all__ = [
    "DESCRIPTION",
    "MAX_CHILDREN",
    "MAX_DEPTH",
    "START_SESSION_PARAMETERS",
    "TOOL_NAME",
    "ChildRunner",
    "LocalStartSession",
    "StartSessionTool",
    "child_failure_text",
]

TOOL_NAME = "agents:start_session"
"""The tool's name in an agent config."""
MAX_DEPTH = 3
"""The deepest a child may be (a top-level session is depth 0)."""
MAX_CHILDREN = 10
"""The most children one session may start."""

START_SESSION_PARAMETERS: dict[str, JsonValue] = {
    "type": "object",
    "required": ["agent_name", "prompt"],
    "properties": {
        "agent_name": {"type": "string", "description": "The agent to start"},
        "prompt": {"type": "string", "description": "The task for it"},
        "parameters": {"type": "object", "description": "Its input parameters"},
        "output_schema": {
            "type": "object",
            "description": "A JSON Schema its result must meet (agents without their own)",
        },
        "output_schema_name": {"type": "string", "description": "A registered schema's name"},
    },
    "additionalProperties": False,
}
"""The tool's arguments, as the model is offered them."""

DESCRIPTION = (
    "Start a session of another agent with a task and get its result back: its validated JSON "
    "when it has an output schema, else its text."
)
"""The tool's description, as the model is offered it."""

ChildRunner = Callable[[AgentConfig, RunRequest, int], Awaitable[RunResult]]
"""Runs a child: ``(config, request, depth) -> RunResult``; the caller builds the child's agent
(its tools, this one among them at ``depth``) and picks its model."""

_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def child_failure_text(agent_name: str, result: Mapping[str, JsonValue], status: str) -> str:
    """Return what a parent's model is told about a child that did not complete.

    Args:
        agent_name: The child's agent.
        result: The child's result (or its stored error) as JSON.
        status: ``failed`` or ``cancelled``.
    """
    error = result.get("error")
    fields = error if isinstance(error, dict) else {}
    problems = fields.get("validation_errors")
    lines = [
        f"child session of {agent_name} {status}: "
        f"[{fields.get('type', status)}] {fields.get('message', '')}"
    ]
    if isinstance(problems, list):
        lines += [f"- {problem}" for problem in problems]
    return "\n".join(lines)


class StartSessionTool(InputTool):
    """The ``agents:start_session`` tool: its name, schema and bounds, its calls on the loop.

    Subclasses say how a child is run (:meth:`_start`): in this process, or by the service.

    Args:
        depth: The depth of the session that holds the tool (0 for the one the user started).
    """

    def __init__(self, depth: int = 0) -> None:
        super().__init__(
            name=TOOL_NAME, description=DESCRIPTION, parameters=START_SESSION_PARAMETERS
        )
        self.depth = depth
        self._loop: asyncio.AbstractEventLoop | None = None

    async def call(self, arguments: JsonValue) -> str:
        """Run the child and return its result as the parent receives it.

        Raises:
            ToolExecutionError: The arguments are invalid, a bound is reached, the child is
                refused (unknown agent, bad parameters or schema), or it did not complete.
        """
        checked = self.validate_arguments(arguments)
        self._loop = asyncio.get_running_loop()
        return await self._start(checked)

    def execute(self, arguments: dict[str, JsonValue]) -> str:
        """Run :meth:`call` from a worker thread on the parent's event loop.

        Raises:
            ToolExecutionError: As :meth:`call`; also when no parent loop is known yet.
        """
        if self._loop is None:
            raise ToolExecutionError("the tool has no event loop to run on", tool=self.name)
        return asyncio.run_coroutine_threadsafe(self._start(arguments), self._loop).result()

    async def _start(self, arguments: dict[str, JsonValue]) -> str:
        raise NotImplementedError


class LocalStartSession(StartSessionTool):
    """The ``agents:start_session`` tool of one session, running its children in this process.

    Args:
        configs: The fleet's agents by id (looked up when a child starts).
        run_child: Runs a child agent's request at a depth and returns its result.
        depth: The depth of the session that holds the tool (0 for the one the user started).
    """

    def __init__(
        self,
        configs: Callable[[], Mapping[str, AgentConfig]],
        run_child: ChildRunner,
        depth: int = 0,
    ) -> None:
        super().__init__(depth)
        self._configs = configs
        self._run_child = run_child
        self.started = 0

    async def _start(self, arguments: dict[str, JsonValue]) -> str:
        if self.depth + 1 > MAX_DEPTH:
            raise ToolExecutionError(
                f"child sessions may nest {MAX_DEPTH} deep; this session is at depth {self.depth}",
                tool=self.name,
            )
        if self.started >= MAX_CHILDREN:
            raise ToolExecutionError(
                f"a session may start at most {MAX_CHILDREN} children", tool=self.name
            )
        agent_name = str(arguments["agent_name"])
        try:
            configs = self._configs()
        except AgentshapeError as error:
            raise ToolExecutionError(
                f"the fleet cannot be loaded: {error.format_message()}", tool=self.name
            ) from error
        config = configs.get(agent_name) if _AGENT_ID.fullmatch(agent_name) else None
        if config is None:
            near = suggest_key(agent_name, sorted(configs))
            raise ToolExecutionError(
                f"AgentNotFound: no agent {agent_name!r}"
                + (f"; did you mean {near!r}?" if near else "")
                + f" The fleet has: {', '.join(sorted(configs))}",
                tool=self.name,
            )
        parameters = arguments.get("parameters")
        schema = arguments.get("output_schema")
        name = arguments.get("output_schema_name")
        try:
            request = RunRequest(
                task=str(arguments["prompt"]),
                parameters=parameters if isinstance(parameters, dict) else {},
                output_schema=schema if isinstance(schema, dict) else None,
                schema_name=name if isinstance(name, str) else None,
            )
        except ValueError as error:
            raise ToolExecutionError(f"InvalidRequest: {error}", tool=self.name) from error
        self.started += 1
        try:
            result = await self._run_child(config, request, self.depth + 1)
        except AgentshapeError as error:
            raise ToolExecutionError(
                f"{type(error).__name__}: {error.format_message()}", tool=self.name
            ) from error
        if result.status == "completed":
            return format_child_result(result)
        raise ToolExecutionError(
            child_failure_text(agent_name, result.model_dump(mode="json"), result.status),
            tool=self.name,
        )
