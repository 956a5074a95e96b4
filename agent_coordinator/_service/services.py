"""What the service runs on, shared by both fronts: its store, execution, limits and token.

One :class:`Services` per server, built by the command line (or a test) and handed to the HTTP
API and the MCP server alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path

from agent_coordinator._execution import Execution
from agent_coordinator._retention import Sweeper
from agent_coordinator._runner import Runner
from agent_coordinator._runner_processes import RunnerProcesses
from agent_coordinator._store.base import SqlStore
from agent_coordinator._store.records import RunRecord
from agent_coordinator._webhooks import WebhookSettings

__all__ = ["Limits", "Notifier", "Services", "bearer_matches"]


@dataclass(frozen=True)
class Limits:
    """The sizes the API accepts."""

    max_body_bytes: int = 1024 * 1024
    """The largest request body (413 above it)."""
    max_schema_bytes: int = 256 * 1024
    """The largest output schema (413 above it)."""
    max_page: int = 200
    """The most items a page may ask for (422 above it)."""
    max_wait_s: float = 120.0
    """The longest ``wait`` a ``POST /runs`` may ask for (422 above it)."""
    max_batch_items: int = 1000
    """The most items one ``POST /batches`` may hold (422 above it)."""


class Notifier:
    """Hands a run's end to the requests waiting for it.

    A run ended by this process's runners is handed over whole (:meth:`notify`); one ended in
    another process, told by the store, is handed over as ``None`` (:meth:`ended_elsewhere`):
    the waiter reads it from the store.
    """

    def __init__(self) -> None:
        self._waiters: dict[str, list[asyncio.Future[RunRecord | None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stopping = False
        """Whether the server is shutting down: waits end at once (see :meth:`stop`)."""

    def subscribe(self, run_id: str) -> asyncio.Future[RunRecord | None]:
        """Return a future that gets the run when it ends; pass it to :meth:`unsubscribe` after.

        Its result is ``None`` when the run ended in another process: read it from the store.
        """
        self._loop = loop = asyncio.get_running_loop()
        future: asyncio.Future[RunRecord | None] = loop.create_future()
        self._waiters.setdefault(run_id, []).append(future)
        return future

    def stop(self) -> None:
        """End every wait now: the server is shutting down (safe in a signal handler).

        A request waiting for its run then answers with the run as it is (202 while it runs,
        with its id) within the server's grace period, instead of being cut off by it.
        """
        self.stopping = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.ended_elsewhere, "")

    def unsubscribe(self, run_id: str, future: asyncio.Future[RunRecord | None]) -> None:
        """Stop waiting for ``run_id`` with ``future``."""
        waiting = self._waiters.get(run_id)
        if waiting is None:
            return
        with contextlib.suppress(ValueError):
            waiting.remove(future)
        if not waiting:
            del self._waiters[run_id]

    def notify(self, run: RunRecord) -> None:
        """Give the ended ``run`` to whoever waits for it."""
        for future in self._waiters.pop(run.id, ()):
            if not future.done():
                future.set_result(run)

    def ended_elsewhere(self, run_id: str) -> None:
        """Tell whoever waits for ``run_id`` that it ended (``""``: any run may have ended)."""
        for waited in [run_id] if run_id else list(self._waiters):
            for future in self._waiters.pop(waited, ()):
                if not future.done():
                    future.set_result(None)


@dataclass
class Services:
    """Everything the handlers use; one per app, kept on ``app.state.services``."""

    store: SqlStore
    execution: Execution
    token: str | None = None
    limits: Limits = field(default_factory=Limits)
    runner: Runner | None = None
    runner_processes: RunnerProcesses | None = None
    """The runner processes ``serve --processes`` started beside this one."""
    sweeper: Sweeper | None = None
    notifier: Notifier = field(default_factory=Notifier)
    webhooks: WebhookSettings | None = None
    """The webhook secret and allowed hosts; ``None``: runs may not name a webhook."""
    evals_dir: Path | None = None
    """Where ``agentshape eval`` reports are read for ``/reports/evals``; ``None``: none."""

    _turns: int = field(default=0, init=False, repr=False)
    """How many runs :meth:`next_turn` gave out (whose turn it is next)."""

    def next_turn(self) -> int | None:
        """Return whose turn it is to take the next run: a runner process's index, or ``None``.

        ``None`` is this process's own runner. One runner a run, in turn: each wakes to one run
        to claim (a runner that claimed one looks for the next at once), rather than all racing
        for it.
        """
        others = 0 if self.runner_processes is None else self.runner_processes.count
        turn = self._turns % (others + 1)
        self._turns += 1
        return None if turn == others else turn

    def wake_runners(self, turn: int | None) -> None:
        """Tell the runner whose ``turn`` it is that a run was stored, unless the store tells them.

        Args:
            turn: What :meth:`next_turn` gave for the run: a runner process's index, or ``None``
                for this process's runner.
        """
        # A store that notifies wakes every process's runners, this one's too: waking them here
        # as well would make them claim twice.
        if self.store.wakes_runners:
            return
        if turn is None:
            if self.runner is not None:
                self.runner.wake()
        elif self.runner_processes is not None:
            self.runner_processes.wake(turn)


def bearer_matches(header: str, token: str) -> bool:
    """Tell whether an ``Authorization`` header holds ``Bearer <token>`` (constant-time).

    Args:
        header: The ``Authorization`` header's value (empty when there is none).
        token: The service's token.

    Returns:
        Whether the header names the bearer scheme with exactly ``token``.
    """
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )
