"""Model calls held to limits every worker sharing a limiter keeps: :class:`LimitedProvider`.

A :class:`CallLimiter` hands out slots for calls to one provider and model (``openai:gpt-4o``)
under :class:`~agent_contracts.CallLimits`: at most ``concurrency`` in flight, at most
``requests_per_minute`` started and ``tokens_per_minute`` used in any 60 seconds, and none while
the model is paused. :class:`LocalCallLimiter` keeps the count in this process; the service's
store keeps one every runner and ``run-many --database`` share. A 429 pauses the model for
every worker that shares the limiter for as long as the provider's ``retry-after`` says, and the
call is made again after the pause.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
from typing import Protocol

from agent_contracts.call_limits import CallLimits
from agent_contracts.errors import ProviderError
from agent_contracts.profiles import ProviderProfile
from agent_executor.providers.base import ModelTurn, ModelTurnRequest, Provider

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


class LimitedProvider:
    """A provider whose every call takes a slot of a shared :class:`CallLimiter` first.

    Args:
        inner: The provider making the calls.
        limiter: Where the slots are counted.
        limits: The limits the calls are held to.
    """

    def __init__(self, inner: Provider, limiter: CallLimiter, limits: CallLimits) -> None:
        self.inner = inner
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
        attempt = 0
        while True:
            slot = await self.limiter.acquire(key, self.limits)
            tokens = 0
            try:
                reply = await self.inner.request(turn)
                tokens = reply.usage.input_tokens + reply.usage.output_tokens
                return reply
            except ProviderError as error:
                if error.status != 429 or attempt >= RATE_LIMIT_RETRIES:
                    raise
                wait = error.retry_after_s if error.retry_after_s is not None else DEFAULT_PAUSE_S
                await self.limiter.pause(key, wait)
            finally:
                await self.limiter.release(key, slot, tokens)
            attempt += 1
