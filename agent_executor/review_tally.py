"""Counting analytics events as they stream past: :class:`Tally`, the review's arithmetic.

Events arrive one at a time (:meth:`Tally.add`) and nothing is kept of them: a run still open
keeps its agent, its day, its first attempt's outcome and its tokens so far; a run that ended is
folded into its agent's totals and remembered only by its id (so events that arrive after its
end are not taken for a new run). Durations are kept as 8-byte floats for exact percentiles. A
million events are counted in tens of megabytes, not gigabytes.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from agent_contracts.events import (
    AnalyticsEvent,
    AttemptEvent,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
)
from agent_executor.review_models import (
    ALL_AGENTS,
    AgentReview,
    DayTrend,
    LatencyStats,
    TokenTotals,
)

__all__ = ["Tally", "rate"]

_NOT_CALLED = "output_tool_not_called"
"""The error type of a run whose model never called ``submit_result``."""


def rate(part: int, whole: int) -> float | None:
    """Return ``part / whole``, or ``None`` when ``whole`` is 0."""
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
class _Totals:
    """One agent's (or every agent's) running totals."""

    runs: int = 0
    completed: int = 0
    attempted: int = 0
    first_ok: int = 0
    rescued: int = 0
    retries: int = 0
    incomplete: int = 0
    batched: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    retry_reasons: Counter[str] = field(default_factory=Counter)
    run_ms: array[float] = field(default_factory=lambda: array("d"))
    turn_ms: array[float] = field(default_factory=lambda: array("d"))
    days: dict[date, Counter[str]] = field(default_factory=dict)

    def ended(self, run: _Open, end: RunCompletedEvent | RunFailedEvent) -> None:
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

    def unfinished(self, run: _Open) -> None:
        self.incomplete += 1
        self.input_tokens += run.input_tokens
        self.output_tokens += run.output_tokens
        if run.day is not None:
            self.days.setdefault(run.day, Counter())["incomplete"] += 1

    def review(self, agent_id: str) -> AgentReview:
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
        self._agents: dict[str, _Totals] = {}
        self._all = _Totals()

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
                each.ended(run, event)
            del self._open[event.run_id]
            self._ended.add(event.run_id)
        elif isinstance(event, AttemptEvent):
            if event.number == 1:
                run.first_attempt_ok = event.ok
        elif isinstance(event, ModelTurnEvent):
            run.input_tokens += event.usage.input_tokens
            run.output_tokens += event.usage.output_tokens
            run.batched = run.batched or event.batch_id is not None

    def _totals_of(self, agent_id: str) -> tuple[_Totals, _Totals]:
        totals = self._agents.get(agent_id)
        if totals is None:
            totals = self._agents[agent_id] = _Totals()
        return totals, self._all

    def reviews(self) -> tuple[list[AgentReview], AgentReview]:
        """Return each agent's review, sorted by agent id, and every agent's together.

        Runs still open (a ``run_started`` and no end) count as incomplete.
        """
        for run in self._open.values():
            for each in self._totals_of(run.agent_id):
                each.unfinished(run)
        self._open.clear()
        agents = [totals.review(name) for name, totals in sorted(self._agents.items())]
        return agents, self._all.review(ALL_AGENTS)
