"""A run's events between two writes to the store: analytics events and stream events, coalesced.

The library hands a run executed by the service two kinds of events, and :class:`EventBuffer`
keeps both, in the order they happened, until the runner stores them (every tick, and at the
run's end):

- its analytics events (``run_started``, ``model_turn``, ``tool_call``, ``attempt``, ``retry``,
  ``run_completed``, ``run_failed``), stored as they are; the models themselves are kept as well
  (:attr:`EventBuffer.analytics`) for the run's end, which counts them for the rollups;
- for a run asked to stream, the events ``Agent.run_stream`` yields (:data:`STREAM_TYPES`), stored
  as their ``to_json()``: ``text_delta``, ``tool_call_started``, ``tool_call_finished``,
  ``partial_output`` and ``retry_started``. The stream's ``RunStarted`` is left out (the
  analytics ``run_started`` says the same, once per model tier too), and ``RunFinished`` never
  reaches a sink (a run's end is its ``run_completed``/``run_failed`` event).

Beside them, the store logs what the service did with the run (:data:`SERVICE_TYPES`): each
claim (``run_claimed``), how a claim ended early (``claim_expired``, ``run_requeued``) and a
cancel (``run_cancelled``), and a failure of its own (a ``run_failed`` with the error only: a
run that used up its leases, or failed inside the runner). Neither these nor the stream events
are analytics events (:func:`is_analytics`): the analytics review leaves them out, as
``agentshape analytics`` never sees them in the JSONL log.

So that a streamed reply costs a few rows, not one per piece, each write coalesces what
accumulated since the last one: consecutive ``text_delta`` events of one model turn become one,
and of an attempt's ``partial_output`` events only the latest is kept (the attempts of one
tier: a tier's ``RunStarted`` parts them from those of earlier tiers). A reader of the log thus sees
the text and the output grow at the rate the runner writes (a few times a second), each partial
output still a prefix of that attempt's final value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from pydantic import BaseModel, JsonValue

from agent_contracts._events import (
    AnalyticsEvent,
    AttemptEvent,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
    ToolCallEvent,
)
from agent_executor._stream_events import PartialOutput, RunEvent, RunStarted, TextDelta

__all__ = [
    "NOT_ANALYTICS_TYPES",
    "SERVICE_TYPES",
    "STREAM_TYPES",
    "EventBuffer",
    "StoredEvent",
    "is_analytics",
]

StoredEvent = tuple[str, dict[str, JsonValue]]
"""An event as the store keeps it: its type and its JSON data."""

_ANALYTICS_TYPES = (
    RunStartedEvent,
    ModelTurnEvent,
    ToolCallEvent,
    AttemptEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
)
"""The classes of :data:`~agent_contracts._events.AnalyticsEvent`."""

STREAM_TYPES: frozenset[str] = frozenset(
    {"partial_output", "retry_started", "text_delta", "tool_call_finished", "tool_call_started"}
)
"""The types of the stream events a run's log holds beside its analytics events."""

SERVICE_TYPES: frozenset[str] = frozenset(
    {"claim_expired", "run_cancelled", "run_claimed", "run_requeued"}
)
"""The types of the events the store logs of what the service did with a run."""

NOT_ANALYTICS_TYPES: frozenset[str] = STREAM_TYPES | SERVICE_TYPES
"""The types of a run's logged events that are no analytics events (the review leaves them out)."""


def is_analytics(kind: str, data: Mapping[str, object]) -> bool:
    """Return whether a run's logged event (its type and data) is one of its analytics events.

    Beside the types of :data:`NOT_ANALYTICS_TYPES`, a ``run_failed`` the service wrote itself
    (a run that used up its leases, or failed inside the runner) is none: it carries the error
    only, where the library's ``run_failed`` names its ``event``.
    """
    return kind not in NOT_ANALYTICS_TYPES and (kind != "run_failed" or "event" in data)


class EventBuffer:
    """One run's events until the runner stores them: analytics events and stream events.

    :meth:`emit` is the run's analytics sink and :meth:`stream` its stream sink (the service
    sets it as the run's ``STREAM_TO``); :meth:`drain` hands over what came since the last
    drain, coalesced.
    """

    def __init__(self) -> None:
        self._pending: list[StoredEvent | RunEvent] = []
        self._streamed = False
        """Whether a stream event is among the pending ones (else there is nothing to join)."""
        self.analytics: list[AnalyticsEvent] = []
        """Every analytics event of the run so far, as the library emitted it, in order (the
        run's end counts them for the rollups without reading their JSON back)."""

    def emit(self, event: BaseModel) -> None:
        """Keep one analytics event."""
        data: dict[str, JsonValue] = event.model_dump(mode="json")
        self._pending.append((str(data.get("event", type(event).__name__)), data))
        if isinstance(event, _ANALYTICS_TYPES):
            self.analytics.append(event)

    def stream(self, event: RunEvent) -> None:
        """Keep one stream event.

        Only a reference is kept; its JSON is made when it is drained, and only if it is not
        coalesced away by then. A ``RunStarted`` only parts one tier's attempts from the next
        (it is not stored: see the module docstring).
        """
        self._pending.append(event)
        self._streamed = True

    def drain(self) -> list[StoredEvent]:
        """Return the events kept since the last drain, coalesced, and forget them.

        Consecutive ``text_delta`` events of one step are joined into one; of the
        ``partial_output`` events of one attempt only the latest is kept, where it was.
        ``RunStarted`` events are not returned.
        """
        pending, self._pending = self._pending, []
        if not self._streamed:  # analytics events only: kept as they are
            return cast("list[StoredEvent]", pending)
        self._streamed = False
        latest: dict[tuple[int, int], int] = {}  # (tier run, attempt): its last partial output
        tier = 0
        for index, event in enumerate(pending):
            tier += isinstance(event, RunStarted)
            if isinstance(event, PartialOutput):
                latest[tier, event.attempt] = index
        drained: list[StoredEvent] = []
        text: list[str] = []
        step = 0
        tier = 0
        for index, event in enumerate(pending):
            if isinstance(event, RunStarted):
                tier += 1
                continue
            if isinstance(event, PartialOutput) and latest[tier, event.attempt] != index:
                continue
            if isinstance(event, TextDelta):
                if text and event.step != step:
                    drained.append(_stored(TextDelta("".join(text), step)))
                    text = []
                text.append(event.text)
                step = event.step
                continue
            if text:
                drained.append(_stored(TextDelta("".join(text), step)))
                text = []
            drained.append(event if isinstance(event, tuple) else _stored(event))
        if text:
            drained.append(_stored(TextDelta("".join(text), step)))
        return drained


def _stored(event: RunEvent) -> StoredEvent:
    """Return a stream event as the store keeps it (its ``to_json()``, typed by ``type``)."""
    return event.type, event.to_json()
