"""The analytics review as a plain-text table: :func:`format_review_table`."""

from __future__ import annotations

from collections.abc import Sequence

from agent_executor.review import AgentReview, Review
from agent_executor.review_tally import rate

__all__ = ["format_review_table"]


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:,.2f}s" if value >= 1000 else f"{value:.0f}ms"


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

    Args:
        result: What :func:`review` returned.

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
