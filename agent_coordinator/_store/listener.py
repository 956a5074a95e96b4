"""PostgreSQL's ``LISTEN``: one connection per event loop hands the store's notifications over.

The store sends a notification when a run is queued (:data:`RUN_QUEUED`, so idle runners claim
it at once) and when a run ends (:data:`RUN_ENDED`, its id as payload, so a ``?wait=`` request
in another process answers at once). Notifications are a shortcut, not the record: they are not
kept while no one listens, so after (re)connecting the listener tells every subscriber that
something may have happened, and runners and waiting requests still poll, less often.

Each event loop that subscribes gets a listening connection of its own, read by the loop itself
when its socket has data (the loop's ``add_reader``): a notification costs the loop one read,
with no thread to wake and no hand-over between threads. On a loop without ``add_reader``
(Windows' proactor) a thread reads the connection and hands each notification to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

__all__ = ["ANY", "RUN_ENDED", "RUN_QUEUED", "Listener"]

logger = logging.getLogger(__name__)

RUN_QUEUED = "agentshape_run_queued"
"""The channel told when a run waits to be claimed (payload: the run's id)."""
RUN_ENDED = "agentshape_run_ended"
"""The channel told when a run has ended (payload: the run's id)."""
ANY = ""
"""The payload a subscriber gets after the listener (re)connected: anything may have happened."""
_CHANNELS = (RUN_QUEUED, RUN_ENDED)
_TICK_S = 0.5
"""How long one wait of the listening thread lasts, so closing is noticed that soon."""
_RECONNECT_S = (0.5, 5.0)
"""The first and the longest pause before connecting again after the connection failed."""

Subscriber = Callable[[str], object]
"""Called on the event loop it subscribed from, with a notification's payload; must not block."""

_Row = tuple[object, ...]


@dataclass
class _Listening:
    """One event loop's subscribers, and the task that keeps its listening connection."""

    loop: asyncio.AbstractEventLoop
    subscribers: dict[str, list[Subscriber]] = field(
        default_factory=lambda: {channel: [] for channel in _CHANNELS}
    )
    task: asyncio.Task[None] | None = None

    def deliver(self, channel: str, payload: str) -> None:
        """Call the subscribers of ``channel`` with ``payload`` (on the loop's thread)."""
        for subscriber in tuple(self.subscribers.get(channel, ())):
            try:
                subscriber(payload)
            except Exception:  # one subscriber's bug must not stop the others' wake-ups
                logger.exception("a subscriber of %s failed", channel)

    def reconnected(self) -> None:
        """Tell every subscriber that anything may have happened while no one listened."""
        for channel in _CHANNELS:
            self.deliver(channel, ANY)


class Listener:
    """Listens on a connection of each subscribing event loop and calls its subscribers.

    Args:
        connect: Opens a new autocommit async connection to the database.
        connect_blocking: Opens a new autocommit blocking connection, for a loop that cannot
            wait for a socket (the listening thread's).
        name: Names the listening task (and thread), for people reading a dump of them.
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[psycopg.AsyncConnection[_Row]]],
        connect_blocking: Callable[[], psycopg.Connection[_Row]],
        name: str,
    ) -> None:
        self._connect = connect
        self._connect_blocking = connect_blocking
        self._name = name
        self._loops: dict[asyncio.AbstractEventLoop, _Listening] = {}
        self._closing = threading.Event()

    def subscribe(self, channel: str, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber`` on the running event loop on each notification on ``channel``.

        Args:
            channel: :data:`RUN_QUEUED` or :data:`RUN_ENDED`.
            subscriber: Gets each notification's payload (:data:`ANY` after a reconnect).

        Returns:
            What to call to stop.

        Raises:
            ValueError: ``channel`` is not one the store notifies.
            RuntimeError: No event loop is running in the calling thread.
        """
        if channel not in _CHANNELS:
            raise ValueError(f"the store sends no notifications on {channel!r}")
        loop = asyncio.get_running_loop()
        listening = self._loops.get(loop)
        if listening is None:
            listening = self._loops[loop] = _Listening(loop)
        listening.subscribers[channel].append(subscriber)
        if listening.task is None and not self._closing.is_set():
            listening.task = loop.create_task(self._keep(listening), name=self._name)

        def unsubscribe() -> None:
            if subscriber in listening.subscribers[channel]:
                listening.subscribers[channel].remove(subscriber)

        return unsubscribe

    def close(self) -> None:
        """Stop listening: each loop's listening task ends (and closes its connection) there."""
        self._closing.set()
        for loop, listening in list(self._loops.items()):
            if listening.task is not None and not loop.is_closed():
                loop.call_soon_threadsafe(listening.task.cancel)

    async def _keep(self, listening: _Listening) -> None:
        """Listen on the loop until cancelled, connecting again each time the connection fails."""
        pause = _RECONNECT_S[0]
        try:
            while not self._closing.is_set():
                try:
                    if _has_readers(listening.loop):
                        await self._listen_on_loop(listening)
                    else:
                        await self._listen_in_thread(listening)
                except Exception as error:  # the database went away: connect again, later
                    logger.warning("listening for runs queued and ended: %s", error)
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, _RECONNECT_S[1])
                else:
                    pause = _RECONNECT_S[0]
        finally:
            if self._loops.get(listening.loop) is listening:
                del self._loops[listening.loop]

    async def _listen_on_loop(self, listening: _Listening) -> None:
        """Listen on one connection, read by the loop, until it fails (raised)."""
        connection = await self._connect()
        try:
            for channel in _CHANNELS:
                await connection.execute(f"LISTEN {channel}")
            pgconn = connection.pgconn
            # Taken now: a lost connection no longer tells its socket.
            socket = connection.fileno()
            lost: asyncio.Future[Exception] = listening.loop.create_future()

            def readable() -> None:
                # Each notification the server sent is read here, without psycopg's waiting
                # machinery: the connection runs no statement after its LISTENs.
                try:
                    pgconn.consume_input()
                except Exception as error:  # the server closed the connection, or went away
                    listening.loop.remove_reader(socket)  # its end of file stays readable
                    if not lost.done():
                        lost.set_result(error)
                    return
                while (note := pgconn.notifies()) is not None:
                    listening.deliver(note.relname.decode(), note.extra.decode())

            listening.loop.add_reader(socket, readable)
            try:
                listening.reconnected()  # anything sent while no one listened is lost
                readable()  # what arrived with the LISTENs' answers
                raise await lost
            finally:
                listening.loop.remove_reader(socket)
        finally:
            await connection.close()

    async def _listen_in_thread(self, listening: _Listening) -> None:
        """Listen on one blocking connection in a thread until it fails (raised) or closing."""
        loop = listening.loop
        ended: asyncio.Future[None] = loop.create_future()
        stop = threading.Event()

        def settle(error: BaseException | None) -> None:
            if ended.done():
                return
            if error is None:
                ended.set_result(None)
            else:
                ended.set_exception(error)

        def listen() -> None:
            try:
                with self._connect_blocking() as connection:
                    for channel in _CHANNELS:
                        connection.execute(f"LISTEN {channel}")
                    loop.call_soon_threadsafe(listening.reconnected)
                    while not (stop.is_set() or self._closing.is_set()):
                        for note in connection.notifies(timeout=_TICK_S):
                            loop.call_soon_threadsafe(listening.deliver, note.channel, note.payload)
            except Exception as error:
                outcome: Exception | None = error
            else:
                outcome = None
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(settle, outcome)

        threading.Thread(target=listen, name=self._name, daemon=True).start()
        try:
            await ended
        finally:
            stop.set()


def _has_readers(loop: asyncio.AbstractEventLoop) -> bool:
    """Return whether ``loop`` can call back when a socket has data (Windows' proactor cannot)."""
    proactor = getattr(asyncio, "ProactorEventLoop", None)
    return proactor is None or not isinstance(loop, proactor)
