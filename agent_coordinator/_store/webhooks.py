"""Webhook deliveries in the store: one stored with a run's end, claimed, and recorded.

A run created with a ``webhook`` gets its delivery row in the same transaction that ends it, so
an ended run's webhook is never forgotten, whichever process ended it. Deliverers claim due rows
the way runners claim runs (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so each attempt has exactly
one deliverer even with several services on one database.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

from pydantic import JsonValue

from agent_coordinator._store.records import DeliveryRecord, DeliveryState, RunRecord
from agent_coordinator._store.sql import Cursor, SqlBase, dumps

__all__ = ["WebhookQueries", "webhook_body"]

_COLUMNS = (
    "id, run_id, url, event, body, status, attempts, next_attempt_at, last_status_code, "
    "last_error, created_at, delivered_at"
)


def webhook_body(run: RunRecord) -> dict[str, JsonValue]:
    """Return the JSON a webhook receives for an ended run.

    Args:
        run: A completed, failed or cancelled run.

    Returns:
        ``event`` (``run.<status>``), ``run_id``, ``session_id``, ``status``, one of
        ``result_data`` (a completed run with a schema), ``result_text`` (without one) or
        ``error``, and ``timestamp`` (when the run ended, ISO 8601 UTC).
    """
    body: dict[str, JsonValue] = {
        "event": f"run.{run.status}",
        "run_id": run.id,
        "session_id": run.session_id,
        "status": run.status,
    }
    result = run.result or {}
    if run.status == "completed" and result.get("result_data") is not None:
        body["result_data"] = result["result_data"]
    elif run.status == "completed":
        body["result_text"] = result.get("result_text")
    else:
        body["error"] = cast("JsonValue", run.error)
    ended = run.finished_at if run.finished_at is not None else time.time()
    body["timestamp"] = datetime.fromtimestamp(ended, UTC).isoformat()
    return body


def _delivery(row: Sequence[object]) -> DeliveryRecord:
    return DeliveryRecord.model_validate(dict(zip(_COLUMNS.split(", "), row, strict=True)))


class WebhookQueries(SqlBase):
    """Deliveries of runs' ends to their webhooks: stored, claimed when due, recorded."""

    def _enqueue_webhook(self, cursor: Cursor, run: RunRecord, now: float) -> None:
        """Store the delivery of ``run``'s end, inside the transaction that ended it."""
        if run.input.webhook is None:
            return
        body = webhook_body(run)
        self._exec(
            cursor,
            f"INSERT INTO webhook_deliveries ({_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, ?, NULL)",
            (
                f"evt_{secrets.token_hex(12)}",
                run.id,
                run.input.webhook,
                str(body["event"]),
                dumps(body),
                now,
                now,
            ),
        )

    def claim_delivery(self, owner: str, hold_s: float) -> DeliveryRecord | None:
        """Hand the delivery due longest to ``owner`` for one attempt.

        Args:
            owner: The deliverer's id.
            hold_s: Seconds the attempt may take; after them the delivery is due again, so a
                deliverer lost mid-attempt does not lose it.

        Returns:
            The delivery (its ``attempts`` counting this one), or ``None`` when none is due.
        """
        now = time.time()
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE webhook_deliveries SET lease_owner = ?, next_attempt_at = ?, "
                "attempts = attempts + 1 WHERE id = (SELECT id FROM webhook_deliveries "
                "WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at "
                f"LIMIT 1{self.skip_locked}) RETURNING {_COLUMNS}",
                (owner, now + hold_s, now),
            ).fetchone()
        return None if row is None else _delivery(row)

    def record_delivery(
        self,
        delivery_id: str,
        owner: str,
        *,
        status: DeliveryState,
        status_code: int | None,
        error: str | None,
        next_attempt_at: float | None = None,
    ) -> bool:
        """Record how an attempt ``owner`` claimed went.

        Args:
            delivery_id: The delivery (its event id).
            owner: The deliverer's id.
            status: ``delivered``, ``pending`` (try again at ``next_attempt_at``) or ``failed``
                (given up).
            status_code: The receiver's HTTP status, ``None`` when it did not answer.
            error: Why the attempt failed, ``None`` when it did not.
            next_attempt_at: When to try again (``pending`` only).

        Returns:
            ``False`` when another deliverer has claimed it since (nothing is written).
        """
        now = time.time()
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE webhook_deliveries SET status = ?, last_status_code = ?, last_error = ?, "
                "next_attempt_at = COALESCE(?, next_attempt_at), lease_owner = NULL, "
                "delivered_at = ? WHERE id = ? AND lease_owner = ? AND status = 'pending' "
                "RETURNING id",
                (
                    status,
                    status_code,
                    error,
                    next_attempt_at,
                    now if status == "delivered" else None,
                    delivery_id,
                    owner,
                ),
            ).fetchone()
        return row is not None

    def run_delivery(self, run_id: str) -> DeliveryRecord | None:
        """Return the delivery of a run's end to its webhook (``None`` before the run ends)."""
        with self._tx(write=False) as cursor:
            row = self._exec(
                cursor, f"SELECT {_COLUMNS} FROM webhook_deliveries WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None else _delivery(row)
