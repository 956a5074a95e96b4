"""Stored records and agents as the API's response bodies (the one place that shapes them)."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import JsonValue

from agent_contracts._config import AgentConfig
from agent_contracts._validation import ValidationIssue
from agent_coordinator._errors import Conflict
from agent_coordinator._service.bodies import (
    AgentDetail,
    AgentSummary,
    AttemptView,
    ClaimView,
    RunFailure,
    RunOutcome,
    RunView,
    SchemaValidationView,
    SessionResult,
    SessionRunView,
    SessionView,
    WebhookDeliveryView,
    timestamp,
)
from agent_coordinator._store.records import (
    TERMINAL,
    ClaimRecord,
    DeliveryRecord,
    RunRecord,
    SessionRecord,
)

__all__ = [
    "agent_detail",
    "agent_summary",
    "claim_view",
    "delivery_view",
    "failure",
    "result_event",
    "run_answer",
    "run_outcome",
    "run_view",
    "session_result",
    "session_run_view",
    "session_view",
]


def failure(error: dict[str, JsonValue] | None) -> RunFailure | None:
    """Return a stored run error as a :class:`RunFailure`, with the structured issues beside."""
    if error is None:
        return None
    raw = error.get("issues")
    items = raw if isinstance(raw, list) else []
    issues = [ValidationIssue.model_validate(item) for item in items if isinstance(item, dict)]
    lines = error.get("validation_errors")
    return RunFailure(
        type=str(error.get("type", "internal_error")),
        message=str(error.get("message", "")),
        validation_errors=(
            [str(line) for line in lines] if isinstance(lines, list) else [str(i) for i in issues]
        ),
        issues=issues,
        last_output=error.get("last_output"),
        where=str(error["where"]) if error.get("where") is not None else None,
    )


def run_view(run: RunRecord, claims: list[ClaimRecord] | None = None) -> RunView:
    """Return a run as the API shows it, with its claims when they were read."""
    return RunView(
        run_id=run.id,
        session_id=run.session_id,
        type=run.kind,
        agent_name=run.agent_name,
        status=run.status,
        error=failure(run.error),
        created_at=timestamp(run.created_at),
        started_at=timestamp(run.started_at),
        finished_at=timestamp(run.finished_at),
        claims=run.claims,
        cancel_requested=run.cancel_requested,
        claim_history=None if claims is None else [claim_view(claim) for claim in claims],
        webhook=run.input.webhook,
    )


def run_outcome(run: RunRecord, result: SessionResult | None = None) -> RunOutcome:
    """Return ``POST /runs``'s answer: the run, with ``result`` (already checked) once it ended."""
    # The view and the result were each validated as they were built; not a second time.
    return RunOutcome.model_construct(**run_view(run).__dict__, result=result)


def run_answer(run: RunRecord) -> tuple[RunOutcome, int]:
    """Return ``POST /runs``'s answer to ``run`` and its status.

    Returns:
        The run and 202 while it is queued or running; once it has ended, the run with its
        result and 200.
    """
    if run.status not in TERMINAL:
        return run_outcome(run), 202
    return run_outcome(run, session_result(run)), 200


def delivery_view(delivery: DeliveryRecord) -> WebhookDeliveryView:
    """Return a webhook delivery as the API shows it."""
    return WebhookDeliveryView(
        event_id=delivery.id,
        event=delivery.event,
        status=delivery.status,
        attempts=delivery.attempts,
        last_status_code=delivery.last_status_code,
        last_error=delivery.last_error,
        next_attempt_at=timestamp(delivery.next_attempt_at)
        if delivery.status == "pending"
        else None,
        delivered_at=timestamp(delivery.delivered_at),
    )


def claim_view(claim: ClaimRecord) -> ClaimView:
    """Return one claim of a run as the API shows it."""
    return ClaimView(
        number=claim.number,
        runner=claim.runner,
        claimed_at=datetime.fromtimestamp(claim.claimed_at, UTC),
        ended_at=timestamp(claim.ended_at),
        ended=claim.ended,
    )


def session_run_view(
    run: RunRecord, attempts: list[dict[str, JsonValue]], claims: list[ClaimRecord] | None = None
) -> SessionRunView:
    """Return a run as part of its session: with its attempts, claims, usage and timings."""
    result = run.result or {}
    usage = result.get("usage")
    duration = result.get("duration_ms")
    model = result.get("model")
    return SessionRunView(
        **run_view(run, claims).model_dump(),
        prompt=run.input.prompt,
        model=str(model) if model is not None else run.input.model,
        attempts=[AttemptView.model_validate(attempt) for attempt in attempts],
        usage=usage if isinstance(usage, dict) else None,
        duration_ms=float(duration) if isinstance(duration, int | float) else None,
    )


