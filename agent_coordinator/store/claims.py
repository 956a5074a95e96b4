"""The claim log: each claim of a run, who held it and how it ended.

A claim ends with the run (its status), with ``shutdown`` (its runner put the run back) or with
``expired`` (its lease ran out, found so by the next claim). The runs' claims that ran out are
what :meth:`~agent_coordinator.store.leases.LeaseQueries.claim` caps with ``max_claims``.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_coordinator.store.records import ClaimEnd, ClaimRecord
from agent_coordinator.store.sql import Cursor, SqlBase

__all__ = ["DEFAULT_MAX_CLAIMS", "OPEN_OR_EXPIRED", "ClaimLog"]

_BATCH = 500
"""Run ids one statement names at most (SQLite allows 32,766 parameters)."""
DEFAULT_MAX_CLAIMS = 3
"""Times a run's lease may run out before the run ends ``failed`` (``lease_exhausted``)."""
OPEN_OR_EXPIRED = (
    "SELECT COUNT(*) FROM claims WHERE claims.run_id = runs.id "
    "AND (claims.ended = 'expired' OR claims.ended IS NULL)"
)
"""A run's claims that ran out, counting the one still open (it is the one running out now)."""


class ClaimLog(SqlBase):
    """Writing and reading the claim log."""

    def _open_claim(self, cursor: Cursor, run_id: str, number: int, owner: str, now: float) -> None:
        """Record claim ``number`` of a run by ``owner``; a claim still open ran out."""
        self._end_claim(cursor, run_id, "expired", now)
        self._exec(
            cursor,
            "INSERT INTO claims (run_id, number, runner, claimed_at) VALUES (?, ?, ?, ?)",
            (run_id, number, owner, now),
        )

    def _end_claim(self, cursor: Cursor, run_id: str, ended: ClaimEnd, now: float) -> None:
        """Record how a run's open claim ended (if it has one)."""
        self._exec(
            cursor,
            "UPDATE claims SET ended = ?, ended_at = ? WHERE run_id = ? AND ended IS NULL",
            (ended, now, run_id),
        )

    def claim_history(self, run_ids: Sequence[str]) -> dict[str, list[ClaimRecord]]:
        """Return the claims of runs, by run id (oldest first; none for a run never claimed)."""
        history: dict[str, list[ClaimRecord]] = {run_id: [] for run_id in run_ids}
        with self._tx(write=False) as cursor:
            for start in range(0, len(run_ids), _BATCH):
                chunk = list(run_ids[start : start + _BATCH])
                marks = ", ".join("?" * len(chunk))
                rows = self._exec(
                    cursor,
                    "SELECT run_id, number, runner, claimed_at, ended_at, ended FROM claims "
                    f"WHERE run_id IN ({marks}) ORDER BY run_id, number",
                    chunk,
                ).fetchall()
                for run_id, number, runner, claimed_at, ended_at, ended in rows:
                    history[str(run_id)].append(
                        ClaimRecord.model_validate(
                            {
                                "number": number,
                                "runner": runner,
                                "claimed_at": claimed_at,
                                "ended_at": ended_at,
                                "ended": ended,
                            }
                        )
                    )
        return history
