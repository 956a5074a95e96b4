"""Storing runs and reading runs, sessions and attempts."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import JsonValue

from agent_coordinator._errors import Conflict, NotFound
from agent_coordinator._store.listener import RUN_QUEUED
from agent_coordinator._store.records import Claim, NewRun, RunRecord, RunState, SessionRecord
from agent_coordinator._store.sql import (
    RUN_COLUMNS,
    SESSION_COLUMNS,
    TRANSCRIPT_COLUMNS,
    Cursor,
    SqlBase,
    dumps,
    filters,
    loads,
    read_attempt,
    read_transcript,
    run_record,
    session_record,
)

__all__ = ["RunQueries"]

_INSERT_RUN = (
    f"INSERT INTO runs ({RUN_COLUMNS.replace('seq, ', '')}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, 0, ?, ?, NULL) RETURNING seq"
)
"""A new run's row (its values: :func:`_run_values`), only its ``seq`` returned."""


class RunQueries(SqlBase):
    """Runs and sessions: stored before they are answered, read back for the API."""

    def create_run(self, new: NewRun) -> tuple[RunRecord, bool]:
        """Store a run (and the session it starts) before anyone is told about it."""
        try:
            run, _, created = self._create_run(new, None)
        except self.integrity_errors:
            existing = self._stored_before(new)
            if existing is None:
                raise
            return self._same_request(existing, new), False
        return run, created

    def create_claimed_run(
        self, new: NewRun, owner: str, lease_s: float
    ) -> tuple[RunRecord, Claim | None]:
        """Store a run already claimed by ``owner``, a runner of this process that runs it now.

        The run is stored with its lease in one transaction, as :meth:`create_run` and a claim
        would store it, but no runner is told of it: if ``owner`` dies, the lease runs out and
        another runner's claim takes the run over.

        Args:
            new: The run.
            owner: The id of the runner that executes it.
            lease_s: Seconds the lease lasts without renewal.

        Returns:
            The run, and its claim; ``None`` when the idempotency key names an earlier run (the
            run returned), which nobody claimed here.

        Raises:
            Conflict: The idempotency key was used for a different request, or the session has
                a run in progress.
            NotFound: The resumed session does not exist.
        """
        try:
            run, claim, _ = self._create_run(new, (owner, lease_s))
        except self.integrity_errors:
            existing = self._stored_before(new)
            if existing is None:
                raise
            if (
                existing.id == new.id
                and existing.lease_owner == owner
                and existing.status == "running"
                and existing.claims == 1
            ):  # this very call's statement, applied before its connection was lost
                return existing, Claim(run=existing, transcript=[], events=_claimed(owner))
            return self._same_request(existing, new), None
        return run, claim

    def _stored_before(self, new: NewRun) -> RunRecord | None:
        """Return the run stored before ``new`` that a duplicate key means, or ``None``.

        That is the run of ``new``'s idempotency key, or ``new`` itself: a one-statement
        creation sent again after its connection was lost, having been applied the first time.
        """
        with self._tx(write=False) as cursor:
            for column, value in (("idempotency_key", new.idempotency_key), ("id", new.id)):
                if value is None:
                    continue
                row = self._exec(
                    cursor, f"SELECT {RUN_COLUMNS} FROM runs WHERE {column} = ?", (value,)
                ).fetchone()
                if row is not None:
                    return self._read(cursor, row)
        return None

    @staticmethod
    def _same_request(existing: RunRecord, new: NewRun) -> RunRecord:
        if existing.request_hash != new.request_hash:
            raise Conflict(
                "IdempotencyConflict",
                f"the Idempotency-Key {new.idempotency_key!r} was used for a different request "
                f"(run {existing.id})",
            )
        return existing

    def _create_run(
        self, new: NewRun, holder: tuple[str, float] | None
    ) -> tuple[RunRecord, Claim | None, bool]:
        now = time.time()
        if self.one_statement_writes and new.kind == "start_session":
            return self._create_in_one_statement(new, holder, now)
        with self._tx(pipelined=True) as cursor:
            if new.idempotency_key is not None:
                row = self._exec(
                    cursor,
                    f"SELECT {RUN_COLUMNS} FROM runs WHERE idempotency_key = ?",
                    (new.idempotency_key,),
                ).fetchone()
                if row is not None:
                    return self._same_request(self._read(cursor, row), new), None, False
            run, transcript = self._insert_run(cursor, new, now, holder)
            if holder is None:
                self._notify(cursor, RUN_QUEUED, new.id)
                return run, None, True
            claimed = _claimed(holder[0])
            self._insert_rows(
                cursor,
                "events (run_id, type, data, created_at)",
                [(new.id, kind, dumps(data), now) for kind, data in claimed],
            )
        return run, Claim(run=run, transcript=transcript, events=claimed), True

    def _create_in_one_statement(
        self, new: NewRun, holder: tuple[str, float] | None, now: float
    ) -> tuple[RunRecord, Claim | None, bool]:
        """Store a run starting a session as :meth:`_create_run` does, in one statement.

        For :attr:`~agent_coordinator._store.sql.SqlBase.one_statement_writes` stores: the
        session, the run, its claim's event and the notification of a queued run are one
        round trip. A run already stored with the key (or this run, stored by the same call
        before its connection was lost) fails the statement as a duplicate, which the callers
        resolve.
        """
        run = _new_record(new, holder, now)
        claimed = [] if holder is None else _claimed(holder[0])
        query = (
            "WITH session AS (INSERT INTO sessions (id, agent_name, status, transcript, "
            "parent_session_id, depth, created_at, updated_at) VALUES (?, ?, ?, '[]', ?, ?, ?, "
            f"?)), run AS ({_INSERT_RUN})"
        )
        params: list[object] = [
            new.session_id,
            new.agent_name,
            run.status,
            new.parent_session_id,
            new.depth,
            now,
            now,
            *_run_values(run),
        ]
        for kind, data in claimed:
            query += (
                ", claimed AS (INSERT INTO events (run_id, type, data, created_at) "
                "VALUES (?, ?, ?, ?))"
            )
            params += [new.id, kind, dumps(data), now]
        if holder is None:  # the notification is sent when the statement commits
            query += " SELECT seq, pg_notify(?, ?) FROM run"
            params += [RUN_QUEUED, new.id]
        else:
            query += " SELECT seq FROM run"
        # Sent again after a lost connection, an applied statement fails as a duplicate.
        with self._statement(applied_if_lost=False) as cursor:
            row = self._exec(cursor, query, params).fetchone()
        assert row is not None
        run.seq = int(str(row[0]))
        if holder is None:
            return run, None, True
        return run, Claim(run=run, transcript=[], events=claimed), True

    def _insert_run(
        self, cursor: Cursor, new: NewRun, now: float, holder: tuple[str, float] | None
    ) -> tuple[RunRecord, list[JsonValue]]:
        """Insert a new run, with the session it starts (or marking its session queued).

        With a ``holder`` (runner id, lease seconds) the run is stored claimed by it, and its
        session ``running``; the session's transcript is returned for it to continue.

        Returns:
            The run as stored, and the transcript its claim continues (empty without one).
        """
        status: RunState = "queued" if holder is None else "running"
        transcript: list[JsonValue] = []
        if new.kind == "start_session":
            self._exec(
                cursor,
                "INSERT INTO sessions (id, agent_name, status, transcript, parent_session_id, "
                "depth, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.session_id,
                    new.agent_name,
                    status,
                    "[]",
                    new.parent_session_id,
                    new.depth,
                    now,
                    now,
                ),
            )
        else:
            self._check_resumable(cursor, new.session_id)
            found = self._exec(
                cursor,
                "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ? RETURNING "
                + ("id" if holder is None else TRANSCRIPT_COLUMNS),
                (status, now, new.session_id),
            ).fetchone()
            if found is None:  # deleted (PostgreSQL) since it was read above
                raise NotFound("SessionNotFound", f"no session {new.session_id!r}")
            if holder is not None:
                transcript = read_transcript(*found)
        # Only seq is read back: the record is built from the values written, so the input is
        # neither returned by the database nor parsed again.
        run = _new_record(new, holder, now)
        row = self._exec(cursor, _INSERT_RUN, _run_values(run)).fetchone()
        assert row is not None
        run.seq = int(str(row[0]))
        return run, transcript

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


