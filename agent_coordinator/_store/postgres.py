"""The PostgreSQL store, for runners on several hosts: ``--database postgresql://...``.

The same queries as SQLite; a claim selects its row ``FOR UPDATE SKIP LOCKED`` so concurrent
runners each take a different run without waiting on one another, and migrations hold a
transaction-level advisory lock so two processes starting at once apply them once.
The driver is psycopg 3 (``pip install 'agentshape[server]'``).

Each transaction borrows a connection from a pool, so a database that restarts costs the
connections it broke, not the service (see :meth:`~agent_coordinator._store.sql.SqlBase.call`).
From async code (:meth:`PostgresStore.call`) the same blocking-style queries run on the event
loop's thread, over psycopg's async connections, through the greenlet bridge of
:mod:`~agent_coordinator._store.bridge`: the loop serves everything else while a statement waits
for the database, and no worker thread is handed the call. Each event loop has its own pool of
async connections (:mod:`~agent_coordinator._store.loop_pool`), closed when the loop shuts down
(its tasks are cancelled) or the store closes; code outside the bridge (the CLI, migrations,
worker threads) uses psycopg_pool's blocking pool.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from agent_contracts._errors import ConfigError
from agent_coordinator._errors import StoreFull, StoreUnavailable
from agent_coordinator._store.base import Cursor, SqlStore
from agent_coordinator._store.listener import Listener

if TYPE_CHECKING:
    import psycopg

    from agent_coordinator._store.loop_pool import LoopPool

__all__ = ["PostgresStore", "redact_url"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

_MIGRATION_LOCK = 7_312_001
"""The advisory lock key migrations take."""

_GONE_STATES = frozenset({"57P01", "57P02", "57P03"})
"""Server shutting down or starting (admin shutdown, crash shutdown, cannot connect now); the
other connection failures are class ``08``."""

LOOP_CONNECTIONS = 6
"""Transactions an event loop runs at once, at most (its pool's connections).

A few: the store's transactions are short, and many at once wait on each other's row locks (the
rollups' rows most of all), which costs each run more CPU in the service and the database server.
"""

_Row = tuple[object, ...]


class _Awaiting(Protocol):
    """The bridge's ``await_only``, handed in.

    The bridge (and greenlet with it) is imported with psycopg, only for a PostgreSQL store.
    """

    def __call__(self, awaitable: Awaitable[_T], /) -> _T:
        """Wait for ``awaitable`` from code the bridge runs."""
        ...


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


class _BridgedConnection:
    """An async psycopg connection with the blocking methods the store uses, for the bridge.

    Each call awaits the async driver through :func:`~agent_coordinator._store.bridge.await_only`.
    A call interrupted (its caller cancelled) leaves the connection in a state nobody should
    guess at: it is closed at once, so the server ends its transaction, the statements after it
    fail at once, and the pool opens another connection when it is handed back.

    Args:
        connection: The pool's async connection, in autocommit mode.
        await_only: The bridge's :func:`~agent_coordinator._store.bridge.await_only`.
    """

    def __init__(self, connection: psycopg.AsyncConnection[_Row], await_only: _Awaiting) -> None:
        self.connection = connection
        self._await_only = await_only

    @property
    def broken(self) -> bool:
        """Whether the connection was lost (psycopg's ``broken``)."""
        return self.connection.broken

    def wait(self, awaitable: Awaitable[_T]) -> _T:
        """Return what one driver call gives, waiting for it on the event loop."""
        try:
            return self._await_only(awaitable)
        except Exception:
            raise
        except BaseException:
            self._await_only(self.connection.close())
            raise

    def cursor(self) -> _BridgedCursor:
        """Return a new cursor of the connection."""
        return _BridgedCursor(self, self.connection.cursor())

    @contextmanager
    def pipeline(self) -> Iterator[None]:
        """Send the statements made inside without waiting for each answer (psycopg's pipeline)."""
        entered = self.connection.pipeline()
        self.wait(entered.__aenter__())
        # Left without an exception (the transaction closes it before its ROLLBACK): the exit
        # reads every answer and raises the error of a statement that failed.
        try:
            yield
        finally:
            self.wait(entered.__aexit__(None, None, None))


class _BridgedCursor:
    """An async psycopg cursor as the store's blocking :class:`~agent_coordinator._store.Cursor`.

    Args:
        connection: The bridged connection it belongs to.
        cursor: The async cursor.
    """

    def __init__(self, connection: _BridgedConnection, cursor: psycopg.AsyncCursor[_Row]) -> None:
        self._connection = connection
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed."""
        return self._cursor.rowcount

    def execute(self, query: str, params: Sequence[object] = (), /) -> _BridgedCursor:
        """Run one statement (in a pipeline: send it)."""
        self._connection.wait(self._cursor.execute(query, params))
        return self

    def fetchone(self) -> Sequence[object] | None:
        """Return the next row of the last statement."""
        return self._connection.wait(self._cursor.fetchone())

    def fetchall(self) -> Sequence[Sequence[object]]:
        """Return the remaining rows of the last statement."""
        return self._connection.wait(self._cursor.fetchall())


@dataclass
class _Held:
    """An event loop's pool of async connections, and the task that closes it with the loop."""

    pool: LoopPool
    holder: asyncio.Task[None] | None = None


def _check_open(connection: psycopg.Connection[_Row]) -> None:
    """Raise if the server closed ``connection``, without a round trip (the pool takes another).

    A restart of the server closes every connection: the worker threads' pool, which no loss on
    the event loop's connections tells, would otherwise lend each of them once more (and the
    transaction, which no caller tries again, would answer 503).
    """
    import psycopg

    pgconn = connection.pgconn
    # A closed connection's socket holds the server's goodbye, then its end of file: reading
    # them (neither read blocks) makes the status say so. One read can return the goodbye only.
    with suppress(psycopg.Error):
        pgconn.consume_input()
        pgconn.consume_input()
    if connection.closed or pgconn.status != psycopg.pq.ConnStatus.OK:
        raise psycopg.OperationalError("the server closed the connection")


def _first_line(error: Exception) -> str:
    """Return the first line of a driver's error, for a message."""
    text = str(error).strip()
    return text.splitlines()[0] if text else repr(error)


def _bridgeable(loop: asyncio.AbstractEventLoop) -> bool:
    """Return whether psycopg's async connections can run on ``loop``.

    They wait for their sockets with the loop's ``add_reader``, which Windows' default loop
    (the proactor) lacks: there the calls go to worker threads, over the blocking pool.
    """
    proactor = getattr(asyncio, "ProactorEventLoop", None)
    return proactor is None or not isinstance(loop, proactor)


class PostgresStore(SqlStore):
    """Runs and sessions in a PostgreSQL database, over pools of connections.

    Args:
        url: A ``postgresql://user:password@host:port/database`` URL.
        max_connections: The most connections the blocking pool opens (one per worker thread
            at most).
        loop_connections: The most connections each event loop's pool opens: the transactions
            its async callers run at once.
        wait_s: Seconds a transaction waits for a connection before it answers
            ``StoreUnavailable``.

    Raises:
        ConfigError: psycopg or psycopg_pool is not installed.
    """

    serial = "BIGSERIAL PRIMARY KEY"
    error_type = "(r.error::json ->> 'type')"
    # Tables and views of the schema the store uses, an extension's left out (a new database
    # may hold pg_stat_statements' views, PostGIS's spatial_ref_sys).
    list_tables = (
        "SELECT c.relname FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
        "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d "
        "WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid "
        "AND d.deptype = 'e')"
    )
    list_migration_columns = (
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
    )
    greatest = "GREATEST"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    lock_rows = " FOR UPDATE"
    # Whatever the database's default: each statement of a transaction reads what was committed
    # when it began, after the locks it waited for (a deletion's system messages rely on it).
    begin_write = begin_read = "BEGIN ISOLATION LEVEL READ COMMITTED"
    # A run's end stores its system message with INSERT ... ON CONFLICT DO NOTHING, which takes
    # ROW EXCLUSIVE: this mode waits for the ends doing so now, holds new ones back until the
    # deletion commits and lets reads through (RetentionQueries._delete).
    hold_system_messages = "LOCK TABLE system_messages IN SHARE ROW EXCLUSIVE MODE"
    placeholder = "%s"
    wakes_runners = True
    one_statement_writes = True

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 32,
        loop_connections: int = LOOP_CONNECTIONS,
        wait_s: float = 3.0,
    ) -> None:
        super().__init__()
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout

            from agent_coordinator._store import bridge, loop_pool
            from agent_coordinator._store.array_dumpers import adapters
        except ImportError as error:  # pragma: no cover - the server extra installs them
            raise ConfigError(
                "PostgreSQL needs psycopg, psycopg_pool and greenlet: "
                "pip install 'agentshape[server]'"
            ) from error
        self._psycopg = psycopg
        self._bridge = bridge
        self._loop_pool_module = loop_pool
        self._pipelines = psycopg.Pipeline.is_supported()
        self._pool_timeout = PoolTimeout
        self.integrity_errors = (psycopg.errors.UniqueViolation,)
        self._dsn = url
        self._adapters = adapters()
        self.url = redact_url(url)
        self.wait_s = wait_s
        self.loop_connections = loop_connections
        self._checking = threading.Lock()
        self._pool: ConnectionPool[psycopg.Connection[_Row]] = ConnectionPool(
            url,
            kwargs={"autocommit": True, "context": self._adapters},
            check=_check_open,
            min_size=1,
            max_size=max_connections,
            timeout=wait_s,
            name="agentshape",
            open=True,
        )
        self._loop_pools: dict[asyncio.AbstractEventLoop, _Held] = {}
        self._listener = Listener(
            lambda: psycopg.AsyncConnection.connect(
                url, autocommit=True, connect_timeout=self._connect_timeout
            ),
            lambda: psycopg.connect(url, autocommit=True, connect_timeout=self._connect_timeout),
            name="agentshape-listen",
        )

    @property
    def _connect_timeout(self) -> int:
        return max(2, round(self.wait_s))

    def listen(self, channel: str, subscriber: Callable[[str], object]) -> Callable[[], None]:
        """Call ``subscriber`` on the running event loop on each notification on ``channel``.

        The loop listens on a connection of its own (:mod:`~agent_coordinator._store.listener`).

        Args:
            channel: ``RUN_QUEUED`` or ``RUN_ENDED`` of :mod:`~agent_coordinator._store.listener`.
            subscriber: Gets the payload (a run id, or ``""`` after the listening connection
                was made again: anything may have happened meanwhile).

        Returns:
            What to call to stop.

        Raises:
            RuntimeError: No event loop is running in the calling thread.
        """
        return self._listener.subscribe(channel, subscriber)

    def _notify(self, cursor: Cursor, channel: str, payload: str) -> None:
        cursor.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def _call_once(
        self, method: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        # On the event loop's thread, over the loop's async connections (see the module's
        # docstring): handing each call to a worker thread cost more CPU than the call.
        if not _bridgeable(asyncio.get_running_loop()):
            return await super()._call_once(method, *args, **kwargs)
        return await self._bridge.spawn(method, *args, **kwargs)

    def _loop_pool(self) -> _Held:
        """Return the running event loop's pool, made on the loop's first call."""
        loop = asyncio.get_running_loop()
        found = self._loop_pools.get(loop)
        if found is not None:
            return found
        pool = self._loop_pool_module.LoopPool(
            lambda: self._psycopg.AsyncConnection.connect(
                self._dsn,
                autocommit=True,
                context=self._adapters,
                connect_timeout=self._connect_timeout,
            ),
            self.loop_connections,
            self.wait_s,
        )
        made = self._loop_pools[loop] = _Held(pool=pool)
        made.holder = loop.create_task(self._hold(loop, made), name="agentshape-store-pool")
        return made

    async def _hold(self, loop: asyncio.AbstractEventLoop, held: _Held) -> None:
        """Keep a loop's pool until this task is cancelled, then close it and its connections."""
        # The loop's end cancels its remaining tasks (asyncio.run, uvicorn, pytest-asyncio), and
        # so closes the pool while the loop still runs; close() cancels it too.
        try:
            await loop.create_future()
        finally:
            if self._loop_pools.get(loop) is held:
                del self._loop_pools[loop]
            held.pool.close()

    @contextmanager
    def _checkout(self, *, write: bool) -> Iterator[object]:
        if self._bridge.bridged():
            with self._checkout_bridged() as lent:
                yield lent
            return
        try:
            connection = self._pool.getconn()
        except self._pool_timeout as error:
            raise StoreUnavailable(self._unreachable()) from error
        try:
            yield connection
        finally:
            # A broken connection is closed here and the pool opens another.
            self._pool.putconn(connection)

    @contextmanager
    def _checkout_bridged(self) -> Iterator[_BridgedConnection]:
        """Lend a transaction inside the bridge one of the running loop's async connections."""
        pool = self._loop_pool().pool
        try:
            connection = self._bridge.await_only(pool.get())
        except self._loop_pool_module.NoneFree as error:
            raise StoreUnavailable(self._unreachable()) from error
        except self._loop_pool_module.PoolClosed as error:  # only while the loop shuts down
            raise StoreUnavailable(f"the store at {self.url} was closed") from error
        except self._psycopg.OperationalError as error:
            # Nothing was sent: the call may be tried again, as after a connection lost.
            raise StoreUnavailable(
                f"the database at {self.url} cannot be reached: {_first_line(error)}",
                retryable=True,
            ) from error
        try:
            yield _BridgedConnection(connection, self._bridge.await_only)
        finally:
            # Not awaited, so a caller cancelled meanwhile cannot keep it out of the pool; a
            # broken or closed one is closed, and the next caller opens another.
            pool.put(connection)

    def _unreachable(self) -> str:
        """Say why no connection could be had, from one direct attempt to connect."""
        try:
            if self._bridge.bridged():
                connecting = self._psycopg.AsyncConnection.connect(
                    self._dsn, connect_timeout=self._connect_timeout
                )
                opened = self._bridge.await_only(connecting)
                self._bridge.await_only(opened.close())
            else:
                self._psycopg.connect(self._dsn, connect_timeout=self._connect_timeout).close()
        except self._psycopg.Error as error:
            return f"the database at {self.url} cannot be reached: {_first_line(error)}"
        return f"no connection to the database at {self.url} was free within {self.wait_s} s"

    def _unusable(
        self, error: Exception, connection: object, *, committing: bool
    ) -> StoreUnavailable | StoreFull | None:
        assert isinstance(connection, (self._psycopg.Connection, _BridgedConnection))
        if isinstance(error, self._psycopg.errors.DiskFull):
            return StoreFull(f"the disk holding the database at {self.url} is full: {error}")
        state = getattr(error, "sqlstate", None) or ""
        lost = connection.broken or state.startswith("08") or state in _GONE_STATES
        if not isinstance(error, self._psycopg.OperationalError) or not lost:
            return None
        self._drop_broken()
        reason = _first_line(error)
        # A COMMIT that got no answer may have been applied: not tried again.
        return StoreUnavailable(
            f"the connection to the database at {self.url} was lost: {reason}",
            retryable=not committing,
        )

    def _drop_broken(self) -> None:
        """Have the pool test its idle connections: a restarted server broke all of them."""
        if self._bridge.bridged():
            self._loop_pool().pool.drop_broken()
            return
        if self._checking.acquire(blocking=False):
            try:
                self._pool.check()
            finally:
                self._checking.release()

    def _pipeline(self, connection: object) -> AbstractContextManager[object]:
        assert isinstance(connection, (self._psycopg.Connection, _BridgedConnection))
        if not self._pipelines:  # a libpq before 14: each statement waits for its answer
            return nullcontext()
        return connection.pipeline()

    def _cursor(self, connection: object) -> Cursor:
        assert isinstance(connection, (self._psycopg.Connection, _BridgedConnection))
        cursor: Cursor = connection.cursor()
        return cursor

    def _lock_migrations(self, cursor: Cursor) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def close(self) -> None:
        """Stop listening; close the pools and every connection in them.

        An event loop's pool closes on that loop, as soon as it runs (at once if it is running).
        """
        self._listener.close()
        for loop, held in list(self._loop_pools.items()):
            if held.holder is not None and not loop.is_closed():
                loop.call_soon_threadsafe(held.holder.cancel)
        self._pool.close()
