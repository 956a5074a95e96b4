"""A run's server-sent events (``GET /runs/{id}/events``) as the Python client yields them.

A streamed run's events are the library's own stream events, as ``Agent.run_stream`` yields
them in-process (:class:`~agent_executor._stream_events.TextDelta`,
:class:`~agent_executor._stream_events.PartialOutput`...); the run's result is a
:class:`RunResultEvent` and its end a :class:`RunEnded`, always last. Every other event (the
service's ``run_claimed``, the analytics ``attempt``...) is a :class:`RunEvent` with its type and
data, so an event a newer service adds reaches the caller too.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TypeAlias

from pydantic import JsonValue

from agent_executor._stream_events import (
    PartialOutput,
    RetryStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = ["RunEnded", "RunEvent", "RunResultEvent", "ServiceEvent", "service_event"]


@dataclass(frozen=True)
class RunEvent:
    """An event of a run that has no class of its own: the service's, or an analytics event.

    Attributes:
        type: The event's type, such as ``run_claimed``, ``attempt`` or ``run_completed``.
        data: Its JSON data.
        id: Its cursor in the run's events (``None`` for events that have none).
    """

    type: str
    data: JsonValue
    id: int | None = None


@dataclass(frozen=True)
class RunResultEvent:
    """A completed run's result (the ``result`` event): exactly one of the two is set.

    Attributes:
        session_id: The run's session.
        run_id: The run.
        result_text: The reply, for a run without an output schema.
        result_data: The validated value, for a run with one.
        timestamp: When the result was stored, as the service wrote it.
    """

    session_id: str
    run_id: str
    result_text: str | None = None
    result_data: JsonValue = None
    timestamp: str | None = None


@dataclass(frozen=True)
class RunEnded:
    """The run has ended; the last event.

    Attributes:
        status: ``completed``, ``failed`` or ``cancelled``.
    """

    status: str


ServiceEvent: TypeAlias = (
    TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | PartialOutput
    | RetryStarted
    | RunResultEvent
    | RunEnded
    | RunEvent
)
"""What ``Client.events`` yields."""

_STREAM_EVENTS: dict[
    str, type[TextDelta | ToolCallStarted | ToolCallFinished | PartialOutput | RetryStarted]
] = {
    kind.type: kind
    for kind in (TextDelta, ToolCallStarted, ToolCallFinished, PartialOutput, RetryStarted)
}


def service_event(type: str, data: str, id: str = "") -> ServiceEvent:
    """Return one server-sent event of a run as its typed event.

    Args:
        type: The event's ``event`` field.
        data: Its ``data`` field (JSON).
        id: Its ``id`` field (empty when it has none).

    Returns:
        The typed event; a :class:`RunEvent` for a type without a class of its own, or whose
        data does not have that class's fields.
    """
    try:
        value: JsonValue = json.loads(data) if data else None
    except ValueError:
        value = data
    fields = value if isinstance(value, dict) else {}
    if type == "end":
        return RunEnded(status=str(fields.get("status", "")))
    kind = _STREAM_EVENTS.get(type)
    try:
        if kind is PartialOutput:
            return PartialOutput(
                value=fields["data"], data=fields["data"], attempt=int(str(fields["attempt"]))
            )
        if kind is not None:
            names = {f.name for f in dataclasses.fields(kind)}
            return kind(**{k: v for k, v in fields.items() if k in names})  # type: ignore[arg-type]
        if type == "result":
            return RunResultEvent(
                session_id=str(fields["session_id"]),
                run_id=str(fields["run_id"]),
                result_text=_text(fields.get("result_text")),
                result_data=fields.get("result_data"),
                timestamp=_text(fields.get("timestamp")),
            )
    except (KeyError, TypeError, ValueError):
        pass  # not the fields this client knows: handed over as it came
    return RunEvent(type=type, data=value, id=int(id) if id.isdigit() else None)


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None
