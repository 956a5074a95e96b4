"""Many runs of one agent with bounded concurrency: :func:`run_many`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from agent_contracts.errors import ConfigError
from agent_contracts.runs import RunRequest
from agent_executor.agent import Agent
from agent_executor.providers.base import Provider
from agent_executor.result import AgentResult, OutputT

__all__ = ["run_many"]


async def run_many(
    agent: Agent[OutputT],
    requests: Iterable[RunRequest | str],
    *,
    concurrency: int = 10,
    on_result: Callable[[int, AgentResult[OutputT]], Awaitable[None] | None] | None = None,
    model: Provider | str | None = None,
    escalate: bool = True,
) -> list[AgentResult[OutputT]]:
    """Run ``agent`` on many requests with at most ``concurrency`` runs in flight.

    Each request carries its own task, parameters, schema (inline or by name), options and
    history; a plain string is a request with only a task.

    Args:
        agent: The agent to run.
        requests: The requests, one run each.
        concurrency: Most runs in flight at once (at least 1).
        on_result: Called with ``(index, result)`` as each run finishes (may be async).
        model: A provider or model string for every run (default: the agent's).
        escalate: Escalate a contract failure to the agent's next model tier.

    Returns:
        The results, in the order of ``requests``.

    Raises:
        ConfigError: ``concurrency`` is below 1, or a request is invalid for the agent (the
            whole batch stops: it is a developer's mistake, not a run's failure).
        SchemaNotFoundError: A request names a schema the registry does not have.
        InvalidSchemaError: A request's inline schema is invalid.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    items = list(requests)
    results: list[AgentResult[OutputT] | None] = [None] * len(items)
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, request: RunRequest | str) -> None:
        async with gate:
            result = await agent.run(request, model=model, escalate=escalate)
        results[index] = result
        if on_result is not None:
            maybe = on_result(index, result)
            if maybe is not None:
                await maybe

    runs = [asyncio.ensure_future(one(i, request)) for i, request in enumerate(items)]
    try:
        await asyncio.gather(*runs)
    except BaseException:
        # A developer's mistake (or a cancellation) stops the whole batch, not just one run.
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        raise
    done = [r for r in results if r is not None]
    assert len(done) == len(items)
    return done
