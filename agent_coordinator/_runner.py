"""Runners: workers that claim stored runs with a lease, execute them, and write the result back.

A worker claims the oldest waiting run (or one whose runner's lease ran out), runs it through
:class:`Execution`, and ends it with :meth:`SqlStore.finish`, which only succeeds while the lease
is still its own: a runner killed mid-run loses the run to the next runner once its lease expires,
and a run is completed once (a run whose lease ran out ``max_claims`` times ends
``lease_exhausted``). One task per runner tends the runs in flight: it stores their events in one
transaction a tick, renews their leases every third of the lease, and reads their cancel flags.
Before each model call after the first, a run's finished turns are stored, so a runner that
takes the run over sends again only the call that was in flight (a turn that cannot be stored is
logged and the run goes on). Whatever goes wrong after a claim ends the run ``failed`` with
``internal_error``; it is never left for its lease to run out.

A run stored by this process wakes its runner at once; on PostgreSQL the database's notification
wakes every process's runners, and ``poll_s`` is the fallback. A run this process can execute at
once (a worker is free that no queued run waits for) is stored already claimed by its runner and
handed over in memory (:meth:`Runner.reserve`, :meth:`Runner.take`): no runner is told, none claims
it, and it is as durable as any claimed run (its lease runs out if the process dies). ``serve``
hands such runs to the runners of its runner processes the same way, over their channels
(:meth:`Runner.take_handed`).

A worker with no run waiting claims a batch (``POST /batches``) and gathers its runs' model calls
into provider batches recorded in the store, so a runner taking the batch over re-attaches to
them. On shutdown the workers stop claiming, give runs in flight ``grace_s`` seconds, then put
them back in the queue (``run_requeued``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import traceback
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import cast

from pydantic import BaseModel, JsonValue
from pydantic.main import IncEx

from agent_contracts._config import AgentConfig
from agent_contracts._runs import RunError, RunResult
from agent_coordinator._batch_ledger import StoreLedger
from agent_coordinator._children import TOOL_NAME, StartSession
from agent_coordinator._errors import ServiceError, StoreUnavailable
from agent_coordinator._event_log import EventBuffer, StoredEvent
from agent_coordinator._execution import Execution
from agent_coordinator._store.base import SqlStore
from agent_coordinator._store.claims import DEFAULT_MAX_CLAIMS
from agent_coordinator._store.listener import RUN_QUEUED
from agent_coordinator._store.records import (
    BatchClaim,
    Claim,
    Holding,
    RequeueReason,
    RunRecord,
)
from agent_executor._batching import Batcher
from agent_executor._tools import InputTool

__all__ = ["Runner", "runner_id"]

logger = logging.getLogger(__name__)

POLL_S = 0.5
"""Seconds an idle runner waits before looking for work again, on a store that does not wake it
when another process stores a run (SQLite)."""
WOKEN_POLL_S = 5.0
"""The same on a store that wakes it (PostgreSQL's notifications): only a fallback, for runs
whose lease ran out and a notification lost while the listening connection was down."""
_MAX_BACKOFF_S = 5.0
"""The longest pause between two claims while the store fails; a stored run wakes it sooner."""

_ENDING_RETRY_S = 600.0
"""How long a runner keeps trying to store a run's end while the database is away.

The run's model calls are paid for: giving up would leave the run to expire and be run again.
``finish`` succeeds for as long as no other runner has claimed the run, and none can claim it
while the database is away, so waiting for it to come back costs nothing but the worker slot.
"""

_NO_TOOLS = AgentConfig(id="none", name="none")
"""Stands in for an agent that left the fleet (its run then fails with ``config_error``)."""


async def _batched(
    batcher: Batcher, key: str, execution: Coroutine[object, object, RunResult]
) -> RunResult:
    """Run ``execution`` as the batcher's item ``key`` (its model calls go into batches)."""
    with batcher.item(key):
        return await execution


_PARSED_VALUES: dict[str, IncEx | bool] = {
    "result_data": True,
    "error": {"last_output"},
    "attempts": {"__all__": {"parsed"}},
    "transcript": {"__all__": {"tool_calls": {"__all__": {"arguments"}}}},
}
"""The fields of a ``RunResult`` holding the JSON values the library parsed."""


def _result_json(result: RunResult) -> dict[str, JsonValue]:
    """Return a run's result as ``result.model_dump(mode="json")`` does, its parsed values shared.

    The values the library parsed from the model's output (``result_data``, each attempt's
    ``parsed``, each tool call's ``arguments``, the error's ``last_output``) are JSON already,
    and usually one object: they are put in as they are, in their places, where Pydantic's dump
    would walk and copy each of them node by node. The result is equal to the dump, key order
    included (the stored rows are its text).

    Args:
        result: The library's result of a run.

    Returns:
        The result as JSON (``schema_validation`` with it).
    """
    data: dict[str, JsonValue] = result.model_dump(mode="json", exclude=_PARSED_VALUES)
    data = _placed(data, "result_data", result.result_data, type(result))
    if result.error is not None and isinstance(data.get("error"), dict):
        error = cast("dict[str, JsonValue]", data["error"])
        data["error"] = _placed(error, "last_output", result.error.last_output, type(result.error))
    attempts = cast("list[dict[str, JsonValue]]", data["attempts"])
    for number, attempt in enumerate(result.attempts):
        attempts[number] = _placed(attempts[number], "parsed", attempt.parsed, type(attempt))
    messages = cast("list[dict[str, JsonValue]]", data["transcript"])
    for message, kept in zip(messages, result.transcript, strict=True):
        if kept.tool_calls:
            calls = cast("list[dict[str, JsonValue]]", message["tool_calls"])
            for number, call in enumerate(kept.tool_calls):
                calls[number] = _placed(calls[number], "arguments", call.arguments, type(call))
    return data


def _placed(
    dumped: dict[str, JsonValue], name: str, value: JsonValue, model: type[BaseModel]
) -> dict[str, JsonValue]:
    """Return ``dumped`` with the field ``name`` put back where ``model`` declares it."""
    placed: dict[str, JsonValue] = {}
    for field in _fields(model):
        if field == name:
            placed[name] = value
        elif field in dumped:
            placed[field] = dumped[field]
    for key, kept in dumped.items():  # computed fields, after the declared ones
        placed.setdefault(key, kept)
    return placed


@functools.cache
def _fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The names of a model's fields, in the order it declares them (and dumps them)."""
    return tuple(model.model_fields)


def runner_id() -> str:
    """Return a new runner id naming its host and process."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class _Slots:
    """A runner's worker slots: taken by its claimer before each claim, or by a run handed over."""

    def __init__(self, count: int) -> None:
        self.free = count
        self.wanted = False
        """The claimer waits for a slot (all are taken)."""
        self._freed = asyncio.Event()

    def take_now(self) -> bool:
        """Take a slot if one is free; say whether one was taken."""
        if self.free <= 0:
            return False
        self.free -= 1
        return True

    async def take(self) -> None:
        """Wait for a free slot and take it (one caller at a time: the claimer)."""
        while not self.take_now():
            self._freed.clear()
            self.wanted = True
            try:
                await self._freed.wait()
            finally:
                self.wanted = False

    def give(self) -> None:
        """Give a slot back."""
        self.free += 1
        self._freed.set()


class _InFlight:
    """A run this runner executes: its task, its events, and why it was stopped, if it was."""

    __slots__ = ("attempt_events", "events", "flushing", "stopped", "stored", "task", "turns")

    def __init__(self, task: asyncio.Task[RunResult], events: EventBuffer) -> None:
        self.task = task
        self.events = events
        self.stopped: str | None = None
        """``lost`` (another runner has it), ``cancelled`` or ``shutdown``."""
        self.flushing: asyncio.Future[None] | None = None
        """The write of its events under way, which its end waits for (events stay in order)."""
        self.turns = False
        """Whether its turns were recorded (or a recording was tried)."""
        self.attempt_events = False
        """Whether an ``attempt`` event of it was written before its end."""
        self.stored: list[StoredEvent] | None = []
        """Its events written before its end, in order (``None``: a write may or may not
        have been stored)."""


class Runner:
    """A pool of workers over one store.

    Args:
        store: Where runs wait.
        execution: How a run is executed.
        workers: Runs executed at once (one claimer feeds them).
        lease_s: Seconds a claim lasts without renewal.
        poll_s: Seconds an idle worker waits before looking for work again.
        grace_s: Seconds runs in flight may take to end at shutdown.
        tick_s: Seconds between two writes of the events of runs in flight.
        max_claims: Times a run's lease may run out before it fails with ``lease_exhausted``.
        cancel_poll_s: Seconds between two reads of the cancel flags of the runs in flight.
        on_finished: Called with the ended run when this runner ends one (wakes waiting
            requests).
        batch_poll_s: Seconds between the first two polls of a provider batch (each wait is
            1.5 times the last, up to two minutes).
    """

    def __init__(
        self,
        store: SqlStore,
        execution: Execution,
        *,
        workers: int = 4,
        lease_s: float = 30.0,
        poll_s: float = POLL_S,
        grace_s: float = 10.0,
        tick_s: float = 0.25,
        max_claims: int = DEFAULT_MAX_CLAIMS,
        cancel_poll_s: float = 0.5,
        on_finished: Callable[[RunRecord], None] | None = None,
        batch_poll_s: float = 10.0,
    ) -> None:
        self.store = store
        self.execution = execution
        self.workers = workers
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.grace_s = grace_s
        self.tick_s = tick_s
        self.max_claims = max_claims
        self.cancel_poll_s = cancel_poll_s
        self.on_finished = on_finished
        self.batch_poll_s = batch_poll_s
        self.id = runner_id()
        self._wake = asyncio.Event()
        self._batch_told = False
        """Whether the runner was told of a batch since it last looked for one."""
        self._batch_look_at = 0.0
        """When (event loop time) the claimer looks for a batch again, told of one or not."""
        self._stopping = asyncio.Event()
        self._dispatcher: asyncio.Task[None] | None = None
        self._tender: asyncio.Task[None] | None = None
        self._active: set[asyncio.Task[None]] = set()
        self._running: dict[str, _InFlight] = {}
        self._batches: set[str] = set()
        """The batches this runner holds, whose leases it renews."""
        self._unlisten: Callable[[], None] | None = None
        self._executing: set[str] = set()
        self._slots = _Slots(workers)

    def wake(self, *, batch: bool = False) -> None:
        """Tell the runner there may be work: a run was just stored, or a batch (``batch``)."""
        self._batch_told = self._batch_told or batch
        self._wake.set()

    def reserve(self) -> bool:
        """Take a worker slot for a run this process is about to store claimed, if it may now.

        It may while the runner claims (started, not stopping) and a slot is free that its
        claimer is not waiting for: while it waits, runs are queued for every slot, and a slot
        freed goes to the oldest of them, not to a new run. A reserved slot is used by
        :meth:`take` or given back by :meth:`unreserve`.

        Returns:
            Whether a slot was reserved.
        """
        if self._dispatcher is None or self._stopping.is_set() or self._slots.wanted:
            return False
        return self._slots.take_now()

    def unreserve(self) -> None:
        """Give back a slot :meth:`reserve` took, for a run that was not stored claimed."""
        self._slots.give()

    def take(self, claim: Claim) -> None:
        """Execute a run stored claimed by this runner, in the slot :meth:`reserve` took.

        A runner stopping meanwhile puts the run back in the queue instead.
        """
        if self._stopping.is_set():
            self._launch(self._requeue(claim.run.id))
        else:
            self._launch(self.execute(claim))

    def take_handed(self, claim: Claim, done: Callable[[str], None]) -> None:
        """Execute a run another process stored claimed by this runner and handed over.

        The run takes a free worker slot. The process that hands runs over counts them and
        hands at most :attr:`workers` at once, but this runner's claimer may have filled the
        slots from the queue meanwhile: then, and when this runner stops, the run is put back
        in the queue (claimed there as any run) rather than run past :attr:`workers`.

        Args:
            claim: The run's claim, as the store returned it to the other process.
            done: Called with the run's id once the work on it is done, ended or not.
        """
        if not self._stopping.is_set() and self._slots.take_now():
            task = self._launch(self.execute(claim))
        else:
            reason: RequeueReason = "shutdown" if self._stopping.is_set() else "no_free_slot"
            task = asyncio.create_task(self._requeue(claim.run.id, reason))
            self._active.add(task)
            task.add_done_callback(self._active.discard)
            if reason == "no_free_slot":
                # No one else is told the run is queued again: this runner's claimer, which may
                # just have found the queue empty, looks again (when a slot is free) instead of
                # at its next poll.
                task.add_done_callback(lambda _: self.wake())
        task.add_done_callback(lambda _: done(claim.run.id))

    async def _requeue(self, run_id: str, reason: RequeueReason = "shutdown") -> None:
        """Put a run this runner holds back in the queue, before running it."""
        try:
            await self.store.call(self.store.release, run_id, self.id, reason=reason)
        except Exception:  # its lease runs out instead
            logger.exception("runner %s: cannot put run %s back in the queue", self.id, run_id)

    def _launch(self, work: Coroutine[object, object, None]) -> asyncio.Task[None]:
        """Run ``work`` (a claimed run or batch) in a slot already taken; give it back after."""
        task = asyncio.create_task(work)
        self._active.add(task)
        task.add_done_callback(self._active.discard)
        task.add_done_callback(lambda _: self._slots.give())
        return task

    def cancel(self, run_id: str) -> None:
        """Stop a run this runner executes because it was asked to cancel (no-op otherwise).

        Its model call in flight is cancelled and the run ends ``cancelled``.
        """
        flight = self._running.get(run_id)
        if flight is not None and flight.stopped is None and not flight.task.done():
            flight.stopped = "cancelled"
            flight.task.cancel()

    def start(self) -> None:
        """Start claiming on the running event loop (woken by the store when it can)."""
        if self.store.wakes_runners:
            loop = asyncio.get_running_loop()
            self._unlisten = self.store.listen(
                RUN_QUEUED,
                # A batch's id (or ANY, after a reconnect) may name a batch: look for one too.
                lambda stored: loop.call_soon_threadsafe(
                    functools.partial(self.wake, batch=not stored.startswith("run_"))
                ),
            )
        self._dispatcher = asyncio.create_task(self._dispatch(), name=f"runner-{self.id}")
        self._tender = asyncio.create_task(self._tend(), name=f"runner-{self.id}-tender")

    async def stop(self) -> None:
        """Stop claiming, let runs in flight end within the grace period, requeue the rest."""
        self._stopping.set()
        self._wake.set()
        if self._unlisten is not None:
            self._unlisten()
        if self._dispatcher is not None:
            await self._dispatcher
        if self._active:
            await asyncio.wait(self._active, timeout=self.grace_s)
        for run_id, flight in list(self._running.items()):
            if not flight.task.done():
                logger.info("runner %s: requeueing run %s at shutdown", self.id, run_id)
                flight.stopped = flight.stopped or "shutdown"
                flight.task.cancel()
        if self._active:
            await asyncio.gather(*self._active, return_exceptions=True)
        if self._tender is not None:
            self._tender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tender

    async def run_until(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set, then shut down as :meth:`stop` does."""
        self.start()
        await stop.wait()
        await self.stop()

    async def _dispatch(self) -> None:
        """Claim runs one at a time while a worker slot is free; a batch when one may wait."""
        # One claimer per runner, so a new run costs one claim, not one per idle worker. A claim
        # is a write transaction, contended by every other process on SQLite: with no run
        # waiting, a batch is looked for when the runner was told of one, else once a poll
        # (batches stored by other processes, leases run out), not after every run.
        loop = asyncio.get_running_loop()
        failures = 0
        while not self._stopping.is_set():
            await self._slots.take()
            if self._stopping.is_set():
                break
            self._wake.clear()
            claim: Claim | BatchClaim | None
            try:
                claim = await self.store.call(
                    self.store.claim, self.id, self.lease_s, self.max_claims
                )
                if claim is None and (self._batch_told or loop.time() >= self._batch_look_at):
                    self._batch_told = False
                    claim = await self.store.call(
                        self.store.claim_batch, self.id, self.lease_s, self.max_claims
                    )
                    # another batch may wait behind one claimed: look again at the next claim
                    self._batch_look_at = loop.time() + (0 if claim is not None else self.poll_s)
            except StoreUnavailable as error:
                if failures == 0:
                    logger.error("runner %s: cannot claim runs: %s", self.id, error.message)
                failures += 1
                claim = None
            except Exception:
                logger.exception("runner %s: cannot claim a run", self.id)
                failures += 1
                claim = None
            else:
                if failures:
                    logger.warning("runner %s: claiming runs again", self.id)
                failures = 0
            if claim is None:
                self._slots.give()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._pause(failures))
                continue
            self._launch(
                self.execute(claim) if isinstance(claim, Claim) else self.execute_batch(claim)
            )

    def _pause(self, failures: int) -> float:
        """Seconds to wait before the next claim: the poll, doubled for each failure in a row."""
        return min(self.poll_s * 2.0 ** min(failures, 16), max(self.poll_s, _MAX_BACKOFF_S))

    async def execute_batch(self, claim: BatchClaim) -> None:
        """Execute a claimed batch's runs through the provider's batch API, then end the batch.

        Never raises but for cancel: each run ends as :meth:`execute` ends it, and a batch that
        cannot run (its agent left the fleet or gained tools, its model has no batch API) fails
        each run with ``config_error``.
        """
        batch = claim.batch
        self._batches.add(batch.id)
        try:
            if claim.runs:
                await self._execute_batch(claim)
            ended = await self.store.call(self.store.end_batch, batch.id, self.id)
            if not ended and self._stopping.is_set():
                await self.store.call(self.store.release_batch, batch.id, self.id)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("runner %s: cannot end batch %s", self.id, batch.id)
        finally:
            self._batches.discard(batch.id)

    async def _execute_batch(self, claim: BatchClaim) -> None:
        """Run every claimed run of a batch at once, their model calls batched."""
        ledger = StoreLedger(self.store, claim.batch)
        try:
            batcher = self.execution.batcher(
                claim.batch.agent_name,
                claim.runs[0].run.input,
                ledger=ledger,
                poll_interval_s=self.batch_poll_s,
                on_progress=ledger.progress,
            )
        except ServiceError as error:
            failed = RunResult(
                status="failed", error=RunError(type="config_error", message=error.message)
            )
            for run in claim.runs:
                ended = await self._store_result(run.run.id, failed, EventBuffer())
                if ended is not None and self.on_finished is not None:
                    self.on_finished(ended)
            return
        logger.info(
            "runner %s: batch %s: %d runs through the %s batch API",
            self.id,
            claim.batch.id,
            len(claim.runs),
            batcher.api.provider,
        )
        batcher.expect(len(claim.runs))
        try:
            await asyncio.gather(*(self.execute(run, batcher=batcher) for run in claim.runs))
        finally:
            batcher.cancel()  # a round left polling once its runs were stopped

    async def execute(self, claim: Claim, *, batcher: Batcher | None = None) -> None:
        """Execute a claimed run to its end and store how it ended; never raise but for cancel.

        A parent's ``agents:start_session`` tool calls this for its child, in the parent's task.
        Anything that goes wrong ends the run ``failed`` with ``internal_error``.

        Args:
            claim: The run.
            batcher: The batcher of the batch the run belongs to (its model calls go into
                provider batches), or ``None``.
        """
        stage = ["starting the run"]
        self._executing.add(claim.run.id)
        try:
            await self._execute(claim, stage, batcher)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            await self._fail(claim.run.id, error, stage[-1])
        finally:
            self._executing.discard(claim.run.id)

    def executes(self, run_id: str) -> bool:
        """Whether this runner executes ``run_id`` now (its end then goes to ``on_finished``)."""
        return run_id in self._executing

    async def _execute(self, claim: Claim, stage: list[str], batcher: Batcher | None) -> None:
        """Execute a claimed run; ``stage`` says what it is doing, for an error's ``where``."""
        run = claim.run
        events = EventBuffer()
        if batcher is not None:
            self._start(
                run.id,
                events,
                _batched(
                    batcher,
                    run.id,
                    # No progress is recorded: a run taken over starts afresh, so its calls get
                    # the same custom ids and bodies and re-attach to the recorded batches.
                    self.execution.run(
                        run.agent_name,
                        run.input,
                        claim.transcript,
                        events,
                        run_id=run.id,
                        model=batcher.provider,
                    ),
                ),
            )
            await self._until_end(claim, stage)
            return
        tools: list[InputTool] = []
        if TOOL_NAME in self.execution.fleet.get(run.agent_name, _NO_TOOLS).tools:
            session = await self.store.call(self.store.get_session, run.session_id)
            tools.append(StartSession(self, run, session.depth if session is not None else 0))
        if claim.progress is not None:
            logger.info(
                "runner %s: run %s continues after its %s recorded model calls",
                self.id,
                run.id,
                claim.progress.get("steps"),
            )
        self._start(
            run.id,
            events,
            self.execution.run(
                run.agent_name,
                run.input,
                claim.transcript,
                events,
                tools=tools,
                run_id=run.id,
                progress=claim.progress,
                on_turn=functools.partial(self._record_turns, run.id),
            ),
        )
        await self._until_end(claim, stage)

    def _start(
        self, run_id: str, events: EventBuffer, execution: Coroutine[object, object, RunResult]
    ) -> None:
        """Start a run's execution as a task this runner tends."""
        self._running[run_id] = _InFlight(asyncio.create_task(execution), events)

    async def _until_end(self, claim: Claim, stage: list[str]) -> None:
        """Wait for a started run to end, then store how it ended."""
        run = claim.run
        flight = self._running[run.id]
        task, events = flight.task, flight.events
        stage.append("running the agent")
        try:
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise  # this call was cancelled, not the run
        finally:
            self._running.pop(run.id, None)
        stopped = flight.stopped or ("shutdown" if task.cancelled() else None)
        if flight.flushing is not None:
            await flight.flushing
        if stopped == "lost":
            logger.warning(
                "runner %s: lost the lease on run %s; dropping its result", self.id, run.id
            )
            return
        if stopped == "shutdown":
            await self.store.call(self.store.release, run.id, self.id)
            return
        # What an earlier claim of the run stored is not known here: the end reads it back.
        earlier = run.claims > 1
        logged = claim.events
        holding = Holding(
            transcript=claim.transcript,
            turns=earlier or flight.turns,
            attempt_events=earlier or flight.attempt_events,
            events=None
            if earlier or logged is None or flight.stored is None
            else [*logged, *flight.stored],
            analytics=events.analytics,
            input=run.input,
        )
        if stopped == "cancelled":
            stage.append("storing the result")
            ended = await self._finish(
                run.id,
                functools.partial(
                    self.store.finish,
                    run.id,
                    self.id,
                    status="cancelled",
                    result=None,
                    error={"type": "cancelled", "message": "the run was cancelled while it ran"},
                    events=[*events.drain(), ("run_cancelled", {})],
                    holding=holding,
                ),
            )
        else:
            result = task.result()  # raises what the run loop raised, in "running the agent"
            stage.append("storing the result")
            ended = await self._store_result(run.id, result, events, holding)
        if ended is not None and self.on_finished is not None:
            self.on_finished(ended)

    async def _fail(self, run_id: str, error: Exception, stage: str) -> None:
        """End a run that raised ``error`` while ``stage`` ``failed`` with ``internal_error``."""
        # If even the failure cannot be stored (the database is gone), the lease runs out and the
        # claim cap bounds what the run costs.
        frame = traceback.extract_tb(error.__traceback__)[-1:]
        at = (
            f" at {Path(frame[0].filename).name}:{frame[0].lineno} in {frame[0].name}"
            if frame
            else ""
        )
        where = f"{stage}{at}"
        logger.error(
            "runner %s: run %s failed while %s: %r", self.id, run_id, where, error, exc_info=error
        )
        failure: dict[str, JsonValue] = {
            "type": "internal_error",
            "message": f"the run failed unexpectedly while {stage}: {error!r}",
            "where": where,
        }
        try:
            ended = await self._finish(
                run_id,
                functools.partial(
                    self.store.finish,
                    run_id,
                    self.id,
                    status="failed",
                    result=None,
                    error=failure,
                    events=[("run_failed", {"error": failure})],
                ),
            )
        except Exception:
            logger.exception("runner %s: cannot store the failure of run %s", self.id, run_id)
            return
        if ended is not None and self.on_finished is not None:
            self.on_finished(ended)

    async def _record_turns(self, run_id: str, progress: dict[str, JsonValue]) -> None:
        """Store a run's finished turns before its next model call (called in the run's task)."""
        flight = self._running.get(run_id)
        if flight is not None:
            flight.turns = True
        try:
            held = await self.store.call(self.store.record_progress, run_id, self.id, progress)
        except Exception:
            logger.exception("runner %s: cannot store the turns of run %s", self.id, run_id)
            return
        if not held:
            if flight is not None and flight.stopped is None:
                flight.stopped = "lost"
            # Raised, not a cancel() that lands at some later await: the next request must
            # not be sent for a run another runner now holds.
            raise asyncio.CancelledError

    async def _tend(self) -> None:
        """Store the events of the runs in flight every tick; renew their leases in time."""
        tick_s = min(self.tick_s, self.lease_s / 3, self.cancel_poll_s)
        renew_every = max(1, round((self.lease_s / 3) / tick_s))
        poll_every = max(1, round(self.cancel_poll_s / tick_s))
        ticks = 0
        while True:
            await asyncio.sleep(tick_s)
            ticks += 1
            try:
                await self._flush()
                if ticks % renew_every == 0:
                    await self._renew()
                elif ticks % poll_every == 0:
                    await self._poll_cancels()
            except StoreUnavailable as error:
                logger.warning(
                    "runner %s: cannot store events or renew leases: %s", self.id, error.message
                )
            except Exception:
                logger.exception("runner %s: cannot store events or renew leases", self.id)

    async def _flush(self) -> None:
        """Store the events the runs in flight emitted since the last tick, in one transaction."""
        batch: dict[str, list[tuple[str, dict[str, JsonValue]]]] = {}
        flights: list[_InFlight] = []
        for run_id, flight in self._running.items():
            if flight.task.done():
                # Its end stores what it emitted, in the transaction that ends it: written
                # here, its attempt events would be read back and rewritten there without the
                # raw output its attempt rows keep.
                continue
            pending = flight.events.drain()
            if pending:
                batch[run_id] = pending
                flights.append(flight)
                flight.attempt_events |= any(kind == "attempt" for kind, _ in pending)
        if not batch:
            return
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for flight in flights:
            flight.flushing = written
        try:
            await self.store.call(self.store.add_events_many, batch)
        except BaseException:
            for flight in flights:
                flight.stored = None
            raise
        else:
            for flight, pending in zip(flights, batch.values(), strict=True):
                if flight.stored is not None:
                    flight.stored.extend(pending)
        finally:
            written.set_result(None)

    async def _renew(self) -> None:
        """Renew the leases of the batches held and runs in flight; stop those lost or cancelled."""
        if self._batches:
            await self.store.call(
                self.store.renew_batches, list(self._batches), self.id, self.lease_s
            )
        flights = dict(self._running)
        if not flights:
            return
        states = await self.store.call(self.store.renew_many, list(flights), self.id, self.lease_s)
        for run_id, state in states.items():
            flight = flights[run_id]
            if state.held and not state.cancel_requested:
                continue
            if flight.stopped is None and not flight.task.done():
                flight.stopped = "lost" if not state.held else "cancelled"
                flight.task.cancel()

    async def _poll_cancels(self) -> None:
        """Stop the runs in flight someone asked to cancel (a renewal does this too)."""
        if not self._running:
            return
        asked = await self.store.call(self.store.cancel_requests, list(self._running))
        for run_id in asked:
            self.cancel(run_id)

    async def _finish(
        self, run_id: str, ending: Callable[[], RunRecord | None]
    ) -> RunRecord | None:
        """Store a run's end, waiting out a database that is away."""
        deadline = asyncio.get_running_loop().time() + _ENDING_RETRY_S
        pause = self.poll_s
        tries = 0
        while True:
            try:
                ended = await self.store.call(ending)
            except StoreUnavailable as error:
                if asyncio.get_running_loop().time() + pause > deadline:
                    raise
                tries += 1
                if tries == 1:  # once a run, not at every try: an outage holds many runs' ends
                    logger.warning(
                        "runner %s: cannot store the end of run %s (%s); trying again, "
                        "every %.0f s at most",
                        self.id,
                        run_id,
                        error.message,
                        _MAX_BACKOFF_S,
                    )
            else:
                if tries:
                    logger.warning(
                        "runner %s: stored the end of run %s after %d failed tries",
                        self.id,
                        run_id,
                        tries,
                    )
                return ended
            await asyncio.sleep(pause)
            pause = min(pause * 2, _MAX_BACKOFF_S)

    async def _store_result(
        self,
        run_id: str,
        result: RunResult,
        events: EventBuffer,
        holding: Holding | None = None,
    ) -> RunRecord | None:
        data = _result_json(result)
        error = data["error"] if isinstance(data.get("error"), dict) else None
        listed = data.get("attempts")
        attempts = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
        transcript = data.get("transcript")
        return await self._finish(
            run_id,
            functools.partial(
                self.store.finish,
                run_id,
                self.id,
                status=result.status,
                result=data,
                error=error,  # type: ignore[arg-type]
                attempts=attempts,
                events=events.drain(),
                transcript=transcript if isinstance(transcript, list) else None,
                holding=holding,
            ),
        )
