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

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError

from agent_contracts.errors import ConfigError
from agent_contracts.events import (
    ANALYTICS_EVENT_ADAPTER,
    AttemptEvent,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
)
from agent_contracts.messages import Usage
from agent_executor.analytics import DEFAULT_ANALYTICS_DIR, as_utc, read_events

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

ALL_AGENTS = "(all agents)"
"""The ``agent_id`` of :attr:`Review.overall`, the row that sums every agent."""

_NOT_CALLED = "output_tool_not_called"
"""The error type of a run whose model never called ``submit_result``."""


class LatencyStats(BaseModel):
    """Percentiles of a set of durations (linear interpolation between the nearest ranks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = 0
    """How many durations were measured."""
    p50_ms: float | None = None
    """The median, in milliseconds; ``None`` without measurements."""
    p95_ms: float | None = None
    """The 95th percentile, in milliseconds; ``None`` without measurements."""
    max_ms: float | None = None
    """The longest, in milliseconds; ``None`` without measurements."""


class TokenTotals(BaseModel):
    """Tokens spent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: int = 0
    """Prompt tokens."""
    output: int = 0
    """Completion tokens."""
    total: int = 0
    """Input plus output tokens."""


class DayTrend(BaseModel):
    """How the runs of one UTC day went (a run belongs to the day it started)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    day: date
    """The UTC day."""
    runs: int = 0
    """Runs that ended."""
    completed: int = 0
    """Runs that ended with a result."""
    failed: int = 0
    """Runs that ended without one."""
    incomplete: int = 0
    """Runs that started but have no end event."""


class AgentReview(BaseModel):
    """How one agent's runs went (or every agent's, for :attr:`Review.overall`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: str
    """The agent, or :data:`ALL_AGENTS`."""
    runs: int = 0
    """Runs that ended (completed plus failed)."""
    completed: int = 0
    """Runs that ended with a result."""
    failed: int = 0
    """Runs that ended without one."""
    incomplete: int = 0
    """Runs with a ``run_started`` and no end event (not in ``runs``)."""
    success_rate: float | None = None
    """``completed / runs``; ``None`` when no run ended."""
    attempted: int = 0
    """Ended runs that logged a first attempt at the output."""
    first_try_valid: int = 0
    """Ended runs whose first attempt met the contract."""
    first_try_valid_rate: float | None = None
    """``first_try_valid / attempted``; ``None`` when no run made an attempt."""
    rescued: int = 0
    """Completed runs that needed at least one re-prompt: the retry saved them."""
    retries: int = 0
    """Re-prompts made by the ended runs."""
    retry_reasons: dict[str, int] = Field(default_factory=dict)
    """Why re-prompts were made (the failed attempt's error type), most frequent first."""
    failures_by_type: dict[str, int] = Field(default_factory=dict)
    """Failed runs by error type, most frequent first."""
    output_tool_not_called: int = 0
    """Failed runs whose model never called ``submit_result``."""
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    """Tokens spent by every run, incomplete ones included."""
    run_latency: LatencyStats = Field(default_factory=LatencyStats)
    """Wall time of the ended runs."""
    model_latency: LatencyStats = Field(default_factory=LatencyStats)
    """Time of each model call."""
    days: list[DayTrend] = Field(default_factory=list)
    """The runs per UTC day, oldest first."""


class Review(BaseModel):
    """What :func:`review` found in a directory of analytics logs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    """The directory (or file) read."""
    since: AwareDatetime | None = None
    """Only events at or after this time were counted."""
    agent: str | None = None
    """Only this agent's events were counted."""
    files: list[str] = Field(default_factory=list)
    """The log files read."""
    unreadable_files: list[str] = Field(default_factory=list)
    """Log files that could not be read and were skipped."""
    events: int = 0
    """Events counted."""
    corrupt_lines: int = 0
    """Lines skipped because they were not a JSON object (torn, glued or garbled)."""
    partial_lines: int = 0
    """Last lines skipped because they had no newline (being written, or cut off)."""
    unrecognised_events: int = 0
    """JSON objects skipped because they are not a known event (or break its fields)."""
    agents: list[AgentReview] = Field(default_factory=list)
    """One entry per agent, sorted by agent id."""
    overall: AgentReview = Field(default_factory=lambda: AgentReview(agent_id=ALL_AGENTS))
    """Every agent together."""

    @property
    def skipped(self) -> int:
        """Lines and objects skipped: corrupt, partial and unrecognised."""
        return self.corrupt_lines + self.partial_lines + self.unrecognised_events


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


@dataclass
class _Run:
    """Everything the log says about one run."""

    agent_id: str
    started: RunStartedEvent | None = None
    ended: RunCompletedEvent | RunFailedEvent | None = None
    first_attempt_ok: bool | None = None
    turn_usage: Usage = field(default_factory=Usage)
    turn_latencies: list[float] = field(default_factory=list)
    retry_reasons: list[str] = field(default_factory=list)

    @property
    def day(self) -> date | None:
        event = self.started or self.ended
        return event.ts.astimezone(UTC).date() if event is not None else None

    @property
    def usage(self) -> Usage:
        return self.ended.usage if self.ended is not None else self.turn_usage


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _latency(values: Sequence[float]) -> LatencyStats:
    if not values:
        return LatencyStats()
    ordered = sorted(values)
    return LatencyStats(
        count=len(ordered),
        p50_ms=_percentile(ordered, 0.50),
        p95_ms=_percentile(ordered, 0.95),
        max_ms=ordered[-1],
    )


