"""Blocking-style code run on the event loop, awaiting an async driver: a greenlet bridge.

The store's queries are written once, as ordinary blocking code over a DB-API-like cursor. To run
them on the event loop without blocking it, :func:`spawn` runs such a function in a greenlet of
its own; each driver call inside it goes through :func:`await_only`, which switches back to the
coroutine that spawned it, lets that coroutine ``await`` the driver's awaitable (the loop serves
everything else meanwhile), and switches back into the function with the answer, or with the
exception the awaitable raised (a cancellation of the caller among them).

The function runs on the loop's thread: it must only wait through :func:`await_only`, never
by blocking the thread (no ``time.sleep``, no waiting for a ``threading.Lock`` another greenlet
of the same thread holds).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar, cast

from greenlet import getcurrent, greenlet

__all__ = ["NotBridged", "await_only", "bridged", "spawn"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


class NotBridged(RuntimeError):
    """:func:`await_only` was called outside a function :func:`spawn` runs."""


class _Bridged(greenlet):  # type: ignore[misc]  # greenlet ships no types: its class is Any
    """The greenlet :func:`spawn` runs a function in; its parent awaits on its behalf."""

    def __init__(self, run: Callable[..., object], parent: greenlet) -> None:
        super().__init__(run, parent)
        # The function sees the caller's context variables, as a function it awaited would.
        self.gr_context = parent.gr_context


def bridged() -> bool:
    """Return whether the calling code runs inside :func:`spawn` (and so may :func:`await_only`)."""
    return isinstance(getcurrent(), _Bridged)


def await_only(awaitable: Awaitable[_T]) -> _T:
    """Wait for ``awaitable`` from blocking-style code that :func:`spawn` runs.

    Args:
        awaitable: What to wait for, such as a driver's coroutine.

    Returns:
        What ``awaitable`` gives.

    Raises:
        NotBridged: The calling code does not run inside :func:`spawn`.
        BaseException: Whatever ``awaitable`` raises, ``asyncio.CancelledError`` included.
    """
    current = getcurrent()
    if not isinstance(current, _Bridged):
        close = getattr(awaitable, "close", None)
        if callable(close):  # a coroutine never awaited would warn when collected
            close()
        raise NotBridged("await_only() needs a function run by spawn()")
    return cast("_T", current.parent.switch(awaitable))


async def spawn(function: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Run ``function`` on the event loop's thread, awaiting what it passes to :func:`await_only`.

    Args:
        function: Blocking-style code whose waits all go through :func:`await_only`.
        *args: Its positional arguments.
        **kwargs: Its keyword arguments.

    Returns:
        What ``function`` returns.

    Raises:
        BaseException: Whatever ``function`` raises; a cancellation of the caller while an
            awaitable is pending is raised inside ``function`` first, so its cleanup runs.
    """
    child = _Bridged(function, getcurrent())
    asked = child.switch(*args, **kwargs)
    while not child.dead:
        try:
            answer = await cast("Awaitable[object]", asked)
        except BaseException as error:  # handed to the function, whose cleanup runs first
            asked = child.throw(error)
        else:
            asked = child.switch(answer)
    return cast("_T", asked)
