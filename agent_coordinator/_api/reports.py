"""``/reports``: overviews for people: sessions with their latest run, live changes, analytics.

``GET /reports/sessions`` pages through sessions (newest first, server-side, so 10,000 sessions
cost one page) with the latest run's model, attempts, tokens and duration, filtered by agent,
status, error type and creation time. ``GET /reports/sessions/events`` streams changed sessions
as server-sent events. ``GET /reports/analytics`` is ``agentshape analytics``'s review of the
runs the service stored, read from the rollups the store keeps as runs end. ``GET
/reports/evals`` lists the ``agentshape eval`` reports in the directory ``serve --evals-dir``
names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, JsonValue

from agent_contracts._errors import AgentshapeError
from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._api.report_bodies import (
    SessionDetailRow,
    SessionRowPage,
    SessionRowView,
    row_view,
)
from agent_coordinator._errors import NotFound, StoreUnavailable, from_library
from agent_coordinator._eval_reports import EvalEntry, read_eval_reports
from agent_coordinator._service.services import Services
from agent_coordinator._store.overview import (
    SessionFilter,
    SessionRow,
    changed_sessions,
    count_sessions,
    error_types,
    retry_limits,
    session_rows,
)
from agent_coordinator._store.records import RunState
from agent_executor._review import Review, parse_since

__all__ = ["router"]

router = APIRouter(prefix="/reports", tags=["reports"])

_POLL_S = 0.5
_STREAM_S = 5.0
"""A stream ends after this long and the client reconnects from its last id (missing nothing),
so an open dashboard never holds up a stopping server: uvicorn lets open responses finish first."""


def _views(services: Services, rows: list[SessionRow]) -> list[SessionRowView]:
    """Rows as the API shows them, each with the ``max_retries`` its latest run started with."""
    views = [row_view(row) for row in rows]
    limits = retry_limits(services.store, [v.run_id for v in views if v.run_id is not None])
    for view in views:
        if view.run_id in limits:
            view.max_retries = limits[view.run_id]
    return views


def _since(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        return parse_since(text).timestamp()
    except AgentshapeError as error:
        raise from_library(error) from error


@router.get("/sessions")
async def list_session_rows(
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[int | None, Query(ge=1, le=2**62)] = None,
    status: RunState | None = None,
    agent_name: Annotated[str | None, Query(max_length=200)] = None,
    error_type: Annotated[str | None, Query(max_length=100)] = None,
    since: Annotated[str | None, Query(max_length=40, description="2025-01-05, ISO, 7d")] = None,
    until: Annotated[str | None, Query(max_length=40, description="2025-01-05, ISO, 7d")] = None,
) -> SessionRowPage:
    """List sessions with their latest run, newest first, a page at a time, with the total.

    The total is counted up to 10,000; beyond, ``total_exact`` is false and ``total`` is 10,000
    (so a page costs the same in a store of any size).

    ``since`` and ``until`` take a date, an ISO 8601 time or a span back from now (``12h``,
    ``7d``), as ``agentshape analytics --since`` does.
    """
    wanted = SessionFilter(
        status=status,
        agent_name=agent_name or None,
        error_type=error_type or None,
        since=_since(since),
        until=_since(until),
    )

    def page() -> SessionRowPage:
        rows = session_rows(services.store, wanted, limit=limit, after=cursor)
        counted = count_sessions(services.store, wanted)
        return SessionRowPage(
            items=_views(services, rows),
            next_cursor=rows[-1].seq if len(rows) == limit else None,
            total=counted.total,
            total_exact=counted.exact,
            error_types=error_types(services.store),
        )

    return await services.store.call_in_thread(page)


def _reprompts(transcript: list[JsonValue], prompts: list[str]) -> list[str]:
    """Return the messages the run loop sent back after a failed attempt, in order."""
    found: list[str] = []
    seen_user = False
    for message in transcript:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            content = str(message.get("content") or "")
            if seen_user and not any(content.startswith(prompt) for prompt in prompts):
                found.append(content)
            seen_user = True
        results = message.get("tool_results")
        for result in results if isinstance(results, list) else []:
            if (
                isinstance(result, dict)
                and result.get("is_error")
                and (result.get("name") == "submit_result")
            ):
                found.append(str(result.get("content") or ""))
    return found


@router.get(
    "/sessions/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}},
)
async def session_events(
    services: ServicesDep,
    after: Annotated[float | None, Query(ge=0, le=1e11, description="a cursor (event id)")] = None,
    last_event_id: Annotated[str | None, Header(max_length=40)] = None,
) -> StreamingResponse:
    """Stream changed sessions as server-sent events (``session``, the row as data).

    Each session changed after the cursor (``after``, or the ``Last-Event-ID`` header; by default
    now) is sent once per change, its ``id`` the cursor to reconnect from; a ``ready`` event
    gives the starting cursor, and the stream ends after five seconds with ``end`` (reconnect
    with the last id: no change is missed; a stopping server never waits for a stream).
    """
    cursor = after if after is not None else time.time()
    with contextlib.suppress(ValueError):
        given = float(last_event_id or "nan")
        if math.isfinite(given):
            cursor = min(max(given, 0.0), 1e11)

    async def stream() -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        opened = loop.time()
        since = cursor
        yield f"retry: 2000\nid: {since!r}\nevent: ready\ndata: {{}}\n\n"
        while loop.time() - opened < _STREAM_S:
            try:
                rows = await services.store.call_in_thread(changed_sessions, services.store, since)
                views = await services.store.call_in_thread(_views, services, rows)
            except StoreUnavailable:  # waited out to the stream's end, not broken off with a 500
                yield ": waiting for the database\n\n"
                await asyncio.sleep(_POLL_S)
                continue
            for row, view in zip(rows, views, strict=True):
                since = max(since, row.updated_at)
                yield f"id: {since!r}\nevent: session\ndata: {view.model_dump_json()}\n\n"
            if not rows:
                await asyncio.sleep(_POLL_S)
        yield f"event: end\ndata: {json.dumps({'reconnect': True})}\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream")


@router.get("/sessions/{session_id}")
async def session_row(session_id: str, services: ServicesDep) -> SessionDetailRow:
    """Return one session's row, with the re-prompt that followed each attempt of each run."""

    def detail() -> SessionDetailRow:
        session = services.store.get_session(session_id)
        if session is None:
            raise NotFound("SessionNotFound", f"no session {session_id!r}")
        runs = services.store.session_runs(session_id)
        row = SessionRow(
            seq=session.seq,
            id=session.id,
            agent_name=session.agent_name,
            status=session.status,
            parent_session_id=session.parent_session_id,
            depth=session.depth,
            created_at=session.created_at,
            updated_at=session.updated_at,
            latest=runs[-1] if runs else None,
        )
        feedback = iter(_reprompts(session.transcript, [run.input.prompt for run in runs]))
        reprompts: dict[str, list[str | None]] = {}
        for run in runs:
            attempts = services.store.attempts(run.id)
            reprompts[run.id] = [
                next(feedback, None) if attempt.get("errors") and index < len(attempts) else None
                for index, attempt in enumerate(attempts, start=1)
            ]
        [view] = _views(services, [row])
        return SessionDetailRow(**view.model_dump(), reprompts=reprompts)

    return await services.store.call_in_thread(detail)


