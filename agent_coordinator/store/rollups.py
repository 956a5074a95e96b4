"""What the store keeps up to date as runs end, so the overviews never read every run.

:class:`Rollups` is written to in the transaction that ends a run (:meth:`LeaseQueries.finish
<agent_coordinator.store.leases.LeaseQueries.finish>`, a cancel), so it is never behind the runs.
It keeps every error type a run has ended with: the sessions list's filter choices.
"""

from __future__ import annotations

from pydantic import JsonValue

from agent_coordinator.store.sql import Cursor, SqlBase

__all__ = ["Rollups"]


class Rollups(SqlBase):
    """The overviews' figures, updated in the transaction that ends a run."""

    def _note_error(self, cursor: Cursor, error: dict[str, JsonValue] | None) -> None:
        """Add an ended run's error type to the filter choices (once each)."""
        kind = error.get("type") if error is not None else None
        if isinstance(kind, str):
            self._exec(
                cursor, "INSERT INTO error_types (type) VALUES (?) ON CONFLICT DO NOTHING", (kind,)
            )
