"""A run's recorded turns: what its runner has finished, kept one turn a row, for a takeover.

The library hands its runner the run's whole progress (``RunProgress``: every finished turn's
messages, every attempt, the usage so far) before each model call; rewriting all of it each time
would make a run of ``n`` turns write ``O(n**2)`` bytes. The ``run_turns`` table keeps only what
each record adds: a row holds the messages and attempts added since the row before it, and the
rest of the progress (usage, steps, the last output) as it stands then; ``turns`` and
``attempts`` count the messages and attempts the rows up to it hold. A claim reads the rows back
as the progress the runner last recorded; the run's end deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from agent_coordinator._store.sql import Cursor, SqlBase, dumps, loads

__all__ = ["APPENDED", "TURN_ROWS_VERSION", "TurnLog"]

TURN_ROWS_VERSION = 9
"""The migration that made the ``run_turns`` table."""
_MOVE_BATCH = 500
"""Runs whose ``progress`` column one step of the migration moves."""

APPENDED = ("turns", "attempts")
"""The keys of a run's progress whose lists only grow while one runner holds the run."""


def _length(progress: dict[str, JsonValue], key: str) -> int:
    value = progress.get(key)
    return len(value) if isinstance(value, list) else 0


def _items(part: JsonValue, key: str) -> list[JsonValue]:
    value = part.get(key) if isinstance(part, dict) else None
    return value if isinstance(value, list) else []


class TurnLog(SqlBase):
    """Appending a run's recorded turns and reading them back whole."""

    def _append_turns(self, cursor: Cursor, run_id: str, progress: dict[str, JsonValue]) -> None:
        """Store what ``progress`` adds to the run's turns, in the caller's transaction."""
        last = self._exec(
            cursor,
            "SELECT number, turns, attempts FROM run_turns WHERE run_id = ? "
            "ORDER BY number DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        number, held = 0, (0, 0)
        if last is not None:
            number, held = int(str(last[0])), (int(str(last[1])), int(str(last[2])))
        counts = tuple(_length(progress, key) for key in APPENDED)
        if any(count < before for count, before in zip(counts, held, strict=True)):
            self._exec(cursor, "DELETE FROM run_turns WHERE run_id = ?", (run_id,))
            number, held = 0, (0, 0)
        added = dict(progress)
        for key, before in zip(APPENDED, held, strict=True):
            value = progress.get(key)
            if isinstance(value, list):
                added[key] = value[before:]
        self._exec(
            cursor,
            "INSERT INTO run_turns (run_id, number, turns, attempts, data) VALUES (?, ?, ?, ?, ?)",
            (run_id, number + 1, *counts, dumps(added)),
        )

    def _after_migration(self, cursor: Cursor, version: int) -> None:
        super()._after_migration(cursor, version)
        if version == TURN_ROWS_VERSION:
            self._move_progress(cursor)

    def _move_progress(self, cursor: Cursor) -> None:
        """Move each run's ``progress`` column (written before ``run_turns``) into one row."""
        while True:
            rows = self._exec(
                cursor,
                "SELECT id, progress FROM runs WHERE progress IS NOT NULL ORDER BY seq LIMIT ?",
                (_MOVE_BATCH,),
            ).fetchall()
            if not rows:
                return
            for run_id, text in rows:
                progress = loads(text)
                if isinstance(progress, dict):
                    self._append_turns(cursor, str(run_id), progress)
                self._exec(cursor, "UPDATE runs SET progress = NULL WHERE id = ?", (run_id,))

    def _read_turns(self, cursor: Cursor, run_id: str) -> dict[str, JsonValue] | None:
        """Return the run's recorded progress as last recorded, or ``None`` when none is."""
        rows: Sequence[Sequence[object]] = self._exec(
            cursor, "SELECT data FROM run_turns WHERE run_id = ? ORDER BY number", (run_id,)
        ).fetchall()
        parts = [loads(row[0]) for row in rows]
        if not parts or not isinstance(parts[-1], dict):
            return None
        progress = dict(parts[-1])
        for key in APPENDED:
            if isinstance(progress.get(key), list):
                progress[key] = [item for part in parts for item in _items(part, key)]
        return progress

    def _drop_turns(self, cursor: Cursor, run_id: str) -> None:
        """Forget a run's recorded turns (it ended: its result holds them)."""
        self._exec(cursor, "DELETE FROM run_turns WHERE run_id = ?", (run_id,))
