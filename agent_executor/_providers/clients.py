"""How long an SDK client lives, for both adapters: :class:`LoopClients`, :class:`SyncClients`.

A pooled SDK client is bound to the event loop it first ran on, so clients are kept one per running
loop (and per settings), and each is closed when its loop shuts down (``asyncio.run`` and
``asyncio.Runner`` finalise async generators before closing the loop; a guard generator closes
the client then). Where no such shutdown can be relied on (no asyncio loop, or no async-generator
hooks), :meth:`LoopClients.get` returns ``None`` and the adapter uses a fresh client per call.
Synchronous clients (``run_sync``'s blocking calls) are kept one per settings and process in
:class:`SyncClients`, closed at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import ssl
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Hashable
from typing import Generic, Protocol, TypeVar

__all__ = ["LoopClients", "SyncClients", "ssl_context"]


class _Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class LoopClients(Generic[C]):
    """SDK clients kept one per running event loop and settings, closed at that loop's shutdown.

    Both SDK adapters keep their clients here, so connections are reused across calls and runs
    on one loop, and a client never outlives (or crosses to) another loop.

    The first call on a loop creates the client and starts a guard async generator there. The
    loop registers the guard (its first-iteration hook), and ``loop.shutdown_asyncgens()``, which
    ``asyncio.run`` and ``asyncio.Runner`` call before closing the loop, closes the guard, whose
    ``finally`` closes the client and forgets it. A loop closed without that step leaves its entry
    behind; it is dropped the next time a client is made (its connections cannot be closed
    cleanly without their loop).
    """

    def __init__(self) -> None:
        self._entries: dict[
            tuple[asyncio.AbstractEventLoop, Hashable],
            tuple[C, AsyncGenerator[None, None]],
        ] = {}

    async def get(self, key: Hashable, make: Callable[[], C]) -> C | None:
        """Return the running loop's client for ``key``, made with ``make`` on first use.

        Args:
            key: The client's settings (key, URL, retries...).
            make: Builds a new client.

        Returns:
            The client, or ``None`` when no asyncio loop with async-generator hooks runs (then
            nothing would close a kept client, so the caller uses a fresh one).
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        entry = self._entries.get((loop, key))
        if entry is not None:
            return entry[0]
        hooks = sys.get_asyncgen_hooks()
        if hooks.firstiter is None:
            return None
        for stale in [k for k in self._entries if k[0].is_closed()]:
            del self._entries[stale]
        client = make()
        guard = self._close_at_shutdown(loop, key, client)
        # The loop's first-iteration hook registers the guard for shutdown_asyncgens. The
        # finalizer, called if the guard is dropped unfinished (only when its loop closed
        # without that step), does nothing: the loop's own would fail on a closed loop.
        sys.set_asyncgen_hooks(hooks.firstiter, _drop)
        try:
            first_step = guard.__anext__()
        finally:
            sys.set_asyncgen_hooks(*hooks)
        self._entries[(loop, key)] = (client, guard)
        await first_step
        return client

    async def _close_at_shutdown(
        self,
        loop: asyncio.AbstractEventLoop,
        key: Hashable,
        client: C,
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            entry = self._entries.get((loop, key))
            if entry is not None and entry[0] is client:
                del self._entries[(loop, key)]
            await client.close()


def _drop(generator: AsyncGenerator[None, None]) -> None:
    """Finalise an abandoned guard generator by doing nothing (its loop is already closed)."""


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """Return the TLS context every SDK client shares, made once (loading CA files is slow)."""
    import httpx2  # installed with either SDK's extra, not without

    return httpx2.create_ssl_context()


S = TypeVar("S")


class SyncClients(Generic[S]):
    """Synchronous SDK clients kept per settings and process, closed at interpreter exit.

    A synchronous client is bound to no event loop and its connection pool is safe to share
    between threads, so one per settings serves every thread; a forked child makes its own
    (the parent's connections are not its to use).
    """

    def __init__(self, close: Callable[[S], None]) -> None:
        """Keep no client yet; ``close`` closes one (at exit, or in :meth:`close_all`)."""
        self._clients: dict[tuple[int, Hashable], S] = {}
        self._lock = threading.Lock()
        self._close = close
        atexit.register(self.close_all)

    def get(self, key: Hashable, make: Callable[[], S]) -> S:
        """Return the client for ``key``, made with ``make`` on first use in this process."""
        full = (os.getpid(), key)
        client = self._clients.get(full)
        if client is None:
            with self._lock:
                client = self._clients.get(full)
                if client is None:
                    client = self._clients[full] = make()
        return client

    def close_all(self) -> None:
        """Close and forget every client this process made (a later call makes new ones)."""
        with self._lock:
            clients = [c for (pid, _), c in self._clients.items() if pid == os.getpid()]
            self._clients.clear()
        for client in clients:
            try:
                self._close(client)
            except Exception:  # closing at exit: nothing to report to
                continue
