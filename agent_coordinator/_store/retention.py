"""Deleting sessions: one on request (``DELETE /sessions/{id}``), or the ended ones past an age.

A session is deleted with everything stored under it: its runs, their attempts and events (and
the batch it was an item of, once its last item is deleted), and its child sessions (a parent
agent's ``agents:start_session`` calls), which are deleted with it rather than left pointing at
a parent that is gone. Nothing is deleted while a run of the session or of a child is queued or
running. Aggregates kept outside these tables (analytics rollups) are not touched: they count
runs that ended, whether or not the runs are still stored.

A session's system message is kept apart, once for every session whose transcript begins with
the same text (``system_messages``); a deletion also deletes the messages of its sessions that no
other session names, in the same transaction, and a prune's last batch every message no session
names (one a session stopped naming when its agent's prompt changed, or one two deletions at
once each left to the other). A run's end that names one stores it again if it is gone
(``INSERT ... ON CONFLICT DO NOTHING``, before it touches any row another end may hold): on
PostgreSQL a deletion of messages first takes a lock those inserts wait for (and that waits for
those in progress), and every transaction reads at ``READ COMMITTED``, so no end can name a
message the deletion saw unnamed and removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_coordinator._errors import Conflict, NotFound
from agent_coordinator._store.sql import Cursor, SqlBase

__all__ = ["RUN_TABLES", "PruneBatch", "RetentionQueries"]

RUN_TABLES: tuple[str, ...] = ("attempts", "events", "run_turns", "webhook_deliveries")
"""The tables whose rows belong to a run (a ``run_id`` column), deleted with the run; a table
added later that is keyed by run is one more name here."""

_ENDED = "('completed', 'failed', 'cancelled')"


@dataclass(frozen=True)
class PruneBatch:
    """What one batch of :meth:`RetentionQueries.prune_batch` deleted (or would delete).

    Attributes:
        sessions: The ids of the sessions deleted, child sessions included.
        runs: How many runs were deleted with them.
        next_after: The ``after`` to pass for the next batch, or ``None`` when none is left.
    """

    sessions: tuple[str, ...]
    runs: int
    next_after: int | None


class RetentionQueries(SqlBase):
    """Deleting a session with its runs, attempts, events and child sessions."""

    def delete_session(self, session_id: str) -> tuple[tuple[str, ...], int]:
        """Delete a session, its child sessions, and their runs, attempts and events.

        Returns:
            The ids of the sessions deleted (the session first, then its descendants) and how
            many runs were deleted with them.

        Raises:
            SessionNotFound: There is no such session (404).
            SessionBusy: A run of the session or of one of its children is queued or running
                (409); delete it after that run ends.
        """
        with self._tx() as cursor:
            tree = self._tree(cursor, session_id)
            if not tree:
                raise NotFound("SessionNotFound", f"no session {session_id!r}")
            active = self._active_run(cursor, tree)
            if active is not None:
                run_id, owner = active
                where = "" if owner == session_id else f" (in its child session {owner!r})"
                raise Conflict(
                    "SessionBusy",
                    f"session {session_id!r} has run {run_id}{where} still in progress; delete "
                    "it after that run ends",
                )
            return tuple(tree), self._delete(cursor, tree)

    def prune_batch(
        self, *, before: float, limit: int, after: int = 0, dry_run: bool = False
    ) -> PruneBatch:
        """Delete up to ``limit`` ended top-level sessions last updated before ``before``.

        A session is deleted with its child sessions only when every one of them has ended,
        none has a run queued or running, and none was updated at or after ``before``; the
        others are passed over (and looked at again by a later prune). Each session is deleted
        in a transaction of its own, so a batch never holds the database for long. The last
        batch (``next_after`` ``None``) also deletes every system message no session names.

        Args:
            before: Seconds since the epoch; sessions updated at or after it are kept.
            limit: The most top-level sessions one batch looks at.
            after: Look only at sessions stored after this ``seq`` (the previous batch's
                ``next_after``).
            dry_run: Count what would be deleted, delete nothing.

        Returns:
            What was deleted and where the next batch starts.
        """
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                "SELECT seq, id FROM sessions WHERE parent_session_id IS NULL "
                f"AND status IN {_ENDED} AND updated_at < ? AND seq > ? ORDER BY seq LIMIT ?",
                (before, after, limit),
            ).fetchall()
        deleted: list[str] = []
        runs = 0
        for _, session_id in rows:
            with self._tx(write=not dry_run) as cursor:
                tree = self._tree(cursor, str(session_id))
                if not tree or not self._expired(cursor, tree, before):
                    continue
                deleted.extend(tree)
                if dry_run:
                    runs += self._count_runs(cursor, tree)
                else:
                    runs += self._delete(cursor, tree)
        next_after = int(str(rows[-1][0])) if len(rows) == limit else None
        if next_after is None and not dry_run:
            with self._tx() as cursor:
                self._delete_unnamed_system_messages(cursor)
        return PruneBatch(sessions=tuple(deleted), runs=runs, next_after=next_after)

    def reclaim_space(self) -> None:
        """Hand the space deleted rows left back to the file system, where that takes a step.

        PostgreSQL's autovacuum makes the space reusable (its files do not shrink); nothing to
        do here.
        """

    # -- within one transaction ----------------------------------------------------------------

    def _tree(self, cursor: Cursor, session_id: str) -> list[str]:
        """Return the session (locked for this transaction) and its descendants, or nothing."""
        row = self._exec(
            cursor, f"SELECT id FROM sessions WHERE id = ?{self.lock_rows}", (session_id,)
        ).fetchone()
        if row is None:
            return []
        tree = [session_id]
        level = [session_id]
        while level:
            rows = self._exec(
                cursor,
                f"SELECT id FROM sessions WHERE parent_session_id IN ({_marks(level)})"
                f"{self.lock_rows}",
                level,
            ).fetchall()
            level = [str(child) for (child,) in rows]
            tree.extend(level)
        return tree

    def _active_run(self, cursor: Cursor, tree: Sequence[str]) -> tuple[str, str] | None:
        row = self._exec(
            cursor,
            f"SELECT id, session_id FROM runs WHERE session_id IN ({_marks(tree)}) "
            "AND status IN ('queued', 'running') LIMIT 1",
            tree,
        ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def _expired(self, cursor: Cursor, tree: Sequence[str], before: float) -> bool:
        """Tell whether every session of ``tree`` has ended before ``before`` with no run left."""
        row = self._exec(
            cursor,
            f"SELECT COUNT(*) FROM sessions WHERE id IN ({_marks(tree)}) "
            f"AND (status NOT IN {_ENDED} OR updated_at >= ?)",
            (*tree, before),
        ).fetchone()
        young = row is not None and int(str(row[0])) > 0
        return not young and self._active_run(cursor, tree) is None

    def _count_runs(self, cursor: Cursor, tree: Sequence[str]) -> int:
        row = self._exec(
            cursor, f"SELECT COUNT(*) FROM runs WHERE session_id IN ({_marks(tree)})", tree
        ).fetchone()
        return 0 if row is None else int(str(row[0]))

    def _delete(self, cursor: Cursor, tree: Sequence[str]) -> int:
        """Delete the sessions of ``tree`` and what is stored under them; return the runs."""
        sessions = _marks(tree)
        runs = f"SELECT id FROM runs WHERE session_id IN ({sessions})"
        batches = [
            str(row[0])
            for row in self._exec(
                cursor,
                f"SELECT DISTINCT batch_id FROM runs WHERE session_id IN ({sessions}) "
                "AND batch_id IS NOT NULL",
                tree,
            ).fetchall()
        ]
        digests = [
            str(row[0])
            for row in self._exec(
                cursor,
                f"SELECT DISTINCT system_digest FROM sessions WHERE id IN ({sessions}) "
                "AND system_digest IS NOT NULL",
                tree,
            ).fetchall()
        ]
        for table in RUN_TABLES:
            self._exec(cursor, f"DELETE FROM {table} WHERE run_id IN ({runs})", tree)
        deleted = self._exec(
            cursor, f"DELETE FROM runs WHERE session_id IN ({sessions})", tree
        ).rowcount
        self._exec(cursor, f"DELETE FROM sessions WHERE id IN ({sessions})", tree)
        if digests:
            self._delete_unnamed_system_messages(cursor, digests)
        for batch_id in batches:
            if self._exec(
                cursor, "SELECT 1 FROM runs WHERE batch_id = ? LIMIT 1", (batch_id,)
            ).fetchone():
                continue
            self._exec(cursor, "DELETE FROM batch_submissions WHERE batch_id = ?", (batch_id,))
            self._exec(cursor, "DELETE FROM batches WHERE id = ?", (batch_id,))
        return deleted

    def _delete_unnamed_system_messages(
        self, cursor: Cursor, digests: Sequence[str] | None = None
    ) -> None:
        """Delete the system messages of ``digests`` (``None``: all) that no session names."""
        among = "" if digests is None else f"digest IN ({_marks(digests)}) AND "
        unnamed = (
            f"FROM system_messages WHERE {among}NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.system_digest = system_messages.digest)"
        )
        params = () if digests is None else digests
        # Usually another session still names each (its agent's other sessions): then no lock.
        if not self._exec(cursor, f"SELECT 1 {unnamed} LIMIT 1", params).fetchone():
            return
        if self.hold_system_messages is not None:
            self._exec(cursor, self.hold_system_messages)
        # (A statement of its own after the lock: it reads the sessions the ends committed.)
        self._exec(cursor, f"DELETE {unnamed}", params)


def _marks(values: Sequence[object]) -> str:
    """Return ``?, ?, ...``, one placeholder for each of ``values``."""
    return ", ".join("?" * len(values))
