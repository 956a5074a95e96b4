"""The analytics review: how each agent's runs went, computed from the JSONL event logs.

:func:`review` reads a directory of analytics day files (see :mod:`agent_executor._analytics`)
and returns a :class:`Review`: per agent, how many runs ended and how (success rate, failures by
error type, including ``output_tool_not_called``, the model not calling ``submit_result``), how
often the first attempt already met the contract, how many runs the re-prompt rescued, tokens
spent, run and model-call latency percentiles, and a per-UTC-day trend. A ``Review`` is a Pydantic
model, so ``review.model_dump_json()`` is its machine-readable form; :func:`format_review_table`
renders it for people as a plain-text table, :func:`render_review_html` as one self-contained
HTML page.

Bad input is never fatal: corrupt lines, a partial last line, and JSON objects that are not a
known event are skipped and counted in the review. A run with a ``run_started`` but no end event
is counted as incomplete (still running, or its process died).

Events are counted as they stream past (:class:`Tally`); an ended run is remembered only by
its id, so events that arrive after its end are not taken for a new run. The HTML page (a
table and three inline SVG charts) fetches nothing, so it opens without a network; every value
from the logs is HTML-escaped.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from html import escape
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError

from agent_contracts._errors import ConfigError
from agent_contracts._events import (
    ANALYTICS_EVENT_ADAPTER,
    AnalyticsEvent,
    AttemptEvent,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
)
from agent_core._user_files import write_text_atomically
from agent_executor._analytics import DEFAULT_ANALYTICS_DIR, EventLines, as_utc

__all__ = [
    "ALL_AGENTS",
    "AgentReview",
    "DayTrend",
    "LatencyStats",
    "Review",
    "Tally",
    "TokenTotals",
    "Totals",
    "format_review_table",
    "parse_since",
    "render_review_html",
    "review",
    "review_events",
    "write_review_html",
]

_DASH = "\u2013"
"""What the HTML page shows for a figure there is none of (an en dash)."""


# -- what the review reports ----------------------------------------------------------------------

ALL_AGENTS = "(all agents)"
"""The ``agent_id`` of :attr:`Review.overall`, the row that sums every agent."""


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
    batched: int = 0
    """Ended runs whose model calls went through a provider batch (``run-many --batch``)."""
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


# -- counting events ------------------------------------------------------------------------------

_NOT_CALLED = "output_tool_not_called"
"""The error type of a run whose model never called ``submit_result``."""


def rate(part: int, whole: int) -> float | None:
    """Return ``part / whole``, or ``None`` when ``whole`` is 0.

    Args:
        part: The count of the runs that did it.
        whole: The count of the runs.
    """
    return part / whole if whole else None


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _latency(values: array[float]) -> LatencyStats:
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


@dataclass
class _Open:
    """What is kept of a run until its end event arrives."""

    agent_id: str
    day: date | None = None
    first_attempt_ok: bool | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    batched: bool = False


@dataclass
class Totals:
    """One agent's (or every agent's) running totals: the figures its review is made of."""

    runs: int = 0
    """Runs that ended."""
    completed: int = 0
    """Runs that ended with a result."""
    attempted: int = 0
    """Ended runs that logged a first attempt."""
    first_ok: int = 0
    """Ended runs whose first attempt met the contract."""
    rescued: int = 0
    """Completed runs that needed a re-prompt."""
    retries: int = 0
    """Re-prompts the ended runs made."""
    incomplete: int = 0
    """Runs with a start and no end."""
    batched: int = 0
    """Ended runs whose model calls went through a provider batch."""
    input_tokens: int = 0
    """Prompt tokens of every run."""
    output_tokens: int = 0
    """Completion tokens of every run."""
    failures: Counter[str] = field(default_factory=Counter)
    """Failed runs by error type."""
    retry_reasons: Counter[str] = field(default_factory=Counter)
    """Re-prompts by the failed attempt's error type."""
    run_ms: array[float] = field(default_factory=lambda: array("d"))
    """The wall time of each ended run, in milliseconds."""
    turn_ms: array[float] = field(default_factory=lambda: array("d"))
    """The time of each model call, in milliseconds."""
    days: dict[date, Counter[str]] = field(default_factory=dict)
    """Runs (``runs``, ``completed``, ``failed``, ``incomplete``) by the UTC day they started."""

    def _ended(self, run: _Open, end: RunCompletedEvent | RunFailedEvent) -> None:
        self.runs += 1
        self.batched += run.batched
        self.retries += end.retries
        self.run_ms.append(end.duration_ms)
        self.input_tokens += end.usage.input_tokens
        self.output_tokens += end.usage.output_tokens
        if isinstance(end, RunCompletedEvent):
            self.completed += 1
            self.rescued += end.retries > 0
        else:
            self.failures[end.error_type] += 1
        if run.first_attempt_ok is not None:
            self.attempted += 1
            self.first_ok += run.first_attempt_ok
        day = run.day or end.ts.astimezone(UTC).date()
        counts = self.days.setdefault(day, Counter())
        counts["runs"] += 1
        counts["completed" if isinstance(end, RunCompletedEvent) else "failed"] += 1

    def _unfinished(self, run: _Open) -> None:
        self.incomplete += 1
        self.input_tokens += run.input_tokens
        self.output_tokens += run.output_tokens
        if run.day is not None:
            self.days.setdefault(run.day, Counter())["incomplete"] += 1

    def review(self, agent_id: str) -> AgentReview:
        """Return these totals as ``agent_id``'s review (rates and percentiles worked out)."""
        return AgentReview(
            agent_id=agent_id,
            runs=self.runs,
            completed=self.completed,
            failed=self.runs - self.completed,
            incomplete=self.incomplete,
            success_rate=rate(self.completed, self.runs),
            attempted=self.attempted,
            first_try_valid=self.first_ok,
            first_try_valid_rate=rate(self.first_ok, self.attempted),
            rescued=self.rescued,
            retries=self.retries,
            retry_reasons=_ranked(self.retry_reasons),
            failures_by_type=_ranked(self.failures),
            output_tool_not_called=self.failures[_NOT_CALLED],
            tokens=TokenTotals(
                input=self.input_tokens,
                output=self.output_tokens,
                total=self.input_tokens + self.output_tokens,
            ),
            batched=self.batched,
            run_latency=_latency(self.run_ms),
            model_latency=_latency(self.turn_ms),
            days=[DayTrend(day=day, **counts) for day, counts in sorted(self.days.items())],
        )


