"""The request and response bodies of the HTTP API, with examples, so ``/docs`` is the reference."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent_contracts._runs import JsonSchema, RunOptions
from agent_contracts._validation import ValidationIssue
from agent_coordinator._store.records import ClaimEnd, RunKind, RunState

__all__ = [
    "MAX_IDEMPOTENCY_KEY_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_WAIT_S",
    "AgentDetail",
    "AgentSummary",
    "AttemptView",
    "ClaimView",
    "Health",
    "Ready",
    "RunCreate",
    "RunFailure",
    "RunOutcome",
    "RunPage",
    "RunView",
    "SchemaCheck",
    "SchemaCreate",
    "SchemaDetail",
    "SchemaFindingView",
    "SchemaSummary",
    "SchemaValidationView",
    "SessionPage",
    "SessionResult",
    "SessionRunView",
    "SessionView",
    "ValidateSchemaRequest",
    "WebhookDeliveryView",
    "timestamp",
]

MAX_PROMPT_CHARS = 200_000
"""The longest prompt a run may have."""
MAX_IDEMPOTENCY_KEY_CHARS = 200
"""The longest ``Idempotency-Key`` header a ``POST /runs`` may give."""
MAX_WAIT_S = 120
"""The longest ``wait`` a ``POST /runs`` or a cancel may ask for, in seconds."""

_PR_REVIEW: dict[str, JsonValue] = {
    "type": "object",
    "required": ["summary", "approval"],
    "properties": {
        "summary": {"type": "string"},
        "approval": {"enum": ["approve", "request_changes", "comment"]},
    },
}


def timestamp(seconds: float | None) -> datetime | None:
    """Return epoch seconds as an aware UTC datetime (``None`` stays ``None``)."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