@router.get("/analytics")
async def analytics(
    services: ServicesDep,
    since: Annotated[str | None, Query(max_length=40, description="2025-01-05, ISO, 7d")] = None,
    agent: Annotated[str | None, Query(max_length=200)] = None,
) -> Review:
    """Return ``agentshape analytics``'s review of the runs this service stored.

    Read from per-agent, per-day rollups the store updates as each run ends, so it costs the
    same in a store of any size: the CLI's numbers over the same events (success rates,
    failures by type, first-try validity, retries, tokens, a per-day trend), with latency
    percentiles read from histograms (within about 2 %). ``since`` counts whole UTC days: from
    the midnight at or before it (the review's ``since`` says which).
    """
    start = _since(since)
    day = datetime.fromtimestamp(start, UTC).date() if start is not None else None
    return await services.store.call_in_thread(
        services.store.rollup_review, source=services.store.url, since=day, agent=agent or None
    )


class EvalList(BaseModel):
    """The eval reports the service shows."""

    model_config = ConfigDict(extra="forbid")

    evals_dir: str | None
    """The directory read (``serve --evals-dir``), or ``None`` when the service has none."""
    evals: list[EvalEntry]
    """Each report file, newest first; files that are not reports last, with their error."""


@router.get("/evals")
async def evals(services: ServicesDep) -> EvalList:
    """Return the ``agentshape eval`` reports found in the service's evals directory.

    Each ``agentshape eval ... --out DIR/NAME`` writes ``DIR/NAME/eval.json``: per model,
    contract success, first-try validity, runs rescued by the re-ask, mean attempts, tokens,
    latency p50/p95, cost and field-level agreement where known.
    """
    directory = services.evals_dir
    if directory is None:
        return EvalList(evals_dir=None, evals=[])
    found = await asyncio.to_thread(read_eval_reports, directory)
    return EvalList(evals_dir=str(directory), evals=found)
