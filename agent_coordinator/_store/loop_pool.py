"""An event loop's own pool of PostgreSQL connections: a bounded number, lent one a transaction.

Every caller runs on the loop's thread (the store's calls run there through the greenlet
bridge), so lending and taking back are plain list operations: no lock, no condition, no
task to wait with. A caller finding every connection lent waits in line for the next one
handed back, for a bounded time. A connection handed back lost, closed or inside a
transaction (its call was interrupted) is closed and forgotten; the next caller opens another.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable

import psycopg
from psycopg import pq

__all__ = ["LoopPool", "NoneFree", "PoolClosed"]

_Row = tuple[object, ...]


class NoneFree(Exception):
    """Every connection stayed lent for as long as a caller may wait for one."""


class PoolClosed(Exception):
    """The pool was closed (its loop ends, or its store closed)."""


class LoopPool:
    """At most ``size`` connections of one event loop, each lent to one caller at a time.

    Args:
        connect: Opens a new autocommit async connection (raising the driver's error).
        size: The most connections open at once.
        wait_s: Seconds a caller waits for a connection when all are lent.
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[psycopg.AsyncConnection[_Row]]],
        size: int,
        wait_s: float,
    ) -> None:
        self._connect = connect
        self.size = size
        self.wait_s = wait_s
        self._idle: list[psycopg.AsyncConnection[_Row]] = []
        self._open: set[psycopg.AsyncConnection[_Row]] = set()
        self._opening = 0
        self._waiters: deque[asyncio.Future[psycopg.AsyncConnection[_Row] | None]] = deque()
        self._closed = False

    async def get(self) -> psycopg.AsyncConnection[_Row]:
        """Lend a connection: an idle one, a new one, or the next one handed back.

        A new one is opened while fewer than ``size`` are open.

        Returns:
            A connection no one else uses until it is handed to :meth:`put`.

        Raises:
            NoneFree: Every connection stayed lent for ``wait_s`` seconds.
            PoolClosed: The pool is closed.
            psycopg.Error: A new connection could not be opened.
        """
        while True:
            if self._closed:
                raise PoolClosed("the pool is closed")
            if self._idle:
                return self._idle.pop()  # the most recently used: its server process is warm
            if len(self._open) + self._opening < self.size:
                return await self._new()
            got = await self._next_handed_back()
            if got is not None:
                return got
            # A connection was forgotten, so one may be opened: go round again.

    def put(self, connection: psycopg.AsyncConnection[_Row]) -> None:
        """Take ``connection`` back: lend it to the first caller waiting, or keep it idle.

        A connection lost, closed or not idle (a call interrupted inside a transaction) is
        closed and forgotten instead.

        Args:
            connection: A connection :meth:`get` lent.
        """
        if self._closed or not _reusable(connection):
            self._forget(connection)
            self._hand_over(None)
            return
        self._keep(connection)

    def _keep(self, connection: psycopg.AsyncConnection[_Row]) -> None:
        """Lend a reusable connection to the first caller waiting, or keep it idle."""
        if not self._hand_over(connection):
            self._idle.append(connection)

    def drop_broken(self) -> None:
        """Forget the idle connections the server closed (a restart closes all of them).

        Each is tested by reading what its socket holds, without a round trip.
        """
        kept = []
        for connection in self._idle:
            pgconn = connection.pgconn
            # The server closed it: its end of file reads as an error, and the status says so
            # (a first read can return only the server's goodbye before it).
            with contextlib.suppress(psycopg.Error):
                pgconn.consume_input()
                pgconn.consume_input()
            if _reusable(connection):
                kept.append(connection)
            else:
                self._forget(connection)
        self._idle = kept

    def close(self) -> None:
        """Close every connection, lent ones too, and fail the callers waiting."""
        self._closed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(PoolClosed("the pool is closed"))
        self._idle.clear()
        for connection in list(self._open):
            self._forget(connection)

    def _forget(self, connection: psycopg.AsyncConnection[_Row]) -> None:
        """Close ``connection`` (as its ``close()`` does, without awaiting) and count it no more."""
        self._open.discard(connection)
        connection.pgconn.finish()

    async def _new(self) -> psycopg.AsyncConnection[_Row]:
        self._opening += 1
        try:
            connection = await self._connect()
        except BaseException:
            self._hand_over(None)  # a waiter may open one instead
            raise
        finally:
            self._opening -= 1
        if self._closed:
            connection.pgconn.finish()
            raise PoolClosed("the pool is closed")
        self._open.add(connection)
        return connection

    async def _next_handed_back(self) -> psycopg.AsyncConnection[_Row] | None:
        """Wait in line for the next connection handed back (``None``: one was forgotten)."""
        waiter: asyncio.Future[psycopg.AsyncConnection[_Row] | None]
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(self.wait_s):
                return await waiter
        except BaseException as error:
            # Timed out or cancelled after a connection was handed over, before it was taken:
            # hand it on, or the pool would be a connection short for good.
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                handed = waiter.result()
                if handed is not None:
                    self._keep(handed)
                else:
                    self._hand_over(None)
            if isinstance(error, TimeoutError):
                raise NoneFree(f"no connection was handed back within {self.wait_s} s") from None
            raise
        finally:
            if not waiter.done():
                waiter.cancel()

    def _hand_over(self, connection: psycopg.AsyncConnection[_Row] | None) -> bool:
        """Give ``connection`` (or ``None``: go and open one) to the first caller still waiting.

        Returns:
            Whether a caller took it.
        """
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return True
        return False


def _reusable(connection: psycopg.AsyncConnection[_Row]) -> bool:
    """Return whether ``connection`` is open, not lost and outside any transaction."""
    return (
        not connection.closed
        and not connection.broken
        and connection.pgconn.status == pq.ConnStatus.OK
        and connection.pgconn.transaction_status == pq.TransactionStatus.IDLE
    )
