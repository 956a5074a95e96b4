"""Runs whose model calls go out through a provider's batch API: :class:`Batcher`.

Every run of a batch is the ordinary run loop, so the bodies, the judging of each reply and the
re-prompt after a failed one are a live run's. Its provider is the batcher's
:attr:`Batcher.provider`, whose ``request`` queues the call and waits. When every run still going
is waiting, the queued calls go out as one batch (a *round*): first every run's opening call,
then, for the replies that failed the contract, the re-prompted conversations, and so on until
each run ends. An item the provider failed or expired, or a batch that failed whole, is a
``ProviderError`` of its own kind, which the run loop turns into that run's typed failure.

Resuming: with a ledger (a state file, :class:`StateFile`, or any :class:`BatchLedger`, such as
the service's store), each batch is recorded (its id and each item's custom id and body digest)
as soon as it is created. A later batcher given the same ledger attaches to a recorded batch
holding the same item with the same body instead of submitting it again, so a run interrupted
mid-batch pays nothing twice.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agent_contracts._errors import ConfigError, ProviderError
from agent_contracts._profiles import ProviderProfile
from agent_executor._providers.base import ModelTurn, ModelTurnRequest, Provider
from agent_executor._providers.batch_base import BatchAPI, BatchStatus, ItemOutcome
from agent_executor._providers.profiles import profile_of

__all__ = ["BatchLedger", "BatchProgress", "BatchedProvider", "Batcher", "StateFile"]

logger = logging.getLogger(__name__)

_ITEM: contextvars.ContextVar[str | None] = contextvars.ContextVar("batch_item", default=None)


@dataclass(frozen=True)
class BatchProgress:
    """One poll of one batch, for a progress display.

    Attributes:
        batch_id: The provider's batch id.
        round: The round it belongs to (1: the opening calls; 2 on: re-asks).
        status: The provider's request counts and whether it has ended.
    """

    batch_id: str
    round: int
    status: BatchStatus


class BatchLedger(Protocol):
    """Where a batcher records the batches it creates, and finds them again to resume."""

    def recorded(self) -> dict[str, dict[str, str]]:
        """Return every recorded batch: its id, with each item's custom id and body digest.

        Raises:
            ConfigError: The record cannot be read.
        """
        ...

    async def record(self, batch_id: str, provider: str, items: dict[str, str]) -> None:
        """Record a batch just created (before it is polled, so a crash keeps it).

        Args:
            batch_id: The provider's batch id.
            provider: The provider's name.
            items: Each item's custom id and the SHA-256 hex digest of its body.
        """
        ...


class StateFile:
    """A :class:`BatchLedger` in a JSON-lines file, one line a batch (``run-many --batch``).

    Args:
        path: The file (created on the first record).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def recorded(self) -> dict[str, dict[str, str]]:
        """Return the batches the file records (none when it does not exist).

        Raises:
            ConfigError: The file cannot be read or a line is not a recorded batch.
        """
        return _read_state(self.path)

    async def record(self, batch_id: str, provider: str, items: dict[str, str]) -> None:
        """Append the batch to the file."""
        line = {"batch_id": batch_id, "provider": provider, "items": items}
        with self.path.open("a", encoding="utf-8") as state:
            state.write(json.dumps(line) + "\n")
            state.flush()


@dataclass
class _Waiting:
    """A queued model call: its item, custom id, request and the future its run waits on."""

    key: str
    custom_id: str
    turn: ModelTurnRequest
    reply: asyncio.Future[ModelTurn]


