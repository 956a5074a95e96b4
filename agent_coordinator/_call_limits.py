"""The limiter every runner (and ``run-many --database``) shares: slots kept in the store.

:class:`StoreCallLimiter` is the library's :class:`~agent_executor._call_limits.CallLimiter`
over :class:`~agent_coordinator._store.SqlStore`'s ``call_slots``, so a limit set on a model
holds across every process using one database, and a 429 one of them is answered pauses that
model for all of them. :func:`register_run_many_limits` gives ``run-many`` a ``--database``
whose store it shares the limits through.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Callable
from typing import TextIO, TypeAlias

from agent_contracts._call_limits import CallLimits
from agent_contracts._errors import ConfigError
from agent_coordinator._errors import StoreUnavailable
from agent_coordinator._store import DEFAULT_DATABASE, SqlStore, open_store
from agent_coordinator._store.call_limits import RATE_WINDOW_S

__all__ = ["SLOT_HOLD_S", "StoreCallLimiter", "register_run_many_limits"]

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace, TextIO, TextIO], int]

SLOT_HOLD_S = 900.0
"""Seconds a slot counts as in flight unless released: a worker lost mid-call frees it then."""
_WAIT_S = 0.1
"""About how long a worker waits before looking for a free slot again (with jitter, so waiting
workers of several processes do not all write at once)."""


class StoreCallLimiter:
    """Slots for model calls counted in the store, shared by every process that uses it.

    Args:
        store: The store (SQLite or PostgreSQL).
        hold_s: Seconds a slot counts as in flight unless released.
        window_s: The span ``requests_per_minute`` and ``tokens_per_minute`` count over (a
            minute; the tests shorten it so a limit is seen without waiting one).
    """

    def __init__(
        self, store: SqlStore, *, hold_s: float = SLOT_HOLD_S, window_s: float = RATE_WINDOW_S
    ) -> None:
        self.store = store
        self.hold_s = hold_s
        self.window_s = window_s

    async def acquire(self, key: str, limits: CallLimits) -> str:
        """Wait until ``limits`` let a call to ``key`` start, and take its slot.

        Args:
            key: The limit key (``provider:model``).
            limits: The limits the call is held to.

        Returns:
            The slot's id.
        """
        while True:
            slot = await self.store.call(
                self.store.take_call_slot, key, limits, self.hold_s, self.window_s
            )
            if slot is not None:
                return slot
            await asyncio.sleep(_WAIT_S * (0.5 + random.random()))

    async def release(self, key: str, slot: str, tokens: int) -> None:
        """Hand the slot back, counting the call's ``tokens`` for its minute.

        Args:
            key: The limit key (the slot's id is enough to find it).
            slot: The slot's id.
            tokens: The tokens the call used.
        """
        await self.store.call(self.store.release_call_slot, slot, tokens)

    async def pause(self, key: str, seconds: float) -> None:
        """Let no process start a call to ``key`` for ``seconds``.

        Args:
            key: The limit key.
            seconds: How long (a longer pause already set is kept).
        """
        await self.store.call(self.store.pause_calls, key, time.time() + seconds)


def register_run_many_limits(commands: Subcommands) -> None:
    """Add ``--database`` to the ``run-many`` command in ``commands``.

    With it, ``run-many``'s call limits (``--concurrency``, ``--rpm``, ``--tpm``, the agent's
    ``llm.limits``) are kept in that store, shared with the service's runners and every other
    ``run-many`` using it; without it they hold in this process.
    """
    many = commands.choices["run-many"]
    many.add_argument(
        "--database",
        default=None,
        help="keep the call limits in this store (a SQLite file such as "
        f"{DEFAULT_DATABASE}, or a postgresql:// URL), shared with runners and other run-many",
    )
    plain: Handler = many.get_default("handler")

    def handler(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        if args.database is None:
            return plain(args, out, err)
        try:
            store = open_store(args.database)
        except StoreUnavailable as error:
            raise ConfigError(error.message) from error
        try:
            args.call_limiter = StoreCallLimiter(store)
            return plain(args, out, err)
        finally:
            store.close()

    many.set_defaults(handler=handler)
