"""A batch's ledger in the store: the provider batches its runner created, for a takeover.

The library's :class:`~agent_executor._batching.Batcher` records each provider batch as soon as
it is created; :class:`StoreLedger` keeps that record with the stored batch (and the provider's
request counts at each poll, for ``GET /batches/{id}``), so a runner that takes over a batch
whose runner died re-attaches to the provider batches in flight instead of paying for them again.
"""

from __future__ import annotations

import asyncio
import logging

from pydantic import JsonValue

from agent_coordinator._store.base import SqlStore
from agent_coordinator._store.records import BatchRecord
from agent_executor._batching import BatchProgress

__all__ = ["StoreLedger"]

logger = logging.getLogger(__name__)


class StoreLedger:
    """The :class:`~agent_executor._batching.BatchLedger` of one stored batch.

    Args:
        store: The store.
        batch: The batch, as claimed (its recorded provider batches).
    """

    def __init__(self, store: SqlStore, batch: BatchRecord) -> None:
        self.store = store
        self.batch = batch
        self._writes: set[asyncio.Task[None]] = set()

    def recorded(self) -> dict[str, dict[str, str]]:
        """Return the provider batches recorded for the batch, with their items' digests."""
        return {sub.provider_batch_id: dict(sub.items) for sub in self.batch.submissions}

    async def record(self, batch_id: str, provider: str, items: dict[str, str]) -> None:
        """Record a provider batch just created, before it is polled.

        Raises:
            StoreUnavailable: The database cannot be reached (the round fails, typed).
        """
        await self.store.call(
            self.store.record_submission, self.batch.id, batch_id, provider, items
        )

    def progress(self, progress: BatchProgress) -> None:
        """Keep a poll's request counts (written in the background; a lost write is logged)."""
        status = progress.status
        counts: dict[str, JsonValue] = {
            "total": status.total,
            "succeeded": status.succeeded,
            "failed": status.failed,
            "ended": status.ended,
        }
        task = asyncio.ensure_future(self._write(progress.batch_id, counts))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write(self, provider_batch_id: str, counts: dict[str, JsonValue]) -> None:
        try:
            await self.store.call(
                self.store.record_counts, self.batch.id, provider_batch_id, counts
            )
        except Exception:
            logger.exception("batch %s: cannot store the request counts", self.batch.id)
