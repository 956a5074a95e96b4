"""Keeping a store to a size: pruning ended sessions past an age, once or every so often.

:func:`prune` is ``agentshape db prune``; :class:`Sweeper` is ``--retain-days N`` on ``serve``
and ``runner``, the same prune in the background. Both delete in small batches (a transaction per
session tree, see :mod:`agent_coordinator._store.retention`), so runs go on being served while
they work, and both leave any session with a run queued or running alone.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from contextlib import suppress
from dataclasses import dataclass

from agent_contracts._errors import ConfigError
from agent_coordinator._store import SqlStore

__all__ = ["DAY_S", "MAX_DAYS", "Pruned", "Sweeper", "parse_age", "prune"]

logger = logging.getLogger(__name__)

DAY_S = 86_400.0
"""Seconds in a day."""
_BATCH = 100
"""Top-level sessions one batch looks at."""
_UNITS = {"d": DAY_S, "h": 3_600.0, "m": 60.0}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([dhm])")
MAX_DAYS = 36_500.0
"""The longest age retention takes (100 years): a longer one reaches before any stored session."""


def parse_age(text: str) -> float:
    """Return an age such as ``30d``, ``12h`` or ``90m`` in seconds.

    Args:
        text: A number followed by ``d`` (days), ``h`` (hours) or ``m`` (minutes).

    Raises:
        ConfigError: ``text`` is not such an age, is 0 (which would delete every ended
            session, the ones that ended a moment ago too) or is longer than
            :data:`MAX_DAYS`.
    """
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise ConfigError(
            f"--older-than {text!r} is not an age: write a number and d, h or m, such as 30d"
        )
    age = float(match.group(1)) * _UNITS[match.group(2)]
    if not age > 0:
        raise ConfigError(f"--older-than {text!r} is not a positive age, such as 30d")
    if age > MAX_DAYS * DAY_S:
        raise ConfigError(f"--older-than {text!r} is longer than {MAX_DAYS:g} days (100 years)")
    return age


@dataclass(frozen=True)
class Pruned:
    """What a prune deleted (or, dry, would delete).

    Attributes:
        sessions: The ids of the sessions, child sessions included.
        runs: How many runs went with them.
    """

    sessions: tuple[str, ...]
    runs: int


def prune(store: SqlStore, *, before: float, dry_run: bool = False, batch: int = _BATCH) -> Pruned:
    """Delete every ended session (with its children) last updated before ``before``.

    A session with a run queued or running, or with a child that has one or that was updated
    since, is kept. Afterwards the freed space is handed back where the database needs telling
    (SQLite's incremental vacuum).

    Args:
        store: The store.
        before: Seconds since the epoch.
        dry_run: Say what would be deleted, delete nothing.
        batch: Top-level sessions one batch looks at.

    Returns:
        What was deleted.
    """
    sessions: list[str] = []
    runs = 0
    after: int | None = 0
    while after is not None:
        done = store.prune_batch(before=before, limit=batch, after=after, dry_run=dry_run)
        sessions.extend(done.sessions)
        runs += done.runs
        after = done.next_after
    if sessions and not dry_run:
        store.reclaim_space()
    return Pruned(sessions=tuple(sessions), runs=runs)


class Sweeper:
    """Prune sessions older than ``retain_days`` now and every ``every_s`` seconds after.

    Args:
        store: The store.
        retain_days: Ended sessions last updated longer ago than this many days are deleted.
        every_s: Seconds between two sweeps.
        batch: Top-level sessions one batch looks at.
    """

    def __init__(
        self, store: SqlStore, retain_days: float, *, every_s: float = 3_600.0, batch: int = _BATCH
    ) -> None:
        self.store = store
        self.retain_days = retain_days
        self.every_s = every_s
        self.batch = batch
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def sweep(self) -> Pruned:
        """Prune once, a batch at a time in a worker thread; log what was deleted.

        Returns:
            What was deleted.
        """
        before = time.time() - self.retain_days * DAY_S
        sessions: list[str] = []
        runs = 0
        after: int | None = 0
        while after is not None:
            # A worker thread, not store.call: on SQLite that runs in place on the event loop,
            # and a batch is a hundred transactions, too long to hold the loop.
            done = await asyncio.to_thread(
                self.store.prune_batch, before=before, limit=self.batch, after=after
            )
            sessions.extend(done.sessions)
            runs += done.runs
            after = done.next_after
        if sessions:
            await asyncio.to_thread(self.store.reclaim_space)
            logger.info(
                "retention: deleted %d sessions (%d runs) ended more than %g days ago",
                len(sessions),
                runs,
                self.retain_days,
            )
        return Pruned(sessions=tuple(sessions), runs=runs)

    async def run_until(self, stop: asyncio.Event) -> None:
        """Sweep now and every :attr:`every_s` seconds until ``stop`` is set.

        A sweep that fails (the database unreachable for a while) is logged and tried again at
        the next interval; it never stops the process.
        """
        while not stop.is_set():
            try:
                await self.sweep()
            except Exception as error:
                logger.warning(
                    "retention: a sweep failed (%s); the next one is in %g s",
                    getattr(error, "message", None) or repr(error),
                    self.every_s,
                )
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every_s)

    def start(self) -> None:
        """Start sweeping in the background (in the running event loop)."""
        self._stop.clear()
        self._task = asyncio.create_task(self.run_until(self._stop))

    async def stop(self) -> None:
        """Stop sweeping; a sweep in progress is cancelled between two batches."""
        if self._task is None:
            return
        self._stop.set()
        self._task.cancel()
        with suppress(asyncio.CancelledError):
            await self._task
        self._task = None