def _ranked(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _summarise(agent_id: str, runs: Sequence[_Run]) -> AgentReview:
    ended = [run for run in runs if run.ended is not None]
    completed = [run for run in ended if isinstance(run.ended, RunCompletedEvent)]
    failures: Counter[str] = Counter(
        run.ended.error_type for run in ended if isinstance(run.ended, RunFailedEvent)
    )
    attempted = [run for run in ended if run.first_attempt_ok is not None]
    first_ok = sum(1 for run in attempted if run.first_attempt_ok)
    usage = sum((run.usage for run in runs), Usage())
    days: dict[date, Counter[str]] = {}
    for run in runs:
        day = run.day
        if day is None:
            continue
        counts = days.setdefault(day, Counter())
        if run.ended is None:
            counts["incomplete"] += 1
        else:
            counts["runs"] += 1
            counts["completed" if isinstance(run.ended, RunCompletedEvent) else "failed"] += 1
    return AgentReview(
        agent_id=agent_id,
        runs=len(ended),
        completed=len(completed),
        failed=len(ended) - len(completed),
        incomplete=len(runs) - len(ended),
        success_rate=_rate(len(completed), len(ended)),
        attempted=len(attempted),
        first_try_valid=first_ok,
        first_try_valid_rate=_rate(first_ok, len(attempted)),
        rescued=sum(1 for run in completed if run.ended is not None and run.ended.retries > 0),
        retries=sum(run.ended.retries for run in ended if run.ended is not None),
        retry_reasons=_ranked(Counter(reason for run in runs for reason in run.retry_reasons)),
        failures_by_type=_ranked(failures),
        output_tool_not_called=failures[_NOT_CALLED],
        tokens=TokenTotals(
            input=usage.input_tokens, output=usage.output_tokens, total=usage.total_tokens
        ),
        run_latency=_latency([run.ended.duration_ms for run in ended if run.ended is not None]),
        model_latency=_latency([ms for run in runs for ms in run.turn_latencies]),
        days=[DayTrend(day=day, **counts) for day, counts in sorted(days.items())],
    )


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

    Args:
        directory: A directory of ``events-YYYY-MM-DD.jsonl`` files, or one such file. A
            directory that does not exist gives an empty review (``files`` is empty).
        since: Count only events at or after this time; a date means its UTC midnight, a naive
            time is UTC. A run started before it and ended after it counts, by its end.
        agent: Count only this agent's events.

    Returns:
        The review; corrupt, partial and unrecognised lines are counted in it, never raised.
    """
    since_utc = _as_utc(since)
    read = read_events(directory, since=since_utc)
    files = [str(path) for path in read.files]
    counts = {"corrupt_lines": read.corrupt, "partial_lines": read.partial}
    counted = review_events(read.events, source=str(directory), since=since_utc, agent=agent)
    unreadable = [str(path) for path in read.unreadable]
    return counted.model_copy(update={"files": files, "unreadable_files": unreadable, **counts})


def review_events(
    events: Iterable[dict[str, JsonValue]],
    *,
    source: str,
    since: datetime | None = None,
    agent: str | None = None,
) -> Review:
    """Compute the per-agent review of analytics events already read (a service's store, say).

    Args:
        events: The events as JSON objects, oldest first, already limited to ``since``.
        source: Where they came from.
        since: The time they were limited to.
        agent: Count only this agent's events.

    Returns:
        The review; objects that are not a known event are counted, never raised.
    """
    runs: dict[str, _Run] = {}
    unrecognised = used = 0
    for raw in events:
        try:
            event = ANALYTICS_EVENT_ADAPTER.validate_python(raw)
        except PydanticValidationError:
            unrecognised += 1
            continue
        if agent is not None and event.agent_id != agent:
            continue
        used += 1
        run = runs.setdefault(event.run_id, _Run(agent_id=event.agent_id))
        if isinstance(event, RunStartedEvent):
            run.started = run.started or event
        elif isinstance(event, RunCompletedEvent | RunFailedEvent):
            run.ended = run.ended or event
        elif isinstance(event, AttemptEvent):
            if event.number == 1:
                run.first_attempt_ok = event.ok
        elif isinstance(event, RetryEvent):
            run.retry_reasons.append(event.reason)
        elif isinstance(event, ModelTurnEvent):
            run.turn_usage = run.turn_usage + event.usage
            run.turn_latencies.append(event.latency_ms)
    by_agent: dict[str, list[_Run]] = {}
    for run in runs.values():
        by_agent.setdefault(run.agent_id, []).append(run)
    return Review(
        source=source,
        since=since,
        agent=agent,
        events=used,
        unrecognised_events=unrecognised,
        agents=[_summarise(name, by_agent[name]) for name in sorted(by_agent)],
        overall=_summarise(ALL_AGENTS, list(runs.values())),
    )
