"""Model replies as they arrive: the pieces a streaming provider hands the run loop.

A provider may offer ``stream(turn, on_delta)`` beside ``request(turn)``: it makes the same call
with the provider's streaming API, hands each piece of the reply to ``on_delta`` as a
:class:`TurnDelta` while it arrives, and returns the same :class:`ModelTurn` that ``request``
would have returned for that reply (the run loop then judges it exactly as without streaming).
A provider without ``stream`` still streams, in one piece per part: :func:`stream_turn` replays
its finished turn, as an OpenAI-compatible server that sends a tool call's arguments whole does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agent_executor._providers.base import ModelTurn, ModelTurnRequest, Provider

__all__ = [
    "DeltaSink",
    "StreamingProvider",
    "TurnDelta",
    "replay_turn",
    "stream_turn",
]


@dataclass(frozen=True, slots=True)
class TurnDelta:
    """A piece of one model reply, as it arrived.

    A piece is either reply text (``call_index is None``) or part of the arguments text of the
    tool call at ``call_index`` (its position in the reply, from 0). ``call_id`` and ``name``
    come with the first piece of a call at least (later pieces may leave them ``None``); the
    name is the run loop's, already mapped back from the wire.

    Attributes:
        text: A piece of the reply's text.
        call_index: The tool call the piece belongs to, or ``None`` for reply text.
        call_id: The tool call's id, when known.
        name: The tool's name, when known.
        arguments: A piece of the tool call's arguments text (JSON, as the model writes it).
    """

    text: str = ""
    call_index: int | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""


DeltaSink = Callable[[TurnDelta], None]
"""Takes each piece of a reply as it arrives; it must not block (it runs on the event loop)."""


@runtime_checkable
class StreamingProvider(Provider, Protocol):
    """A provider that can hand over its reply while it arrives."""

    async def stream(self, turn: ModelTurnRequest, on_delta: DeltaSink) -> ModelTurn:
        """Make one model call with the provider's streaming API.

        Args:
            turn: The conversation, tools and settings for this call.
            on_delta: Takes each piece of the reply as it arrives.

        Returns:
            The whole reply, exactly as :meth:`Provider.request` returns it for the same reply.

        Raises:
            ProviderError: The provider failed (before or during the stream).
        """
        ...


def replay_turn(turn: ModelTurn, on_delta: DeltaSink) -> None:
    """Hand a finished reply to ``on_delta`` whole: its text, then each tool call's arguments."""
    if turn.text:
        on_delta(TurnDelta(text=turn.text))
    for index, call in enumerate(turn.tool_calls):
        on_delta(
            TurnDelta(
                call_index=index, call_id=call.id, name=call.name, arguments=call.raw_arguments
            )
        )


async def stream_turn(provider: Provider, turn: ModelTurnRequest, on_delta: DeltaSink) -> ModelTurn:
    """Make one model call, handing the reply's pieces to ``on_delta`` as they arrive.

    A provider with ``stream`` streams; any other makes its usual request and its reply is
    replayed whole.

    Args:
        provider: The provider.
        turn: The conversation, tools and settings for this call.
        on_delta: Takes each piece of the reply.

    Returns:
        The whole reply.

    Raises:
        ProviderError: The provider failed.
    """
    stream = getattr(provider, "stream", None)
    if callable(stream):
        streamed: ModelTurn = await stream(turn, on_delta)
        return streamed
    reply = await provider.request(turn)
    replay_turn(reply, on_delta)
    return reply
