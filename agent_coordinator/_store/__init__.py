"""Where the service keeps runs, sessions, attempts and events: SQLite or PostgreSQL.

:func:`open_store` picks the implementation from the ``--database`` value and applies the
migrations; both implementations are :class:`SqlStore` and pass the same tests.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent_coordinator._store.base import SqlStore
from agent_coordinator._store.claims import DEFAULT_MAX_CLAIMS
from agent_coordinator._store.postgres import PostgresStore, redact_url
from agent_coordinator._store.records import (
    TERMINAL,
    Claim,
    ClaimEnd,
    ClaimRecord,
    DeliveryRecord,
    DeliveryState,
    EventRecord,
    LeaseState,
    NewRun,
    RunInput,
    RunKind,
    RunRecord,
    RunState,
    SessionRecord,
)
from agent_coordinator._store.sqlite import DEFAULT_DATABASE, SqliteStore

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_MAX_CLAIMS",
    "TERMINAL",
    "Claim",
    "ClaimEnd",
    "ClaimRecord",
    "DeliveryRecord",
    "DeliveryState",
    "EventRecord",
    "LeaseState",
    "NewRun",
    "PostgresStore",
    "RunInput",
    "RunKind",
    "RunRecord",
    "RunState",
    "SessionRecord",
    "SqlStore",
    "SqliteStore",
    "open_store",
    "redact_url",
]


def open_store(database: str | Path | None = None, *, migrate: bool = True) -> SqlStore:
    """Open (and migrate) the store a ``--database`` value names.

    Args:
        database: ``postgresql://...`` (or ``postgres://...``) for PostgreSQL; a file path (or
            ``sqlite:///path``) for SQLite; ``None`` for ``.agentshape/coordinator.db``.
        migrate: ``False`` opens a store only if its tables are up to date (or it has none
            yet: ``store.migrate(apply=False)`` says 0), and changes nothing in it (for a dry
            run): a SQLite file is read through read-only connections.

    Returns:
        The store, its tables up to date (with ``migrate=False``, or none yet).

    Raises:
        ConfigError: PostgreSQL was asked for and psycopg is not installed; the database is
            not a store (a file that is not SQLite's, or a database holding other tables
            than a store's and none of its own); with ``migrate=False``, its tables are not
            up to date.
        StoreUnavailable: The database cannot be reached (its pools are closed, so nothing
            keeps trying to connect in the background).
    """
    text = str(database) if database is not None else str(DEFAULT_DATABASE)
    store: SqlStore
    if text.startswith(("postgresql://", "postgres://")):
        with _pool_quiet_while_opening():
            store = PostgresStore(text)
            return _migrated(store, migrate)
    path = text.removeprefix("sqlite:///").removeprefix("sqlite://")
    return _migrated(SqliteStore(path, read_only=not migrate), migrate)


def _migrated(store: SqlStore, migrate: bool) -> SqlStore:
    try:
        store.migrate(apply=migrate)
    except BaseException:
        # A PostgreSQL store's pool keeps connecting in worker threads, each failure logged:
        # stopped here, so none is written after (or into) the caller's own message.
        store.close()
        raise
    return store


@contextmanager
def _pool_quiet_while_opening() -> Iterator[None]:
    """Keep psycopg_pool from logging each failed connection attempt while the store opens.

    Opening waits for a first connection, and the pool's threads log a warning per attempt: a
    database that cannot be reached would print several before the one error that says so.
    Once the store is open, a connection lost is logged as before.
    """
    pool_logger = logging.getLogger("psycopg.pool")

    def opening(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("error connecting")

    pool_logger.addFilter(opening)
    try:
        yield
    finally:
        pool_logger.removeFilter(opening)
