"""Blocking model calls for ``run_sync``: the SDKs' synchronous clients, bounded by the run's end.

``Agent.run_sync`` runs the async run loop on a kept event loop of the calling thread. A provider
that has a synchronous path (:class:`BlockingProvider`) is called through it when
:data:`BLOCKING_CALLS` is set, as ``run_sync`` sets it: the call blocks the kept loop, which has
nothing else to run meanwhile (input tools and MCP servers run between model calls, not during).

A blocking call cannot be cancelled by the run's timeout, so the run's deadline bounds it instead
(:func:`deadline_hooks`): each HTTP attempt's timeout is cut to the time the run has left, an
attempt the deadline cut fails with a timeout error the SDK does not retry (no backoff is slept
before a retry that could not start), no attempt starts after the deadline, and the SDK is told not
to retry an error answer whose wait could pass it. A call that fails or returns after the deadline
ends the run as ``run_timeout``, as the async path's timeout would have (:func:`blocking_turn`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol, TypeGuard, runtime_checkable

from agent_contracts._errors import ProviderError
from agent_executor._providers.base import ModelTurn, ModelTurnRequest

if TYPE_CHECKING:  # the SDK extras install it; this module is imported without them
    import httpx2

# Why a second path at all: ``bench/run.py --guard`` holds ``run_sync``'s CPU per run at or under
# the typed SDK's synchronous ``create`` + ``model_validate_json``. Through the async clients on
# the kept loop it goes over (at 500 items), so the synchronous clients stay (bench/RESULTS.md).

__all__ = [
    "BLOCKING_CALLS",
    "LONGEST_RETRY_WAIT_S",
    "BlockingProvider",
    "blocking_turn",
    "call_deadline",
    "can_block",
    "deadline_hooks",
    "final_at_deadline",
    "past_deadline",
]

BLOCKING_CALLS: ContextVar[bool] = ContextVar("agentshape_blocking_calls", default=False)
"""Set (by ``run_sync``) where model calls may block the event loop they run on."""

_DEADLINE: ContextVar[float | None] = ContextVar("agentshape_call_deadline", default=None)

LONGEST_RETRY_WAIT_S = 8.0
"""The longest the SDKs wait before a retry unless the server's ``retry-after`` says more."""


@runtime_checkable
class BlockingProvider(Protocol):
    """A provider that can also make a call synchronously (the OpenAI and Anthropic ones)."""

    def request_blocking(self, turn: ModelTurnRequest, deadline: float | None) -> ModelTurn:
        """Make one model call, blocking, and return what ``request`` would.

        Args:
            turn: The conversation, tools and settings for this call.
            deadline: When the run must end (``time.monotonic()``); ``None`` for no bound.

        Returns:
            The normalised reply.

        Raises:
            ProviderError: The provider failed after the SDK's bounded retries.
        """
        ...


_CAN_BLOCK: dict[type, bool] = {}


def can_block(provider: object) -> TypeGuard[BlockingProvider]:
    """Tell whether ``provider`` makes its calls blocking the same way as ``request`` does.

    Only when one class defines both methods: a subclass that overrides ``request`` (to record
    or change calls) keeps getting every call through it.

    Returns:
        Whether its calls can go through ``request_blocking``.
    """
    kind = type(provider)
    usable = _CAN_BLOCK.get(kind)
    if usable is None:
        owners = [
            next((c for c in kind.__mro__ if name in c.__dict__), None)
            for name in ("request_blocking", "request")
        ]
        usable = _CAN_BLOCK[kind] = owners[0] is not None and owners[0] is owners[1]
    return usable


def blocking_turn(
    provider: BlockingProvider, turn: ModelTurnRequest, deadline: float | None
) -> ModelTurn:
    """Make one blocking call within the run's deadline.

    Args:
        provider: The provider.
        turn: The call.
        deadline: When the run must end (``time.monotonic()``), or ``None``.

    Returns:
        The reply.

    Raises:
        TimeoutError: The deadline passed before, during or by the end of the call (the run
            ends as ``run_timeout``, as the async path's timeout ends it).
        ProviderError: The provider failed, within the deadline.
    """
    if past_deadline(deadline):
        raise TimeoutError
    try:
        reply = provider.request_blocking(turn, deadline)
    except ProviderError as exc:
        if past_deadline(deadline):
            raise TimeoutError from exc
        raise
    if past_deadline(deadline):
        raise TimeoutError
    return reply


def past_deadline(deadline: float | None) -> bool:
    """Tell whether ``deadline`` has passed.

    Args:
        deadline: A ``time.monotonic()`` time, or ``None`` (never).

    Returns:
        Whether it has passed.
    """
    return deadline is not None and time.monotonic() >= deadline


