"""Running the async run loop from synchronous code: one kept event loop for every ``run_sync``.

``asyncio.run`` per call would build a new event loop, a new pooled SDK client and a new TCP
connection for every run. Instead, every ``run_sync`` in the process hands its coroutine to one
event loop kept in a daemon thread, started on first use: connections stay open between calls,
several threads can call at once (their runs interleave on that loop), and nothing is left bound
to a loop that was closed. At interpreter exit the loop shuts down its async generators (which
closes the pooled clients) and stops.

A caller already inside a running event loop gets a clear error instead: blocking that loop on a
run would stall everything else it runs.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent_contracts.errors import ConfigError

__all__ = ["run_coroutine_sync", "shutdown_sync_loop"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    ready.set()
    try:
        loop.run_forever()
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def _running_loop() -> asyncio.AbstractEventLoop:
    """Return the kept loop, starting its thread on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(
                target=_serve, args=(loop, ready), name="agentshape-sync", daemon=True
            )
            thread.start()
            ready.wait()
            _loop, _thread = loop, thread
        return _loop


def run_coroutine_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the kept event loop and return its result (or raise its exception).

    Args:
        coro: The coroutine to run.

    Returns:
        What the coroutine returned.

    Raises:
        ConfigError: Called from inside a running event loop (await the async API there).
        KeyboardInterrupt: Interrupted while waiting; the run is cancelled first.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise ConfigError("run_sync cannot be called from a running event loop; await run()")
    future = asyncio.run_coroutine_threadsafe(coro, _running_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def shutdown_sync_loop() -> None:
    """Stop the kept loop: close its async generators (and so the pooled clients), then it.

    Called at interpreter exit; safe to call more than once. A later ``run_sync`` starts a new
    loop.
    """
    global _loop, _thread
    with _lock:
        loop, thread = _loop, _thread
        _loop = _thread = None
    if loop is None or thread is None or loop.is_closed():
        return
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


atexit.register(shutdown_sync_loop)
