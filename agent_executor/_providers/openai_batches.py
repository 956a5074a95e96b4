"""OpenAI's Batch API through the official SDK: upload, create, poll, read the output files.

Each item is one line ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``
whose body is the exact bytes a live call posts (:meth:`OpenAIProvider.request_body`). The file
goes up with ``files.create(purpose="batch")``, the batch is made with ``batches.create`` on
``/v1/chat/completions`` within ``24h``; the output file holds the replies, the error file the
items that failed or expired. SDK errors become ``ProviderError`` in ``translate_errors``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

from pydantic import JsonValue

from agent_contracts._errors import ProviderError
from agent_executor._providers.base import ModelTurnRequest
from agent_executor._providers.batch_base import BatchStatus, ItemOutcome
from agent_executor._providers.error_text import error_kind_for_status
from agent_executor._providers.openai import OpenAIProvider, translate_errors
from agent_executor._providers.openai_replies import _turn_of
from agent_executor._providers.replies import read_json
from agent_executor._providers.tool_names import tool_names_for

__all__ = ["ENDPOINT", "OpenAIBatches"]

ENDPOINT: Final = "/v1/chat/completions"
"""The endpoint every item of a batch calls."""

_ENDED = ("completed", "failed", "expired", "cancelled")


class OpenAIBatches:
    """The Batch API of an OpenAI provider (key, URL and model are the provider's).

    Args:
        provider: The provider whose calls are batched.
    """

    resumable = True

    def __init__(self, provider: OpenAIProvider) -> None:
        self.provider = provider.name
        self._live = provider
        self._files: dict[str, tuple[str | None, str | None]] = {}

    def body(self, turn: ModelTurnRequest) -> bytes:
        """Return the bytes a live call for ``turn`` posts.

        Arguments and return value as :meth:`BatchAPI.body`.
        """
        return self._live.request_body(turn)

    async def submit(self, items: Sequence[tuple[str, bytes]]) -> str:
        """Upload the items as a JSONL file and create the batch; return its id.

        Arguments and return value as :meth:`BatchAPI.submit`.

        Raises:
            ProviderError: The upload or the batch was refused.
        """
        head = b'{"custom_id":%s,"method":"POST","url":"' + ENDPOINT.encode() + b'","body":'
        lines = b"".join(
            head % json.dumps(custom_id).encode() + body + b"}\n" for custom_id, body in items
        )
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                upload = await client.files.create(file=("batch.jsonl", lines), purpose="batch")
                batch = await client.batches.create(
                    input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h"
                )
        return batch.id

    async def cancel(self, batch_id: str) -> None:
        """Cancel the batch with ``batches.cancel``.

        Arguments as :meth:`BatchAPI.cancel`.

        Raises:
            ProviderError: The batch could not be cancelled.
        """
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                await client.batches.cancel(batch_id)

    async def status(self, batch_id: str) -> BatchStatus:
        """Return the batch's status from ``batches.retrieve``.

        Arguments and return value as :meth:`BatchAPI.status`.

        Raises:
            ProviderError: The batch could not be read.
        """
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                batch = await client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total, done, failed = (
            (counts.total, counts.completed, counts.failed) if counts else (0, 0, 0)
        )
        self._files[batch_id] = (batch.output_file_id, batch.error_file_id)
        failure = None
        if batch.status == "failed" or (
            batch.status in _ENDED and not batch.output_file_id and not batch.error_file_id
        ):
            errors = batch.errors.data if batch.errors and batch.errors.data else []
            said = "; ".join(e.message or e.code or "" for e in errors)
            failure = f"the batch {batch_id} {batch.status}" + (f": {said}" if said else "")
        return BatchStatus(batch.status in _ENDED, total, done, failed, failure)

    async def results(
        self, batch_id: str, turns: Mapping[str, ModelTurnRequest]
    ) -> dict[str, ItemOutcome]:
        """Read the output and error files of an ended batch.

        Arguments and return value as :meth:`BatchAPI.results`.

        Raises:
            ProviderError: A file could not be read.
        """
        output_id, error_id = self._files.get(batch_id, (None, None))
        outcomes: dict[str, ItemOutcome] = {}
        with translate_errors(self.provider):
            async with self._live.sdk_client() as client:
                for file_id in (output_id, error_id):
                    if file_id:
                        text = (await client.files.content(file_id)).text
                        for line in text.splitlines():
                            if line.strip():
                                self._read_line(line, turns, outcomes)
        return outcomes

    def _read_line(
        self, line: str, turns: Mapping[str, ModelTurnRequest], outcomes: dict[str, ItemOutcome]
    ) -> None:
        """Add the outcome of one line of an output or error file to ``outcomes``."""
        try:
            record = read_json(line)
        except ValueError:
            return  # not an item's line: the item is then reported as missing
        custom_id = record.get("custom_id") if isinstance(record, dict) else None
        if not isinstance(custom_id, str) or custom_id not in turns:
            return
        outcomes[custom_id] = self._outcome(record, turns[custom_id])

    def _outcome(self, record: dict[str, JsonValue], turn: ModelTurnRequest) -> ItemOutcome:
        """Return one item's reply, or its typed failure."""
        error = record.get("error")
        response = record.get("response")
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        if isinstance(error, dict):
            said, message = str(error.get("code") or ""), str(error.get("message") or "")
            kind = "provider_batch_item_expired" if said == "batch_expired" else None
            return ProviderError(
                f"the batch item failed: {said}: {message}",
                provider=self.provider,
                kind=kind or "provider_batch_item_failed",
                body=error,
            )
        if status != 200 or not isinstance(body, dict):
            code = status if isinstance(status, int) else None
            return ProviderError(
                f"the batch item was answered with status {status}: {json.dumps(body)[:300]}",
                provider=self.provider,
                kind=error_kind_for_status(code) if code else "provider_batch_item_failed",
                status=code,
                body=body,
            )
        try:
            names = tool_names_for(turn)
            return _turn_of(self.provider, self._live.model, body, names, len(turn.messages), 0.0)
        except ProviderError as exc:
            return exc
