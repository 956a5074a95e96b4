"""``/runs``: create (start or resume a session), list, read, cancel, and follow a run's events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import StreamingResponse

from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._api.model_text import ModelTextResponse, model_response
from agent_coordinator._errors import StoreUnavailable
from agent_coordinator._service.bodies import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_WAIT_S,
    RunCreate,
    RunOutcome,
    RunPage,
    RunView,
)
from agent_coordinator._service.runs import stored_run, submit_and_wait, wait_for_end
from agent_coordinator._service.views import delivery_view, result_event, run_answer, run_view
from agent_coordinator._store.records import TERMINAL, RunState

__all__ = ["router"]

router = APIRouter(tags=["runs"], default_response_class=ModelTextResponse)

_EVENT_POLL_S = 0.2
_STORE_WAIT_S = 1.0
"""Seconds an event stream waits before reading again from a store it could not read."""


@router.post(
    "/runs",
    status_code=202,
    response_model=RunOutcome,
    responses={
        200: {"model": RunOutcome, "description": "The run had ended (see wait), with its result"}
    },
)
async def create_run(
    body: RunCreate,
    services: ServicesDep,
    idempotency_key: Annotated[str | None, Header(max_length=MAX_IDEMPOTENCY_KEY_CHARS)] = None,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0,
) -> Response:
    """Store a run (202), then optionally wait up to ``wait`` seconds for it to end (200).

    An ended run's answer holds its ``result``: the body ``GET /sessions/{id}/result`` gives.

    The parameters, the schema (inline or named) and the options are checked before anything is
    stored: 422 lists every parameter problem, 404 an unknown agent or schema name, 400 an invalid
    inline schema. The same ``Idempotency-Key`` returns the same run, never a second one.
    """
    run = await submit_and_wait(services, body, idempotency_key, wait)
    return model_response(*run_answer(run))


@router.get("/runs")
async def list_runs(
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[int | None, Query(ge=1, le=2**62)] = None,
    status: RunState | None = None,
    agent_name: Annotated[str | None, Query(max_length=200)] = None,
    session_id: Annotated[str | None, Query(max_length=100)] = None,
) -> RunPage:
    """List runs, newest first, a page at a time."""
    runs = await services.store.call(
        services.store.list_runs,
        limit=limit,
        after=cursor,
        status=status,
        agent_name=agent_name,
        session_id=session_id,
    )
    next_cursor = runs[-1].seq if len(runs) == limit else None
    return RunPage(items=[run_view(run) for run in runs], next_cursor=next_cursor)


@router.get("/runs/{run_id}")
async def get_run(run_id: str, services: ServicesDep) -> RunView:
    """Return one run, with each claim of it by a runner and how that claim ended.

    One that named a webhook shows its delivery once it has ended.
    """
    run = await stored_run(services, run_id)
    claims = await services.store.call(services.store.claim_history, [run])
    view = run_view(run, claims[run_id])
    if run.input.webhook is not None and run.status in TERMINAL:
        delivery = await services.store.call(services.store.run_delivery, run.id)
        view.webhook_delivery = delivery_view(delivery) if delivery is not None else None
    return view


@router.post(
    "/runs/{run_id}/cancel",
    responses={
        202: {
            "model": RunView,
            "description": "The cancel is recorded; the run's runner has not ended it yet "
            "(it will end it cancelled)",
        }
    },
)
async def cancel_run(
    run_id: str,
    services: ServicesDep,
    response: Response,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 5,
) -> RunView:
    """Cancel a run and answer with what happened.

    200 with ``status: cancelled``: a queued run is cancelled at once; a running one is
    stopped by its runner (its model call cancelled) within about a second, and this waits up
    to ``wait`` seconds for that. 202 with ``cancel_requested: true``: the runner has not
    ended it yet; it ends ``cancelled``, even if its model answers first. 409
    ``RunNotCancellable``: the run had already ended (its status is in the message).
    """
    run = await services.store.call(services.store.request_cancel, run_id)
    if run.status not in TERMINAL:
        if services.runner is not None:
            services.runner.cancel(run_id)  # this process's runner has it: stop it now
        run = await wait_for_end(services, run_id, min(wait, services.limits.max_wait_s))
    response.status_code = 200 if run.status in TERMINAL else 202
    return run_view(run)


_EVENTS_EXAMPLE = (
    'id: 7\nevent: partial_output\ndata: {"type": "partial_output", '
    '"data": {"summary": "Retries now back o"}, "attempt": 1}\n\n'
    'event: result\ndata: {"event_type": "result", '
    '"session_id": "ses_01a21d59c6600123456789abcdef", '
    '"run_id": "run_01a21d59c6600123456789abcdef", "timestamp": "2026-01-01T12:00:00+00:00", '
    '"result_text": null, "result_data": {"summary": "Retries now back off.", '
    '"approval": "approve"}}\n\n'
    'event: end\ndata: {"status": "completed"}\n\n'
)


@router.get(
    "/runs/{run_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"example": _EVENTS_EXAMPLE}},
            "description": "Server-sent events (``id``, ``event``, ``data`` lines), then ``end``",
        }
    },
)
async def run_events(
    run_id: str,
    services: ServicesDep,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
) -> StreamingResponse:
    """Follow a run's events as server-sent events, ending with an ``end`` event.

    Each event's ``id`` is a cursor to reconnect from (``after`` or ``Last-Event-ID``), its
    ``event`` the type and its ``data`` JSON. The types:

    - ``run_claimed`` (``runner``, ``claim``), ``claim_expired`` (the same, when the next claim
      finds its lease ran out), ``run_requeued``, ``run_cancelled``: the service's;
    - the library's analytics events: ``run_started``, ``model_turn``, ``tool_call``,
      ``attempt``, ``retry``, ``run_completed``, ``run_failed``;
    - for a run created with ``stream: true``, what ``Agent.run_stream`` yields, its
      ``to_json()`` (``type`` included): ``text_delta`` (``text``, ``step``),
      ``tool_call_started`` (``call_id``, ``name``, ``arguments``, ``step``),
      ``tool_call_finished`` (``call_id``, ``name``, ``content``, ``is_error``,
      ``step``), ``partial_output`` (``data``, the output so far, a prefix of that attempt's
      final value; ``attempt``) and ``retry_started`` (``attempt``, ``reason``, ``errors``).
      The runner stores them a few times a second, the text deltas of a model turn joined
      and only an attempt's latest partial output kept, so the output grows at that rate;
      the stream's own ``run_started`` and ``run_finished`` are left out (the analytics
      ``run_started``, the run's end and ``GET /sessions/{id}/result`` say the same). An
      escalated run has a ``run_started`` per model tier, each tier's attempts counted from 1;
    - ``result``, once a run has completed: the result event, ``{"event_type":
      "result", "session_id", "run_id", "timestamp", "result_text", "result_data"}``, exactly
      one of the last two set (``result_text`` without a contract);
    - ``end`` (``status``), last, once the run has ended.
    """
    await stored_run(services, run_id)
    start = min(int(last_event_id), 2**62) if last_event_id and last_event_id.isdigit() else after

    async def stream() -> AsyncIterator[str]:
        cursor = start
        while True:
            try:
                events = await services.store.call(services.store.events_after, run_id, cursor)
                run = None if events else await stored_run(services, run_id)
                rest = (
                    await services.store.call(services.store.events_after, run_id, cursor)
                    if run is not None and run.status in TERMINAL
                    else []
                )
            except StoreUnavailable:
                # The stream waits the outage out (a comment line now and then keeps proxies
                # from dropping it as idle) rather than breaking off with a 500 mid-response.
                yield ": waiting for the database\n\n"
                await asyncio.sleep(_STORE_WAIT_S)
                continue
            for event in events:
                cursor = event.id
                yield f"id: {event.id}\nevent: {event.type}\ndata: {json.dumps(event.data)}\n\n"
            if run is None:
                continue
            if run.status in TERMINAL:
                for event in rest:
                    yield f"id: {event.id}\nevent: {event.type}\ndata: {json.dumps(event.data)}\n\n"
                ended = result_event(run)
                if ended is not None:
                    yield f"event: result\ndata: {json.dumps(ended)}\n\n"
                yield f"event: end\ndata: {json.dumps({'status': run.status})}\n\n"
                return
            await asyncio.sleep(_EVENT_POLL_S)

    return StreamingResponse(stream(), media_type="text/event-stream")
