"""What ``Agent.run_stream`` yields: small typed events, in the order things happen.

A run streams :class:`RunStarted` (again for each escalation tier), the model's
:class:`TextDelta` pieces, :class:`ToolCallStarted`/:class:`ToolCallFinished` around each input
tool, :class:`PartialOutput` values while the output is being written, :class:`RetryStarted`
when an attempt fails and the model is asked again, and ends with :class:`RunFinished`, whose
``result`` is exactly what ``Agent.run`` returns. Each event's :meth:`to_json` is its wire form
(the CLI's ``--stream --json`` lines and the service's server-sent events).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar, Generic

from pydantic import BaseModel, JsonValue

from agent_executor._result import AgentResult, OutputT

__all__ = [
    "PartialOutput",
    "RetryStarted",
    "RunEvent",
    "RunFinished",
    "RunStarted",
    "StreamEvent",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
]


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run began on a model (each escalation tier's run starts again with one).

    Attributes:
        run_id: The run's id (each tier's run has its own).
        agent_id: The agent.
        model: The model spec, such as ``openai:gpt-4.1-mini``.
        model_tier: 0 for the agent's own model, ``n`` for escalation tier ``n``.
        output_mode: How the output is asked for (``tool``, ``native``, ``prompted``), or
            ``None`` for a free-text run.
    """

    type: ClassVar[str] = "run_started"
    run_id: str
    agent_id: str
    model: str
    model_tier: int = 0
    output_mode: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        """Return the event as JSON (``type`` names it)."""
        return _fields_json(self)


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's reply text, as it arrived.

    Attributes:
        text: The piece.
        step: The model turn it belongs to (1 for the run's first call).
    """

    type: ClassVar[str] = "text_delta"
    text: str
    step: int

    def to_json(self) -> dict[str, JsonValue]:
        """Return the event as JSON (``type`` names it)."""
        return _fields_json(self)


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model called an input tool, and agentshape is running it.

    Attributes:
        call_id: The call's id.
        name: The tool (``fs:read``, an MCP tool...).
        arguments: The arguments the model sent (``None`` when they were not JSON).
        step: The model turn that made the call.
    """

    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    arguments: JsonValue
    step: int

    def to_json(self) -> dict[str, JsonValue]:
        """Return the event as JSON (``type`` names it)."""
        return _fields_json(self)


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """An input tool's result, as the model will read it.

    Attributes:
        call_id: The call's id.
        name: The tool.
        content: The result text.
        is_error: The tool failed or the call could not be run.
        step: The model turn that made the call.
    """

    type: ClassVar[str] = "tool_call_finished"
    call_id: str
    name: str
    content: str
    is_error: bool
    step: int

    def to_json(self) -> dict[str, JsonValue]:
        """Return the event as JSON (``type`` names it)."""
        return _fields_json(self)


@dataclass(frozen=True, slots=True)
class PartialOutput:
    """The output as far as the model has written it.

    Each partial output of an attempt holds only what is already final: finished members,
    strings that may still grow at their end, no number or key that may still change. Its
    value is thus a prefix of the attempt's final value; a failed attempt's partials are
    followed by :class:`RetryStarted` and then the next attempt's.

    Attributes:
        value: For a Pydantic contract, an instance of its partial class (the same fields, all
            optional); for a JSON Schema contract, the JSON value.
        data: The JSON value (what ``value`` was read from).
        attempt: The attempt being written (1 for the first, 2 after a retry...).
    """

    type: ClassVar[str] = "partial_output"
    value: BaseModel | JsonValue
    data: JsonValue
    attempt: int

    def to_json(self) -> dict[str, JsonValue]:
        """Return the event as JSON (``type`` names it; ``value`` is given as ``data``)."""
        return {"type": self.type, "data": self.data, "attempt": self.attempt}


@dataclass(frozen=True, slots=True)
class RetryStarted:
    """An attempt failed and the model is being asked again (one re-prompt spent).

    Attributes:
        attempt: The attempt that failed.
        reason: Why, as a run error type (``schema_validation_failed``...).
        errors: Its problems, each as ``path: message``.
    """

    type: ClassVar[str] = "retry_started"
    attempt: int
    reason: str
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, JsonValue]:
        """Return the event as JSON (``type`` names it)."""
        return _fields_json(self)


@dataclass(frozen=True, slots=True)
class RunFinished(Generic[OutputT]):
    """The run ended; always the last event.

    Attributes:
        result: Exactly what ``Agent.run`` returns for the run: completed or failed.
    """

    type: ClassVar[str] = "run_finished"
    result: AgentResult[OutputT]

    def to_json(self) -> dict[str, JsonValue]:
        """Return the event as JSON: ``result`` is the ``RunResult`` in its JSON form."""
        dumped: dict[str, JsonValue] = self.result.result.model_dump(mode="json")
        return {"type": self.type, "result": dumped}


RunEvent = (
    RunStarted | TextDelta | ToolCallStarted | ToolCallFinished | PartialOutput | RetryStarted
)
"""Any event of a run before its end (every :data:`StreamEvent` but ``RunFinished``)."""

StreamEvent = RunEvent | RunFinished[OutputT]
"""Any event ``Agent.run_stream`` yields (``RunFinished`` last)."""


def _fields_json(
    event: RunStarted | TextDelta | ToolCallStarted | ToolCallFinished | RetryStarted,
) -> dict[str, JsonValue]:
    """Return an event's ``type`` and fields as JSON (its fields are JSON values already)."""
    data: dict[str, JsonValue] = {"type": event.type}
    for item in fields(event):
        value = getattr(event, item.name)
        data[item.name] = list(value) if isinstance(value, list) else value
    return data
