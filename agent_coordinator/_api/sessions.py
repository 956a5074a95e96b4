"""``/sessions``: list, read (runs, attempts, parent and children), the validated result, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._api.model_text import ModelTextResponse
from agent_coordinator._errors import NotFound
from agent_coordinator._service.bodies import SessionPage, SessionResult, SessionView
from agent_coordinator._service.services import Services
from agent_coordinator._service.views import session_result, session_run_view, session_view
from agent_coordinator._store.records import RunState, SessionRecord

__all__ = ["router"]

router = APIRouter(tags=["sessions"], default_response_class=ModelTextResponse)

_MAX_CHILDREN = 1000


async def _get(services: Services, session_id: str) -> SessionRecord:
    session = await services.store.call(services.store.get_session, session_id)
    if session is None:
        raise NotFound("SessionNotFound", f"no session {session_id!r}")
    return session


def _children(services: Services, session_id: str) -> list[str]:
    children = services.store.list_sessions(limit=_MAX_CHILDREN, parent_session_id=session_id)
    return [child.id for child in reversed(children)]


@router.get("/sessions")
async def list_sessions(
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[int | None, Query(ge=1, le=2**62)] = None,
    status: RunState | None = None,
    agent_name: Annotated[str | None, Query(max_length=200)] = None,
    parent_session_id: Annotated[str | None, Query(max_length=100)] = None,
) -> SessionPage:
    """List sessions, newest first, a page at a time (without their runs)."""
    sessions = await services.store.call(
        services.store.list_sessions,
        limit=limit,
        after=cursor,
        status=status,
        agent_name=agent_name,
        parent_session_id=parent_session_id,
    )
    next_cursor = sessions[-1].seq if len(sessions) == limit else None
    return SessionPage(
        items=[session_view(session, children=[]) for session in sessions],
        next_cursor=next_cursor,
    )


@router.get("/sessions/{session_id}")
async def get_session(session_id: str, services: ServicesDep) -> SessionView:
    """Return a session.

    Its status, agent, every run with its attempts (raw output and errors), usage and timings,
    its parent and its children.
    """
    session = await _get(services, session_id)

    def details() -> SessionView:
        stored = services.store.session_runs(session_id)
        claims = services.store.claim_history(stored)
        runs = [
            session_run_view(run, services.store.attempts(run.id), claims[run.id]) for run in stored
        ]
        return session_view(session, children=_children(services, session_id), runs=runs)

    return await services.store.call_in_thread(details)


@router.get("/sessions/{session_id}/result")
async def get_result(session_id: str, services: ServicesDep) -> SessionResult:
    """Return the session's latest result.

    The result with its ``result_text`` or ``result_data``, or the run's failure body;
    409 ``ResultNotReady`` while the latest run has not ended.
    """
    await _get(services, session_id)
    runs = await services.store.call(services.store.session_runs, session_id)
    return session_result(runs[-1])


@router.delete("/sessions/{session_id}", status_code=204, response_class=Response)
async def delete_session(session_id: str, services: ServicesDep) -> Response:
    """Delete a session with its runs, attempts and events, and its child sessions with theirs.

    404 ``SessionNotFound`` when there is no such session; 409 ``SessionBusy`` while a run of
    the session or of one of its children is queued or running (cancel it, or wait for it to
    end).
    """
    await services.store.call(services.store.delete_session, session_id)
    return Response(status_code=204)
