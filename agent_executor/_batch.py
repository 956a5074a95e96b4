"""Many runs of one agent, live with bounded concurrency or in batches: :func:`run_many`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence

from agent_contracts._errors import ConfigError
from agent_contracts._runs import RunRequest
from agent_executor._agent import Agent
from agent_executor._batching import Batcher
from agent_executor._providers.base import Provider
from agent_executor._providers.batches import batch_api_for
from agent_executor._result import AgentResult, OutputT

__all__ = ["BATCH_RUN_TIMEOUT_S", "run_many"]

BATCH_RUN_TIMEOUT_S = 25 * 3600.0
"""The timeout of a run sent through a batch: a provider may take 24 hours to answer one."""


async def run_many(
    agent: Agent[OutputT],
    requests: Iterable[RunRequest | str],
    *,
    concurrency: int = 10,
    on_result: Callable[[int, AgentResult[OutputT]], Awaitable[None] | None] | None = None,
    model: Provider | str | None = None,
    escalate: bool = True,
    batch: bool | Batcher = False,
    keys: Sequence[str] | None = None,
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
        escalate: Escalate a contract failure to the agent's next model tier (not with
            ``batch``: a batch calls one model).
        batch: Send the runs' model calls through the provider's batch API (OpenAI's Batch API,
            Anthropic's Message Batches; the test model answers at once): every run's first call
            in one batch, the re-asks of replies that failed the contract in a follow-up batch,
            as a live run re-asks. ``True`` polls every 10 s; a :class:`Batcher` sets polling,
            progress and the state file to resume from. ``concurrency`` does not apply, and
            each run's timeout is :data:`BATCH_RUN_TIMEOUT_S` unless its options set one.
        keys: With ``batch``: one stable key per request (a task id), so a rerun with the same
            state file re-attaches to its batches; default: the request's position.

    Returns:
        The results, in the order of ``requests``.

    Raises:
        ConfigError: ``concurrency`` is below 1, or a request is invalid for the agent (the
            whole batch stops: it is a developer's mistake, not a run's failure).
        SchemaNotFoundError: A request names a schema the registry does not have.
        InvalidSchemaError: A request's inline schema is invalid.
        ConfigError: With ``batch``: the agent has input tools or MCP servers (each tool turn
            would be another day's batch), the provider has no batch API, or ``keys`` does not
            give one unique key per request.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    items = list(requests)
    if batch is not False:
        batcher = batch if isinstance(batch, Batcher) else _batcher(agent, model)
        return await _run_batched(agent, items, batcher, keys, on_result)
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


def _batcher(agent: Agent[OutputT], model: Provider | str | None) -> Batcher:
    """Return a batcher for the provider the agent's runs would call."""
    live = agent.provider(model)
    return Batcher(batch_api_for(live), live)


async def _run_batched(
    agent: Agent[OutputT],
    items: list[RunRequest | str],
    batcher: Batcher,
    keys: Sequence[str] | None,
    on_result: Callable[[int, AgentResult[OutputT]], Awaitable[None] | None] | None,
) -> list[AgentResult[OutputT]]:
    """Run every request at once, their model calls gathered into batches by ``batcher``."""
    if agent.tools or agent.config.mcp_servers:
        raise ConfigError(
            f"agent {agent.id}: --batch cannot run agents with input tools or MCP servers "
            "(each tool turn would be another batch of up to 24 hours); run it live"
        )
    names = [str(i) for i in range(len(items))] if keys is None else list(keys)
    if len(names) != len(items) or len(set(names)) != len(names):
        raise ConfigError("run_many: keys must give one unique key per request")
    requests = [_batch_request(item) for item in items]
    results: list[AgentResult[OutputT] | None] = [None] * len(items)

    async def one(index: int) -> None:
        with batcher.item(names[index]):
            result = await agent.run(requests[index], model=batcher.provider, escalate=False)
        results[index] = result
        if on_result is not None:
            maybe = on_result(index, result)
            if maybe is not None:
                await maybe

    batcher.expect(len(items))
    runs = [asyncio.ensure_future(one(i)) for i in range(len(items))]
    try:
        await asyncio.gather(*runs)
    except BaseException:
        batcher.cancel()
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        raise
    return [r for r in results if r is not None]


def _batch_request(item: RunRequest | str) -> RunRequest:
    """Return ``item`` as a request whose run may wait as long as a batch takes."""
    request = item if isinstance(item, RunRequest) else RunRequest(task=item)
    if request.options.timeout_s is not None:
        return request
    options = request.options.model_copy(update={"timeout_s": BATCH_RUN_TIMEOUT_S})
    return request.model_copy(update={"options": options})
