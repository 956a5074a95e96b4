"""Deferred analytics writes: a run's log lines written while a model call waits for its reply.

:class:`~agent_executor.analytics.JsonlAnalytics` hands each event here (:func:`submit`) instead
of writing it in ``emit``, so a run does not spend its own time on its log. Queued events are
written, in the order they were submitted, at the first of:

- **a model call waiting for its reply.** The SDK clients agentshape builds mark each request
  made while events are queued (:func:`mark_request`, :func:`mark_request_async`, as ``httpx``
  request hooks); once the request is sent and before the reply is read, the HTTP stack calls
  back (its ``trace`` extension) and the queue is written while the model works;
- :data:`LINGER_S` after an event was queued, by a daemon thread: a program that makes no
  further model call soon, or a provider that does not speak HTTP, still has its lines within
  a twentieth of a second;
- interpreter exit, :func:`flush_pending` (``JsonlAnalytics.flush``, ``JsonlAnalytics.dropped``),
  and reading the files in this process (``read_events``, ``EventLines``);
- more than :data:`MAX_PENDING` events queued: the thread that queues the next one writes them.

Writing runs the sink's own code (serialise, redact, append), so whatever thread writes, the lines
are the ones ``emit`` would have written. The events a sink queued one after another are handed to
it together, so it can append them with one write. A hard kill (``SIGKILL``, ``os._exit``) loses
what is still queued, at most the last :data:`LINGER_S`. After ``fork`` the child drops what the
parent had queued (the parent writes it).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # the SDK extras install it; this module is imported without them
    import httpx2

__all__ = [
    "LINGER_S",
    "MAX_PENDING",
    "flush_pending",
    "mark_request",
    "mark_request_async",
    "submit",
    "write_pending",
]

logger = logging.getLogger("agent_executor.analytics")

LINGER_S: Final = 0.05
"""Seconds a queued event waits at most for a model call before the daemon thread writes it."""

MAX_PENDING: Final = 10_000
"""Queued events past which the thread that queues one more writes them all itself."""

Write = Callable[[Sequence[Any]], None]
"""A sink's write of what it queued (events, in order); it never raises (the sink counts its
own failures)."""

_WAITING = "receive_response_headers.started"
"""The end of the HTTP stack's ``trace`` event a request is sent and its reply awaited at."""


class _Queue:
    """The process's queued writes, the lock one writer holds, and the lingering thread."""

    def __init__(self) -> None:
        self.pending: deque[tuple[Write, object]] = deque()
        self.writing = threading.Lock()
        self.armed = threading.Event()
        self.thread: threading.Thread | None = None
        self.starting = threading.Lock()


_queue = _Queue()


def submit(write: Write, event: object) -> None:
    """Queue an event's write; it is carried out soon, in order, by whoever writes the queue.

    Args:
        write: The sink's write: called with this event and the ones queued right after it
            with an equal ``write`` (the same sink's), in order.
        event: The event (or what the sink builds it from).
    """
    queue = _queue
    queue.pending.append((write, event))
    if not queue.armed.is_set():
        _arm(queue)
    if len(queue.pending) > MAX_PENDING:
        write_pending(wait=True)


def write_pending(*, wait: bool = False) -> bool:
    """Write every queued event on the calling thread; return whether the queue was written.

    Args:
        wait: Wait while another thread writes (then write what it left); without it, return
            ``False`` at once when another thread is writing.
    """
    queue = _queue
    return not queue.pending or _write_locked(queue, queue.writing.acquire(blocking=wait))


def flush_pending(timeout: float = 10.0) -> bool:
    """Write every event queued so far; return whether that was done within ``timeout`` seconds.

    Waits for a write another thread has under way (a slow disk); on timeout a warning is
    logged and the events stay queued. Never raises.

    Args:
        timeout: Seconds to wait at most for another thread's write.
    """
    queue = _queue
    if not queue.pending or _write_locked(queue, queue.writing.acquire(timeout=timeout)):
        return True
    logger.warning("analytics: events still unwritten after %.0f s", timeout)
    return False


def _write_locked(queue: _Queue, acquired: bool) -> bool:
    """Write the queue if the writing lock was ``acquired`` (and release it)."""
    if not acquired:
        return False
    try:
        _write_all(queue)
    finally:
        queue.writing.release()
    return True


def _write_all(queue: _Queue) -> None:
    pending = queue.pending
    while pending:
        write, event = pending.popleft()
        batch = [event]
        while pending and pending[0][0] == write:  # the same sink's next events
            batch.append(pending.popleft()[1])
        try:
            write(batch)
        except Exception:  # a sink's bug must not cost the other sinks their lines
            logger.warning("analytics: events could not be written", exc_info=True)


def _arm(queue: _Queue) -> None:
    if queue.thread is None:
        with queue.starting:
            if queue.thread is None:
                thread = threading.Thread(
                    target=_linger, args=(queue,), name="agentshape-analytics", daemon=True
                )
                thread.start()
                queue.thread = thread
    queue.armed.set()


def _linger(queue: _Queue) -> None:
    while True:
        queue.armed.wait()
        time.sleep(LINGER_S)
        queue.armed.clear()  # before writing: an event queued meanwhile arms it again
        write_pending(wait=True)


def _on_trace(name: str, info: Mapping[str, object]) -> None:
    if name.endswith(_WAITING):
        write_pending()
        _untrace(info)


async def _on_trace_async(name: str, info: Mapping[str, object]) -> None:
    if name.endswith(_WAITING):
        write_pending()
        _untrace(info)


def _untrace(info: Mapping[str, object]) -> None:
    """Take the callback off the request once it has run: the HTTP stack calls it no more.

    The queue is written by then, or being written by the thread that holds it (which writes
    what is queued until the queue is empty).

    The stack reads the callback from the request's extensions as each step of the exchange
    starts (the steps after this one: the rest of the reply, closing the response).
    """
    extensions = getattr(info.get("request"), "extensions", None)
    if isinstance(extensions, dict) and extensions.get("trace") in (_on_trace, _on_trace_async):
        del extensions["trace"]


def mark_request(request: httpx2.Request) -> None:
    """An ``httpx`` request hook: have queued events written while this request's reply is awaited.

    Adds a ``trace`` callback to the request when events are queued and it has none; the callback
    writes the queue (without waiting for another writer) once the request has been sent.

    Args:
        request: The request about to be sent.
    """
    if _queue.pending and "trace" not in request.extensions:
        request.extensions["trace"] = _on_trace


async def mark_request_async(request: httpx2.Request) -> None:
    """:func:`mark_request` for asynchronous clients (whose hooks and trace callback are awaited).

    Args:
        request: The request about to be sent.
    """
    if _queue.pending and "trace" not in request.extensions:
        request.extensions["trace"] = _on_trace_async


def _after_fork_in_child() -> None:
    global _queue
    _queue = _Queue()  # the parent writes what it had queued


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(flush_pending)
