"""Model calls held to limits every worker sharing a limiter keeps: :class:`LimitedProvider`.

A :class:`CallLimiter` hands out slots for calls to one provider and model (``openai:gpt-4o``)
under :class:`~agent_contracts.CallLimits`: at most ``concurrency`` in flight, at most
``requests_per_minute`` started and ``tokens_per_minute`` used in any 60 seconds, and none while
the model is paused. :class:`LocalCallLimiter` keeps the count in this process; the service's
store keeps one every runner and ``run-many --database`` share. A 429 pauses the model for
every worker that shares the limiter for as long as the provider's ``retry-after`` says, and the
call is made again after the pause. The SDK does not retry it as well: a provider that can be
copied with other SDK retries (``variant(max_retries=0)``) is called through a copy without
them, and its other transient failures are retried here as its SDK would have, so a 429 costs
``1 + RATE_LIMIT_RETRIES`` requests, not that many times the SDK's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
from typing import Protocol, runtime_checkable

from agent_contracts._call_limits import CallLimits
from agent_contracts._errors import ProviderError
from agent_contracts._profiles import ProviderProfile
from agent_executor._providers.base import ModelTurn, ModelTurnRequest, Provider

__all__ = [
    "DEFAULT_PAUSE_S",
    "RATE_LIMIT_RETRIES",
    "CallLimiter",
    "LimitedProvider",
    "LocalCallLimiter",
    "limit_key",
]

DEFAULT_PAUSE_S = 5.0
"""How long a 429 without ``retry-after`` (or ``x-ratelimit-reset-*``) pauses the model."""
RATE_LIMIT_RETRIES = 2
"""Times a call answered 429 is made again, each after the shared pause."""
_WAIT_S = 0.05
"""The pause between two looks for a free slot (a bound on how late a freed slot is taken)."""
_TRANSIENT_KINDS = frozenset({"provider_timeout", "provider_connection_error"})
"""Failures without a status that the SDKs retry (beside 408, 409 and 5xx answers)."""
_BACKOFF_S, _BACKOFF_MAX_S, _RETRY_AFTER_MAX_S = 0.5, 8.0, 60.0
"""The SDKs' backoff: 0.5 s doubled per retry up to 8 s, or a ``retry-after`` up to 60 s."""


def limit_key(provider: Provider) -> str:
    """Return the key limits are counted under: ``<provider name>:<model>``."""
    return f"{provider.name}:{provider.model}"


class CallLimiter(Protocol):
    """Slots for model calls, counted per key (provider and model) under limits."""

    async def acquire(self, key: str, limits: CallLimits) -> str:
        """Wait until a call to ``key`` may start under ``limits`` and take a slot for it.

        Args:
            key: The provider and model (:func:`limit_key`).
            limits: The limits the call is held to.

        Returns:
            The slot's id, to hand back to :meth:`release`.
        """
        ...

    async def release(self, key: str, slot: str, tokens: int) -> None:
        """Hand a slot back when its call ended.

        Args:
            key: As given to :meth:`acquire`.
            slot: The slot's id.
            tokens: The tokens the call used (0 when it failed), counted for the minute.
        """
        ...

    async def pause(self, key: str, seconds: float) -> None:
        """Let no call to ``key`` start for ``seconds`` (a provider's 429 asked for it).

        Args:
            key: The provider and model.
            seconds: How long; a pause already longer is kept.
        """
        ...


