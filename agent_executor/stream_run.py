"""``Agent.run_stream``: a run's events as an async iterator, from the same run loop.

:func:`stream_events` starts the run as its own task with :data:`~agent_executor.stream_relay.
STREAM_TO` set for it, yields each event the run hands over as soon as it is handed, and ends
with :class:`~agent_executor.stream_events.RunFinished` holding the run's ``AgentResult``, the
very object ``Agent.run`` would have returned. A caller that stops iterating early (``break``,
an exception, ``aclose()``) cancels the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from agent_executor.result import AgentResult, OutputT
from agent_executor.stream_events import RunEvent, RunFinished, StreamEvent
from agent_executor.stream_relay import STREAM_TO

__all__ = ["stream_events"]


async def stream_events(
    start: Callable[[], Awaitable[AgentResult[OutputT]]],
) -> AsyncIterator[StreamEvent[OutputT]]:
    """Run ``start()`` streamed: yield its events as they come, then ``RunFinished``.

    Args:
        start: Starts the run (``lambda: agent.run(request)``).

    Yields:
        The run's events, :class:`RunFinished` last.

    Raises:
        ConfigError: As ``Agent.run`` raises it, before any event (a developer's mistake).
        SchemaNotFoundError: As ``Agent.run``.
        InvalidSchemaError: As ``Agent.run``.
    """
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
    token = STREAM_TO.set(queue.put_nowait)
    try:
        task = asyncio.ensure_future(start())  # the task's context holds STREAM_TO
    finally:
        STREAM_TO.reset(token)
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (event := await queue.get()) is not None:
            yield event
        yield RunFinished(task.result())
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
