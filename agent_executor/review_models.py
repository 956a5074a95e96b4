"""What the analytics review reports: per-agent and overall figures, as Pydantic models.

:func:`agent_executor.review.review` returns a :class:`Review`; ``review.model_dump_json()`` is
its machine-readable form.
"""

from __future__ import annotations

from datetime import date

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

__all__ = ["ALL_AGENTS", "AgentReview", "DayTrend", "LatencyStats", "Review", "TokenTotals"]

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
