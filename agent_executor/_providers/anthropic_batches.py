"""Anthropic's Message Batches through the official SDK: create, poll, read the results.

Each item is ``{"custom_id", "params"}`` whose params are what a live Messages call sends
(:meth:`AnthropicProvider.request_params`). ``messages.batches.create`` makes the batch,
``retrieve`` gives its request counts, ``results`` streams one JSONL line per item: succeeded
(a message), errored, canceled or expired. SDK errors become ``ProviderError`` in
``translate_errors``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from pydantic import JsonValue

from agent_contracts._errors import ProviderError
from agent_executor._providers.anthropic import AnthropicProvider, _turn_of, translate_errors
from agent_executor._providers.base import ModelTurnRequest
from agent_executor._providers.batch_base import BatchStatus, ItemOutcome
from agent_executor._providers.replies import read_json
from agent_executor._providers.tool_names import tool_names_for

if TYPE_CHECKING:
    from anthropic.types.messages.batch_create_params import Request

__all__ = ["AnthropicBatches"]


class AnthropicBatches:
    """The Message Batches API of an Anthropic provider (credentials and model are its own).

    Args:
        provider: The provider whose calls are batched.
    """

    resumable = True

    def __init__(self, provider: AnthropicProvider) -> None:
        self.provider = provider.name
        self._live = provider

    def body(self, turn: ModelTurnRequest) -> bytes:
        """Return the Messages parameters a live call for ``turn`` sends, as JSON.

        Arguments and return value as :meth:`BatchAPI.body`.
        """
        params, _ = self._live.request_params(turn)
        return json.dumps(params, ensure_ascii=False).encode()

    async def submit(self, items: Sequence[tuple[str, bytes]]) -> str:
        """Create the batch and return its id.

        Arguments and return value as :meth:`BatchAPI.submit`.

        Raises:
            ProviderError: The batch was refused.
        """
        requests = [
            cast("Request", {"custom_id": custom_id, "params": read_json(body)})
            for custom_id, body in items
        ]
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                batch = await client.messages.batches.create(requests=requests)
        return batch.id

    async def cancel(self, batch_id: str) -> None:
        """Cancel the batch with ``messages.batches.cancel``.

        Arguments as :meth:`BatchAPI.cancel`.

        Raises:
            ProviderError: The batch could not be cancelled.
        """
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                await client.messages.batches.cancel(batch_id)

    async def status(self, batch_id: str) -> BatchStatus:
        """Return the batch's status from ``messages.batches.retrieve``.

        Arguments and return value as :meth:`BatchAPI.status`.

        Raises:
            ProviderError: The batch could not be read.
        """
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                batch = await client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        failed = counts.errored + counts.canceled + counts.expired
        total = counts.processing + counts.succeeded + failed
        return BatchStatus(batch.processing_status == "ended", total, counts.succeeded, failed)

    async def results(
        self, batch_id: str, turns: Mapping[str, ModelTurnRequest]
    ) -> dict[str, ItemOutcome]:
        """Read an ended batch's results.

        Arguments and return value as :meth:`BatchAPI.results`.

        Raises:
            ProviderError: The results could not be read.
        """
        outcomes: dict[str, ItemOutcome] = {}
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                async for entry in await client.messages.batches.results(batch_id):
                    turn = turns.get(entry.custom_id)
                    if turn is not None:
                        record = cast("dict[str, JsonValue]", entry.result.to_dict())
                        outcomes[entry.custom_id] = self._outcome(record, turn)
        return outcomes

    def _outcome(self, result: dict[str, JsonValue], turn: ModelTurnRequest) -> ItemOutcome:
        """Return one item's reply, or its typed failure."""
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            _, downgraded = self._live.request_params(turn)
            try:
                reply = _turn_of(
                    self.provider, self._live.model, result["message"], tool_names_for(turn), 0.0
                )
            except ProviderError as exc:
                return exc
            return reply.model_copy(update={"tool_choice_downgraded": downgraded})
        if kind == "expired":
            return ProviderError(
                "the batch item expired before it was answered",
                provider=self.provider,
                kind="provider_batch_item_expired",
            )
        detail = result.get("error")
        inner = detail.get("error") if isinstance(detail, dict) else None
        said = (
            f"{inner.get('type')}: {inner.get('message')}" if isinstance(inner, dict) else str(kind)
        )
        return ProviderError(
            f"the batch item failed: {said}",
            provider=self.provider,
            kind="provider_batch_item_failed",
            body=detail,
        )
