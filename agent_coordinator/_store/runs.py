"""Storing runs and reading runs, sessions and attempts."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import JsonValue

from agent_coordinator._errors import Conflict, NotFound
from agent_coordinator._store.listener import RUN_QUEUED
from agent_coordinator._store.records import NewRun, RunRecord, SessionRecord
from agent_coordinator._store.sql import (
    RUN_COLUMNS,
    SESSION_COLUMNS,
    Cursor,
    SqlBase,
    filters,
    loads,
    read_attempt,
    run_record,
    session_record,
)

__all__ = ["RunQueries"]


class RunQueries(SqlBase):
    """Runs and sessions: stored before they are answered, read back for the API."""

    def create_run(self, new: NewRun) -> tuple[RunRecord, bool]:
        """Store a run (and the session it starts) before anyone is told about it."""
        try:
            return self._create_run(new)
        except self.integrity_errors:
            existing = self._by_key(new.idempotency_key)
            if existing is None:
                raise
            return self._same_request(existing, new), False

    def _by_key(self, key: str | None) -> RunRecord | None:
        if key is None:
            return None
        with self._tx(write=False) as cursor:
            row = self._exec(
                cursor, f"SELECT {RUN_COLUMNS} FROM runs WHERE idempotency_key = ?", (key,)
            ).fetchone()
            return None if row is None else self._read(cursor, row)

    @staticmethod
    def _same_request(existing: RunRecord, new: NewRun) -> RunRecord:
        if existing.request_hash != new.request_hash:
            raise Conflict(
                "IdempotencyConflict",
                f"the Idempotency-Key {new.idempotency_key!r} was used for a different request "
                f"(run {existing.id})",
            )
        return existing

    def _create_run(self, new: NewRun) -> tuple[RunRecord, bool]:
        now = time.time()
        with self._tx() as cursor:
            if new.idempotency_key is not None:
                row = self._exec(
                    cursor,
                    f"SELECT {RUN_COLUMNS} FROM runs WHERE idempotency_key = ?",
                    (new.idempotency_key,),
                ).fetchone()
                if row is not None:
                    return self._same_request(self._read(cursor, row), new), False
            row = self._insert_run(cursor, new, now)
            self._notify(cursor, RUN_QUEUED, new.id)
        assert row is not None
        return run_record(row), True

    def _insert_run(self, cursor: Cursor, new: NewRun, now: float) -> Sequence[object] | None:
        """Insert a new run, with the session it starts (or marking its session queued)."""
        if new.kind == "start_session":
            self._exec(
                cursor,
                f"INSERT INTO sessions ({SESSION_COLUMNS.replace('seq, ', '')}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.session_id,
                    new.agent_name,
                    "queued",
                    "[]",
                    new.parent_session_id,
                    new.depth,
                    now,
                    now,
                ),
            )
        else:
            self._check_resumable(cursor, new.session_id)
            updated = self._exec(
                cursor,
                "UPDATE sessions SET status = 'queued', updated_at = ? WHERE id = ?",
                (now, new.session_id),
            ).rowcount
            if updated == 0:  # deleted (PostgreSQL) since it was read above
                raise NotFound("SessionNotFound", f"no session {new.session_id!r}")
        return self._exec(
            cursor,
            f"INSERT INTO runs ({RUN_COLUMNS.replace('seq, ', '')}) "
            "VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, NULL, NULL, NULL, NULL, 0, 0, ?, NULL, "
            f"NULL) RETURNING {RUN_COLUMNS}",
            (
                new.id,
                new.session_id,
                new.kind,
                new.agent_name,
                new.input.model_dump_json(exclude_defaults=True),
                new.idempotency_key,
                new.request_hash,
                now,
            ),
        ).fetchone()

    def _read(self, cursor: Cursor, row: Sequence[object]) -> RunRecord:
        """Return one run read from the ``runs`` table, its result whole (transcript too)."""
        run = run_record(row)
        self._complete(cursor, [run], transcripts=True)
        return run

    def _check_resumable(self, cursor: Cursor, session_id: str) -> None:
        row = self._exec(
            cursor, "SELECT status FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise NotFound("SessionNotFound", f"no session {session_id!r}")
        busy = self._exec(
            cursor,
            "SELECT id FROM runs WHERE session_id = ? AND status IN ('queued', 'running')",
            (session_id,),
        ).fetchone()
        if busy is not None:
            raise Conflict(
                "SessionBusy",
                f"session {session_id!r} has run {busy[0]} still in progress; resume it after "
                "that run ends",
            )

    def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run with this id, or ``None``."""
        with self._tx(write=False) as cursor:
            row = self._exec(
                cursor, f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            return None if row is None else self._read(cursor, row)

    def list_runs(
        self,
        *,
        limit: int,
        after: int | None = None,
        status: str | None = None,
        agent_name: str | None = None,
        session_id: str | None = None,
    ) -> list[RunRecord]:
        """Return runs, newest first, filtered, at most ``limit``, older than seq ``after``."""
        where, params = filters(
            after=after, status=status, agent_name=agent_name, session_id=session_id
        )
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                f"SELECT {RUN_COLUMNS} FROM runs{where} ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
            runs = [run_record(row) for row in rows]
            self._complete(cursor, runs, transcripts=False)
        return runs

    def get_session(self, session_id: str) -> SessionRecord | None:
        """Return the session with this id, or ``None``."""
        with self._tx(write=False) as cursor:
            row = self._exec(
                cursor, f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else session_record(row)

    def list_sessions(
        self,
        *,
        limit: int,
        after: int | None = None,
        status: str | None = None,
        agent_name: str | None = None,
        parent_session_id: str | None = None,
    ) -> list[SessionRecord]:
        """Return sessions, newest first, filtered, at most ``limit``, older than seq ``after``."""
        where, params = filters(
            after=after,
            status=status,
            agent_name=agent_name,
            parent_session_id=parent_session_id,
        )
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                f"SELECT {SESSION_COLUMNS} FROM sessions{where} ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [session_record(row) for row in rows]

    def session_runs(self, session_id: str) -> list[RunRecord]:
        """Return a session's runs, oldest first (results without the transcript)."""
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                f"SELECT {RUN_COLUMNS} FROM runs WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
            runs = [run_record(row) for row in rows]
            self._complete(cursor, runs, transcripts=False)
        return runs

    def attempts(self, run_id: str) -> list[dict[str, JsonValue]]:
        """Return a run's attempts (the library's ``Attempt`` as JSON), in order."""
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor, "SELECT data FROM attempts WHERE run_id = ? ORDER BY number", (run_id,)
            ).fetchall()
        return [read_attempt(loads(row[0])) for row in rows]

    def count_runs(self, status: str | None = None) -> int:
        """Return how many runs there are (in ``status``, when given)."""
        where, params = filters(status=status)
        with self._tx(write=False) as cursor:
            row = self._exec(cursor, f"SELECT COUNT(*) FROM runs{where}", params).fetchone()
        return int(str(row[0])) if row is not None else 0
