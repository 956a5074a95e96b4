"""The claim log, read from a run's events: each claim, who held it and how it ended.

A claim is its ``run_claimed`` event (``runner``, ``claim``). It ends with the run (its status),
with ``run_requeued`` (its runner shut down and put the run back, or a run handed to it found no
free worker slot) or with ``claim_expired`` (its
lease ran out; written by the claim that found it so). The log has no table of its own, so a run
that goes as planned costs no write more; the ``claim_expired`` events are what
:meth:`~agent_coordinator._store.leases.LeaseQueries.claim` caps with ``max_claims``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from agent_coordinator._store.records import TERMINAL, ClaimEnd, ClaimRecord, RunRecord
from agent_coordinator._store.sql import SqlBase, loads

__all__ = ["DEFAULT_MAX_CLAIMS", "EXPIRED_CLAIMS", "ClaimLog"]

_BATCH = 500
"""Run ids one statement names at most (SQLite allows 32,766 parameters)."""
DEFAULT_MAX_CLAIMS = 3
"""Times a run's lease may run out before the run ends ``failed`` (``lease_exhausted``)."""
EXPIRED_CLAIMS = (
    "SELECT COUNT(*) FROM events WHERE events.run_id = runs.id AND events.type = 'claim_expired'"
)
"""A subquery over ``runs``: how many of the run's claims ran out before."""
_ENDS: dict[str, ClaimEnd] = {"claim_expired": "expired", "run_requeued": "shutdown"}
_REQUEUED: dict[object, ClaimEnd] = {"no_free_slot": "requeued"}
"""A ``run_requeued`` event's ``reason`` other than a shutdown, and the claim end it gives."""


class ClaimLog(SqlBase):
    """Reading the claim log."""

    def claim_history(self, runs: Sequence[RunRecord]) -> dict[str, list[ClaimRecord]]:
        """Return the claims of runs, by run id (oldest first; none for a run never claimed).

        Args:
            runs: The runs, as read (an ended run's last claim ended with the run).
        """
        history: dict[str, list[dict[str, JsonValue]]] = {run.id: [] for run in runs}
        run_ids = list(history)
        with self._tx(write=False) as cursor:
            for start in range(0, len(run_ids), _BATCH):
                chunk = run_ids[start : start + _BATCH]
                marks = ", ".join("?" * len(chunk))
                rows = self._exec(
                    cursor,
                    "SELECT run_id, type, data, created_at FROM events "
                    f"WHERE run_id IN ({marks}) AND type IN "
                    "('run_claimed', 'claim_expired', 'run_requeued') ORDER BY id",
                    chunk,
                ).fetchall()
                for run_id, kind, data, created_at in rows:
                    claims = history[str(run_id)]
                    found = loads(data)
                    details = found if isinstance(found, dict) else {}
                    if claims and claims[-1]["ended"] is None:
                        # a claim followed by another without an end recorded ran out
                        ended = _ENDS.get(str(kind), "expired")
                        if kind == "run_requeued":
                            ended = _REQUEUED.get(details.get("reason"), ended)
                        claims[-1].update(ended=ended, ended_at=float(str(created_at)))
                    if kind == "run_claimed":
                        claims.append(
                            {
                                "number": details.get("claim", len(claims) + 1),
                                "runner": details.get("runner", ""),
                                "claimed_at": float(str(created_at)),
                                "ended_at": None,
                                "ended": None,
                            }
                        )
        for run in runs:
            claims = history[run.id]
            if claims and claims[-1]["ended"] is None and run.status in TERMINAL:
                claims[-1].update(ended=run.status, ended_at=run.finished_at)
        return {
            run_id: [ClaimRecord.model_validate(claim) for claim in claims]
            for run_id, claims in history.items()
        }