def session_view(
    session: SessionRecord,
    *,
    children: list[str],
    runs: list[SessionRunView] | None = None,
) -> SessionView:
    """Return a session as the API shows it."""
    return SessionView(
        session_id=session.id,
        agent_name=session.agent_name,
        status=session.status,
        parent_session_id=session.parent_session_id,
        children=children,
        depth=session.depth,
        messages=len(session.transcript),
        created_at=timestamp(session.created_at),
        updated_at=timestamp(session.updated_at),
        runs=runs or [],
    )


def _raw_output(result: dict[str, JsonValue]) -> str | None:
    attempts = result.get("attempts")
    if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        raw = attempts[-1].get("raw_output")
        if isinstance(raw, str) and raw:
            return raw
    text = result.get("result_text")
    return text if isinstance(text, str) else None


def session_result(run: RunRecord) -> SessionResult:
    """Return the result body of a session whose latest run is ``run``.

    Raises:
        ResultNotReady: The run has not ended yet (409).
    """
    if run.status in ("queued", "running"):
        raise Conflict(
            "ResultNotReady",
            f"run {run.id} of session {run.session_id} is {run.status}; ask again when it ends",
        )
    result = run.result or {}
    error = failure(run.error)
    validation = result.get("schema_validation")
    checked: SchemaValidationView | None = None
    if isinstance(validation, dict):
        source = result.get("schema_source")
        inline = run.input.output_schema is not None
        checked = SchemaValidationView.model_validate(
            {
                **validation,
                "errors": error.validation_errors if error else [],
                "schema_source": source if isinstance(source, str) else None,
                "unused_schema_name": run.input.output_schema_name if inline else None,
            }
        )
    text = result.get("result_text")
    data = result.get("result_data") if run.status == "completed" else None
    # Every field is built here with its type; the answer's JSON value (given twice) was checked
    # when the run stored it, and validating it again would cost each answer its size.
    return SessionResult.model_construct(
        session_id=run.session_id,
        run_id=run.id,
        status=run.status,
        result=_raw_output(result),
        validated_output=data,
        schema_validation=checked,
        result_text=text if isinstance(text, str) else None,
        result_data=data,
        error=error,
    )


def result_event(run: RunRecord) -> dict[str, JsonValue] | None:
    """Return the ``result`` event of a completed run (``None`` for any other run).

    ``{"event_type": "result", "session_id", "run_id", "timestamp", "result_text",
    "result_data"}``: exactly one of ``result_text`` (no contract) and ``result_data`` (the
    validated value) is set; ``timestamp`` is when the run ended (ISO 8601, UTC).
    """
    if run.status != "completed":
        return None
    result = run.result or {}
    text = result.get("result_text")
    ended = timestamp(run.finished_at)
    return {
        "event_type": "result",
        "session_id": run.session_id,
        "run_id": run.id,
        "timestamp": ended.isoformat() if ended is not None else None,
        "result_text": text if isinstance(text, str) else None,
        "result_data": None if isinstance(text, str) else result.get("result_data"),
    }


def agent_summary(config: AgentConfig) -> AgentSummary:
    """Return an agent as ``GET /agents`` lists it."""
    contract = (
        "agent"
        if config.output_schema is not None
        else "default"
        if config.default_output_schema is not None
        else None
    )
    return AgentSummary(
        name=config.id,
        description=config.description,
        model=config.model,
        tools=list(config.tools),
        contract=contract,
        has_parameters=config.parameters_schema is not None,
    )


def agent_detail(config: AgentConfig) -> AgentDetail:
    """Return an agent's blueprint as ``GET /agents/{name}`` gives it."""
    return AgentDetail(
        **agent_summary(config).model_dump(),
        type=config.type,
        model_tiers=list(config.model_tiers),
        system_prompt=config.system_prompt,
        parameters_schema=config.parameters_schema,
        output_schema=config.output_schema,
        default_output_schema=config.default_output_schema,
        options=config.options.model_dump(mode="json", exclude_unset=True),
        max_steps=config.max_steps,
    )
