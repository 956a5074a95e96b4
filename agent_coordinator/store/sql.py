"""The store's SQL plumbing: connections per thread, transactions, migrations, row decoding.

:class:`SqlBase` says nothing about runs; a subclass (SQLite, PostgreSQL) only says how to connect,
how a write transaction begins, how parameters are written and how a claim skips rows other
runners hold. Every query is written once, with ``?`` parameters.
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from typing import Protocol

from pydantic import JsonValue

from agent_coordinator.store.migrations import MIGRATIONS
from agent_coordinator.store.records import (
    RunInput,
    RunRecord,
    SessionRecord,
)

__all__ = [
    "RUN_COLUMNS",
    "SESSION_COLUMNS",
    "Cursor",
    "SqlBase",
    "dumps",
    "filters",
    "loads",
    "run_record",
    "session_record",
]

RUN_COLUMNS = (
    "id, seq, session_id, kind, agent_name, status, input, idempotency_key, request_hash, "
    "result, error, lease_owner, lease_expires_at, claims, cancel_requested, created_at, "
    "started_at, finished_at"
)
SESSION_COLUMNS = (
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


def dumps(value: object) -> str:
    """Return ``value`` as compact JSON text, for a TEXT column."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def loads(value: object) -> JsonValue:
    """Return a TEXT column's JSON value (``NULL`` gives ``None``)."""
    return None if value is None else json.loads(str(value))


def run_record(row: Sequence[object]) -> RunRecord:
    """Return a row of :data:`RUN_COLUMNS` as a run."""
    names = [name.strip() for name in RUN_COLUMNS.split(",")]
    data = dict(zip(names, row, strict=True))
    data["input"] = RunInput.model_validate_json(str(data["input"]))
    data["result"] = loads(data["result"])
    data["error"] = loads(data["error"])
    data["cancel_requested"] = bool(data["cancel_requested"])
    return RunRecord.model_validate(data)


def session_record(row: Sequence[object]) -> SessionRecord:
    """Return a row of :data:`SESSION_COLUMNS` as a session."""
    names = [name.strip() for name in SESSION_COLUMNS.split(",")]
    data = dict(zip(names, row, strict=True))
    data["transcript"] = loads(data["transcript"])
    return SessionRecord.model_validate(data)


class SqlBase(ABC):
    """A SQL database the store talks to.

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
    serialize_writes: bool = False
    """Queue this process's write transactions behind one lock (SQLite has one writer anyway, and
    its busy handler sleeps far longer than a lock hand-over takes)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._connections: list[object] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()

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
        with self._write_lock if write and self.serialize_writes else nullcontext():
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


def filters(*, after: int | None = None, **equal: str | None) -> tuple[str, list[object]]:
    """Return a ``WHERE`` clause (or nothing) and its parameters: ``seq < after``, columns equal."""
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