class Tally:
    """The review's figures, counted one event at a time in bounded memory.

    Args:
        agent: Count only this agent's events (``None``: every agent's).
        since: Count only events at or after this aware time (``None``: all).
    """

    def __init__(self, *, agent: str | None = None, since: datetime | None = None) -> None:
        self.agent = agent
        self.since = since
        self.events = 0
        """Events counted."""
        self._open: dict[str, _Open] = {}
        self._ended: set[str] = set()
        self._agents: dict[str, Totals] = {}
        self._all = Totals()

    def add(self, event: AnalyticsEvent) -> None:
        """Count one event (one of another agent, or before ``since``, is passed over)."""
        if self.agent is not None and event.agent_id != self.agent:
            return
        if self.since is not None and event.ts < self.since:
            return
        self.events += 1
        if isinstance(event, ModelTurnEvent | RetryEvent):
            for each in self._totals_of(event.agent_id):
                if isinstance(event, ModelTurnEvent):
                    each.turn_ms.append(event.latency_ms)
                else:
                    each.retry_reasons[event.reason] += 1
        if event.run_id in self._ended:
            return  # the run is counted; only its turns and retries still add up
        run = self._open.get(event.run_id)
        if run is None:
            run = self._open[event.run_id] = _Open(agent_id=event.agent_id)
            self._totals_of(event.agent_id)  # an agent with only open runs is reviewed too
        if isinstance(event, RunStartedEvent):
            run.day = run.day or event.ts.astimezone(UTC).date()
        elif isinstance(event, RunCompletedEvent | RunFailedEvent):
            for each in self._totals_of(run.agent_id):
                each._ended(run, event)
            del self._open[event.run_id]
            self._ended.add(event.run_id)
        elif isinstance(event, AttemptEvent):
            if event.number == 1:
                run.first_attempt_ok = event.ok
        elif isinstance(event, ModelTurnEvent):
            run.input_tokens += event.usage.input_tokens
            run.output_tokens += event.usage.output_tokens
            run.batched = run.batched or event.batch_id is not None

    def _totals_of(self, agent_id: str) -> tuple[Totals, Totals]:
        totals = self._agents.get(agent_id)
        if totals is None:
            totals = self._agents[agent_id] = Totals()
        return totals, self._all

    def add_data(self, data: Mapping[str, JsonValue]) -> bool:
        """Count one event given as a JSON object, as :meth:`add` does.

        Args:
            data: The event's JSON object.

        Returns:
            Whether it is a known event; an unknown one is not counted.
        """
        try:
            event = ANALYTICS_EVENT_ADAPTER.validate_python(data)
        except PydanticValidationError:
            return False
        self.add(event)
        return True

    def totals(self) -> tuple[dict[str, Totals], Totals]:
        """Return each agent's totals, by agent id, and every agent's together.

        Runs still open (a ``run_started`` and no end) are counted as incomplete first, so
        :meth:`add` is not called after this.
        """
        for run in self._open.values():
            for each in self._totals_of(run.agent_id):
                each._unfinished(run)
        self._open.clear()
        return self._agents, self._all

    def reviews(self) -> tuple[list[AgentReview], AgentReview]:
        """Return each agent's review, sorted by agent id, and every agent's together.

        Runs still open (a ``run_started`` and no end) count as incomplete.
        """
        agents, everyone = self.totals()
        reviews = [totals.review(name) for name, totals in sorted(agents.items())]
        return reviews, everyone.review(ALL_AGENTS)


