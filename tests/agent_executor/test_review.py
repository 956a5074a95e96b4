from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pydantic import BaseModel

from agent_contracts import (
    AttemptEvent,
    ConfigError,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunErrorType,
    RunFailedEvent,
    RunStartedEvent,
    Usage,
    ValidationIssue,
)
from agent_executor import JsonlAnalytics
from agent_executor._analytics import event_file
from agent_executor._review import (
    ALL_AGENTS,
    AgentReview,
    DayTrend,
    Review,
    format_review_table,
    parse_since,
    render_review_html,
    review,
    review_events,
    write_review_html,
)

# -- a synthetic log, written with the real event models and the real sink ----------------------


@dataclass(frozen=True)
class Turn:
    """A model call: tokens in, tokens out, latency."""

    tokens_in: int
    tokens_out: int
    latency_ms: float


@dataclass(frozen=True)
class Try:
    """An attempt at the output, valid or not."""

    ok: bool


@dataclass(frozen=True)
class Retry:
    """A re-prompt, and why."""

    reason: RunErrorType


@dataclass(frozen=True)
class Ok:
    """The run completed."""

    duration_ms: float


@dataclass(frozen=True)
class Failed:
    """The run failed."""

    error_type: RunErrorType
    duration_ms: float


MISSING = ValidationIssue(path="$", message="'summary' is a required property", keyword="required")


def _run(
    agent_id: str,
    run_id: str,
    start: datetime,
    steps: Sequence[Turn | Try | Retry],
    end: Ok | Failed | None,
) -> list[BaseModel]:
    """The events of one run: a start, its steps a second apart, then its end (if any)."""
    clock = iter(start + timedelta(seconds=i) for i in range(100))
    ids = {"run_id": run_id, "agent_id": agent_id}
    events: list[BaseModel] = [RunStartedEvent(ts=next(clock), **ids, output_mode="tool")]
    usage, attempts, retries, turns = Usage(), 0, 0, 0
    for step in steps:
        if isinstance(step, Turn):
            turns += 1
            spent = Usage(input_tokens=step.tokens_in, output_tokens=step.tokens_out, requests=1)
            usage += spent
            events.append(
                ModelTurnEvent(
                    ts=next(clock), **ids, step=turns, usage=spent, latency_ms=step.latency_ms
                )
            )
        elif isinstance(step, Try):
            attempts += 1
            errors = [] if step.ok else [MISSING]
            events.append(
                AttemptEvent(ts=next(clock), **ids, number=attempts, mode="tool", errors=errors)
            )
        else:
            retries += 1
            events.append(RetryEvent(ts=next(clock), **ids, number=retries, reason=step.reason))
    if isinstance(end, Ok):
        events.append(
            RunCompletedEvent(
                ts=next(clock),
                **ids,
                usage=usage,
                attempts=attempts,
                retries=retries,
                duration_ms=end.duration_ms,
            )
        )
    elif isinstance(end, Failed):
        events.append(
            RunFailedEvent(
                ts=next(clock),
                **ids,
                usage=usage,
                attempts=attempts,
                retries=retries,
                error_type=end.error_type,
                duration_ms=end.duration_ms,
            )
        )
    return events


def _at(day: int, hour: int = 9) -> datetime:
    return datetime(2025, 1, day, hour, 0, tzinfo=UTC)


