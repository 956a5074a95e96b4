"""PostgreSQL's ``LISTEN``: one connection in a thread hands the store's notifications over.

The store sends a notification when a run is queued (:data:`RUN_QUEUED`, so idle runners claim
it at once) and when a run ends (:data:`RUN_ENDED`, its id as payload, so a ``?wait=`` request
in another process answers at once). Notifications are a shortcut, not the record: they are not
kept while no one listens, so after (re)connecting the listener tells every subscriber that
something may have happened, and runners and waiting requests still poll, less often.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
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
"""How long one wait for notifications lasts, so closing is noticed that soon."""
_RECONNECT_S = (0.5, 5.0)
"""The first and the longest pause before connecting again after the connection failed."""

Subscriber = Callable[[str], object]
"""Called from the listener's thread with a notification's payload; must not block."""


class Listener:
    """A thread on its own connection that listens and calls the subscribers of each channel.

    Args:
        connect: Opens a new autocommit connection to the database.
        name: Names the thread, for people reading a thread dump.
    """

    def __init__(
        self, connect: Callable[[], psycopg.Connection[tuple[object, ...]]], name: str
    ) -> None:
        self._connect = connect
        self._name = name
        self._lock = threading.Lock()
        self._subscribers: dict[str, list[Subscriber]] = {channel: [] for channel in _CHANNELS}
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    def subscribe(self, channel: str, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber`` on each notification on ``channel``, from now on.

        Args:
            channel: :data:`RUN_QUEUED` or :data:`RUN_ENDED`.
            subscriber: Gets each notification's payload (:data:`ANY` after a reconnect).

        Returns:
            What to call to stop.

        Raises:
            ValueError: ``channel`` is not one the store notifies.
        """
        if channel not in self._subscribers:
            raise ValueError(f"the store sends no notifications on {channel!r}")
        with self._lock:
            self._subscribers[channel].append(subscriber)
            if self._thread is None and not self._closing.is_set():
                self._thread = threading.Thread(target=self._listen, name=self._name, daemon=True)
                self._thread.start()

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers[channel]:
                    self._subscribers[channel].remove(subscriber)

        return unsubscribe

    def close(self) -> None:
        """Stop listening and wait for the thread to end."""
        self._closing.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join()

    def _listen(self) -> None:
        pause = _RECONNECT_S[0]
        while not self._closing.is_set():
            try:
                with self._connect() as connection:
                    for channel in _CHANNELS:
                        connection.execute(f"LISTEN {channel}")
                    pause = _RECONNECT_S[0]
                    for channel in _CHANNELS:  # anything sent while no one listened is lost
                        self._deliver(channel, ANY)
                    while not self._closing.is_set():
                        for note in connection.notifies(timeout=_TICK_S):
                            self._deliver(note.channel, note.payload)
            except Exception as error:  # the database went away: connect again, later
                logger.warning("listening for runs queued and ended: %s", error)
                self._closing.wait(pause)
                pause = min(pause * 2, _RECONNECT_S[1])

    def _deliver(self, channel: str, payload: str) -> None:
        with self._lock:
            subscribers = list(self._subscribers.get(channel, ()))
        for subscriber in subscribers:
            try:
                subscriber(payload)
            except Exception:  # one subscriber's bug must not stop the others' wake-ups
                logger.exception("a subscriber of %s failed", channel)