# -- reading the logs -----------------------------------------------------------------------------

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
    unrecognised = sum(not tally.add_data(raw) for raw in events)
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


# -- formatting figures ---------------------------------------------------------------------------


def _percent(value: float | None, missing: str = "-") -> str:
    """Return a rate as a percentage with one decimal, or ``missing`` when there is none."""
    return missing if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None, missing: str = "-", gap: str = "") -> str:
    """Return milliseconds as ``700ms``, from a second up as ``1.41s`` (``gap`` before the unit)."""
    if value is None:
        return missing
    return f"{value / 1000:,.2f}{gap}s" if value >= 1000 else f"{value:.0f}{gap}ms"


# -- the plain-text table -------------------------------------------------------------------------


def _count(value: int) -> str:
    return f"{value:,}"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """Align columns: the first ``left`` columns to the left, the rest (numbers) to the right."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return [line(headers), line(["-" * width for width in widths]), *map(line, rows)]


def _agent_row(stats: AgentReview) -> list[str]:
    return [
        stats.agent_id,
        _count(stats.runs),
        _count(stats.completed),
        _count(stats.failed),
        _count(stats.incomplete),
        _percent(stats.success_rate),
        _percent(stats.first_try_valid_rate),
        _count(stats.rescued),
        _count(stats.output_tool_not_called),
        _count(stats.tokens.input),
        _count(stats.tokens.output),
        _ms(stats.run_latency.p50_ms),
        _ms(stats.run_latency.p95_ms),
    ]


_AGENT_HEADERS = (
    "agent",
    "runs",
    "ok",
    "failed",
    "incomplete",
    "success",
    "first-try valid",
    "rescued",
    "no submit_result",
    "tokens in",
    "tokens out",
    "run p50",
    "run p95",
)


def format_review_table(result: Review) -> str:
    """Render a review as aligned plain-text tables for a terminal.

    Returns:
        A header naming the source and what was skipped, one row per agent with a total row,
        the failures by type, and the runs per UTC day; ends without a newline.
    """
    scope = [_plural(len(result.files), "file"), _plural(result.events, "event")]
    if result.since is not None:
        scope.append(f"since {result.since.isoformat()}")
    if result.agent is not None:
        scope.append(f"agent {result.agent}")
    lines = [f"Analytics review of {result.source} ({', '.join(scope)})"]
    skipped = [
        _plural(result.corrupt_lines, "corrupt line"),
        _plural(result.partial_lines, "partial line"),
        _plural(result.unrecognised_events, "unrecognised event"),
    ]
    if result.skipped:
        lines.append(f"Skipped {', '.join(skipped)}.")
    if result.unreadable_files:
        lines.append(f"Could not read: {', '.join(result.unreadable_files)}")
    total = result.overall
    if total.runs == 0 and total.incomplete == 0:
        lines.append("No runs found.")
        return "\n".join(lines)
    rows = [_agent_row(stats) for stats in result.agents]
    if len(result.agents) > 1:
        rows.append(_agent_row(total.model_copy(update={"agent_id": "TOTAL"})))
    lines += ["", *_table(_AGENT_HEADERS, rows)]

    failure_rows = [
        [stats.agent_id, kind, _count(count)]
        for stats in result.agents
        for kind, count in stats.failures_by_type.items()
    ]
    if failure_rows:
        lines += ["", "Failures by type", *_table(("agent", "error type", "runs"), failure_rows, 2)]

    retry_rows = [
        [stats.agent_id, reason, _count(count)]
        for stats in result.agents
        for reason, count in stats.retry_reasons.items()
    ]
    if retry_rows:
        lines += [
            "",
            "Re-prompts by reason",
            *_table(("agent", "reason", "retries"), retry_rows, 2),
        ]

    batch_rows = [
        [s.agent_id, _count(s.batched), _count(s.runs)] for s in result.agents if s.batched
    ]
    if batch_rows:
        lines += [
            "",
            "Runs through a provider batch",
            *_table(("agent", "batched", "of runs"), batch_rows),
        ]

    day_rows = [
        [
            day.day.isoformat(),
            _count(day.runs),
            _count(day.completed),
            _count(day.failed),
            _count(day.incomplete),
            _percent(rate(day.completed, day.runs)),
        ]
        for day in total.days
    ]
    lines += [
        "",
        "Runs per day (UTC)",
        *_table(("day", "runs", "ok", "failed", "incomplete", "success"), day_rows),
    ]
    return "\n".join(lines)


# -- the HTML page --------------------------------------------------------------------------------

_GREEN = "#2f9e44"
_BLUE = "#1c7ed6"
_RED = "#e03131"
_GREY = "#adb5bd"
_ORANGE = "#e8590c"

_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; background: #f8f9fa; color: #212529;
  font: 14px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 0 0 12px; }
.meta { color: #495057; margin: 0 0 4px; }
.warn { color: #a61e4d; margin: 0 0 4px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 18px 0; }
.card { background: #fff; border: 1px solid #dee2e6; border-radius: 8px; padding: 10px 16px;
  min-width: 140px; }
.card .value { font-size: 22px; font-weight: 600; }
.card .label { color: #6c757d; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
section { background: #fff; border: 1px solid #dee2e6; border-radius: 8px; padding: 16px 20px;
  margin: 0 0 18px; overflow-x: auto; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: 18px; }
.charts section { margin: 0; }
.charts section.wide { grid-column: 1 / -1; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 8px; border-bottom: 1px solid #e9ecef; white-space: nowrap; }
th { text-align: right; color: #495057; font-weight: 600; font-size: 12px; }
td { text-align: right; }
th.text, td.text { text-align: left; }
tr.total td { font-weight: 600; border-top: 2px solid #ced4da; }
table#failures { width: auto; margin-top: 12px; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg text { font: 12px -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #343a40; }
svg text.axis { fill: #868e96; font-size: 11px; }
.legend { display: flex; gap: 16px; margin: 8px 0 0; color: #495057; font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 5px; vertical-align: -1px; }
.empty { color: #6c757d; margin: 8px 0; }
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _short(text: str, limit: int = 22) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _legend(items: Sequence[tuple[str, str]]) -> str:
    spans = "".join(
        f'<span><span class="swatch" style="background:{color}"></span>{_e(label)}</span>'
        for label, color in items
    )
    return f'<div class="legend">{spans}</div>'


# -- charts --------------------------------------------------------------------------------------


def _rate_chart(agents: Sequence[AgentReview]) -> str:
    """Horizontal bars per agent: success rate, and first-try valid rate below it."""
    label_w, bar_w, row_h, top = 150, 300, 44, 8
    width, height = label_w + bar_w + 70, top + row_h * len(agents) + 8
    parts = [
        f'<svg id="chart-success" class="chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" '
        'aria-label="Success rate and first-try valid rate per agent" '
        'xmlns="http://www.w3.org/2000/svg">'
    ]
    for index, stats in enumerate(agents):
        y = top + index * row_h
        parts.append(
            f'<text x="{label_w - 10}" y="{y + 17}" text-anchor="end" class="agent-label">'
            f"<title>{_e(stats.agent_id)}</title>{_e(_short(stats.agent_id))}</text>"
        )
        for offset, height_px, kind, color, rate in (
            (4, 18, "success", _GREEN, stats.success_rate),
            (26, 10, "first-try", _BLUE, stats.first_try_valid_rate),
        ):
            parts.append(
                f'<rect x="{label_w}" y="{y + offset}" width="{bar_w}" height="{height_px}" '
                'fill="#f1f3f5" rx="2"/>'
            )
            if rate is not None:
                what = "success rate" if kind == "success" else "first-try valid"
                parts.append(
                    f'<rect class="bar {kind}" data-agent="{_e(stats.agent_id)}" '
                    f'data-value="{rate:.4f}" x="{label_w}" y="{y + offset}" '
                    f'width="{bar_w * rate:.1f}" height="{height_px}" fill="{color}" rx="2">'
                    f"<title>{_e(stats.agent_id)}: {what} {_percent(rate, _DASH)}</title></rect>"
                )
            parts.append(
                f'<text x="{label_w + bar_w + 8}" y="{y + offset + height_px - 3}" '
                f'class="value {kind}">{_percent(rate, _DASH)}</text>'
            )
    parts.append("</svg>")
    legend = _legend([("success rate", _GREEN), ("first attempt valid", _BLUE)])
    return "".join(parts) + legend


def _axis(peak: int) -> tuple[int, int]:
    """Return a whole-number tick step and the axis top (a multiple of it) for counts up to peak."""
    rough = max(peak, 1) / 4
    magnitude = 10 ** math.floor(math.log10(rough)) if rough >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= rough)
    return step, step * max(1, math.ceil(peak / step))


def _day_chart(days: Sequence[DayTrend]) -> str:
    """Stacked vertical bars per UTC day: completed, failed, incomplete."""
    left, right, top, bottom = 44, 12, 12, 34
    plot_w, plot_h = max(440, min(900, 26 * len(days))), 200
    width, height = left + plot_w + right, top + plot_h + bottom
    step, peak = _axis(max((d.runs + d.incomplete for d in days), default=1))
    slot = plot_w / max(len(days), 1)
    bar = max(2.0, min(36.0, slot * 0.7))
    label_every = max(1, math.ceil(len(days) / 12))
    parts = [
        f'<svg id="chart-days" class="chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="Runs per UTC day" '
        'xmlns="http://www.w3.org/2000/svg">'
    ]
    for value in range(0, peak + 1, step):
        y = top + plot_h - plot_h * value / peak
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{"#ced4da" if value == 0 else "#f1f3f5"}"/>'
            f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value}</text>'
        )
    for index, day in enumerate(days):
        x = left + slot * index + (slot - bar) / 2
        base = float(top + plot_h)
        for kind, count, color in (
            ("completed", day.completed, _GREEN),
            ("failed", day.failed, _RED),
            ("incomplete", day.incomplete, _GREY),
        ):
            if not count:
                continue
            h = plot_h * count / peak
            base -= h
            parts.append(
                f'<rect class="bar {kind}" data-day="{day.day.isoformat()}" data-value="{count}" '
                f'x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{color}">'
                f"<title>{day.day.isoformat()}: {count} {kind}</title></rect>"
            )
        if index % label_every == 0:
            parts.append(
                f'<text class="axis day-label" x="{x + bar / 2:.1f}" y="{top + plot_h + 16}" '
                f'text-anchor="middle">{day.day.strftime("%m-%d")}</text>'
            )
    parts.append("</svg>")
    legend = _legend([("completed", _GREEN), ("failed", _RED), ("incomplete", _GREY)])
    return "".join(parts) + legend


def _failure_chart(failures: dict[str, int]) -> str:
    """Horizontal bars per error type, the most frequent first."""
    if not failures:
        return '<p class="empty">No failed runs.</p>'
    label_w, bar_w, row_h, top = 230, 230, 28, 6
    width, height = label_w + bar_w + 60, top + row_h * len(failures) + 6
    peak = max(failures.values())
    parts = [
        f'<svg id="chart-failures" class="chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="Failed runs by error type" '
        'xmlns="http://www.w3.org/2000/svg">'
    ]
    for index, (kind, count) in enumerate(failures.items()):
        y = top + index * row_h
        parts.append(
            f'<text x="{label_w - 10}" y="{y + 15}" text-anchor="end">{_e(kind)}</text>'
            f'<rect class="bar failure" data-type="{_e(kind)}" data-value="{count}" '
            f'x="{label_w}" y="{y + 2}" width="{bar_w * count / peak:.1f}" height="18" '
            f'fill="{_ORANGE}" rx="2"><title>{_e(kind)}: {count}</title></rect>'
            f'<text x="{label_w + bar_w * count / peak + 6:.1f}" y="{y + 15}" class="value">'
            f"{count}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# -- tables and page -----------------------------------------------------------------------------

_COLUMNS = (
    "agent",
    "runs",
    "ok",
    "failed",
    "incomplete",
    "success",
    "first-try valid",
    "rescued by retry",
    "no submit_result",
    "tokens in",
    "tokens out",
    "tokens total",
    "run p50",
    "run p95",
    "model call p50",
)


def _agent_cells(stats: AgentReview) -> list[str]:
    return [
        f"{stats.runs:,}",
        f"{stats.completed:,}",
        f"{stats.failed:,}",
        f"{stats.incomplete:,}",
        _percent(stats.success_rate, _DASH),
        _percent(stats.first_try_valid_rate, _DASH),
        f"{stats.rescued:,}",
        f"{stats.output_tool_not_called:,}",
        f"{stats.tokens.input:,}",
        f"{stats.tokens.output:,}",
        f"{stats.tokens.total:,}",
        _ms(stats.run_latency.p50_ms, _DASH, " "),
        _ms(stats.run_latency.p95_ms, _DASH, " "),
        _ms(stats.model_latency.p50_ms, _DASH, " "),
    ]


def _agent_table(result: Review) -> str:
    head = "".join(
        f'<th class="text">{_e(c)}</th>' if i == 0 else f"<th>{_e(c)}</th>"
        for i, c in enumerate(_COLUMNS)
    )
    rows = []
    for stats in result.agents:
        cells = "".join(f"<td>{_e(cell)}</td>" for cell in _agent_cells(stats))
        rows.append(
            f'<tr class="agent" data-agent="{_e(stats.agent_id)}">'
            f'<td class="text">{_e(stats.agent_id)}</td>{cells}</tr>'
        )
    if len(result.agents) > 1:
        cells = "".join(f"<td>{_e(cell)}</td>" for cell in _agent_cells(result.overall))
        rows.append(f'<tr class="total"><td class="text">Total</td>{cells}</tr>')
    return (
        f'<table id="agents"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _failure_table(result: Review, kinds: Sequence[str]) -> str:
    """Failed runs as a matrix: one row per error type, one column per agent."""
    if not kinds:
        return ""
    agents = [stats for stats in result.agents if stats.failures_by_type]
    head = "".join(f"<th>{_e(_short(stats.agent_id))}</th>" for stats in agents)
    rows = []
    for kind in kinds:
        cells = "".join(
            f"<td>{stats.failures_by_type.get(kind, 0) or '·'}</td>" for stats in agents
        )
        rows.append(f'<tr><td class="text">{_e(kind)}</td>{cells}</tr>')
    return (
        f'<table id="failures"><thead><tr><th class="text">error type</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _card(label: str, value: str) -> str:
    return (
        f'<div class="card"><div class="value">{_e(value)}</div>'
        f'<div class="label">{_e(label)}</div></div>'
    )


def render_review_html(result: Review, *, title: str = "agentshape analytics") -> str:
    """Render a review as a self-contained HTML page (inline CSS and SVG, no scripts).

    Returns:
        The whole HTML document.
    """
    total = result.overall
    scope = [f"{len(result.files):,} file(s)", f"{result.events:,} events"]
    if result.since is not None:
        scope.append(f"since {result.since.isoformat()}")
    if result.agent is not None:
        scope.append(f"agent {result.agent}")
    meta = [f'<p class="meta">{_e(result.source)} · {_e(", ".join(scope))}</p>']
    if result.skipped:
        meta.append(
            f'<p class="warn" id="skipped">Skipped {result.corrupt_lines:,} corrupt line(s), '
            f"{result.partial_lines:,} partial line(s) and {result.unrecognised_events:,} "
            "unrecognised event(s).</p>"
        )
    if result.unreadable_files:
        meta.append(f'<p class="warn">Could not read: {_e(", ".join(result.unreadable_files))}</p>')
    body: list[str] = [f"<h1>{_e(title)}</h1>", *meta]
    if total.runs == 0 and total.incomplete == 0:
        body.append('<p class="empty" id="no-runs">No runs found.</p>')
    else:
        failures: Counter[str] = Counter()
        for stats in result.agents:
            failures.update(stats.failures_by_type)
        ranked = dict(sorted(failures.items(), key=lambda item: (-item[1], item[0])))
        body += [
            '<div class="cards">',
            _card("runs", f"{total.runs:,}"),
            _card("success rate", _percent(total.success_rate, _DASH)),
            _card("first try valid", _percent(total.first_try_valid_rate, _DASH)),
            _card("rescued by retry", f"{total.rescued:,}"),
            _card("no submit_result", f"{total.output_tool_not_called:,}"),
            _card("incomplete", f"{total.incomplete:,}"),
            _card("tokens", f"{total.tokens.total:,}"),
            _card("run p95", _ms(total.run_latency.p95_ms, _DASH, " ")),
            "</div>",
            f"<section><h2>Agents</h2>{_agent_table(result)}</section>",
            '<div class="charts">',
            f"<section><h2>Success rate per agent</h2>{_rate_chart(result.agents)}</section>",
            f"<section><h2>Failures by type</h2>{_failure_chart(ranked)}"
            f"{_failure_table(result, list(ranked))}</section>",
            f'<section class="wide"><h2>Runs per day (UTC)</h2>{_day_chart(total.days)}</section>',
            "</div>",
        ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def write_review_html(
    result: Review, path: Path | str, *, title: str = "agentshape analytics"
) -> Path:
    """Write the review page to ``path`` (its directory is created as needed).

    Args:
        result: What :func:`agent_executor._review.review` returned.
        path: The HTML file to write; an existing file is replaced.
        title: The page title.

    Returns:
        The path written.

    Raises:
        ConfigError: The file cannot be written (names the file and the reason).
    """
    target = Path(path)
    try:
        write_text_atomically(target, render_review_html(result, title=title))
    except OSError as error:
        raise ConfigError(
            f"cannot write the analytics page to {target}: {error.strerror or error}"
        ) from error
    return target