def _claimed(owner: str) -> list[tuple[str, dict[str, JsonValue]]]:
    """The events a run's first claim records (as ``LeaseQueries._take`` does), for its history."""
    return [("run_claimed", {"runner": owner, "claim": 1})]


def _new_record(new: NewRun, holder: tuple[str, float] | None, now: float) -> RunRecord:
    """Return the record of a run about to be inserted (its ``seq`` 0 until it is).

    Args:
        new: The run.
        holder: The runner id and lease seconds of the runner it is stored claimed by, or
            ``None`` for a queued run.
        now: When it is stored.
    """
    return RunRecord.model_construct(
        id=new.id,
        seq=0,
        session_id=new.session_id,
        kind=new.kind,
        agent_name=new.agent_name,
        status="queued" if holder is None else "running",
        input=new.input,
        idempotency_key=new.idempotency_key,
        request_hash=new.request_hash,
        result=None,
        error=None,
        lease_owner=None if holder is None else holder[0],
        lease_expires_at=None if holder is None else now + holder[1],
        claims=0 if holder is None else 1,
        cancel_requested=False,
        created_at=now,
        started_at=None if holder is None else now,
        finished_at=None,
    )


def _run_values(run: RunRecord) -> list[object]:
    """Return the parameters of :data:`_INSERT_RUN` for a run :func:`_new_record` built."""
    return [
        run.id,
        run.session_id,
        run.kind,
        run.agent_name,
        run.status,
        run.input.model_dump_json(exclude_defaults=True),
        run.idempotency_key,
        run.request_hash,
        run.lease_owner,
        run.lease_expires_at,
        run.claims,
        run.created_at,
        run.started_at,
    ]
