"""The analytics review as one self-contained HTML page.

:func:`render_review_html` turns a :class:`~agent_executor.review.Review` into a page with the
per-agent table and three charts drawn as inline SVG: success and first-try-valid rate per agent,
runs per UTC day (completed, failed, incomplete), and failures by error type. Styles are inline
and there is no script, font, image or other resource to fetch, so the file opens in any browser
without a network. Every value from the logs is HTML-escaped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from html import escape
from pathlib import Path

from agent_contracts.errors import ConfigError
from agent_core.user_files import write_text_atomically
from agent_executor.review import AgentReview, DayTrend, Review

__all__ = ["render_review_html", "write_review_html"]

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


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:,.2f} s" if value >= 1000 else f"{value:.0f} ms"


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
                    f"<title>{_e(stats.agent_id)}: {what} {_percent(rate)}</title></rect>"
                )
            parts.append(
                f'<text x="{label_w + bar_w + 8}" y="{y + offset + height_px - 3}" '
                f'class="value {kind}">{_percent(rate)}</text>'
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
        _percent(stats.success_rate),
        _percent(stats.first_try_valid_rate),
        f"{stats.rescued:,}",
        f"{stats.output_tool_not_called:,}",
        f"{stats.tokens.input:,}",
        f"{stats.tokens.output:,}",
        f"{stats.tokens.total:,}",
        _ms(stats.run_latency.p50_ms),
        _ms(stats.run_latency.p95_ms),
        _ms(stats.model_latency.p50_ms),
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

    Args:
        result: What :func:`agent_executor.review.review` returned.
        title: The page title.

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
            _card("success rate", _percent(total.success_rate)),
            _card("first try valid", _percent(total.first_try_valid_rate)),
            _card("rescued by retry", f"{total.rescued:,}"),
            _card("no submit_result", f"{total.output_tool_not_called:,}"),
            _card("incomplete", f"{total.incomplete:,}"),
            _card("tokens", f"{total.tokens.total:,}"),
            _card("run p95", _ms(total.run_latency.p95_ms)),
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
        result: What :func:`agent_executor.review.review` returned.
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
