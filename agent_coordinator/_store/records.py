"""What the store keeps: runs, sessions, attempts and events, as plain records.

Times are seconds since the epoch (UTC) as floats, so leases compare the same way in SQLite and
PostgreSQL; the API turns them into ISO 8601 strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, SkipValidation

from agent_contracts._events import AnalyticsEvent
from agent_contracts._runs import JsonSchema

__all__ = [
    "TERMINAL",
    "BatchClaim",
    "BatchItem",
    "BatchRecord",
    "BatchState",
    "BatchSubmission",
    "Claim",
    "ClaimEnd",
    "ClaimRecord",
    "DeliveryRecord",
    "DeliveryState",
    "EventRecord",
    "Holding",
    "LeaseState",
    "NewRun",
    "RequeueReason",
    "RunInput",
    "RunKind",
    "RunRecord",
    "RunState",
    "SessionRecord",
]

RunKind = Literal["start_session", "resume_session"]
"""A run starts a new session or continues an existing one."""

RunState = Literal["queued", "running", "completed", "failed", "cancelled"]
"""Where a run (and its session, which mirrors its latest run) is."""

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""The states a run never leaves."""


class RunInput(BaseModel):
    """What a run was asked to do, kept with the run so any runner can execute it."""

    model_config = ConfigDict(extra="forbid")

    prompt: str
    """The task sent to the agent."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """Input values, already checked against the agent's ``parameters_schema``."""
    output_schema: JsonSchema | None = None
    """The caller's inline output schema."""
    output_schema_name: str | None = None
    """The registered name of the output schema the caller named."""
    named_schema: JsonSchema | None = None
    """That registered schema's content, fixed when the run was created."""
    options: dict[str, JsonValue] = Field(default_factory=dict)
    """The ``RunOptions`` fields the caller set."""
    model: str | None = None
    """The model the caller asked for, else ``None``."""
    stream: bool = False
    """Whether the run streams its events (see ``RunCreate.stream``)."""
    webhook: str | None = None
    """The http(s) URL the run's end is POSTed to (see ``RunCreate.webhook``)."""


class NewRun(BaseModel):
    """A run to store, with the session it starts (or resumes)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    session_id: str
    kind: RunKind
    agent_name: str
    input: RunInput
    idempotency_key: str | None = None
    request_hash: str | None = None
    parent_session_id: str | None = None
    """For a child session: the session whose agent started it."""
    depth: int = 0
    """0 for a top-level session, its parent's depth plus one for a child."""


class RunRecord(BaseModel):
    """A stored run."""

    model_config = ConfigDict(extra="forbid")

    id: str
    seq: int
    session_id: str
    kind: RunKind
    agent_name: str
    status: RunState
    input: RunInput
    idempotency_key: str | None
    request_hash: str | None
    result: dict[str, JsonValue] | None
    """The library's ``RunResult`` as JSON, once the run ended with one."""
    error: dict[str, JsonValue] | None
    """Why the run failed or was cancelled, as a ``RunError``-shaped object."""
    lease_owner: str | None
    lease_expires_at: float | None
    claims: int
    """How many times a runner claimed it (more than one after a runner was lost)."""
    cancel_requested: bool
    created_at: float
    started_at: float | None
    finished_at: float | None


class SessionRecord(BaseModel):
    """A stored session: an agent's conversation over one or more runs."""

    model_config = ConfigDict(extra="forbid")

    id: str
    seq: int
    agent_name: str
    status: RunState
    transcript: list[JsonValue]
    """The conversation so far (the library's messages as JSON), resumable after a restart."""
    parent_session_id: str | None
    depth: int
    created_at: float
    updated_at: float


class Claim(BaseModel):
    """A run a runner has claimed, with the conversation to continue."""

    model_config = ConfigDict(extra="forbid")

    run: RunRecord
    # Not checked as JSON here: it is the store's own writing (or the process that claimed the
    # run sent it), and the run validates it as the library's messages.
    transcript: SkipValidation[list[JsonValue]]
    """The session's conversation so far (the library's messages as JSON)."""
    progress: dict[str, JsonValue] | None = None
    """The turns an earlier claim of the run recorded (``None``: the run starts afresh)."""
    events: list[tuple[str, dict[str, JsonValue]]] | None = None
    """The events the claim stored for the run (``None``: not known)."""


