"""What the Python client returns: runs, session results (typed), schemas and agents.

These are the service's answers as the client reads them. Unlike the service's own bodies they
ignore fields they do not know, so a newer service (one that adds a field) keeps working with an
older client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError

from agent_contracts._errors import ConfigError, OutputValidationError, RunFailedError
from agent_contracts._runs import JsonSchema
from agent_contracts._validation import ValidationIssue
from agent_core._output_validation import issues_from_pydantic, validate_as_json

__all__ = [
    "TERMINAL_STATES",
    "AgentInfo",
    "BatchInfo",
    "BatchItemInfo",
    "OutputT",
    "ProviderBatchInfo",
    "ResultValidation",
    "RunClaim",
    "RunFailure",
    "RunInfo",
    "RunState",
    "SchemaCheckResult",
    "SchemaInfo",
    "SessionResult",
    "WebhookDelivery",
    "pending_result",
    "session_result",
]

RunState = Literal["queued", "running", "completed", "failed", "cancelled"]
"""Where a run of the service is."""

TERMINAL_STATES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""The states a run ends in."""

OutputT = TypeVar("OutputT")


class _Answer(BaseModel):
    """A part of a service answer: unknown fields are ignored, values are kept as sent."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class RunFailure(_Answer):
    """Why a run failed."""

    type: str
    """``output_schema_validation_failed``, ``provider_timeout``, ``cancelled``..."""
    message: str
    """What went wrong, for a person."""
    validation_errors: list[str] = Field(default_factory=list)
    """The last attempt's problems as ``"$.path: message"``."""
    issues: list[ValidationIssue] = Field(default_factory=list)
    """The same problems, structured."""
    last_output: JsonValue = None
    """What the model last produced, so nothing is lost."""


class ResultValidation(_Answer):
    """How a result was validated (``schema_validation``)."""

    valid: bool
    """Whether the result met the schema."""
    schema_name: str | None = None
    """The registered schema's name, when the run used one."""
    retry_count: int = 0
    """Re-prompts the run needed."""
    errors: list[str] = Field(default_factory=list)
    """The problems, when the result is invalid."""
    schema_source: str | None = None
    """Which schema the run used (``inline``, ``named``, ``default``, ``agent``), when the
    service says."""


class RunClaim(_Answer):
    """One claim of a run by a runner, and how it ended."""

    number: int
    """1 for the first claim."""
    runner: str
    """The runner that held it (host, process id and a random part)."""
    claimed_at: datetime
    ended_at: datetime | None = None
    ended: Literal["completed", "failed", "cancelled", "expired", "shutdown", "requeued"] | None = (
        None
    )
    """How the claim ended: the run ended, the lease ran out (the runner died or hung), or the
    runner put the run back at shutdown; ``None`` while it is held."""


class WebhookDelivery(_Answer):
    """The delivery of a run's end to the webhook it named."""

    event_id: str
    """The ``X-Agentshape-Event-Id`` every attempt carries."""
    event: str
    """``run.completed``, ``run.failed`` or ``run.cancelled``."""
    status: Literal["pending", "delivered", "failed"]
    """``pending`` (being tried), ``delivered`` (a 2xx answer) or ``failed`` (given up)."""
    attempts: int
    last_status_code: int | None = None
    """The receiver's status on the last attempt; ``None`` when it did not answer."""
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    delivered_at: datetime | None = None


class RunInfo(_Answer):
    """A run of the service: what it is, where it is, and how it ended."""

    run_id: str
    session_id: str
    type: str
    """``start_session`` or ``resume_session``."""
    agent_name: str
    status: RunState
    error: RunFailure | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    claims: int = 0
    """How many times a runner claimed the run."""
    cancel_requested: bool = False
    claim_history: list[RunClaim] | None = None
    """Each claim of the run by a runner and how it ended (read by ``get_run``)."""
    webhook: str | None = None
    """The URL the run's end is delivered to, when the run named one."""
    webhook_delivery: WebhookDelivery | None = None
    """That delivery, once the run has ended (read by ``get_run``)."""


class BatchItemInfo(_Answer):
    """One item of a batch: its session (read its result with ``get_result``) and run."""

    id: str
    """The id the item was given."""
    session_id: str
    run_id: str
    status: RunState | Literal["deleted"]
    """Its run's status; ``deleted`` once its session was deleted."""


class ProviderBatchInfo(_Answer):
    """One provider batch a batch went through, with the provider's request counts."""

    provider_batch_id: str
    provider: str
    items: int
    """Items sent in it."""
    counts: dict[str, JsonValue] | None = None
    """``total``, ``succeeded``, ``failed``, ``ended`` at the last poll (``None`` before it)."""


class BatchInfo(_Answer):
    """A batch of sessions the service's runners send through the provider's batch API."""

    batch_id: str
    agent_name: str
    status: Literal["queued", "running", "ended"]
    """``ended`` once every item's run has ended."""
    completed: int
    failed: int
    """Items that failed or were cancelled."""
    pending: int
    deleted: int = 0
    items: list[BatchItemInfo]
    """Every item, in the order given."""
    provider_batches: list[ProviderBatchInfo] = Field(default_factory=list)
    """The provider batches created so far: the first round, then the re-asks."""
    created_at: datetime
    finished_at: datetime | None = None


