"""Submitting batches: many sessions of one agent, run through the provider's batch API.

:func:`submit_batch` checks every item as ``POST /runs`` checks a start (the agent, the schema,
the parameters, the limits), checks that the agent and its model can run in a batch, and
stores the batch with a session and a queued run per item in one transaction; a runner then
claims the batch whole (see :mod:`agent_coordinator._runner`).
"""

from __future__ import annotations

import asyncio

from agent_coordinator._errors import ErrorDetail, ServiceError, Unprocessable
from agent_coordinator._ids import new_id
from agent_coordinator._service.batch_bodies import BatchCreate
from agent_coordinator._service.bodies import RunCreate
from agent_coordinator._service.runs import checked_input
from agent_coordinator._service.services import Services
from agent_coordinator._store.records import BatchRecord, NewRun, RunInput

__all__ = ["submit_batch"]


async def submit_batch(services: Services, body: BatchCreate) -> BatchRecord:
    """Check a batch request, store it with a session and a queued run per item, wake runners.

    Returns:
        The stored batch.

    Raises:
        InvalidRequest: No items, too many, an id given twice, both schema fields, or an item
            with neither a prompt nor parameters (422).
        BatchNotSupported: The agent has input tools or MCP servers (400).
        ConfigError: The model cannot be made or its provider has no batch API (400).
        ServiceError: Whatever a start of a session raises for an item (404, 400, 413, 422),
            its message naming the item.
    """
    _check_shape(services, body)
    first: RunInput | None = None
    inputs: list[RunInput] = []
    for index, item in enumerate(body.items):
        try:
            if first is None:
                start = RunCreate(
                    agent_name=body.agent_name,
                    prompt=item.prompt,
                    parameters=item.parameters,
                    output_schema=body.output_schema,
                    output_schema_name=body.output_schema_name,
                    output_schema_options=body.output_schema_options,
                    model=body.model,
                    webhook=body.webhook,
                )
                first = await checked_input(services, start, body.agent_name, item.parameters)
                checked = first
            else:
                # The agent, the contract and the webhook are every item's: checked once.
                services.execution.check_parameters(body.agent_name, item.parameters)
                checked = first.model_copy(
                    update={"prompt": item.prompt or "", "parameters": item.parameters}
                )
        except ServiceError as error:
            raise _naming(error, index, item.id) from error
        inputs.append(checked)
    assert first is not None
    # A batcher with no ledger sends nothing: this only asks whether the batch can run.
    await asyncio.to_thread(services.execution.batcher, body.agent_name, first)
    items = [
        (
            item.id,
            NewRun(
                id=new_id("run"),
                session_id=new_id("ses"),
                kind="start_session",
                agent_name=body.agent_name,
                input=checked,
            ),
        )
        for item, checked in zip(body.items, inputs, strict=True)
    ]
    batch = await services.store.call(
        services.store.create_batch, new_id("bat"), body.agent_name, items
    )
    if services.runner is not None:
        services.runner.wake(batch=True)
    return batch


def _check_shape(services: Services, body: BatchCreate) -> None:
    """Check what a batch request's items and schema fields are, before checking each item."""
    limit = services.limits.max_batch_items
    if not body.items:
        raise Unprocessable("InvalidRequest", "items is empty: a batch needs at least one item")
    if len(body.items) > limit:
        raise Unprocessable(
            "InvalidRequest",
            f"items holds {len(body.items)} items; one batch holds at most {limit}",
        )
    if body.output_schema is not None and body.output_schema_name is not None:
        raise Unprocessable(
            "InvalidRequest",
            "give output_schema or output_schema_name, not both: every item of a batch is "
            "held to one contract",
        )
    seen: dict[str, int] = {}
    problems: list[ErrorDetail] = []
    for index, item in enumerate(body.items):
        if item.id in seen:
            problems.append(
                ErrorDetail(
                    path=f"$.items[{index}].id",
                    message=f"{item.id!r} is also the id of items[{seen[item.id]}]",
                )
            )
        else:
            seen[item.id] = index
        if item.prompt is None and not item.parameters:
            problems.append(
                ErrorDetail(
                    path=f"$.items[{index}]",
                    message="an item needs a prompt, or the agent's parameters",
                )
            )
    if problems:
        raise Unprocessable(
            "InvalidRequest",
            "item ids must be unique and each item needs a prompt or parameters; nothing was run",
            details=problems,
        )


def _naming(error: ServiceError, index: int, item_id: str) -> ServiceError:
    """Return ``error`` as its own kind, its message naming the item (its details unchanged)."""
    if type(error).__init__ is not ServiceError.__init__:
        return error  # the store's errors, which name no item
    named = type(error)(
        error.code,
        f"items[{index}] (id {item_id!r}): {error.message}",
        details=error.details,
        suggestion=error.suggestion,
    )
    return named
