"""The store: one implementation over SQL, for SQLite and PostgreSQL alike.

:class:`SqlStore` holds every query; a subclass only says how to connect, how a write transaction
begins, how parameters are written, and how a claim skips rows other runners hold. Every method is
one transaction, so a run is stored before it is answered, a claim hands a run to exactly one
runner, and a run ends at most once: :meth:`SqlStore.finish` only succeeds for the runner that
still holds the run's lease.

Methods block; async callers run them in a thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Protocol

from pydantic import JsonValue

from agent_coordinator.errors import Conflict, NotFound
from agent_coordinator.store.migrations import MIGRATIONS
from agent_coordinator.store.records import (
    TERMINAL,
    Claim,
    EventRecord,
    LeaseState,
    NewRun,
    RunInput,
    RunRecord,
    RunState,
    SessionRecord,
)

__all__ = ["Cursor", "SqlStore"]

_RUN_COLUMNS = (
    "id, seq, session_id, kind, agent_name, status, input, idempotency_key, request_hash, "
    "result, error, lease_owner, lease_expires_at, claims, cancel_requested, created_at, "
    "started_at, finished_at"
)
_SESSION_COLUMNS = (
    "id, seq, agent_name, status, transcript, parent_session_id, depth, created_at, updated_at"
)


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses."""

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed."""

    def execute(self, query: str, params: Sequence[object] = ..., /) -> object:
        """Run one statement."""

    def fetchone(self) -> Sequence[object] | None:
        """Return the next row."""

    def fetchall(self) -> Sequence[Sequence[object]]:
        """Return the remaining rows."""


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _loads(value: object) -> JsonValue:
    return None if value is None else json.loads(str(value))


def _run(row: Sequence[object]) -> RunRecord:
    names = [name.strip() for name in _RUN_COLUMNS.split(",")]
    data = dict(zip(names, row, strict=True))
    data["input"] = RunInput.model_validate_json(str(data["input"]))
    data["result"] = _loads(data["result"])
    data["error"] = _loads(data["error"])
    data["cancel_requested"] = bool(data["cancel_requested"])
    return RunRecord.model_validate(data)


def _session(row: Sequence[object]) -> SessionRecord:
    names = [name.strip() for name in _SESSION_COLUMNS.split(",")]
    data = dict(zip(names, row, strict=True))
    data["transcript"] = _loads(data["transcript"])
    return SessionRecord.model_validate(data)


class SqlStore(ABC):
    """Runs, sessions, attempts and events in a SQL database.

    Subclasses set :attr:`url`, :attr:`serial`, :attr:`skip_locked`, :attr:`begin_write` and
    :attr:`placeholder`, and implement :meth:`_connect`.
    """

    url: str
    """Where the data is, for people (a file path or a ``postgresql://`` URL without password)."""
    serial: str
    """The column type of an auto-numbered 64-bit primary key."""
    skip_locked: str = ""
    """What a claim's row selection ends with so concurrent runners skip each other's rows."""
    begin_write: str = "BEGIN"
    """The statement that starts a write transaction."""
    placeholder: str = "?"
    """How the driver writes a query parameter."""
    integrity_errors: tuple[type[Exception], ...] = ()
    """The driver's unique-constraint violation exceptions."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._connections: list[object] = []
        self._lock = threading.Lock()

    # -- connections and transactions ---------------------------------------------------------

    @abstractmethod
    def _connect(self) -> object:
        """Open a new autocommit connection for the calling thread."""

    @abstractmethod
    def _close(self, connection: object) -> None:
        """Close one connection."""

    @abstractmethod
    def _cursor(self, connection: object) -> Cursor:
        """Return a cursor of ``connection``."""

    @abstractmethod
    def _lock_migrations(self, cursor: Cursor) -> None:
        """Keep two processes from migrating at once, inside the migration's transaction."""

    def _connection(self) -> object:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    def _q(self, query: str) -> str:
        return query if self.placeholder == "?" else query.replace("?", self.placeholder)

    @contextmanager
    def _tx(self, *, write: bool = True) -> Iterator[Cursor]:
        cursor = self._cursor(self._connection())
        cursor.execute(self.begin_write if write else "BEGIN")
        try:
            yield cursor
        except BaseException:
            with suppress(Exception):
                cursor.execute("ROLLBACK")
            raise
        cursor.execute("COMMIT")

    def _exec(self, cursor: Cursor, query: str, params: Sequence[object] = ()) -> Cursor:
        cursor.execute(self._q(query), tuple(params))
        return cursor

    def migrate(self) -> int:
        """Create or upgrade the tables, applying every migration not yet recorded.

        Returns:
            The schema version now in place.
        """
        with self._tx() as cursor:
            self._lock_migrations(cursor)
            self._exec(
                cursor,
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)",
            )
            row = self._exec(cursor, "SELECT MAX(version) FROM schema_migrations").fetchone()
            current = int(str(row[0])) if row is not None and row[0] is not None else 0
            for version, statements in MIGRATIONS:
                if version <= current:
                    continue
                for statement in statements:
                    self._exec(cursor, statement.format(serial=self.serial))
                self._exec(
                    cursor,
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                    (version, time.time()),
                )
                current = version
        return current

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            with suppress(Exception):
                self._close(connection)
        self._local = threading.local()

    # -- runs and sessions --------------------------------------------------------------------

    def create_run(self, new: NewRun) -> tuple[RunRecord, bool]:
        """Store a run (and the session it starts) before anyone is told about it.

        Args:
            new: The run.

        Returns:
            The stored run and whether it is new; a run already stored under the same
            idempotency key is returned instead of a second one.

        Raises:
            SessionNotFound: A resume names a session that does not exist.
            SessionBusy: A resume names a session with a run still queued or running.
            IdempotencyConflict: The key was used before for a different request.
        """
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
                cursor, f"SELECT {_RUN_COLUMNS} FROM runs WHERE idempotency_key = ?", (key,)
            ).fetchone()
        return None if row is None else _run(row)

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
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE idempotency_key = ?",
                    (new.idempotency_key,),
                ).fetchone()
                if row is not None:
                    return self._same_request(_run(row), new), False
            if new.kind == "start_session":
                self._exec(
                    cursor,
                    f"INSERT INTO sessions ({_SESSION_COLUMNS.replace('seq, ', '')}) "
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
                self._exec(
                    cursor,
                    "UPDATE sessions SET status = 'queued', updated_at = ? WHERE id = ?",
                    (now, new.session_id),
                )
            self._exec(
                cursor,
                f"INSERT INTO runs ({_RUN_COLUMNS.replace('seq, ', '')}) "
                "VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, NULL, NULL, NULL, NULL, 0, 0, ?, NULL, "
                "NULL)",
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
            )
            row = self._exec(
                cursor, f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (new.id,)
            ).fetchone()
        assert row is not None
        return _run(row), True

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
                cursor, f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
        return None if row is None else _run(row)

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
        where, params = _filters(
            after=after, status=status, agent_name=agent_name, session_id=session_id
        )
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                f"SELECT {_RUN_COLUMNS} FROM runs{where} ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [_run(row) for row in rows]

    def get_session(self, session_id: str) -> SessionRecord | None:
        """Return the session with this id, or ``None``."""
        with self._tx(write=False) as cursor:
            row = self._exec(
                cursor, f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else _session(row)

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
        where, params = _filters(
            after=after,
            status=status,
            agent_name=agent_name,
            parent_session_id=parent_session_id,
        )
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                f"SELECT {_SESSION_COLUMNS} FROM sessions{where} ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [_session(row) for row in rows]

    def session_runs(self, session_id: str) -> list[RunRecord]:
        """Return a session's runs, oldest first."""
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [_run(row) for row in rows]

    def attempts(self, run_id: str) -> list[dict[str, JsonValue]]:
        """Return a run's attempts (the library's ``Attempt`` as JSON), in order."""
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor, "SELECT data FROM attempts WHERE run_id = ? ORDER BY number", (run_id,)
            ).fetchall()
        return [json.loads(str(row[0])) for row in rows]

    # -- runners ------------------------------------------------------------------------------

    def claim(self, owner: str, lease_s: float) -> Claim | None:
        """Hand the oldest waiting run (or one whose runner's lease ran out) to ``owner``.

        Args:
            owner: The runner's id.
            lease_s: Seconds the lease lasts unless renewed.

        Returns:
            The claimed run and its session's transcript, or ``None`` when nothing waits.
        """
        now = time.time()
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                f"UPDATE runs SET status = 'running', lease_owner = ?, lease_expires_at = ?, "
                "claims = claims + 1, started_at = COALESCE(started_at, ?) "
                "WHERE id = (SELECT id FROM runs WHERE status = 'queued' OR "
                "(status = 'running' AND lease_expires_at < ?) ORDER BY seq LIMIT 1"
                f"{self.skip_locked}) RETURNING {_RUN_COLUMNS}",
                (owner, now + lease_s, now, now),
            ).fetchone()
            if row is None:
                return None
            run = _run(row)
            self._exec(
                cursor,
                "UPDATE sessions SET status = 'running', updated_at = ? WHERE id = ?",
                (now, run.session_id),
            )
            found = self._exec(
                cursor, "SELECT transcript FROM sessions WHERE id = ?", (run.session_id,)
            ).fetchone()
        transcript = _loads(found[0]) if found is not None else []
        return Claim(run=run, transcript=transcript if isinstance(transcript, list) else [])

    def renew(self, run_id: str, owner: str, lease_s: float) -> LeaseState:
        """Extend ``owner``'s lease on a run and say whether it was asked to cancel."""
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ? "
                "AND status = 'running' RETURNING cancel_requested",
                (time.time() + lease_s, run_id, owner),
            ).fetchone()
        if row is None:
            return LeaseState(held=False)
        return LeaseState(held=True, cancel_requested=bool(row[0]))

    def finish(
        self,
        run_id: str,
        owner: str,
        *,
        status: RunState,
        result: dict[str, JsonValue] | None,
        error: dict[str, JsonValue] | None,
        attempts: Sequence[dict[str, JsonValue]] = (),
        events: Sequence[tuple[str, dict[str, JsonValue]]] = (),
        transcript: Sequence[JsonValue] | None = None,
    ) -> bool:
        """End a run ``owner`` still holds, with its attempts, last events and transcript.

        Returns:
            Whether the run was ended; ``False`` when the lease was lost (another runner has the
            run), in which case nothing is written.
        """
        now = time.time()
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE runs SET status = ?, result = ?, error = ?, finished_at = ?, "
                "lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND lease_owner = ? "
                "AND status = 'running' RETURNING session_id",
                (
                    status,
                    None if result is None else _json(result),
                    None if error is None else _json(error),
                    now,
                    run_id,
                    owner,
                ),
            ).fetchone()
            if row is None:
                return False
            session_id = str(row[0])
            self._exec(cursor, "DELETE FROM attempts WHERE run_id = ?", (run_id,))
            for number, attempt in enumerate(attempts, start=1):
                self._exec(
                    cursor,
                    "INSERT INTO attempts (run_id, number, data) VALUES (?, ?, ?)",
                    (run_id, number, _json(attempt)),
                )
            self._insert_events(cursor, run_id, events, now)
            if transcript:
                self._exec(
                    cursor,
                    "UPDATE sessions SET status = ?, transcript = ?, updated_at = ? WHERE id = ?",
                    (status, _json(list(transcript)), now, session_id),
                )
            else:
                self._exec(
                    cursor,
                    "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?",
                    (status, now, session_id),
                )
        return True

    def release(self, run_id: str, owner: str) -> bool:
        """Put a run ``owner`` holds back in the queue (a runner shutting down)."""
        now = time.time()
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL "
                "WHERE id = ? AND lease_owner = ? AND status = 'running' RETURNING session_id",
                (run_id, owner),
            ).fetchone()
            if row is None:
                return False
            self._exec(
                cursor,
                "UPDATE sessions SET status = 'queued', updated_at = ? WHERE id = ?",
                (now, str(row[0])),
            )
            self._insert_events(cursor, run_id, [("run_requeued", {"reason": "shutdown"})], now)
        return True

    def request_cancel(self, run_id: str) -> RunRecord:
        """Cancel a queued run at once, or ask the runner of a running one to stop it.

        Raises:
            RunNotFound: No run has this id.
            RunNotCancellable: The run has already ended.
        """
        now = time.time()
        error = _json({"type": "cancelled", "message": "the run was cancelled before it started"})
        with self._tx() as cursor:
            row = self._exec(
                cursor, "SELECT status, session_id FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise NotFound("RunNotFound", f"no run {run_id!r}")
            status, session_id = str(row[0]), str(row[1])
            if status in TERMINAL:
                raise Conflict("RunNotCancellable", f"run {run_id!r} has already {status}")
            if status == "queued":
                self._exec(
                    cursor,
                    "UPDATE runs SET status = 'cancelled', error = ?, finished_at = ? WHERE id = ?",
                    (error, now, run_id),
                )
                self._exec(
                    cursor,
                    "UPDATE sessions SET status = 'cancelled', updated_at = ? WHERE id = ?",
                    (now, session_id),
                )
                self._insert_events(cursor, run_id, [("run_cancelled", {})], now)
            else:
                self._exec(cursor, "UPDATE runs SET cancel_requested = 1 WHERE id = ?", (run_id,))
            found = self._exec(
                cursor, f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
        assert found is not None
        return _run(found)

    # -- events -------------------------------------------------------------------------------

    def _insert_events(
        self,
        cursor: Cursor,
        run_id: str,
        events: Sequence[tuple[str, dict[str, JsonValue]]],
        now: float,
    ) -> None:
        for kind, data in events:
            self._exec(
                cursor,
                "INSERT INTO events (run_id, type, data, created_at) VALUES (?, ?, ?, ?)",
                (run_id, kind, _json(data), now),
            )

    def add_events(self, run_id: str, events: Sequence[tuple[str, dict[str, JsonValue]]]) -> None:
        """Append events to a run's log."""
        if events:
            with self._tx() as cursor:
                self._insert_events(cursor, run_id, events, time.time())

    def events_after(self, run_id: str, after: int = 0, limit: int = 500) -> list[EventRecord]:
        """Return a run's events with an id above ``after``, oldest first."""
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                "SELECT id, run_id, type, data, created_at FROM events "
                "WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?",
                (run_id, after, limit),
            ).fetchall()
        return [
            EventRecord(
                id=int(str(row[0])),
                run_id=str(row[1]),
                type=str(row[2]),
                data=json.loads(str(row[3])),
                created_at=float(str(row[4])),
            )
            for row in rows
        ]

    def count_runs(self, status: str | None = None) -> int:
        """Return how many runs there are (in ``status``, when given)."""
        where, params = _filters(status=status)
        with self._tx(write=False) as cursor:
            row = self._exec(cursor, f"SELECT COUNT(*) FROM runs{where}", params).fetchone()
        return int(str(row[0])) if row is not None else 0


def _filters(*, after: int | None = None, **equal: str | None) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if after is not None:
        clauses.append("seq < ?")
        params.append(after)
    for column, value in equal.items():
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