def synthetic_events() -> list[BaseModel]:
    """Three agents over four UTC days (2025-01-04 to 01-07)."""
    return [
        # summariser, 01-04: one clean run.
        *_run("summariser", "s1", _at(4), [Turn(10, 5, 100), Try(True)], Ok(200)),
        # reviewer, 01-05: a clean run, and one the re-prompt rescued.
        *_run("reviewer", "r1", _at(5), [Turn(100, 20, 400), Try(True)], Ok(500)),
        *_run(
            "reviewer", "r2", _at(5, 10),
            [Turn(120, 30, 600), Try(False), Retry("output_schema_validation_failed"),
             Turn(150, 25, 700), Try(True)],
            Ok(1500),
        ),
        # reviewer, 01-06: never called submit_result, even after the re-prompt.
        *_run(
            "reviewer", "r3", _at(6),
            [Turn(90, 10, 300), Try(False), Retry("output_tool_not_called"),
             Turn(95, 12, 350), Try(False)],
            Failed("output_tool_not_called", 900),
        ),
        # planner, 01-06: rate limited before any attempt, and a validation failure.
        *_run("planner", "p1", _at(6, 10), [Turn(200, 40, 800)],
              Failed("provider_rate_limited", 1000)),
        *_run(
            "planner", "p2", _at(6, 11),
            [Turn(210, 50, 900), Try(False), Retry("no_json_found"),
             Turn(220, 60, 950), Try(False)],
            Failed("output_schema_validation_failed", 2000),
        ),
        # 01-07: reviewer clean, planner clean, and a planner run that never ended.
        *_run("reviewer", "r4", _at(7), [Turn(80, 15, 250), Try(True)], Ok(300)),
        *_run("planner", "p3", _at(7, 10), [Turn(100, 10, 500)], None),
        *_run("planner", "p4", _at(7, 11), [Turn(50, 5, 400), Try(True)], Ok(600)),
    ]  # fmt: skip


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    directory = tmp_path / "analytics"
    sink = JsonlAnalytics(directory)
    for event in synthetic_events():
        sink.emit(event)
    assert sink.dropped == 0
    with event_file(directory, date(2025, 1, 6)).open("a", encoding="utf-8") as handle:
        handle.write("{not json at all\n")  # garbled
        handle.write("[1, 2, 3]\n")  # JSON, but not an object
        unknown = {"event": "mystery", "ts": "2025-01-06T12:00:00Z", "run_id": "x", "agent_id": "y"}
        handle.write(json.dumps(unknown) + "\n")  # not a known event
    with event_file(directory, date(2025, 1, 7)).open("a", encoding="utf-8") as handle:
        handle.write('{"event":"run_completed","ts":"2025-01-07T23:59:')  # cut off mid-write
    return directory


def _agent(result: Review, agent_id: str) -> AgentReview:
    return next(a for a in result.agents if a.agent_id == agent_id)


# -- review --------------------------------------------------------------------------------------


def test_review_counts_runs_outcomes_and_rates_per_agent(logs: Path) -> None:
    result = review(logs)

    assert [a.agent_id for a in result.agents] == ["planner", "reviewer", "summariser"]
    reviewer = _agent(result, "reviewer")
    assert (reviewer.runs, reviewer.completed, reviewer.failed, reviewer.incomplete) == (4, 3, 1, 0)
    assert reviewer.success_rate == 0.75
    assert (reviewer.attempted, reviewer.first_try_valid) == (4, 2)
    assert reviewer.first_try_valid_rate == 0.5
    assert reviewer.rescued == 1
    assert reviewer.retries == 2
    planner = _agent(result, "planner")
    assert (planner.runs, planner.completed, planner.failed, planner.incomplete) == (3, 1, 2, 1)
    assert planner.success_rate == pytest.approx(1 / 3)
    # p1 failed before any attempt, so only p2 and p4 count for the first try.
    assert (planner.attempted, planner.first_try_valid, planner.rescued) == (2, 1, 0)


def test_review_counts_failures_by_type_and_submit_result_not_called(logs: Path) -> None:
    result = review(logs)

    reviewer = _agent(result, "reviewer")
    assert reviewer.failures_by_type == {"output_tool_not_called": 1}
    assert reviewer.output_tool_not_called == 1
    planner = _agent(result, "planner")
    assert planner.failures_by_type == {
        "output_schema_validation_failed": 1,
        "provider_rate_limited": 1,
    }
    assert planner.output_tool_not_called == 0
    assert planner.retry_reasons == {"no_json_found": 1}
    assert reviewer.retry_reasons == {
        "output_schema_validation_failed": 1,
        "output_tool_not_called": 1,
    }
    assert result.overall.failures_by_type == {
        "output_schema_validation_failed": 1,
        "output_tool_not_called": 1,
        "provider_rate_limited": 1,
    }


