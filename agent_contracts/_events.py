"""Analytics events: one JSON object per line, discriminated by ``event``.

A run emits ``run_started``, then a ``model_turn`` per model call, a ``tool_call`` per input-tool
call and an ``attempt`` per try at the output (with a ``retry`` before each re-prompt), and ends
with ``run_completed`` or ``run_failed``.
Every event carries ``ts``, ``run_id`` and ``agent_id``. No event has a field for credentials or
request headers, and unknown fields are rejected, so none can be smuggled in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter

from agent_contracts._messages import Usage
from agent_contracts._runs import OutputMode, RunErrorType
from agent_contracts._validation import ValidationIssue

__all__ = [
    "ANALYTICS_EVENT_ADAPTER",
    "AnalyticsEvent",
    "AttemptEvent",
    "ModelTurnEvent",
    "RetryEvent",
    "RunCompletedEvent",
    "RunFailedEvent",
    "RunStartedEvent",
    "ToolCallEvent",
    "parse_event",
]


def _now() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


class _Event(BaseModel):
    """Fields every event has."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    ts: AwareDatetime = Field(default_factory=_now)
    """When it happened, timezone-aware; ISO 8601 in JSON."""
    run_id: str
    """The run it belongs to."""
    agent_id: str
    """The agent that ran."""

    def to_json_line(self) -> str:
        """Return the event as one line of JSON (no trailing newline)."""
        return self.model_dump_json()


class RunStartedEvent(_Event):
    """A run began."""

    event: Literal["run_started"] = "run_started"
    """The event kind."""
    model: str | None = None
    """The model the run starts on."""
    output_mode: OutputMode | None = None
    """How the output is asked for; ``None`` for a run without a contract."""
    schema_hash: str | None = None
    """The hash of the enforced output schema; ``None`` without a contract."""
    schema_name: str | None = None
    """The registered name of the output schema, when it has one."""
    max_retries: int = Field(default=0, ge=0)
    """Re-prompts the run may make."""


class ModelTurnEvent(_Event):
    """One model call returned."""

    event: Literal["model_turn"] = "model_turn"
    """The event kind."""
    step: int = Field(ge=1)
    """1 for the run's first model call, and so on."""
    model: str | None = None
    """The model called."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens this call spent."""
    latency_ms: float = Field(default=0.0, ge=0)
    """How long the call took, in milliseconds."""
    stop_reason: str | None = None
    """Why the model stopped, as the provider said it (``stop``, ``tool_use``...)."""
    tool_calls: list[str] = Field(default_factory=list)
    """Names of the tools the model called in this turn."""
    batch_id: str | None = None
    """The provider batch that answered this call, when it went through one (``--batch``)."""


class ToolCallEvent(_Event):
    """An input tool the model called, run by agentshape (``submit_result`` is not one)."""

    event: Literal["tool_call"] = "tool_call"
    tool: str
    """The tool's name (``fs:read``, ``mcp__time__get_current_time``...)."""
    duration_ms: float = Field(default=0.0, ge=0)
    """How long the tool took, in milliseconds."""
    is_error: bool = False
    """The tool failed, or the call could not be run; the model got an error result."""


class AttemptEvent(_Event):
    """One try at the output was judged."""

    event: Literal["attempt"] = "attempt"
    """The event kind."""
    number: int = Field(ge=1)
    """1 for the first attempt, 2 for the first retry, and so on."""
    mode: OutputMode
    """How the output was asked for."""
    schema_hash: str | None = None
    """The hash of the schema the output was judged against."""
    raw_output: str = ""
    """Exactly what the model sent."""
    errors: list[ValidationIssue] = Field(default_factory=list)
    """What was wrong; empty when the attempt met the contract."""
    recovered_by_extraction: bool = False
    """Whether the JSON had to be dug out of prose or a code fence."""

    @property
    def ok(self) -> bool:
        """Whether this attempt met the contract."""
        return not self.errors


class RetryEvent(_Event):
    """The run re-prompts the model after a failed attempt."""

    event: Literal["retry"] = "retry"
    """The event kind."""
    number: int = Field(ge=1)
    """Which retry this is (1 for the first)."""
    reason: RunErrorType
    """Why the previous attempt failed."""
    error_count: int = Field(default=0, ge=0)
    """How many problems the previous attempt had."""
    model: str | None = None
    """The model the retry runs on (a larger tier when the run escalates)."""
    model_tier: int = Field(default=0, ge=0)
    """0 for the agent's own model, ``n`` for its ``n``-th escalation tier."""


class RunCompletedEvent(_Event):
    """A run ended with a result."""

    event: Literal["run_completed"] = "run_completed"
    """The event kind."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and requests the whole run spent."""
    duration_ms: float = Field(default=0.0, ge=0)
    """Wall time of the run, in milliseconds."""
    attempts: int = Field(default=1, ge=0)
    """Attempts made."""
    retries: int = Field(default=0, ge=0)
    """Re-prompts made."""
    model: str | None = None
    """The model that produced the result."""
    model_tier: int = Field(default=0, ge=0)
    """0 for the agent's own model, ``n`` for its ``n``-th escalation tier."""
    recovered_by_extraction: bool = False
    """Whether the result had to be dug out of prose or a code fence."""


class RunFailedEvent(_Event):
    """A run ended without a result."""

    event: Literal["run_failed"] = "run_failed"
    """The event kind."""
    error_type: RunErrorType
    """The kind of failure."""
    message: str = ""
    """What went wrong, for a person."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and requests the whole run spent."""
    duration_ms: float = Field(default=0.0, ge=0)
    """Wall time of the run, in milliseconds."""
    attempts: int = Field(default=0, ge=0)
    """Attempts made."""
    retries: int = Field(default=0, ge=0)
    """Re-prompts made."""


AnalyticsEvent = Annotated[
    RunStartedEvent
    | ModelTurnEvent
    | ToolCallEvent
    | AttemptEvent
    | RetryEvent
    | RunCompletedEvent
    | RunFailedEvent,
    Field(discriminator="event"),
]
"""Any analytics event; the ``event`` field says which."""

ANALYTICS_EVENT_ADAPTER: TypeAdapter[AnalyticsEvent] = TypeAdapter(AnalyticsEvent)
"""Validates and serialises any analytics event."""


def parse_event(line: str) -> AnalyticsEvent:
    """Read one analytics event from a line of JSON.

    Args:
        line: One JSONL line, as ``to_json_line`` wrote it (surrounding whitespace is ignored).

    Returns:
        The event, as the class its ``event`` field names.

    Raises:
        pydantic.ValidationError: The line is not JSON, names no known event, or has a missing,
            wrong or unknown field.
    """
    return ANALYTICS_EVENT_ADAPTER.validate_json(line.strip())
