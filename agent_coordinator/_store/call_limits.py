"""Model-call slots in the store: the limits every runner and ``run-many --database`` share.

A slot is taken in one write transaction that first locks the limit key's row (PostgreSQL
``FOR UPDATE``; SQLite's write transactions hold its one write lock), so the calls in flight,
the requests and the tokens of the last 60 seconds (a call counts from its end, or from its
start while in flight) are counted and a slot added with no other
worker in between: the limits hold across processes and hosts, not per process.
"""

from __future__ import annotations

import secrets
import time

from agent_contracts._call_limits import CallLimits
from agent_coordinator._store.sql import SqlBase

__all__ = ["RATE_WINDOW_S", "CallLimitQueries"]

RATE_WINDOW_S = 60.0
"""The span ``requests_per_minute`` and ``tokens_per_minute`` count over: a minute."""


class CallLimitQueries(SqlBase):
    """Slots for model calls under limits shared through the store, and 429 pauses."""

    def take_call_slot(
        self, key: str, limits: CallLimits, hold_s: float, window_s: float = RATE_WINDOW_S
    ) -> str | None:
        """Take a slot for a call to ``key`` if ``limits`` allow one now.

        Args:
            key: The limit key (``provider:model``).
            limits: The limits the call is held to.
            hold_s: Seconds the slot counts as in flight unless released first (so a worker
                lost mid-call does not hold it for ever).
            window_s: The span the per-minute limits count over (a minute; every process on
                one store must use the same).

        Returns:
            The slot's id, or ``None`` when the key is paused or a limit is reached.
        """
        now = time.time()
        with self._tx() as cursor:
            self._exec(
                cursor,
                "INSERT INTO call_limit_keys (limit_key, paused_until) VALUES (?, 0) "
                "ON CONFLICT (limit_key) DO NOTHING",
                (key,),
            )
            row = self._exec(
                cursor,
                f"SELECT paused_until FROM call_limit_keys WHERE limit_key = ?{self.lock_rows}",
                (key,),
            ).fetchone()
            if row is not None and float(str(row[0])) > now:
                return None
            self._exec(
                cursor,
                "DELETE FROM call_slots WHERE limit_key = ? AND counted_at <= ? "
                "AND (expires_at IS NULL OR expires_at < ?)",
                (key, now - window_s, now),
            )
            counted = self._exec(
                cursor,
                "SELECT COALESCE(SUM(CASE WHEN expires_at >= ? THEN 1 ELSE 0 END), 0), "
                "COALESCE(SUM(CASE WHEN counted_at > ? OR expires_at >= ? THEN 1 ELSE 0 END), 0), "
                "COALESCE(SUM(CASE WHEN counted_at > ? THEN tokens ELSE 0 END), 0) "
                "FROM call_slots WHERE limit_key = ?",
                (now, now - window_s, now, now - window_s, key),
            ).fetchone()
            in_flight, requests, tokens = (int(str(value)) for value in counted or (0, 0, 0))
            if (
                (limits.concurrency is not None and in_flight >= limits.concurrency)
                or (
                    limits.requests_per_minute is not None
                    and requests >= limits.requests_per_minute
                )
                or (limits.tokens_per_minute is not None and tokens >= limits.tokens_per_minute)
            ):
                return None
            slot = f"slot_{secrets.token_hex(12)}"
            self._exec(
                cursor,
                "INSERT INTO call_slots (id, limit_key, counted_at, expires_at, tokens) "
                "VALUES (?, ?, ?, ?, 0)",
                (slot, key, now, now + hold_s),
            )
        return slot

    def release_call_slot(self, slot: str, tokens: int) -> None:
        """End a slot's call: no longer in flight, it counts for the window (a minute) from now.

        Args:
            slot: The slot's id.
            tokens: The tokens the call used.
        """
        with self._tx() as cursor:
            self._exec(
                cursor,
                "UPDATE call_slots SET expires_at = NULL, tokens = ?, counted_at = ? WHERE id = ?",
                (tokens, time.time(), slot),
            )

    def pause_calls(self, key: str, until: float) -> None:
        """Let no slot for ``key`` be taken before ``until`` (a later pause already set is kept).

        Args:
            key: The limit key.
            until: The time (``time.time()``) calls may start again.
        """
        with self._tx() as cursor:
            self._exec(
                cursor,
                "INSERT INTO call_limit_keys (limit_key, paused_until) VALUES (?, ?) "
                "ON CONFLICT (limit_key) DO UPDATE SET paused_until = CASE "
                "WHEN excluded.paused_until > call_limit_keys.paused_until "
                "THEN excluded.paused_until ELSE call_limit_keys.paused_until END",
                (key, until),
            )