def test_review_sums_tokens_including_incomplete_runs(logs: Path) -> None:
    result = review(logs)

    reviewer = _agent(result, "reviewer").tokens
    assert (reviewer.input, reviewer.output, reviewer.total) == (635, 112, 747)
    planner = _agent(result, "planner").tokens  # p3 never ended: its turn still counts
    assert (planner.input, planner.output, planner.total) == (780, 165, 945)
    overall = result.overall.tokens
    assert (overall.input, overall.output, overall.total) == (1425, 282, 1707)


def test_review_latency_percentiles(logs: Path) -> None:
    result = review(logs)

    runs = _agent(result, "reviewer").run_latency  # 300, 500, 900, 1500
    assert (runs.count, runs.p50_ms, runs.max_ms) == (4, 700, 1500)
    assert runs.p95_ms == pytest.approx(1410)
    calls = _agent(result, "reviewer").model_latency  # 250, 300, 350, 400, 600, 700
    assert (calls.count, calls.p50_ms) == (6, 375)
    assert calls.p95_ms == pytest.approx(675)
    planner = _agent(result, "planner").run_latency  # 600, 1000, 2000
    assert planner.p50_ms == 1000
    assert planner.p95_ms == pytest.approx(1900)
    single = _agent(result, "summariser").run_latency
    assert (single.p50_ms, single.p95_ms) == (200, 200)


def test_review_trend_per_utc_day(logs: Path) -> None:
    result = review(logs)

    assert result.overall.days == [
        DayTrend(day=date(2025, 1, 4), runs=1, completed=1),
        DayTrend(day=date(2025, 1, 5), runs=2, completed=2),
        DayTrend(day=date(2025, 1, 6), runs=3, failed=3),
        DayTrend(day=date(2025, 1, 7), runs=2, completed=2, incomplete=1),
    ]
    assert _agent(result, "planner").days == [
        DayTrend(day=date(2025, 1, 6), runs=2, failed=2),
        DayTrend(day=date(2025, 1, 7), runs=1, completed=1, incomplete=1),
    ]


def test_review_overall_row_sums_every_agent(logs: Path) -> None:
    overall = review(logs).overall

    assert overall.agent_id == ALL_AGENTS
    assert (overall.runs, overall.completed, overall.failed, overall.incomplete) == (8, 5, 3, 1)
    assert overall.success_rate == 5 / 8
    assert (overall.attempted, overall.first_try_valid, overall.rescued) == (7, 4, 1)


def test_bad_lines_are_skipped_and_counted_never_fatal(logs: Path) -> None:
    result = review(logs)

    assert result.corrupt_lines == 2
    assert result.partial_lines == 1
    assert result.unrecognised_events == 1
    assert result.skipped == 4
    assert len(result.files) == 4
    assert result.events == len(synthetic_events())


def test_since_drops_earlier_days(logs: Path) -> None:
    result = review(logs, since=date(2025, 1, 5))

    assert [a.agent_id for a in result.agents] == ["planner", "reviewer"]
    assert result.overall.days[0].day == date(2025, 1, 5)
    assert result.since == datetime(2025, 1, 5, tzinfo=UTC)
    later = review(logs, since=datetime(2025, 1, 7, 10, 30))  # naive means UTC
    assert later.overall.runs == 1  # p4 only; p3 started at 10:00
    assert later.overall.incomplete == 0


def test_agent_filter_keeps_one_agent(logs: Path) -> None:
    result = review(logs, agent="planner")

    assert [a.agent_id for a in result.agents] == ["planner"]
    assert result.overall.runs == 3
    assert result.agent == "planner"
    assert review(logs, agent="nobody").agents == []


def test_missing_directory_is_an_empty_review(tmp_path: Path) -> None:
    result = review(tmp_path / "nothing-here")

    assert result.files == [] and result.agents == [] and result.overall.runs == 0
    assert result.overall.success_rate is None
    assert format_review_table(result).splitlines()[-1] == "No runs found."


