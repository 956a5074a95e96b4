"""Batches: runs of one agent stored together and claimed whole, for a provider's batch API.

A batch is stored in one transaction with a session and a queued run per item
(:meth:`BatchQueries.create_batch`); its runs carry its id, so a run claim skips them. A runner
claims the batch (:meth:`BatchQueries.claim_batch`) and with it the lease of every run of it not
yet ended, under the lease rules of runs: renewed by the runner
(:meth:`BatchQueries.renew_batches`), taken over by another runner once it runs out, and a batch
whose lease ran out ``max_claims`` times has its runs end ``failed`` with ``lease_exhausted``.
Each run ends through :meth:`~agent_coordinator._store.leases.LeaseQueries.finish`, as any run.

The provider batches a runner creates are recorded as they are created
(:meth:`BatchQueries.record_submission`), so a runner taking the batch over re-attaches to them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from agent_coordinator._store.claims import DEFAULT_MAX_CLAIMS
from agent_coordinator._store.leases import LeaseQueries
from agent_coordinator._store.listener import RUN_QUEUED
from agent_coordinator._store.records import (
    BatchClaim,
    BatchItem,
    BatchRecord,
    BatchSubmission,
    Claim,
    NewRun,
)
from agent_coordinator._store.runs import RunQueries
from agent_coordinator._store.sql import Cursor, dumps, loads

__all__ = ["BatchQueries"]

_BATCH_COLUMNS = (
    "id, seq, agent_name, status, items, lease_owner, lease_expires_at, claims, created_at, "
    "finished_at"
)


class BatchQueries(RunQueries, LeaseQueries):
    """Storing, claiming, renewing and reading batches."""

    def create_batch(
        self, batch_id: str, agent_name: str, items: Sequence[tuple[str, NewRun]]
    ) -> BatchRecord:
        """Store a batch with a new session and a queued run per item, in one transaction.

        Args:
            batch_id: The batch's id.
            agent_name: The agent every item runs.
            items: Each item's id and its run (a ``start_session`` run).

        Returns:
            The stored batch.
        """
        now = time.time()
        listed: list[dict[str, JsonValue]] = [
            {"id": item_id, "session_id": new.session_id, "run_id": new.id}
            for item_id, new in items
        ]
        with self._tx() as cursor:
            for _, new in items:
                self._insert_run(cursor, new, now, None)
                self._exec(cursor, "UPDATE runs SET batch_id = ? WHERE id = ?", (batch_id, new.id))
            self._exec(
                cursor,
                f"INSERT INTO batches ({_BATCH_COLUMNS.replace('seq, ', '')}) "
                "VALUES (?, ?, 'queued', ?, NULL, NULL, 0, ?, NULL)",
                (batch_id, agent_name, dumps(listed), now),
            )
            # Idle runners wake on a queued run; a batch is claimed by the same loop.
            self._notify(cursor, RUN_QUEUED, batch_id)
            found = self._read_batch(cursor, batch_id)
        assert found is not None
        return found

    def get_batch(self, batch_id: str) -> BatchRecord | None:
        """Return the batch with this id (its items' run statuses as they are now), or ``None``."""
        with self._tx(write=False) as cursor:
            return self._read_batch(cursor, batch_id)

    def list_batches(self, *, limit: int, after: int | None = None) -> list[BatchRecord]:
        """Return batches, newest first, at most ``limit``, older than seq ``after``."""
        where, params = ("WHERE seq < ? ", [after]) if after is not None else ("", [])
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                f"SELECT id FROM batches {where}ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
            found = [self._read_batch(cursor, str(row[0])) for row in rows]
        return [batch for batch in found if batch is not None]

    def claim_batch(
        self, owner: str, lease_s: float, max_claims: int = DEFAULT_MAX_CLAIMS
    ) -> BatchClaim | None:
        """Hand the oldest waiting batch (or one whose runner's lease ran out) to ``owner``.

        The leases of the batch's runs not yet ended go to ``owner`` with it. A batch whose
        lease ran out ``max_claims`` times is ended instead: its runs not yet ended fail with
        ``lease_exhausted``.

        Args:
            owner: The runner's id.
            lease_s: Seconds the lease lasts unless renewed.
            max_claims: Times a batch's lease may run out before its runs fail.

        Returns:
            The batch and the claims of its runs, or ``None`` when no batch waits.
        """
        now = time.time()
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "SELECT id, claims FROM batches WHERE status = 'queued' "
                f"ORDER BY seq LIMIT 1{self.skip_locked}",
            ).fetchone()
            while row is None:
                row = self._exec(
                    cursor,
                    "SELECT id, claims FROM batches WHERE status = 'running' "
                    f"AND lease_expires_at < ? ORDER BY seq LIMIT 1{self.skip_locked}",
                    (now,),
                ).fetchone()
                if row is None:
                    return None
                if int(str(row[1])) < max_claims:
                    break
                self._exhaust_batch(cursor, str(row[0]), int(str(row[1])), now)
                row = None
            return self._take_batch(cursor, str(row[0]), owner, lease_s, now)

    def _take_batch(
        self, cursor: Cursor, batch_id: str, owner: str, lease_s: float, now: float
    ) -> BatchClaim:
        self._exec(
            cursor,
            "UPDATE batches SET status = 'running', lease_owner = ?, lease_expires_at = ?, "
            "claims = claims + 1 WHERE id = ?",
            (owner, now + lease_s, batch_id),
        )
        claims: list[Claim] = []
        for run_id in self._open_runs(cursor, batch_id):
            # The batch's own lease rules: whatever held the run before is this claim's now.
            subquery = "SELECT id FROM runs WHERE id = ?"
            claim = self._take(cursor, subquery, (run_id,), owner, lease_s, now)
            if claim is not None:
                claims.append(claim)
        found = self._read_batch(cursor, batch_id)
        assert found is not None
        return BatchClaim(batch=found, runs=claims)

    def _open_runs(self, cursor: Cursor, batch_id: str) -> list[str]:
        """Return the ids of the batch's runs not yet ended, oldest first."""
        rows = self._exec(
            cursor,
            "SELECT id FROM runs WHERE batch_id = ? AND status IN ('queued', 'running') "
            "ORDER BY seq",
            (batch_id,),
        ).fetchall()
        return [str(row[0]) for row in rows]

    def _exhaust_batch(self, cursor: Cursor, batch_id: str, claims: int, now: float) -> None:
        """End a batch whose lease ran out ``claims`` times: its open runs fail, not run again."""
        for run_id in self._open_runs(cursor, batch_id):
            self._exhaust(cursor, run_id, claims, now)
        self._exec(
            cursor,
            "UPDATE batches SET status = 'ended', lease_owner = NULL, lease_expires_at = NULL, "
            "finished_at = ? WHERE id = ?",
            (now, batch_id),
        )

    def renew_batches(self, batch_ids: Sequence[str], owner: str, lease_s: float) -> set[str]:
        """Extend ``owner``'s leases on batches (its runs' leases are renewed as any run's).

        Returns:
            The ids of the batches ``owner`` still holds.
        """
        held: set[str] = set()
        if not batch_ids:
            return held
        marks = ", ".join("?" * len(batch_ids))
        with self._tx() as cursor:
            rows = self._exec(
                cursor,
                f"UPDATE batches SET lease_expires_at = ? WHERE id IN ({marks}) "
                "AND lease_owner = ? AND status = 'running' RETURNING id",
                (time.time() + lease_s, *batch_ids, owner),
            ).fetchall()
        held.update(str(row[0]) for row in rows)
        return held

    def end_batch(self, batch_id: str, owner: str) -> bool:
        """End a batch ``owner`` holds once every run of it has ended.

        Returns:
            Whether it ended (``False``: the lease was lost, or a run of it is still open).
        """
        with self._tx() as cursor:
            if self._open_runs(cursor, batch_id):
                return False
            row = self._exec(
                cursor,
                "UPDATE batches SET status = 'ended', lease_owner = NULL, "
                "lease_expires_at = NULL, finished_at = ? WHERE id = ? AND lease_owner = ? "
                "RETURNING id",
                (time.time(), batch_id, owner),
            ).fetchone()
        return row is not None

    def release_batch(self, batch_id: str, owner: str) -> bool:
        """Put a batch ``owner`` holds back in the queue (a runner shutting down).

        Its runs were put back by :meth:`~agent_coordinator._store.leases.LeaseQueries.release`.

        Returns:
            Whether ``owner`` held it.
        """
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE batches SET status = 'queued', lease_owner = NULL, "
                "lease_expires_at = NULL WHERE id = ? AND lease_owner = ? "
                "AND status = 'running' RETURNING id",
                (batch_id, owner),
            ).fetchone()
        return row is not None

    def record_submission(
        self, batch_id: str, provider_batch_id: str, provider: str, items: Mapping[str, str]
    ) -> None:
        """Record a provider batch a batch's runner just created (before it is polled).

        Args:
            batch_id: The batch.
            provider_batch_id: The provider's batch id.
            provider: The provider's name.
            items: Each item's custom id and its body's SHA-256 hex digest.
        """
        with self._tx() as cursor:
            self._exec(
                cursor,
                "INSERT INTO batch_submissions (batch_id, provider_batch_id, provider, items, "
                "counts, created_at) VALUES (?, ?, ?, ?, NULL, ?)",
                (batch_id, provider_batch_id, provider, dumps(dict(items)), time.time()),
            )

    def record_counts(
        self, batch_id: str, provider_batch_id: str, counts: dict[str, JsonValue]
    ) -> None:
        """Keep the provider's request counts of one provider batch at its last poll."""
        with self._tx() as cursor:
            self._exec(
                cursor,
                "UPDATE batch_submissions SET counts = ? WHERE batch_id = ? "
                "AND provider_batch_id = ?",
                (dumps(counts), batch_id, provider_batch_id),
            )

    def _read_batch(self, cursor: Cursor, batch_id: str) -> BatchRecord | None:
        row = self._exec(
            cursor, f"SELECT {_BATCH_COLUMNS} FROM batches WHERE id = ?", (batch_id,)
        ).fetchone()
        if row is None:
            return None
        statuses = {
            str(r[0]): str(r[1])
            for r in self._exec(
                cursor, "SELECT id, status FROM runs WHERE batch_id = ?", (batch_id,)
            ).fetchall()
        }
        listed = loads(row[4])
        items = [
            BatchItem.model_validate(
                {**item, "status": statuses.get(str(item["run_id"]), "deleted")}
            )
            for item in (listed if isinstance(listed, list) else [])
            if isinstance(item, dict)
        ]
        submissions = [
            BatchSubmission(
                provider_batch_id=str(r[0]),
                provider=str(r[1]),
                items={str(k): str(v) for k, v in _mapping(loads(r[2])).items()},
                counts=_mapping(loads(r[3])) if r[3] is not None else None,
            )
            for r in self._exec(
                cursor,
                "SELECT provider_batch_id, provider, items, counts FROM batch_submissions "
                "WHERE batch_id = ? ORDER BY created_at, provider_batch_id",
                (batch_id,),
            ).fetchall()
        ]
        return BatchRecord(
            id=str(row[0]),
            seq=int(str(row[1])),
            agent_name=str(row[2]),
            status=str(row[3]),
            items=items,
            lease_owner=None if row[5] is None else str(row[5]),
            lease_expires_at=None if row[6] is None else float(str(row[6])),
            claims=int(str(row[7])),
            created_at=float(str(row[8])),
            finished_at=None if row[9] is None else float(str(row[9])),
            submissions=submissions,
        )


def _mapping(value: JsonValue) -> dict[str, JsonValue]:
    """Return a stored JSON object, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}
