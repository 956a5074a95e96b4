"""What runs while the service serves, whichever front (HTTP API or MCP server) it has."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from agent_coordinator._service.services import Services
from agent_coordinator._store.listener import RUN_ENDED
from agent_coordinator._webhooks import Deliverer

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["serving"]


def _ended_elsewhere(services: Services, run_id: str) -> None:
    """Wake the requests waiting for a run the store says ended, unless this process ended it."""
    # This process's runner hands its runs over whole (the notifier's notify), sparing the waiting
    # requests a read of the store.
    if run_id and services.runner is not None and services.runner.executes(run_id):
        return
    services.notifier.ended_elsewhere(run_id)


STORE_THREADS = 6
"""Threads the blocking work of async code runs in, at most (the event loop's default executor):
SQLite transactions that would wait for the write lock, the report pages' reads, file writes.

A few: the store's transactions are short, and many at once wait on each other's row locks (the
rollups' rows most of all). PostgreSQL's store calls run on the event loop itself, as many at
once as its pool has connections (``LOOP_CONNECTIONS`` of :mod:`agent_coordinator._store.postgres`).
"""


@asynccontextmanager
async def serving(
    services: Services, managers: Sequence[StreamableHTTPSessionManager] = ()
) -> AsyncIterator[None]:
    """Run what an app needs while it serves: store threads, MCP sessions and background tasks."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(
        ThreadPoolExecutor(max_workers=STORE_THREADS, thread_name_prefix="store")
    )
    async with AsyncExitStack() as stack:
        if services.store.wakes_runners:  # requests waiting for runs other processes end
            stack.callback(
                services.store.listen(RUN_ENDED, lambda run_id: _ended_elsewhere(services, run_id))
            )
        for manager in managers:
            await stack.enter_async_context(manager.run())
        if services.runner is not None:
            services.runner.start()
        supervisor = None
        if services.runner_processes is not None:
            supervisor = asyncio.create_task(
                services.runner_processes.supervise(
                    lambda run_id: _ended_elsewhere(services, run_id)
                ),
                name="runner-processes",
            )
        deliverer = None
        if services.webhooks is not None:
            deliverer = Deliverer(services.store, services.webhooks)
            deliverer.start()
        if services.sweeper is not None:
            services.sweeper.start()
        try:
            yield
        finally:
            if supervisor is not None:
                supervisor.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await supervisor
            if services.sweeper is not None:
                await services.sweeper.stop()
            if deliverer is not None:
                await deliverer.stop()
            if services.runner is not None:
                await services.runner.stop()