class LocalCallLimiter:
    """A :class:`CallLimiter` counting the calls of this process only.

    A call counts for the requests and tokens of a minute from when it ended (from when it
    started while in flight): the provider counted it at some moment in between.
    """

    def __init__(self) -> None:
        self._slots: dict[str, dict[str, _Slot]] = {}
        self._paused_until: dict[str, float] = {}

    def _free(self, key: str, limits: CallLimits, now: float) -> bool:
        if self._paused_until.get(key, 0.0) > now:
            return False
        slots = self._slots.setdefault(key, {})
        for slot, entry in list(slots.items()):
            if not entry.in_flight and entry.counted_at <= now - 60.0:
                del slots[slot]
        in_flight = sum(entry.in_flight for entry in slots.values())
        if limits.concurrency is not None and in_flight >= limits.concurrency:
            return False
        if limits.requests_per_minute is not None and len(slots) >= limits.requests_per_minute:
            return False
        used = sum(entry.tokens for entry in slots.values())
        return limits.tokens_per_minute is None or used < limits.tokens_per_minute

    async def acquire(self, key: str, limits: CallLimits) -> str:
        """Wait for a slot (see :meth:`CallLimiter.acquire`)."""
        while not self._free(key, limits, now := time.time()):
            await asyncio.sleep(_WAIT_S)
        slot = secrets.token_hex(8)
        self._slots[key][slot] = _Slot(counted_at=now)
        return slot

    async def release(self, key: str, slot: str, tokens: int) -> None:
        """Hand a slot back (see :meth:`CallLimiter.release`)."""
        entry = self._slots.get(key, {}).get(slot)
        if entry is not None:
            entry.in_flight, entry.tokens, entry.counted_at = False, tokens, time.time()

    async def pause(self, key: str, seconds: float) -> None:
        """Pause the key's calls (see :meth:`CallLimiter.pause`)."""
        until = time.time() + seconds
        self._paused_until[key] = max(self._paused_until.get(key, 0.0), until)


@dataclasses.dataclass
class _Slot:
    """One call of :class:`LocalCallLimiter`: when it counts from, its tokens, whether open."""

    counted_at: float
    tokens: int = 0
    in_flight: bool = True


@runtime_checkable
class _SdkRetrying(Protocol):
    """A provider whose SDK retries its calls, and that can be copied with other retries."""

    @property
    def max_retries(self) -> int: ...

    def variant(self, *, max_retries: int | None = None) -> Provider: ...


class LimitedProvider:
    """A provider whose every call takes a slot of a shared :class:`CallLimiter` first.

    Args:
        inner: The provider making the calls.
        limiter: Where the slots are counted.
        limits: The limits the calls are held to.
    """

    def __init__(self, inner: Provider, limiter: CallLimiter, limits: CallLimits) -> None:
        self.inner = inner
        # the SDK's own retries would repeat every 429 that this class already repeats
        self._caller = inner.variant(max_retries=0) if isinstance(inner, _SdkRetrying) else inner
        self._transient_retries = inner.max_retries if isinstance(inner, _SdkRetrying) else 0
        self.limiter = limiter
        self.limits = limits
        self.name: str = inner.name
        self.model: str = inner.model
        self.supports_tools: bool = inner.supports_tools
        self.profile: ProviderProfile = inner.profile

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Make one model call in a slot; after a 429, pause the model for all and call again.

        Args:
            turn: The conversation, tools and settings for this call.

        Returns:
            The inner provider's reply.

        Raises:
            ProviderError: What the inner provider raised; a 429 only once its retries are spent.
        """
        key = limit_key(self.inner)
        limited = transient = 0
        while True:
            slot = await self.limiter.acquire(key, self.limits)
            tokens = 0
            try:
                reply = await self._caller.request(turn)
                tokens = reply.usage.input_tokens + reply.usage.output_tokens
                return reply
            except ProviderError as error:
                if error.status == 429:
                    if limited >= RATE_LIMIT_RETRIES:
                        raise
                    limited += 1
                    wait = error.retry_after_s
                    await self.limiter.pause(key, DEFAULT_PAUSE_S if wait is None else wait)
                    continue
                if not _transient(error) or transient >= self._transient_retries:
                    raise
                wait = error.retry_after_s
                if wait is None or wait > _RETRY_AFTER_MAX_S:
                    wait = min(_BACKOFF_S * 2**transient, _BACKOFF_MAX_S)
                transient += 1
            finally:
                await self.limiter.release(key, slot, tokens)
            await asyncio.sleep(wait)  # out of the slot: a wait for this call alone


def _transient(error: ProviderError) -> bool:
    """Return whether the provider's SDK would have retried ``error`` (not a 429)."""
    status = error.status
    if status is None:
        return error.kind in _TRANSIENT_KINDS
    return status in (408, 409) or status >= 500
