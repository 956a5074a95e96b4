"""Bodies of the overview endpoints (``/reports/...``): session rows, pages, and the re-prompts."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, JsonValue

from agent_coordinator._service.bodies import timestamp
from agent_coordinator._store.overview import SessionRow
from agent_coordinator._store.records import RunState

__all__ = ["SessionDetailRow", "SessionRowPage", "SessionRowView", "row_view"]


class SessionRowView(BaseModel):
    """A session as the sessions list shows it: its latest run's model, attempts, tokens, time."""

    session_id: str
    agent_name: str
    status: RunState
    parent_session_id: str | None = None
    depth: int = 0
    created_at: datetime
    updated_at: datetime
    run_id: str | None = None
    """The latest run."""
    model: str | None = None
    attempts: int = 0
    """Attempts at the output in the latest run."""
    retries: int = 0
    """Re-prompts in the latest run."""
    max_retries: int | None = None
    """The re-prompts the latest run was allowed (its ``max_retries``)."""
    tokens: int | None = None
    """Input plus output tokens of the latest run."""
    duration_ms: float | None = None
    error_type: str | None = None
    """The latest run's error type, when it failed."""
    schema_valid: bool | None = None
    """Whether the latest run's output met its schema; ``None`` without a schema or result."""


class SessionRowPage(BaseModel):
    """A page of session rows, newest first, with the total matching the filters."""

    items: list[SessionRowView]
    next_cursor: int | None = None
    """Pass as ``cursor`` for the next page; ``None`` on the last page."""
    total: int
    """Sessions matching the filters, on every page; counted up to 10,000 (see
    :attr:`total_exact`)."""
    total_exact: bool = True
    """``False`` when more than :attr:`total` sessions match: the count stopped there."""
    error_types: list[str] = Field(default_factory=list)
    """Every error type a run has ended with, for a filter."""


class SessionDetailRow(SessionRowView):
    """A session's row with the re-prompt that followed each attempt, run by run."""

    reprompts: dict[str, list[str | None]] = Field(default_factory=dict)
    """Per run id, per attempt (in order): the re-prompt the model got after it, if any."""


def _int(value: JsonValue) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def row_view(row: SessionRow) -> SessionRowView:
    """Return a stored session row as the API shows it."""
    run = row.latest
    result = (run.result if run is not None else None) or {}
    usage = result.get("usage")
    tokens = None
    if isinstance(usage, dict):
        tokens = (_int(usage.get("input_tokens")) or 0) + (_int(usage.get("output_tokens")) or 0)
    attempts = result.get("attempts")
    validation = result.get("schema_validation")
    error = run.error if run is not None else None
    duration = result.get("duration_ms")
    options = run.input.options if run is not None else {}
    model = result.get("model")
    return SessionRowView.model_validate(
        {
            "session_id": row.id,
            "agent_name": row.agent_name,
            "status": row.status,
            "parent_session_id": row.parent_session_id,
            "depth": row.depth,
            "created_at": timestamp(row.created_at),
            "updated_at": timestamp(row.updated_at),
            "run_id": run.id if run is not None else None,
            "model": model if isinstance(model, str) else (run.input.model if run else None),
            "attempts": len(attempts) if isinstance(attempts, list) else 0,
            "retries": _int(result.get("retries")) or 0,
            "max_retries": _int(options.get("max_retries")),
            "tokens": tokens,
            "duration_ms": duration if isinstance(duration, int | float) else None,
            "error_type": str(error.get("type")) if isinstance(error, dict) else None,
            "schema_valid": (
                bool(validation.get("valid")) if isinstance(validation, dict) else None
            ),
        }
    )
