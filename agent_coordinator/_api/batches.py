"""``/batches``: many sessions of one agent run through the provider's batch API; list, progress."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._api.model_text import ModelTextResponse
from agent_coordinator._errors import NotFound
from agent_coordinator._service.batch_bodies import (
    BatchCreate,
    BatchItemView,
    BatchPage,
    BatchView,
    ProviderBatchView,
)
from agent_coordinator._service.batches import submit_batch
from agent_coordinator._service.bodies import timestamp
from agent_coordinator._store.records import BatchRecord

__all__ = ["router"]

router = APIRouter(tags=["batches"], default_response_class=ModelTextResponse)


@router.post("/batches", status_code=202)
async def create_batch(body: BatchCreate, services: ServicesDep) -> BatchView:
    """Store a batch (202): a session and a queued run per item, run by a runner in batches.

    Every item is checked before anything is stored, as ``POST /runs`` checks a start: 404 an
    unknown agent or schema name, 400 an invalid inline schema, an agent with input tools or a
    model whose provider has no batch API, 422 the parameters (naming the item), no items, too
    many, an item id given twice, or both ``output_schema`` and ``output_schema_name``.
    """
    return batch_view(await submit_batch(services, body))


@router.get("/batches")
async def list_batches(
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[int | None, Query(ge=1, le=2**62)] = None,
) -> BatchPage:
    """List batches, newest first, a page at a time."""
    batches = await services.store.call(services.store.list_batches, limit=limit, after=cursor)
    return BatchPage(
        items=[batch_view(batch) for batch in batches],
        next_cursor=batches[-1].seq if len(batches) == limit else None,
    )


@router.get("/batches/{batch_id}")
async def get_batch(batch_id: str, services: ServicesDep) -> BatchView:
    """Return a batch: its status, its items' sessions and runs, the provider's request counts."""
    batch = await services.store.call(services.store.get_batch, batch_id)
    if batch is None:
        raise NotFound("BatchNotFound", f"no batch {batch_id!r}")
    return batch_view(batch)


def batch_view(batch: BatchRecord) -> BatchView:
    """Return a stored batch as the API shows it.

    Returns:
        Its view, with its items counted by their runs' statuses.
    """
    statuses = [item.status for item in batch.items]
    created = timestamp(batch.created_at)
    assert created is not None
    return BatchView(
        batch_id=batch.id,
        agent_name=batch.agent_name,
        status=batch.status,
        completed=statuses.count("completed"),
        failed=statuses.count("failed") + statuses.count("cancelled"),
        pending=statuses.count("queued") + statuses.count("running"),
        deleted=statuses.count("deleted"),
        items=[BatchItemView(**item.model_dump()) for item in batch.items],
        provider_batches=[
            ProviderBatchView(
                provider_batch_id=sub.provider_batch_id,
                provider=sub.provider,
                items=len(sub.items),
                counts=sub.counts,
            )
            for sub in batch.submissions
        ],
        created_at=created,
        finished_at=timestamp(batch.finished_at),
    )
