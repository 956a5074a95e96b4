"""The analytics review: how each agent's runs went, computed from the JSONL event logs.

:func:`review` reads a directory of analytics day files (see :mod:`agent_executor.analytics`)
and returns a :class:`Review`: per agent, how many runs ended and how (success rate, failures by
error type, including ``output_tool_not_called``, the model not calling ``submit_result``), how
often the first attempt already met the contract, how many runs the re-prompt rescued, tokens
spent, run and model-call latency percentiles, and a per-UTC-day trend. A ``Review`` is a Pydantic
model, so ``review.model_dump_json()`` is its machine-readable form; :func:`format_review_table`
renders it for people.

Bad input is never fatal: corrupt lines, a partial last line, and JSON objects that are not a
known event are skipped and counted in the review. A run with a ``run_started`` but no end event
is counted as incomplete (still running, or its process died).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from pydantic import JsonValue
from pydantic import ValidationError as PydanticValidationError

from agent_contracts.errors import ConfigError
from agent_contracts.events import ANALYTICS_EVENT_ADAPTER
from agent_executor.analytics import DEFAULT_ANALYTICS_DIR, EventLines, as_utc
from agent_executor.review_models import (
    ALL_AGENTS,
    AgentReview,
    DayTrend,
    LatencyStats,
    Review,
    TokenTotals,
)
from agent_executor.review_tally import Tally

__all__ = [
    "ALL_AGENTS",
    "AgentReview",
    "DayTrend",
    "LatencyStats",
    "Review",
    "TokenTotals",
    "parse_since",
    "review",
    "review_events",
]

# -- reading -------------------------------------------------------------------------------------

_SPAN = re.compile(r"(\d+)\s*([dhw])\Z", re.IGNORECASE)
_SPAN_UNITS = {"d": timedelta(days=1), "h": timedelta(hours=1), "w": timedelta(weeks=1)}


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """Read a ``--since`` value: a date, an ISO 8601 time, or a span back from now.

    ``2025-01-05`` means that UTC day's midnight; ``2025-01-05T12:00`` without an offset is UTC;
    ``7d``, ``12h`` and ``2w`` count back from ``now``.

    Args:
        text: What the user wrote.
        now: The current time (default: the clock), for spans.

    Returns:
        A timezone-aware time.

    Raises:
        ConfigError: The text is none of those forms.
    """
    value = text.strip()
    span = _SPAN.match(value)
    if span:
        current = now or datetime.now(UTC)
        return current - int(span.group(1)) * _SPAN_UNITS[span.group(2).lower()]
    try:
        if len(value) == 10:
            return datetime.combine(date.fromisoformat(value), time(), tzinfo=UTC)
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(
            f"cannot read {text!r} as a time: give a date (2025-01-05), an ISO 8601 time "
            "(2025-01-05T12:00:00Z), or a span back from now (7d, 12h, 2w)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _as_utc(since: datetime | date | None) -> datetime | None:
    if since is None:
        return None
    if not isinstance(since, datetime):
        return datetime.combine(since, time(), tzinfo=UTC)
    return as_utc(since)


def review(
    directory: Path | str = DEFAULT_ANALYTICS_DIR,
    *,
    since: datetime | date | None = None,
    agent: str | None = None,
) -> Review:
    """Compute the per-agent review of the analytics logs in ``directory``.

    The logs are read a line at a time and counted as they pass (:class:`Tally`), so a log of
    any size is reviewed in bounded memory.

    Args:
        directory: A directory of ``events-YYYY-MM-DD.jsonl`` files, or one such file. A
            directory that does not exist gives an empty review (``files`` is empty).
        since: Count only events at or after this time; a date means its UTC midnight, a naive
            time is UTC. A run whose start is before it and whose end is after it still counts,
            by its end.
        agent: Count only this agent's events.

    Returns:
        The review; corrupt, partial and unrecognised lines are counted in it, never raised.
    """
    since_utc = _as_utc(since)
    lines = EventLines(directory, since=since_utc)
    tally = Tally(agent=agent, since=since_utc)
    unrecognised = 0
    for raw in lines:
        try:
            event = ANALYTICS_EVENT_ADAPTER.validate_json(raw)
        except PydanticValidationError:
            if _is_json_object(raw):
                unrecognised += 1
            else:
                lines.corrupt += 1
            continue
        tally.add(event)
    agents, overall = tally.reviews()
    return Review(
        source=str(directory),
        since=since_utc,
        agent=agent,
        files=[str(path) for path in lines.files],
        unreadable_files=[str(path) for path in lines.unreadable],
        events=tally.events,
        corrupt_lines=lines.corrupt,
        partial_lines=lines.partial,
        unrecognised_events=unrecognised,
        agents=agents,
        overall=overall,
    )


def review_events(
    events: Iterable[dict[str, JsonValue]],
    *,
    source: str,
    since: datetime | None = None,
    agent: str | None = None,
) -> Review:
    """Compute the per-agent review of analytics events already read (a service's store, say).

    Args:
        events: The events as JSON objects, oldest first; read one at a time.
        source: Where they came from, for :attr:`Review.source`.
        since: Count only events at or after this time (naive means UTC).
        agent: Count only this agent's events.

    Returns:
        The review; objects that are not a known event are counted, never raised.
    """
    since_utc = _as_utc(since)
    tally = Tally(agent=agent, since=since_utc)
    unrecognised = 0
    for raw in events:
        try:
            tally.add(ANALYTICS_EVENT_ADAPTER.validate_python(raw))
        except PydanticValidationError:
            unrecognised += 1
    agents, overall = tally.reviews()
    return Review(
        source=source,
        since=since_utc,
        agent=agent,
        events=tally.events,
        unrecognised_events=unrecognised,
        agents=agents,
        overall=overall,
    )


def _is_json_object(raw: bytes) -> bool:
    """Whether a line that is not a known event is a JSON object at all (else it is corrupt)."""
    try:
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):  # includes UnicodeDecodeError
        return False