class call_deadline:
    """Let :func:`deadline_hooks` bound the HTTP attempts made inside by ``deadline``.

    A plain context manager rather than a generator one: it is entered on every blocking call.

    Args:
        deadline: When the run must end (``time.monotonic()``), or ``None``.
    """

    __slots__ = ("_deadline", "_token")

    def __init__(self, deadline: float | None) -> None:
        self._deadline = deadline

    def __enter__(self) -> None:
        self._token = _DEADLINE.set(self._deadline)

    def __exit__(self, *exc_info: object) -> None:
        _DEADLINE.reset(self._token)


def deadline_hooks(
    timed_out: Callable[[httpx2.Request], Exception],
) -> dict[str, list[Callable[..., object]]]:
    """Return ``httpx`` event hooks that keep a synchronous client's attempts within the deadline.

    The request hook cuts each attempt's timeouts to the time left and refuses an attempt after
    the deadline with ``timed_out(request)``; an attempt whose timeouts it cut and that fails at
    the deadline (it timed out) fails with ``timed_out(request)`` too, raised from the HTTP
    stack's ``trace`` callback (:func:`final_at_deadline`). The response hook marks an error
    answer not to be retried (``x-should-retry: false``) when the wait before the retry (its
    ``retry-after``, or the SDK's longest backoff) would pass the deadline.

    Args:
        timed_out: Makes the timeout error for a request: one the SDK raises as it is, without
            retrying it (so without sleeping a backoff first).

    Returns:
        The ``event_hooks`` for the client: one request hook and one response hook.
    """

    def bound_attempt(request: httpx2.Request) -> None:
        deadline = _DEADLINE.get()
        if deadline is None:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise timed_out(request)
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            cut = {
                phase: left if value is None else min(value, left)
                for phase, value in timeouts.items()
            }
            request.extensions["timeout"] = cut
            if cut != timeouts:  # the deadline, not the request's own timeout, bounds it
                earlier = request.extensions.get("trace")
                trace = final_at_deadline(deadline, earlier, lambda: timed_out(request))
                request.extensions["trace"] = trace

    def no_retry_past_deadline(response: httpx2.Response) -> None:
        deadline = _DEADLINE.get()
        if deadline is None or response.status_code < 400 or "x-should-retry" in response.headers:
            return
        wait = max(_retry_after(response.headers), LONGEST_RETRY_WAIT_S)
        if time.monotonic() + wait >= deadline:
            response.headers["x-should-retry"] = "false"

    return {"request": [bound_attempt], "response": [no_retry_past_deadline]}


_AT_DEADLINE_S = 0.01
"""How close to the deadline a failed attempt counts as cut by it (socket timers round)."""


def final_at_deadline(
    deadline: float,
    earlier: Callable[[str, Mapping[str, object]], object] | None,
    timed_out: Callable[[], Exception],
) -> Callable[[str, Mapping[str, object]], None]:
    """Return a ``trace`` callback that makes an attempt failing at ``deadline`` final.

    The HTTP stack calls it as each step of an exchange starts and ends; a step that times out
    (``....failed`` with a timeout) at the deadline raises ``timed_out()`` from the timeout, an
    error the SDK raises as it is, instead of sleeping a backoff before a retry the deadline
    would refuse. Any other failure (a reset connection, an interrupt) goes on as it was. Every
    call goes to ``earlier`` first, when the request had a callback already.

    Args:
        deadline: The run's end (``time.monotonic()``).
        earlier: The request's ``trace`` callback before this one, or ``None``.
        timed_out: Makes the timeout error the SDK does not retry.
    """

    def trace(name: str, info: Mapping[str, object]) -> None:
        if earlier is not None:
            earlier(name, info)
        if not name.endswith(".failed"):
            return
        import httpcore2  # the HTTP stack calling this has it imported

        cause = info.get("exception")
        if not isinstance(cause, httpcore2.TimeoutException):
            return  # a reset, a Ctrl-C: not the deadline's
        early = deadline - time.monotonic()
        if early <= _AT_DEADLINE_S:
            if early > 0:  # a timer that fired a hair early: the run's end is this close
                time.sleep(early)
            raise timed_out() from cause

    return trace


def _retry_after(headers: httpx2.Headers) -> float:
    """Return the seconds a ``retry-after`` or ``retry-after-ms`` header asks for (0 if none)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(headers.get(name, "")) * scale
        except ValueError:
            continue
    return 0.0