class Batcher:
    """Gathers the model calls of many concurrent runs into provider batches.

    Args:
        api: The provider's batch API (:func:`~agent_executor._providers.batches.batch_api_for`).
        live: The provider the runs would call live (its name, model and profile are reported).
        state_path: A file where each created batch is recorded, and read from to resume
            (a :class:`StateFile`); ``None`` records nothing unless ``ledger`` is given.
        ledger: Where each created batch is recorded, and read from to resume (instead of
            ``state_path``).
        poll_interval_s: The first wait between two polls of a batch.
        max_poll_interval_s: The longest wait between polls (each wait is 1.5 times the last).
        on_progress: Called after every poll.
    """

    def __init__(
        self,
        api: BatchAPI,
        live: Provider,
        *,
        state_path: Path | None = None,
        ledger: BatchLedger | None = None,
        poll_interval_s: float = 10.0,
        max_poll_interval_s: float = 120.0,
        on_progress: Callable[[BatchProgress], None] | None = None,
    ) -> None:
        if poll_interval_s < 0 or max_poll_interval_s < poll_interval_s:
            raise ConfigError(
                f"batch polling needs 0 <= poll_interval_s <= max_poll_interval_s, got "
                f"{poll_interval_s} and {max_poll_interval_s}"
            )
        self.api = api
        self.provider = BatchedProvider(self, live)
        self.state_path = state_path
        if ledger is None and state_path is not None:
            ledger = StateFile(state_path)
        self.ledger = ledger if api.resumable else None
        self.poll_interval_s = poll_interval_s
        self.max_poll_interval_s = max_poll_interval_s
        self.on_progress = on_progress
        self.rounds = 0
        self.batch_ids: dict[str, list[str]] = {}
        """The batches each item went through, in order, by the item's key."""
        self._recorded = self.ledger.recorded() if self.ledger is not None else {}
        self._active = 0
        self._calls: dict[str, int] = {}
        self._waiting: list[_Waiting] = []
        self._rounds: set[asyncio.Task[None]] = set()

    def expect(self, count: int) -> None:
        """Say that ``count`` more items will run (each inside :meth:`item`).

        Called before any of them starts, so the first round waits for every item's first call
        instead of going out with the first item alone.
        """
        self._active += count

    @contextmanager
    def item(self, key: str) -> Iterator[None]:
        """Mark the model calls made inside as item ``key``'s (one run; keys are unique).

        The batcher sends a round once every expected item still running is waiting on a call;
        leaving the block ends the item.

        Args:
            key: The item's key, stable across processes (a task id) so a rerun can resume.
        """
        token = _ITEM.set(key)
        try:
            yield
        finally:
            _ITEM.reset(token)
            self._active -= 1
            self._maybe_send()

    def cancel(self) -> None:
        """Stop polling every batch in flight (they stay recorded, to be resumed)."""
        for task in list(self._rounds):
            task.cancel()

    async def call(self, turn: ModelTurnRequest) -> ModelTurn:
        """Queue one model call of the current item and return its reply once its batch ends.

        Raises:
            ConfigError: Called outside :meth:`item`.
            ProviderError: The item failed, expired, or its batch failed.
        """
        key = _ITEM.get()
        if key is None:
            raise ConfigError("a batched provider is called only inside Batcher.item()")
        self._calls[key] = call = self._calls.get(key, 0) + 1
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        waiting = _Waiting(
            key, f"i{digest}-{call}", turn, asyncio.get_running_loop().create_future()
        )
        self._waiting.append(waiting)
        self._maybe_send()
        return await waiting.reply

    def _maybe_send(self) -> None:
        """Send the queued calls as a round once every active item is waiting."""
        if self._waiting and len(self._waiting) >= self._active:
            queued, self._waiting = self._waiting, []
            self.rounds += 1
            task = asyncio.ensure_future(self._round(self.rounds, queued))
            self._rounds.add(task)
            task.add_done_callback(self._rounds.discard)

    async def _round(self, number: int, queued: list[_Waiting]) -> None:
        """Send one round: attach to recorded batches, submit the rest, answer every call."""
        try:
            bodies = {w.custom_id: self.api.body(w.turn) for w in queued}
            groups: dict[str, list[_Waiting]] = {}
            fresh: list[_Waiting] = []
            for waiting in queued:
                batch_id = self._recorded_batch(waiting.custom_id, bodies[waiting.custom_id])
                if batch_id is None:
                    fresh.append(waiting)
                else:
                    groups.setdefault(batch_id, []).append(waiting)
            if groups:
                logger.info("batch round %d: re-attached to %s", number, ", ".join(groups))
            if fresh:
                items = [(w.custom_id, bodies[w.custom_id]) for w in fresh]
                batch_id = await self.api.submit(items)
                await self._record_or_cancel(batch_id, items)
                groups[batch_id] = fresh
            await asyncio.gather(*(self._finish(number, b, ws) for b, ws in groups.items()))
        except ProviderError as exc:
            for waiting in queued:
                if not waiting.reply.done():
                    waiting.reply.set_exception(exc)
        except BaseException as exc:  # a bug: every run waiting must still end
            for waiting in queued:
                if not waiting.reply.done():
                    waiting.reply.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    async def _finish(self, number: int, batch_id: str, queued: list[_Waiting]) -> None:
        """Poll one batch until it ends, then answer each of its calls."""
        for waiting in queued:
            self.batch_ids.setdefault(waiting.key, []).append(batch_id)
        wait = self.poll_interval_s
        while True:
            status = await self.api.status(batch_id)
            if self.on_progress is not None:
                self.on_progress(BatchProgress(batch_id, number, status))
            if status.ended:
                break
            await asyncio.sleep(wait)
            wait = min(wait * 1.5, self.max_poll_interval_s)
        outcomes: dict[str, ItemOutcome] = {}
        if status.failure is None:
            outcomes = await self.api.results(batch_id, {w.custom_id: w.turn for w in queued})
        for waiting in queued:
            if waiting.reply.done():  # its run was cancelled while the batch ran
                continue
            outcome = outcomes.get(waiting.custom_id)
            if outcome is None:
                outcome = ProviderError(
                    status.failure or f"the batch {batch_id} ended with no result for this item",
                    provider=self.api.provider,
                    kind="provider_batch_failed",
                )
            if isinstance(outcome, ProviderError):
                waiting.reply.set_exception(outcome)
            else:
                waiting.reply.set_result(outcome.model_copy(update={"batch_id": batch_id}))

    def _recorded_batch(self, custom_id: str, body: bytes) -> str | None:
        """Return the recorded batch already holding this item with this body, if any."""
        digest = hashlib.sha256(body).hexdigest()
        for batch_id, items in self._recorded.items():
            if items.get(custom_id) == digest:
                return batch_id
        return None

    async def _record_or_cancel(self, batch_id: str, items: list[tuple[str, bytes]]) -> None:
        """Record the new batch; if it cannot be, cancel it and raise why.

        A batch the ledger does not hold would be sent (and paid for) again by whoever resumes
        the calls, so it is stopped at once rather than left running unread.
        """
        try:
            await self._record(batch_id, items)
        except Exception:  # not a cancellation: the record may have been written then
            try:
                await self.api.cancel(batch_id)
            except ProviderError as exc:
                logger.error(
                    "batch %s of %s could not be recorded or cancelled (%s): cancel it by hand",
                    batch_id,
                    self.api.provider,
                    exc,
                )
            else:
                logger.warning(
                    "batch %s of %s could not be recorded: cancelled", batch_id, self.api.provider
                )
            raise

    async def _record(self, batch_id: str, items: list[tuple[str, bytes]]) -> None:
        """Record the new batch in the ledger (before it is polled: a crash keeps it)."""
        if self.ledger is None:
            return
        digests = {cid: hashlib.sha256(body).hexdigest() for cid, body in items}
        await self.ledger.record(batch_id, self.api.provider, digests)


