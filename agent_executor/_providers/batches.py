"""Which batch API a provider has: :func:`batch_api_for`, and immediate batches for the test model.

:func:`batch_api_for` picks the one a provider has:
OpenAI's Batch API (:mod:`~agent_executor._providers.openai_batches`), Anthropic's Message Batches
(:mod:`~agent_executor._providers.anthropic_batches`), or, for the offline test model and
``FunctionModel``, :class:`ImmediateBatches`, which answers every item at once through the
provider itself. Each item's body is the provider's own request body for the same turn, so a
batched call sends what a live call sends.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
from collections.abc import Mapping, Sequence

from agent_contracts._errors import ConfigError, ProviderError
from agent_executor._providers.base import ModelTurnRequest, Provider
from agent_executor._providers.batch_base import BatchAPI, BatchStatus, ItemOutcome
from agent_executor._providers.function import FunctionModel
from agent_executor._providers.test import TestModel

__all__ = ["ImmediateBatches", "batch_api_for"]

# The SDK-backed batch APIs are imported only for a provider of theirs (whose SDK is then
# loaded already): the SDKs are extras, and importing them costs seconds (see resolve.py).
_SDK_BATCHES = {
    "agent_executor._providers.openai": ("openai_batches", "OpenAIBatches"),
    "agent_executor._providers.anthropic": ("anthropic_batches", "AnthropicBatches"),
}


class ImmediateBatches:
    """A batch API for providers without one: every item is answered at once, live.

    It lets the offline test model (and ``FunctionModel``) run ``--batch`` with no key; its
    batches live in this process only, so they cannot be resumed.

    Args:
        provider: The provider that answers each item.
    """

    resumable = False

    def __init__(self, provider: Provider) -> None:
        self.provider = provider.name
        self._model = provider
        self._turns: dict[str, ModelTurnRequest] = {}
        self._batches: dict[str, dict[str, ItemOutcome]] = {}
        self._ids = itertools.count(1)

    def body(self, turn: ModelTurnRequest) -> bytes:
        """Return the neutral request as JSON (the provider has no wire format).

        Arguments and return value as :meth:`BatchAPI.body`.
        """
        return turn.model_dump_json().encode()

    async def submit(self, items: Sequence[tuple[str, bytes]]) -> str:
        """Answer every item now and return the batch's id.

        Arguments and return value as :meth:`BatchAPI.submit`.
        """
        batch_id = f"{self.provider}-batch-{next(self._ids)}"

        async def one(body: bytes) -> ItemOutcome:
            try:
                return await self._model.request(ModelTurnRequest.model_validate_json(body))
            except ProviderError as exc:
                return exc

        outcomes = await asyncio.gather(*(one(body) for _, body in items))
        self._batches[batch_id] = {cid: out for (cid, _), out in zip(items, outcomes, strict=True)}
        return batch_id

    async def cancel(self, batch_id: str) -> None:
        """Do nothing: the batch was answered when it was submitted.

        Arguments as :meth:`BatchAPI.cancel`.
        """

    async def status(self, batch_id: str) -> BatchStatus:
        """Return the batch's status: always ended.

        Arguments and return value as :meth:`BatchAPI.status`.
        """
        outcomes = self._batches.get(batch_id, {})
        failed = sum(isinstance(out, ProviderError) for out in outcomes.values())
        missing = None if batch_id in self._batches else f"no batch {batch_id} in this process"
        return BatchStatus(True, len(outcomes), len(outcomes) - failed, failed, missing)

    async def results(
        self, batch_id: str, turns: Mapping[str, ModelTurnRequest]
    ) -> dict[str, ItemOutcome]:
        """Return the answers given when the batch was submitted.

        Arguments and return value as :meth:`BatchAPI.results`.
        """
        return dict(self._batches.get(batch_id, {}))


def batch_api_for(provider: Provider) -> BatchAPI:
    """Return the batch API of ``provider``.

    Args:
        provider: The provider the runs would call.

    Returns:
        OpenAI's or Anthropic's batch API, or immediate answers for the test model and
        ``FunctionModel``.

    Raises:
        ConfigError: The provider has no batch API.
    """
    sdk = _SDK_BATCHES.get(type(provider).__module__)
    if sdk is not None:
        module = importlib.import_module(f"agent_executor._providers.{sdk[0]}")
        api: BatchAPI = getattr(module, sdk[1])(provider)
        return api
    if isinstance(provider, TestModel | FunctionModel):
        return ImmediateBatches(provider)
    raise ConfigError(
        f"batch: the {provider.name} provider has no batch API; batches run on openai, "
        "anthropic or the test model"
    )
