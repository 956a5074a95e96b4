"""Running the async run loop from synchronous code: one kept event loop per calling thread.

``asyncio.run`` per call would build a new event loop, a new pooled SDK client and a new TCP
connection for every run. Instead, each thread that calls ``run_sync`` keeps one event loop of its
own and runs its runs on it, on the calling thread itself: connections stay open between calls,
and no run is handed to another thread and back. Several threads can call at once, each on its
own loop.

The kept loop is never made the thread's current event loop (``asyncio.set_event_loop``), so a
loop another library keeps there is left alone, and ``asyncio.run`` works as before. A loop
is closed, after shutting down its async generators (which closes the pooled clients on it),
when its thread has ended and another thread next starts a kept loop, by
:func:`shutdown_sync_loop`, and at interpreter exit; nothing is left bound to a closed loop.

A caller already inside a running event loop gets a clear error instead: blocking that loop on a
run would stall everything else it runs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent_contracts._errors import ConfigError
from agent_executor._providers.blocking import BLOCKING_CALLS

__all__ = ["run_coroutine_sync", "shutdown_sync_loop"]

T = TypeVar("T")


class _Kept:
    """One thread's kept loop; ``busy`` is held while a run is on it."""

    __slots__ = ("busy", "loop", "thread")

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.current_thread()
        self.busy = threading.Lock()


_lock = threading.Lock()
_kept: list[_Kept] = []
_local = threading.local()


def _thread_loop() -> _Kept:
    """Return the calling thread's kept loop, making it on first use."""
    kept: _Kept | None = getattr(_local, "kept", None)
    if kept is not None and not kept.loop.is_closed():
        return kept
    with _lock:
        ended = [k for k in _kept if not k.thread.is_alive()]
    for old in ended:  # threads that ended: close their loops (and connections) now
        _close(old)
    kept = _Kept()
    with _lock:
        _kept.append(kept)
    _local.kept = kept
    return kept


def _close(kept: _Kept) -> None:
    """Close a kept loop that no run is on: its async generators first, then the loop."""
    if not kept.busy.acquire(blocking=False):
        return  # a run is on it (a daemon thread at exit): leave it
    try:
        loop = kept.loop
        if not loop.is_closed():
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()
    finally:
        kept.busy.release()
        with _lock:
            if kept in _kept:
                _kept.remove(kept)


def run_coroutine_sync(coro: Coroutine[Any, Any, T], *, blocking_calls: bool = False) -> T:
    """Run ``coro`` on the calling thread's kept event loop and return its result.

    Args:
        coro: The coroutine to run.
        blocking_calls: Let model calls inside block the loop (the SDKs' synchronous clients,
            see :mod:`agent_executor._providers.blocking`): the loop runs nothing else meanwhile.

    Returns:
        What the coroutine returned.

    Raises:
        ConfigError: Called from inside a running event loop (await the async API there).
        KeyboardInterrupt: Interrupted while waiting; the run is cancelled first.
    """
    if asyncio._get_running_loop() is not None:  # get_running_loop() raises when there is none
        coro.close()
        raise ConfigError("run_sync cannot be called from a running event loop; await run()")
    while True:
        kept = _thread_loop()
        with kept.busy:
            loop = kept.loop
            if loop.is_closed():  # closed at exit while this thread waited for it
                continue
            context = contextvars.copy_context()
            if blocking_calls:
                context.run(BLOCKING_CALLS.set, True)
            task = loop.create_task(coro, context=context)
            try:
                return loop.run_until_complete(task)
            except BaseException:
                if not task.done():  # interrupted: cancel the run and let it end cleanly
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        loop.run_until_complete(task)
                raise


def shutdown_sync_loop() -> None:
    """Close the kept loops no run is on: their async generators (the pooled clients), then them.

    Closes the calling thread's loop and those of threads that have ended (at interpreter exit,
    every idle one). Safe to call more than once; does nothing when called from inside a running
    event loop. A later ``run_sync`` starts a new loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return
    _close_all(everywhere=False)


def _close_all(*, everywhere: bool) -> None:
    """Close this thread's and ended threads' kept loops (``everywhere``: every idle one)."""
    with _lock:
        kept = list(_kept)
    here = threading.current_thread()
    for each in kept:
        if everywhere or each.thread is here or not each.thread.is_alive():
            _close(each)


def _at_exit() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        _close_all(everywhere=True)


atexit.register(_at_exit)
