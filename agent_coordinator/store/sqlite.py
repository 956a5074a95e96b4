"""The embedded store: one SQLite file in WAL mode, the default with no configuration.

Writes take SQLite's single write lock up front (``BEGIN IMMEDIATE``), which makes a claim the
one-writer equivalent of PostgreSQL's ``FOR UPDATE SKIP LOCKED``: two runners, in one process or
several, never claim the same run. Readers never wait for the writer (WAL).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_coordinator.store.base import Cursor, SqlStore

__all__ = ["DEFAULT_DATABASE", "SqliteStore"]

DEFAULT_DATABASE = Path(".agentshape/coordinator.db")
"""Where the service keeps its data when given no ``--database``."""


class SqliteStore(SqlStore):
    """Runs and sessions in one SQLite file.

    Args:
        path: The file; it and its directory are created when missing.
        timeout: Seconds a write waits for another process's lock.
    """

    serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
    begin_write = "BEGIN IMMEDIATE"
    serialize_writes = True
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: str | Path = DEFAULT_DATABASE, *, timeout: float = 30.0) -> None:
        super().__init__()
        self.path = Path(path).absolute()
        self.url = str(self.path)
        self.timeout = timeout
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        return connection

    def _lock_migrations(self, cursor: Cursor) -> None:
        """Nothing to do: ``BEGIN IMMEDIATE`` already holds the only write lock."""

    def _close(self, connection: object) -> None:
        assert isinstance(connection, sqlite3.Connection)
        connection.close()

    def _cursor(self, connection: object) -> Cursor:
        assert isinstance(connection, sqlite3.Connection)
        return connection.cursor()
