"""What runs while the service serves, whichever front (HTTP API or MCP server) it has."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from agent_coordinator.service.services import Services
from agent_coordinator.webhooks import Deliverer

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["serving"]


@asynccontextmanager
async def serving(
    services: Services, managers: Sequence[StreamableHTTPSessionManager] = ()
) -> AsyncIterator[None]:
    """Run what an app needs while it serves: store threads, MCP sessions and background tasks.

    Args:
        services: The services; their runner and retention sweeper (if any) start, and stop at
            the end, and so does a webhook deliverer when they have webhook settings.
        managers: MCP session managers to run alongside.
    """
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=32, thread_name_prefix="store")
    )
    async with AsyncExitStack() as stack:
        for manager in managers:
            await stack.enter_async_context(manager.run())
        if services.runner is not None:
            services.runner.start()
        deliverer = None
        if services.webhooks is not None:
            deliverer = Deliverer(services.store, services.webhooks)
            deliverer.start()
        if services.sweeper is not None:
            services.sweeper.start()
        try:
            yield
        finally:
            if services.sweeper is not None:
                await services.sweeper.stop()
            if deliverer is not None:
                await deliverer.stop()
            if services.runner is not None:
                await services.runner.stop()
