"""The PostgreSQL store, for runners on several hosts: ``--database postgresql://...``.

The same queries as SQLite; a claim selects its row ``FOR UPDATE SKIP LOCKED`` so concurrent
runners each take a different run without waiting on one another, and migrations hold a
transaction-level advisory lock so two processes starting at once apply them once.
The driver is psycopg 3 (``pip install 'agentshape[server]'``).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from agent_contracts.errors import ConfigError
from agent_coordinator.store.base import Cursor, SqlStore

__all__ = ["PostgresStore", "redact_url"]

_MIGRATION_LOCK = 7_312_001
"""The advisory lock key migrations take."""


def redact_url(url: str) -> str:
    """Return ``url`` without its password, for printing."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


class PostgresStore(SqlStore):
    """Runs and sessions in a PostgreSQL database.

    Args:
        url: A ``postgresql://user:password@host:port/database`` URL.

    Raises:
        ConfigError: psycopg is not installed.
    """

    serial = "BIGSERIAL PRIMARY KEY"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    placeholder = "%s"

    def __init__(self, url: str) -> None:
        super().__init__()
        try:
            import psycopg
        except ImportError as error:  # pragma: no cover - the server extra installs it
            raise ConfigError(
                "PostgreSQL needs psycopg: pip install 'agentshape[server]'"
            ) from error
        self._psycopg = psycopg
        self.integrity_errors = (psycopg.errors.UniqueViolation,)
        self._dsn = url
        self.url = redact_url(url)

    def _connect(self) -> object:
        return self._psycopg.connect(self._dsn, autocommit=True)

    def _close(self, connection: object) -> None:
        assert isinstance(connection, self._psycopg.Connection)
        connection.close()

    def _cursor(self, connection: object) -> Cursor:
        assert isinstance(connection, self._psycopg.Connection)
        cursor: Cursor = connection.cursor()
        return cursor

    def _lock_migrations(self, cursor: Cursor) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
