"""The request and response bodies of ``/batches``, with examples, so ``/docs`` is the reference."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent_contracts._runs import JsonSchema, RunOptions
from agent_coordinator._service.bodies import MAX_PROMPT_CHARS
from agent_coordinator._store.records import BatchState, RunState

__all__ = [
    "BatchCreate",
    "BatchItemCreate",
    "BatchItemView",
    "BatchPage",
    "BatchView",
    "ProviderBatchView",
]


class BatchItemCreate(BaseModel):
    """One item of a batch: a new session of the batch's agent."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    """The caller's id for the item, unique in the batch."""
    prompt: str | None = Field(default=None, min_length=1, max_length=MAX_PROMPT_CHARS)
    """The task; may be left out when ``parameters`` are given (as for ``POST /runs``)."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """Input values, checked against the agent's ``parameters_schema`` before anything runs."""


class BatchCreate(BaseModel):
    """``POST /batches``: many sessions of one agent, run through the provider's batch API."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "agent_name": "invoice-extractor",
                    "output_schema_name": "invoice",
                    "items": [
                        {"id": "inv-1", "prompt": "Invoice 1: ACME, 120 EUR"},
                        {"id": "inv-2", "prompt": "Invoice 2: Initech, 80 USD"},
                    ],
                }
            ]
        },
    )

    agent_name: str = Field(max_length=200)
    """The agent every item runs (one without input tools or MCP servers)."""
    items: list[BatchItemCreate]
    """The items, one session each (at least one; at most the service's limit, 1,000)."""
    output_schema: JsonSchema | None = None
    """An inline output schema for every item (or ``output_schema_name``, not both)."""
    output_schema_name: str | None = Field(default=None, max_length=128)
    """A registered schema's name for every item (or ``output_schema``, not both)."""
    output_schema_options: RunOptions | None = None
    """Run options for every item (``max_retries``...), as ``POST /runs`` takes them."""
    model: str | None = Field(default=None, max_length=200)
    """The model, such as ``openai:gpt-4.1-mini``, ``anthropic:claude-sonnet-4-5`` or ``test``
    (its provider must have a batch API)."""
    webhook: str | None = Field(default=None, max_length=2000)
    """An http(s) URL each item's run's end is POSTed to, as ``POST /runs`` does."""


class BatchItemView(BaseModel):
    """One item of a batch: its session, its run and the run's status."""

    model_config = ConfigDict(extra="forbid")

    id: str
    session_id: str
    run_id: str
    status: RunState | Literal["deleted"]
    """Its run's status; ``deleted`` once its session was deleted (``DELETE /sessions/{id}``,
    or pruned)."""


class ProviderBatchView(BaseModel):
    """One provider batch the batch's runner created, with the provider's request counts."""

    model_config = ConfigDict(extra="forbid")

    provider_batch_id: str
    provider: str
    items: int
    """Items sent in it."""
    counts: dict[str, JsonValue] | None = None
    """The provider's counts at the last poll: ``total``, ``succeeded``, ``failed``, ``ended``."""


class BatchView(BaseModel):
    """A batch: where it is, its items' sessions, and the provider batches it went through."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "batch_id": "bat_01a21d59c6600123456789abcdef",
                    "agent_name": "invoice-extractor",
                    "status": "running",
                    "completed": 1,
                    "failed": 0,
                    "pending": 1,
                    "items": [
                        {
                            "id": "inv-1",
                            "session_id": "ses_01a21d59c6600123456789abcdef",
                            "run_id": "run_01a21d59c6600123456789abcdef",
                            "status": "completed",
                        }
                    ],
                }
            ]
        },
    )

    batch_id: str
    agent_name: str
    status: BatchState
    """``queued`` (no runner yet), ``running`` or ``ended`` (every item's run has ended)."""
    completed: int
    """Items whose run completed."""
    failed: int
    """Items whose run failed or was cancelled."""
    pending: int
    """Items whose run is queued or running."""
    deleted: int = 0
    """Items whose session was deleted since."""
    items: list[BatchItemView]
    """Every item, in the order given; read each one's result at
    ``GET /sessions/{session_id}/result``."""
    provider_batches: list[ProviderBatchView] = Field(default_factory=list)
    """The provider batches created so far, oldest first (the first round, then re-asks)."""
    created_at: datetime
    finished_at: datetime | None = None


class BatchPage(BaseModel):
    """A page of batches, newest first."""

    model_config = ConfigDict(extra="forbid")

    items: list[BatchView]
    next_cursor: int | None = None
    """Pass as ``cursor`` for the next page; ``None`` on the last."""
