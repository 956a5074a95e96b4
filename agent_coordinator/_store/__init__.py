"""Where the service keeps runs, sessions, attempts and events: SQLite or PostgreSQL.

:func:`open_store` picks the implementation from the ``--database`` value and applies the
migrations; both implementations are :class:`SqlStore` and pass the same tests.
"""

from __future__ import annotations

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


def open_store(database: str | Path | None = None) -> SqlStore:
    """Open (and migrate) the store a ``--database`` value names.

    Args:
        database: ``postgresql://...`` (or ``postgres://...``) for PostgreSQL; a file path (or
            ``sqlite:///path``) for SQLite; ``None`` for ``.agentshape/coordinator.db``.

    Returns:
        The store, its tables up to date.

    Raises:
        ConfigError: PostgreSQL was asked for and psycopg is not installed.
        StoreUnavailable: The database cannot be reached (its pools are closed, so nothing
            keeps trying to connect in the background).
    """
    text = str(database) if database is not None else str(DEFAULT_DATABASE)
    store: SqlStore
    if text.startswith(("postgresql://", "postgres://")):
        store = PostgresStore(text)
    else:
        store = SqliteStore(text.removeprefix("sqlite:///").removeprefix("sqlite://"))
    try:
        store.migrate()
    except BaseException:
        # A PostgreSQL store's pool keeps connecting in worker threads, each failure logged:
        # stopped here, so none is written after (or into) the caller's own message.
        store.close()
        raise
    return store