def test_review_json_round_trips(logs: Path) -> None:
    result = review(logs)

    data = json.loads(result.model_dump_json())
    assert data["overall"]["success_rate"] == 0.625
    assert data["agents"][1]["agent_id"] == "reviewer"
    assert data["agents"][1]["output_tool_not_called"] == 1
    assert data["overall"]["days"][2] == {
        "day": "2025-01-06",
        "runs": 3,
        "completed": 0,
        "failed": 3,
        "incomplete": 0,
    }
    assert Review.model_validate_json(result.model_dump_json()) == result


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-01-05", datetime(2025, 1, 5, tzinfo=UTC)),
        ("2025-01-05T12:30:00Z", datetime(2025, 1, 5, 12, 30, tzinfo=UTC)),
        ("2025-01-05T12:30", datetime(2025, 1, 5, 12, 30, tzinfo=UTC)),
        ("7d", datetime(2025, 1, 3, 12, tzinfo=UTC)),
        ("12h", datetime(2025, 1, 10, tzinfo=UTC)),
        ("2w", datetime(2024, 12, 27, 12, tzinfo=UTC)),
    ],
)
def test_parse_since(text: str, expected: datetime) -> None:
    assert parse_since(text, now=datetime(2025, 1, 10, 12, tzinfo=UTC)) == expected


@pytest.mark.parametrize("text", ["yesterday", "2025-13-01", "7 days", ""])
def test_parse_since_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ConfigError, match="give a date"):
        parse_since(text)


# -- the table ----------------------------------------------------------------------------------


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def test_table_shows_each_agent_with_aligned_columns(logs: Path) -> None:
    text = format_review_table(review(logs))
    lines = text.splitlines()

    assert lines[0] == f"Analytics review of {logs} (4 files, 42 events)"
    assert lines[1] == "Skipped 2 corrupt lines, 1 partial line, 1 unrecognised event."
    table = lines[3 : lines.index("", 3)]
    assert table[0].split() == [
        "agent", "runs", "ok", "failed", "incomplete", "success", "first-try", "valid",
        "rescued", "no", "submit_result", "tokens", "in", "tokens", "out", "run", "p50", "run",
        "p95",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in table[2:]}
    assert rows["reviewer"] == [
        "4", "3", "1", "0", "75.0%", "50.0%", "1", "1", "635", "112", "700ms", "1.41s"
    ]  # fmt: skip
    assert rows["planner"] == [
        "3", "1", "2", "1", "33.3%", "50.0%", "0", "0", "780", "165", "1.00s", "1.90s"
    ]  # fmt: skip
    assert rows["TOTAL"][:6] == ["8", "5", "3", "1", "62.5%", "57.1%"]
    # Numbers are right-aligned, so every line of the table ends in the same column.
    assert len({len(line) for line in table}) == 1


def test_table_lists_failures_and_days(logs: Path) -> None:
    text = format_review_table(review(logs))

    failures = [line.split() for line in _section(text, "Failures by type")[2:]]
    assert failures == [
        ["planner", "output_schema_validation_failed", "1"],
        ["planner", "provider_rate_limited", "1"],
        ["reviewer", "output_tool_not_called", "1"],
    ]
    days = [line.split() for line in _section(text, "Runs per day (UTC)")[2:]]
    assert days == [
        ["2025-01-04", "1", "1", "0", "0", "100.0%"],
        ["2025-01-05", "2", "2", "0", "0", "100.0%"],
        ["2025-01-06", "3", "0", "3", "0", "0.0%"],
        ["2025-01-07", "2", "2", "0", "1", "100.0%"],
    ]


def test_table_names_the_filters(logs: Path) -> None:
    text = format_review_table(review(logs, since=date(2025, 1, 7), agent="planner"))

    assert text.splitlines()[0] == (
        f"Analytics review of {logs} (1 file, 6 events, since 2025-01-07T00:00:00+00:00, "
        "agent planner)"
    )


# -- the HTML page -------------------------------------------------------------------------------