@dataclass(frozen=True, slots=True)
class Holding:
    """What the runner ending a run knows the store holds for it, so the end need not read it."""

    transcript: list[JsonValue]
    """The session's transcript as the run's claim read it."""
    turns: bool
    """Whether turns may be recorded for the run (a claim of it recorded some)."""
    attempt_events: bool
    """Whether ``attempt`` events of the run may be stored already (an earlier write of its
    events held one, or an earlier claim did)."""
    events: list[tuple[str, dict[str, JsonValue]]] | None = None
    """Every event stored for the run so far, in order (``None``: not known)."""
    analytics: Sequence[AnalyticsEvent] | None = None
    """The analytics events among :attr:`events` and the events the end stores, as the library
    emitted them, in order; the other events are ones the review does not know (``None``: not
    known, the stored events are read as the review reads them)."""
    input: RunInput | None = None
    """The run's stored request, as its claim read it (``None``: read it back)."""


ClaimEnd = Literal["completed", "failed", "cancelled", "expired", "shutdown", "requeued"]
"""How a claim ended: the run ended (its status), the lease ran out, the runner shut down, or a
run handed to the runner found no free worker slot and went back to the queue (``requeued``)."""

RequeueReason = Literal["shutdown", "no_free_slot"]
"""Why a runner put a run it held back in the queue (the ``reason`` of ``run_requeued``)."""


class ClaimRecord(BaseModel):
    """One claim of a run: who held it, when, and how it ended."""

    model_config = ConfigDict(extra="forbid")

    number: int
    """1 for the first claim, counting up."""
    runner: str
    """The id of the runner that held it (host, process and a random part)."""
    claimed_at: float
    ended_at: float | None
    """When it ended (for ``expired``: when the next claim found its lease run out); ``None``
    while it is held."""
    ended: ClaimEnd | None
    """How it ended; ``None`` while it is held."""


class LeaseState(BaseModel):
    """What a runner learns when it renews its lease."""

    model_config = ConfigDict(extra="forbid")

    held: bool
    """Whether the runner still holds the run."""
    cancel_requested: bool = False
    """Whether someone asked for the run to be cancelled."""


class EventRecord(BaseModel):
    """One stored event of a run."""

    model_config = ConfigDict(extra="forbid")

    id: int
    run_id: str
    type: str
    data: dict[str, JsonValue]
    created_at: float


DeliveryState = Literal["pending", "delivered", "failed"]
"""Where a webhook delivery is: still being tried, answered with a 2xx, or given up on."""


class DeliveryRecord(BaseModel):
    """One stored delivery of a run's end to its webhook."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """The event id, sent as ``X-Agentshape-Event-Id`` on every attempt."""
    run_id: str
    url: str
    event: str
    """``run.completed``, ``run.failed`` or ``run.cancelled``."""
    body: str
    """The JSON body, the same bytes on every attempt."""
    status: DeliveryState
    attempts: int
    """Attempts started so far."""
    next_attempt_at: float
    last_status_code: int | None
    """The receiver's HTTP status on the last attempt (``None``: no answer)."""
    last_error: str | None
    """Why the last attempt failed, for people."""
    created_at: float
    delivered_at: float | None


BatchState = Literal["queued", "running", "ended"]
"""Where a batch is: waiting for a runner, held by one, or every item's run has ended."""


class BatchItem(BaseModel):
    """One item of a stored batch: the caller's id, the session it started and its run."""

    model_config = ConfigDict(extra="forbid")

    id: str
    session_id: str
    run_id: str
    status: RunState | Literal["deleted"] = "queued"
    """Its run's status when the batch was read (``deleted``: its session was deleted)."""


class BatchSubmission(BaseModel):
    """One provider batch a batch's runner created."""

    model_config = ConfigDict(extra="forbid")

    provider_batch_id: str
    provider: str
    items: dict[str, str]
    """Each item's custom id and the SHA-256 hex digest of its body."""
    counts: dict[str, JsonValue] | None = None
    """The provider's request counts at the last poll (``total``, ``succeeded``, ``failed``,
    ``ended``), or ``None`` before the first."""


class BatchRecord(BaseModel):
    """A stored batch: runs of one agent sent through the provider's batch API by a runner."""

    model_config = ConfigDict(extra="forbid")

    id: str
    seq: int
    agent_name: str
    status: BatchState
    items: list[BatchItem]
    lease_owner: str | None
    lease_expires_at: float | None
    claims: int
    created_at: float
    finished_at: float | None
    submissions: list[BatchSubmission] = Field(default_factory=list)
    """The provider batches created so far, oldest first."""


class BatchClaim(BaseModel):
    """A batch a runner has claimed, with the claims of its runs not yet ended."""

    model_config = ConfigDict(extra="forbid")

    batch: BatchRecord
    runs: list[Claim]