class SchemaInfo(_Answer):
    """A schema of the service's registry (``schema`` is left out by the list)."""

    name: str
    description: str | None = None
    hash: str
    """The schema's content hash."""
    created_at: datetime
    modified_at: datetime
    schema_: JsonSchema | None = Field(default=None, alias="schema")
    """The schema itself (``None`` in a list)."""


class AgentInfo(_Answer):
    """An agent of the service's fleet (the contracts and prompt are left out by the list)."""

    name: str
    description: str = ""
    model: str | None = None
    tools: list[str] = Field(default_factory=list)
    contract: Literal["agent", "default"] | None = None
    """``agent`` for a fixed ``output_schema``, ``default`` for a ``default_output_schema``."""
    has_parameters: bool = False
    type: str | None = None
    model_tiers: list[str] = Field(default_factory=list)
    system_prompt: str | None = None
    parameters_schema: JsonSchema | None = None
    output_schema: JsonSchema | None = None
    default_output_schema: JsonSchema | None = None
    options: dict[str, JsonValue] = Field(default_factory=dict)
    max_steps: int | None = None
    file: str | None = None
    """The agent's ``agent.yml`` (given after a create or an update)."""
    version: str | None = None
    """The file's version after a create or an update; pass it to the next ``update`` or
    ``delete`` so that a change made meanwhile is refused rather than overwritten."""


class SchemaCheckResult(_Answer):
    """A schema checked as ``agentshape list`` checks an agent's: ``valid`` when no error."""

    valid: bool
    findings: list[dict[str, JsonValue]] = Field(default_factory=list)
    """Each problem: ``path``, ``severity`` (``error`` or ``warning``), ``message``."""


class _ResultBody(_Answer):
    """``GET /sessions/{id}/result``'s body."""

    session_id: str
    run_id: str
    status: RunState
    result: str | None = None
    schema_validation: ResultValidation | None = None
    result_text: str | None = None
    result_data: JsonValue = None
    error: RunFailure | None = None


@dataclass(frozen=True)
class SessionResult(Generic[OutputT]):
    """A session's latest run as the client got it: how it ended and its validated result.

    A completed run has ``result_data`` (it had an output schema) or ``result_text``; a failed
    or cancelled one has ``error``; a run that had not ended when the client stopped waiting has
    none of them (ask again with ``get_result``).
    """

    status: RunState
    """``completed``, ``failed``, ``cancelled``, or ``queued``/``running`` when not ended."""
    session_id: str
    run_id: str
    result_data: JsonValue = None
    """The validated value, when the run had an output schema."""
    result_text: str | None = None
    """The reply, when the run had no output schema."""
    schema_validation: ResultValidation | None = None
    error: RunFailure | None = None
    raw_output: str | None = None
    """The model's last output as text (the result body's ``result``)."""
    _output: OutputT | None = field(default=None, repr=False)

    @property
    def output(self) -> OutputT:
        """The result: an instance of the ``output_type`` asked for, else ``result_data``.

        Raises:
            RunFailedError: The run failed or was cancelled (with its type, problems and last
                output).
            ConfigError: The run had not ended when the client stopped waiting.
        """
        self.raise_for_status()
        if self.status not in TERMINAL_STATES:
            raise ConfigError(
                f"run {self.run_id} is still {self.status}; ask for the session's result "
                f"(get_result({self.session_id!r})) when it has ended"
            )
        return self._output  # type: ignore[return-value]  # None is the JSON null here

    def raise_for_status(self) -> None:
        """Raise :class:`RunFailedError` when the run failed or was cancelled.

        Raises:
            RunFailedError: The run failed or was cancelled.
        """
        if self.error is not None:
            raise RunFailedError(
                self.error.message,
                type=self.error.type,
                errors=self.error.issues,
                last_output=self.error.last_output,
            )


def session_result(
    body: JsonValue, output_type: type[OutputT] | None = None
) -> SessionResult[OutputT]:
    """Read a result body of the service, validating ``result_data`` into ``output_type``.

    Args:
        body: ``GET /sessions/{id}/result``'s JSON (or the ``result`` of a waited run).
        output_type: A Pydantic class the data must fit; ``None`` keeps it as JSON.

    Returns:
        The result, its ``output`` an ``output_type`` instance when the run completed.

    Raises:
        OutputValidationError: The completed run's data does not fit ``output_type``
            (every problem, with the data as ``last_output``).
        pydantic.ValidationError: The body is not a result body.
    """
    read = _ResultBody.model_validate(body)
    output: object = read.result_data
    if output_type is not None and read.status == "completed":
        if not (isinstance(output_type, type) and issubclass(output_type, BaseModel)):
            raise ConfigError(f"output_type must be a Pydantic model class, not {output_type!r}")
        try:
            output = validate_as_json(output_type, read.result_data)
        except PydanticValidationError as error:
            raise OutputValidationError(
                f"run {read.run_id}'s result does not fit {output_type.__name__}",
                errors=issues_from_pydantic(error),
                last_output=read.result_data,
            ) from error
    return SessionResult(
        status=read.status,
        session_id=read.session_id,
        run_id=read.run_id,
        result_data=read.result_data,
        result_text=read.result_text,
        schema_validation=read.schema_validation,
        error=read.error,
        raw_output=read.result,
        _output=output,  # type: ignore[arg-type]
    )


def pending_result(run: RunInfo) -> SessionResult[OutputT]:
    """Return the result of a run that has not ended yet (no data; ``output`` raises)."""
    return SessionResult(status=run.status, session_id=run.session_id, run_id=run.run_id)