class _Page(HTMLParser):
    """Collects elements (tag, attributes) and the visible text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        if tag in ("style", "title"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "title") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.text.append(data.strip())

    def bars(self, kind: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == "rect" and f"bar {kind}" == a.get("class")]


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def _check_page(page: _Page) -> None:
    """What a person must see on the page of the synthetic log."""
    rows = {
        a["data-agent"]
        for t, a in page.elements
        if t == "tr" and a.get("class") == "agent" and "data-agent" in a
    }
    assert rows == {"planner", "reviewer", "summariser"}
    text = " ".join(page.text)
    for shown in ("75.0%", "33.3%", "62.5%", "57.1%", "1,707", "1.41 s", "700 ms"):
        assert shown in text
    assert "Skipped 2 corrupt line(s), 1 partial line(s) and 1 unrecognised event(s)." in text
    success = {a["data-agent"]: float(a["data-value"]) for a in page.bars("success")}
    assert success == {"planner": pytest.approx(1 / 3, abs=1e-4), "reviewer": 0.75,
                       "summariser": 1.0}  # fmt: skip
    assert {a["data-agent"]: float(a["data-value"]) for a in page.bars("first-try")} == {
        "planner": 0.5,
        "reviewer": 0.5,
        "summariser": 1.0,
    }
    assert [(a["data-day"], a["data-value"]) for a in page.bars("completed")] == [
        ("2025-01-04", "1"),
        ("2025-01-05", "2"),
        ("2025-01-07", "2"),
    ]
    assert [(a["data-day"], a["data-value"]) for a in page.bars("failed")] == [("2025-01-06", "3")]
    assert [(a["data-day"], a["data-value"]) for a in page.bars("incomplete")] == [
        ("2025-01-07", "1")
    ]
    assert sorted((a["data-type"], a["data-value"]) for a in page.bars("failure")) == [
        ("output_schema_validation_failed", "1"),
        ("output_tool_not_called", "1"),
        ("provider_rate_limited", "1"),
    ]
    svgs = {a.get("id") for t, a in page.elements if t == "svg"}
    assert svgs == {"chart-success", "chart-days", "chart-failures"}


def test_html_page_has_the_table_and_charts(logs: Path) -> None:
    _check_page(_parse(render_review_html(review(logs))))


def test_html_page_fetches_nothing(logs: Path) -> None:
    page = _parse(render_review_html(review(logs)))

    for tag, attrs in page.elements:
        assert tag not in ("script", "link", "img", "iframe", "object", "embed")
        for name, value in attrs.items():
            assert not (name in ("src", "href") and value), (tag, name, value)
            assert "http:" not in value.replace("http://www.w3.org/2000/svg", "")
            assert "https:" not in value


def test_html_escapes_what_comes_from_the_log(tmp_path: Path) -> None:
    hostile = '<script>alert("x")</script>'
    sink = JsonlAnalytics(tmp_path)
    for event in _run(hostile, "h1", _at(5), [Try(True)], Ok(10)):
        sink.emit(event)

    html = render_review_html(review(tmp_path))

    assert hostile not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert not any(tag == "script" for tag, _ in _parse(html).elements)


def test_html_of_an_empty_review_says_no_runs(tmp_path: Path) -> None:
    page = _parse(render_review_html(review(tmp_path)))

    assert "No runs found." in page.text
    assert not any(tag == "svg" for tag, _ in page.elements)


def test_write_review_html_creates_the_file(logs: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "review.html"

    written = write_review_html(review(logs), target, title="Nightly agents")

    assert written == target
    html = target.read_text(encoding="utf-8")
    assert "<title>Nightly agents</title>" in html
    _check_page(_parse(html))


def test_write_review_html_names_a_file_it_cannot_write(logs: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")

    with pytest.raises(ConfigError, match=f"cannot write the analytics page to {blocker}/r.html"):
        write_review_html(review(logs), blocker / "r.html")


# -- in a real browser ---------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH: the headless-browser rendering check is skipped"
)


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--force-color-profile=srgb",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *args,
    ]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=90, check=True)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"chromium did not finish within 90 s: {error}")


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode a non-interlaced 8-bit RGB/RGBA PNG into rows of RGB(A) bytes (stdlib only)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks, header = 8, [], b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        offset += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0
    size = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * size
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - size] if i >= size else 0
            b = previous[i]
            c = previous[i - size] if i >= size else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        previous = bytes(line)
    return width, size, rows


def _colours(path: Path) -> Counter[bytes]:
    """Count the pixels of each RGB colour of a PNG (decoded once: pure Python is slow)."""
    width, size, rows = _png_pixels(path)
    counts: Counter[bytes] = Counter()
    for row in rows:
        counts.update(row[x : x + 3] for x in range(0, width * size, size))
    return counts


def _count_colour(colours: Counter[bytes], hex_colour: str) -> int:
    """Count the pixels within 6 of ``hex_colour`` in each channel."""
    target = bytes.fromhex(hex_colour.lstrip("#"))
    return sum(
        count
        for colour, count in colours.items()
        if all(abs(colour[k] - target[k]) <= 6 for k in range(3))
    )


@needs_chromium
def test_page_renders_in_headless_chromium(logs: Path, tmp_path: Path) -> None:
    page_file = write_review_html(review(logs), tmp_path / "review.html")

    shot = tmp_path / "review.png"
    # one browser start: the DOM as parsed and run, and the screenshot of the same page
    dumped = _chromium(
        tmp_path,
        "--window-size=1400,1500",
        "--dump-dom",
        f"--screenshot={shot}",
        page_file.as_uri(),
    ).stdout
    _check_page(_parse(dumped))
    assert shot.is_file()
    # The charts were painted: green success/completed bars, red failed, orange failure types.
    colours = _colours(shot)
    assert _count_colour(colours, "#2f9e44") > 2000
    assert _count_colour(colours, "#e03131") > 300
    assert _count_colour(colours, "#e8590c") > 300


# -- streaming: the same figures from events read one at a time ---------------------------------


def _as_dicts(events: Sequence[BaseModel]) -> list[dict[str, object]]:
    return [json.loads(event.model_dump_json()) for event in events]


def test_events_after_a_runs_end_count_for_that_run_not_a_new_one() -> None:
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)
    events = _run("a", "r1", start, [Turn(10, 5, 100.0), Try(ok=True)], Ok(400.0))
    late = ModelTurnEvent(
        ts=start + timedelta(minutes=5),
        run_id="r1",
        agent_id="a",
        step=2,
        usage=Usage(input_tokens=1),
        latency_ms=300.0,
    )
    again = RunStartedEvent(ts=start + timedelta(minutes=6), run_id="r1", agent_id="a")
    result = review_events(_as_dicts([*events, late, again]), source="memory")
    [agent] = result.agents
    assert (agent.runs, agent.completed, agent.incomplete) == (1, 1, 0)
    assert agent.model_latency.count == 2 and agent.model_latency.max_ms == 300.0
    assert agent.tokens.input == 10  # an ended run's tokens are its end event's


def test_an_agent_with_only_open_runs_is_reviewed_as_incomplete() -> None:
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)
    events = _run("b", "r2", start, [Turn(7, 3, 50.0)], None)
    result = review_events([*_as_dicts(events), {"event": "nope"}], source="memory")
    [agent] = result.agents
    assert (agent.agent_id, agent.runs, agent.incomplete) == ("b", 0, 1)
    assert agent.tokens.total == 10
    assert agent.days == [DayTrend(day=date(2026, 1, 5), incomplete=1)]
    assert result.unrecognised_events == 1


def test_the_review_of_files_streams_and_counts_what_it_skips(tmp_path: Path) -> None:
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)
    sink = JsonlAnalytics(tmp_path)
    for n in range(50):
        for event in _run("c", f"r{n}", start, [Turn(1, 1, 10.0), Try(ok=n % 2 == 0)], Ok(20.0)):
            sink.emit(event)
    day_file = event_file(tmp_path, start.date())
    with day_file.open("ab") as handle:
        handle.write(b'{"event": "unknown"}\n[1, 2]\n{"torn": ')
    result = review(tmp_path)
    assert (result.overall.runs, result.overall.first_try_valid) == (50, 25)
    assert (result.unrecognised_events, result.corrupt_lines, result.partial_lines) == (1, 1, 1)
