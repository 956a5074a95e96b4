"""``agentshape run --stream``: the run goes through ``Agent.run_stream`` and is shown as it goes.

:func:`run_streamed` runs the agent on the kept event loop (as ``run_sync`` does), hands each
event to a view (:mod:`agent_executor._cli.stream_view`) through
:class:`~agent_executor._cli.secret_edge.SecretEdge`, and returns the run's ``AgentResult``, the
same object ``run_sync`` returns, so the command prints it and picks the exit code exactly as
without ``--stream``. Ctrl-C closes the view (nothing is written after it), cancels the run and
lets the command line end with its one ``interrupted`` line and exit code 130.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TextIO

from pydantic import BaseModel

from agent_contracts._runs import RunRequest
from agent_executor._agent import Agent
from agent_executor._cli.secret_edge import SecretEdge
from agent_executor._cli.stream_view import GrowingView, JsonLinesView, StreamView
from agent_executor._providers.base import Provider
from agent_executor._result import AgentResult
from agent_executor._stream_events import RunFinished
from agent_executor._sync import run_coroutine_sync

__all__ = ["CANCEL_WAIT_S", "run_streamed"]

CANCEL_WAIT_S = 5.0
"""How long an interrupted run is given to wind down (close its connections) before exit."""


def run_streamed(
    agent: Agent[BaseModel],
    request: RunRequest,
    *,
    model: Provider,
    escalate: bool,
    json_lines: bool,
    out: TextIO,
    err: TextIO,
) -> AgentResult[BaseModel]:
    """Run ``request`` streamed, showing its events, and return its result.

    Args:
        agent: The agent.
        request: The run's request.
        model: The provider to run on.
        escalate: Escalate a contract failure to the agent's next tier.
        json_lines: Write every event as a JSON line on ``out`` (the last a ``run_finished``
            line holding the result) instead of showing the output growing.
        out: Standard output.
        err: Standard error.

    Returns:
        What ``Agent.run`` returns for the run (completed or failed).

    Raises:
        ConfigError: As ``Agent.run`` (before any event).
        SchemaNotFoundError: As ``Agent.run``.
        InvalidSchemaError: As ``Agent.run``.
        KeyboardInterrupt: Interrupted; the run was cancelled and nothing more is written.
    """
    view: StreamView = JsonLinesView(out) if json_lines else GrowingView.for_streams(out, err)
    wound_down = threading.Event()

    async def follow() -> AgentResult[BaseModel]:
        try:
            edge = SecretEdge()
            async for event in agent.run_stream(request, model=model, escalate=escalate):
                if isinstance(event, RunFinished):
                    for shown in edge.flush():
                        view.show(shown)
                    if json_lines:
                        view.show(event.to_json())
                    return event.result
                for shown in edge.feed(event.to_json()):
                    view.show(shown)
            raise RuntimeError("the run's stream ended without its result")  # pragma: no cover
        finally:
            wound_down.set()

    try:
        return run_coroutine_sync(follow())
    except KeyboardInterrupt:
        view.close()
        with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C stops the wait
            wound_down.wait(CANCEL_WAIT_S)
        raise
    finally:
        view.close()
