"""The PostgreSQL store, for runners on several hosts: ``--database postgresql://...``.

The same queries as SQLite; a claim selects its row ``FOR UPDATE SKIP LOCKED`` so concurrent
runners each take a different run without waiting on one another, and migrations hold a
transaction-level advisory lock so two processes starting at once apply them once.
The driver is psycopg 3 with its connection pool (``pip install 'agentshape[server]'``).

Each transaction borrows a connection from the pool, so a database that restarts costs the
connections it broke, not the service (see :meth:`~agent_coordinator._store.sql.SqlBase.call`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from agent_contracts._errors import ConfigError
from agent_coordinator._errors import StoreFull, StoreUnavailable
from agent_coordinator._store.base import Cursor, SqlStore
from agent_coordinator._store.listener import Listener

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore", "redact_url"]

_MIGRATION_LOCK = 7_312_001
"""The advisory lock key migrations take."""

_GONE_STATES = frozenset({"57P01", "57P02", "57P03"})
"""Server shutting down or starting (admin shutdown, crash shutdown, cannot connect now); the
other connection failures are class ``08``."""


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
    """Runs and sessions in a PostgreSQL database, over a pool of connections.

    Args:
        url: A ``postgresql://user:password@host:port/database`` URL.
        max_connections: The most connections the pool opens (one per worker thread at most).
        wait_s: Seconds a transaction waits for a connection before it answers
            ``StoreUnavailable``.

    Raises:
        ConfigError: psycopg or psycopg_pool is not installed.
    """

    serial = "BIGSERIAL PRIMARY KEY"
    error_type = "(r.error::json ->> 'type')"
    greatest = "GREATEST"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    lock_rows = " FOR UPDATE"
    placeholder = "%s"
    wakes_runners = True

    def __init__(self, url: str, *, max_connections: int = 32, wait_s: float = 3.0) -> None:
        super().__init__()
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout
        except ImportError as error:  # pragma: no cover - the server extra installs them
            raise ConfigError(
                "PostgreSQL needs psycopg and psycopg_pool: pip install 'agentshape[server]'"
            ) from error
        self._psycopg = psycopg
        self._pipelines = psycopg.Pipeline.is_supported()
        self._pool_timeout = PoolTimeout
        self.integrity_errors = (psycopg.errors.UniqueViolation,)
        self._dsn = url
        self.url = redact_url(url)
        self.wait_s = wait_s
        self._checking = threading.Lock()
        self._pool: ConnectionPool[psycopg.Connection[tuple[object, ...]]] = ConnectionPool(
            url,
            kwargs={"autocommit": True},
            min_size=1,
            max_size=max_connections,
            timeout=wait_s,
            name="agentshape",
            open=True,
        )
        self._listener = Listener(
            lambda: psycopg.connect(url, autocommit=True, connect_timeout=max(2, round(wait_s))),
            name="agentshape-listen",
        )

    def listen(self, channel: str, subscriber: Callable[[str], object]) -> Callable[[], None]:
        """Call ``subscriber`` (from the listening thread) on each notification on ``channel``.

        Args:
            channel: ``RUN_QUEUED`` or ``RUN_ENDED`` of :mod:`~agent_coordinator._store.listener`.
            subscriber: Gets the payload (a run id, or ``""`` after the listening connection
                was made again: anything may have happened meanwhile).

        Returns:
            What to call to stop.
        """
        return self._listener.subscribe(channel, subscriber)

    def _notify(self, cursor: Cursor, channel: str, payload: str) -> None:
        cursor.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    @contextmanager
    def _checkout(self, *, write: bool) -> Iterator[object]:
        try:
            connection = self._pool.getconn()
        except self._pool_timeout as error:
            raise StoreUnavailable(self._unreachable()) from error
        try:
            yield connection
        finally:
            # A broken connection is closed here and the pool opens another.
            self._pool.putconn(connection)

    def _unreachable(self) -> str:
        """Say why no connection could be had, from one direct attempt to connect."""
        try:
            self._psycopg.connect(self._dsn, connect_timeout=max(2, round(self.wait_s))).close()
        except self._psycopg.Error as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            return f"the database at {self.url} cannot be reached: {reason}"
        return f"no connection to the database at {self.url} was free within {self.wait_s} s"

    def _unusable(
        self, error: Exception, connection: object, *, committing: bool
    ) -> StoreUnavailable | StoreFull | None:
        assert isinstance(connection, self._psycopg.Connection)
        if isinstance(error, self._psycopg.errors.DiskFull):
            return StoreFull(f"the disk holding the database at {self.url} is full: {error}")
        state = getattr(error, "sqlstate", None) or ""
        lost = connection.broken or state.startswith("08") or state in _GONE_STATES
        if not isinstance(error, self._psycopg.OperationalError) or not lost:
            return None
        self._drop_broken()
        reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        # A COMMIT that got no answer may have been applied: not tried again.
        return StoreUnavailable(
            f"the connection to the database at {self.url} was lost: {reason}",
            retryable=not committing,
        )

    def _drop_broken(self) -> None:
        """Have the pool test its idle connections: a restarted server broke all of them."""
        if self._checking.acquire(blocking=False):
            try:
                self._pool.check()
            finally:
                self._checking.release()

    def _pipeline(self, connection: object) -> AbstractContextManager[object]:
        assert isinstance(connection, self._psycopg.Connection)
        if not self._pipelines:  # a libpq before 14: each statement waits for its answer
            return nullcontext()
        return connection.pipeline()

    def _cursor(self, connection: object) -> Cursor:
        assert isinstance(connection, self._psycopg.Connection)
        cursor: Cursor = connection.cursor()
        return cursor

    def _lock_migrations(self, cursor: Cursor) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def close(self) -> None:
        """Stop listening; close the pool and every connection in it."""
        self._listener.close()
        self._pool.close()