class BatchedProvider:
    """A provider whose calls are queued into its batcher's batches (see :class:`Batcher`).

    Args:
        batcher: The batcher.
        live: The provider the calls would go to live.
    """

    def __init__(self, batcher: Batcher, live: Provider) -> None:
        self.name = live.name
        self.model = live.model
        self.supports_tools = bool(getattr(live, "supports_tools", True))
        self.profile: ProviderProfile = profile_of(live)
        self._batcher = batcher

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Queue the call into the next batch and return its reply.

        Raises:
            ProviderError: The item failed, expired, or its batch failed.
        """
        return await self._batcher.call(turn)


def _read_state(path: Path | None) -> dict[str, dict[str, str]]:
    """Return the batches a state file records: each id with its items' body digests."""
    if path is None or not path.exists():
        return {}
    recorded: dict[str, dict[str, str]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"batch state {path}: cannot be read: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            batch_id, items = entry["batch_id"], entry["items"]
            if not isinstance(batch_id, str) or not isinstance(items, dict):
                raise TypeError("batch_id and items have the wrong types")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"batch state {path}, line {number}: not a recorded batch ({exc}); "
                "delete the file to start the batches afresh"
            ) from exc
        recorded[batch_id] = {str(k): str(v) for k, v in items.items()}
    return recorded
