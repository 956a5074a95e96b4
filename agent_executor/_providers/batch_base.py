"""The batch API interface: what the batcher asks of a provider's batch API, and what it gets.

A :class:`BatchAPI` submits items (a custom id and the body a live call sends), tells where a
batch stands (:class:`BatchStatus`) and reads each ended item's outcome (:data:`ItemOutcome`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from agent_contracts._errors import ProviderError
from agent_executor._providers.base import ModelTurn, ModelTurnRequest

__all__ = ["BatchAPI", "BatchStatus", "ItemOutcome"]

ItemOutcome = ModelTurn | ProviderError
"""One item's outcome: its reply, or why it has none (typed by ``ProviderError.kind``)."""


@dataclass(frozen=True)
class BatchStatus:
    """Where a batch stands, in the provider's own request counts.

    Attributes:
        ended: The provider is done with it (completed, expired, cancelled or failed).
        total: Items in the batch.
        succeeded: Items answered.
        failed: Items the provider failed, expired or cancelled.
        failure: Why the whole batch failed (no item has a reply), or ``None``.
    """

    ended: bool
    total: int
    succeeded: int
    failed: int
    failure: str | None = None


class BatchAPI(Protocol):
    """A provider's batch API."""

    provider: str
    """The provider's name, for errors and the state file."""
    resumable: bool
    """Whether a batch created by another process can be read again by its id."""

    def body(self, turn: ModelTurnRequest) -> bytes:
        """Return the JSON body a live call for ``turn`` sends (one item of a batch)."""
        ...

    async def submit(self, items: Sequence[tuple[str, bytes]]) -> str:
        """Create one batch of ``(custom_id, body)`` items and return its id.

        Args:
            items: The batch's items, each a custom id and its body (from :meth:`body`).

        Returns:
            The provider's id of the batch.

        Raises:
            ProviderError: The provider refused the upload or the batch.
        """
        ...

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (items it already answered may still be billed).

        Args:
            batch_id: The id :meth:`submit` returned.

        Raises:
            ProviderError: The provider could not be asked.
        """
        ...

    async def status(self, batch_id: str) -> BatchStatus:
        """Return where the batch stands.

        Args:
            batch_id: The id :meth:`submit` returned.

        Raises:
            ProviderError: The provider could not be asked.
        """
        ...

    async def results(
        self, batch_id: str, turns: Mapping[str, ModelTurnRequest]
    ) -> dict[str, ItemOutcome]:
        """Return each ended item's outcome by custom id.

        Args:
            batch_id: The id :meth:`submit` returned.
            turns: Each item's call by custom id, to read its reply against.

        Raises:
            ProviderError: The results could not be read.
        """
        ...