class RunCreate(BaseModel):
    """``POST /runs``: start a session, or resume one, with an optional output schema."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "type": "start_session",
                    "agent_name": "pr-reviewer",
                    "prompt": "Review the retry change in payments.py",
                    "parameters": {"pr_url": "https://example.com/pr/1"},
                },
                {"agent_name": "pr-reviewer", "parameters": {"pr_url": "https://example.com/pr/1"}},
                {
                    "type": "resume_session",
                    "session_id": "ses_01a21d59c6600123456789abcdef",
                    "prompt": "Now list only the blocking comments.",
                },
            ]
        },
    )

    type: RunKind = "start_session"
    """``start_session`` (a new conversation) or ``resume_session`` (continue ``session_id``)."""
    agent_name: str | None = Field(default=None, max_length=200)
    """The agent to run; required to start a session (for a resume, the session's agent)."""
    prompt: str | None = Field(default=None, min_length=1, max_length=MAX_PROMPT_CHARS)
    """The task for the agent. A start may leave it out when it gives ``parameters``: the
    user message is then the labelled block of the parameters alone (``Parameters:`` and
    their JSON), as it follows the prompt when both are given. A resume needs it."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """Input values, checked against the agent's ``parameters_schema`` before anything runs; a
    resume that gives none keeps the ones its session started with."""
    session_id: str | None = Field(default=None, max_length=100)
    """The session to resume (``resume_session`` only)."""
    output_schema: JsonSchema | None = Field(default=None, examples=[_PR_REVIEW])
    """An inline output schema for this run (agents without a fixed ``output_schema``)."""
    output_schema_name: str | None = Field(default=None, max_length=128)
    """A registered schema's name. Beside an inline schema the inline one wins (the
    order: inline, named, the agent's default); the result's ``schema_validation`` then names
    it as ``unused_schema_name``."""
    output_schema_options: RunOptions | None = None
    """``max_retries``, ``extract_json``, ``strict_json_only``, ``output_mode``,
    ``lenient_formats``, ``token_budget``, ``timeout_s``; unset ones fall through to the agent's."""
    model: str | None = Field(default=None, max_length=200)
    """The model for this run, such as ``openai:gpt-4.1-mini`` or ``test``."""
    stream: bool = False
    """Stream the run: the model is called with its streaming API, and the run's events
    (``GET /runs/{id}/events``) carry what ``Agent.run_stream`` yields: the reply text and the
    output as they are written (``text_delta``, ``partial_output``), input-tool calls and
    retries. Its child sessions stream too. The result is the same either way."""
    webhook: str | None = Field(default=None, max_length=2000)
    """An http(s) URL the service POSTs the run's end to, signed with its webhook secret
    (400 ``InvalidWebhook`` for another scheme or a host outside ``--webhook-allow``, 400
    ``WebhooksNotConfigured`` when the service has no secret)."""


class RunFailure(BaseModel):
    """Why a run failed."""

    model_config = ConfigDict(extra="forbid")

    type: str
    """``output_schema_validation_failed``, ``provider_timeout``, ``cancelled``..."""
    message: str
    validation_errors: list[str] = Field(default_factory=list)
    """Every problem of the last attempt as ``"$.path: message"``."""
    issues: list[ValidationIssue] = Field(default_factory=list)
    """The same problems, structured (path, message, keyword, schema path)."""
    last_output: JsonValue = None
    """What the model last produced, so nothing is lost."""
    where: str | None = None
    """For ``internal_error``: what the runner was doing and the code it failed in."""


class ClaimView(BaseModel):
    """One claim of a run by a runner, and how it ended."""

    model_config = ConfigDict(extra="forbid")

    number: int
    """1 for the first claim."""
    runner: str
    """The runner that held it (host, process id and a random part)."""
    claimed_at: datetime
    ended_at: datetime | None = None
    ended: ClaimEnd | None = None
    """``completed``, ``failed`` or ``cancelled`` (the run ended), ``expired`` (the lease ran
    out: the runner died or hung) or ``shutdown`` (the runner put the run back); ``None`` while
    it is held."""


class WebhookDeliveryView(BaseModel):
    """The delivery of a run's end to its webhook."""

    model_config = ConfigDict(extra="forbid")

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
    """When a pending delivery is tried next."""
    delivered_at: datetime | None = None


class RunView(BaseModel):
    """A run: what it is, where it is, and how it ended."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "run_id": "run_01a21d59c6600123456789abcdef",
                    "session_id": "ses_01a21d59c6600123456789abcdef",
                    "type": "start_session",
                    "agent_name": "pr-reviewer",
                    "status": "queued",
                }
            ]
        },
    )

    run_id: str
    session_id: str
    type: RunKind
    agent_name: str
    status: RunState
    """``queued``, ``running``, ``completed``, ``failed`` or ``cancelled``."""
    error: RunFailure | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    claims: int = 0
    """How many times a runner claimed the run (above 1 after a runner was lost)."""
    cancel_requested: bool = False
    claim_history: list[ClaimView] | None = None
    """Each claim and how it ended, in ``GET /runs/{id}`` and a session's runs (not in lists)."""
    webhook: str | None = None
    """The URL the run's end is delivered to, when the run named one."""
    webhook_delivery: WebhookDeliveryView | None = None
    """That delivery's state once the run has ended (``GET /runs/{id}`` only)."""


class RunPage(BaseModel):
    """A page of runs, newest first."""

    items: list[RunView]
    next_cursor: int | None = None
    """Pass as ``cursor`` for the next page; ``None`` on the last page."""


class AttemptView(BaseModel):
    """One attempt of a run: the raw output and what was wrong with it."""

    model_config = ConfigDict(extra="allow")

    number: int
    mode: str
    raw_output: str = ""
    errors: list[ValidationIssue] = Field(default_factory=list)


class SessionRunView(RunView):
    """A run as part of a session, with its attempts, usage and timings."""

    prompt: str
    model: str | None = None
    attempts: list[AttemptView] = Field(default_factory=list)
    usage: dict[str, JsonValue] | None = None
    duration_ms: float | None = None


class SessionView(BaseModel):
    """A session: its agent, status, runs (with attempts), parent and children."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    agent_name: str
    status: RunState
    parent_session_id: str | None = None
    children: list[str] = Field(default_factory=list)
    depth: int = 0
    messages: int = 0
    """Messages in the session's transcript."""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    runs: list[SessionRunView] = Field(default_factory=list)


class SessionPage(BaseModel):
    """A page of sessions, newest first (without their runs)."""

    items: list[SessionView]
    next_cursor: int | None = None


class SchemaValidationView(BaseModel):
    """The validation metadata of a result."""

    valid: bool
    schema_name: str | None = None
    retry_count: int = 0
    errors: list[str] = Field(default_factory=list)
    """The problems, when the result is invalid."""
    schema_source: Literal["inline", "named", "default", "agent"] | None = None
    """Which schema the run was held to (in order: ``inline``, then ``named``, then the
    agent's ``default``; ``agent`` for an agent's fixed ``output_schema``)."""
    unused_schema_name: str | None = None
    """The ``output_schema_name`` the request gave beside an inline schema, which won."""


class SessionResult(BaseModel):
    """``GET /sessions/{id}/result``: the latest run's validated result, or why it failed.

    A completed run has exactly one of ``result_text`` (no schema) and ``result_data`` (the
    validated value, also in ``validated_output``); a failed run has ``error``.
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "session_id": "ses_01a21d59c6600123456789abcdef",
                    "run_id": "run_01a21d59c6600123456789abcdef",
                    "status": "completed",
                    "result": '{"summary": "ok", "approval": "approve"}',
                    "validated_output": {"summary": "ok", "approval": "approve"},
                    "schema_validation": {"valid": True, "schema_name": None, "retry_count": 1},
                    "result_text": None,
                    "result_data": {"summary": "ok", "approval": "approve"},
                }
            ]
        },
    )

    session_id: str
    run_id: str
    status: RunState
    result: str | None = None
    """The raw result text (the model's last output)."""
    validated_output: JsonValue = None
    schema_validation: SchemaValidationView | None = None
    result_text: str | None = None
    result_data: JsonValue = None
    error: RunFailure | None = None


class RunOutcome(RunView):
    """``POST /runs``'s answer: the run, and its result once it has ended.

    ``result`` is the body ``GET /sessions/{id}/result`` gives for this run, set when the run
    ended before the answer (within ``?wait=N``, or an idempotent repeat of an ended run), so a
    waiting caller needs no second request; ``None`` while the run is queued or running.
    """

    result: SessionResult | None = None


class SchemaCreate(BaseModel):
    """``POST /schemas``: register a named output schema."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        json_schema_extra={
            "examples": [
                {"name": "code-count", "description": "files and lines", "schema": _PR_REVIEW}
            ]
        },
    )

    name: str = Field(max_length=128)
    description: str | None = Field(default=None, max_length=2000)
    schema_: JsonSchema = Field(alias="schema")
    replace: bool = False
    """Overwrite a schema already registered under ``name``."""


class SchemaSummary(BaseModel):
    """A registered schema's entry."""

    name: str
    description: str | None = None
    hash: str
    created_at: datetime
    modified_at: datetime


class SchemaDetail(SchemaSummary):
    """A registered schema with its content."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    schema_: JsonSchema = Field(alias="schema")


class AgentSummary(BaseModel):
    """One agent of the fleet."""

    name: str
    description: str = ""
    model: str | None = None
    tools: list[str] = Field(default_factory=list)
    contract: Literal["agent", "default"] | None = None
    """``agent`` for a fixed ``output_schema``, ``default`` for a ``default_output_schema``."""
    has_parameters: bool = False


class AgentDetail(AgentSummary):
    """An agent's blueprint with its contracts."""

    type: str = "autonomous"
    model_tiers: list[str] = Field(default_factory=list)
    system_prompt: str = ""
    parameters_schema: JsonSchema | None = None
    output_schema: JsonSchema | None = None
    default_output_schema: JsonSchema | None = None
    options: dict[str, JsonValue] = Field(default_factory=dict)
    max_steps: int | None = None


class ValidateSchemaRequest(BaseModel):
    """``POST /agents/validate-schema``: check a schema as ``agentshape list`` checks a config."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: JsonValue = Field(alias="schema")
    kind: Literal["output", "parameters"] = "output"


class SchemaFindingView(BaseModel):
    """One problem found in a schema."""

    path: str
    severity: Literal["error", "warning"]
    message: str
    keyword: str | None = None


class SchemaCheck(BaseModel):
    """The findings of a schema check; ``valid`` when none is an error."""

    valid: bool
    findings: list[SchemaFindingView] = Field(default_factory=list)


class Health(BaseModel):
    """``GET /health``: the process answers (liveness; the database is not asked)."""

    status: Literal["ok"] = "ok"


class Ready(BaseModel):
    """``GET /ready``: the database answered too (readiness, for a load balancer)."""

    status: Literal["ready"] = "ready"
