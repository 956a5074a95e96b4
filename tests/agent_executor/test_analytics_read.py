"""Reading the analytics files back: corrupt, partial and unreadable input is counted, not fatal."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from agent_executor import JsonlAnalytics, read_events
from agent_executor._analytics_read import as_utc, event_file
from tests.agent_executor.test_analytics import DAY, DAY_FILE, Ping


def test_event_file_names_the_day() -> None:
    assert event_file(Path("logs"), DAY.date()) == Path("logs/events-2026-01-19.jsonl")


def test_read_events_skips_and_counts_corrupt_and_partial_lines(tmp_path: Path) -> None:
    good = [json.dumps({"event": "ping", "seq": n}) for n in range(3)]
    (tmp_path / DAY_FILE).write_bytes(
        (
            f"{good[0]}\n"
            "{not json\n"
            "\n"
            f"{good[1]}\n"
            "[1, 2]\n"
            '{"event": "ping", "se'  # a torn line glued to the next one
            f"{good[2]}\n"
        ).encode()
        + b"\xff\xfe\n"
        + b'{"event": "ping", "seq": 9'  # still being written: no newline yet
    )
    result = read_events(tmp_path / DAY_FILE)
    assert [event["seq"] for event in result] == [0, 1]
    assert (result.corrupt, result.partial) == (4, 1)
    assert result.unreadable == []


def test_read_events_reads_day_files_oldest_first_and_filters_since(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path)
    for day, hour in ((20, 9), (19, 8), (20, 7), (18, 23)):
        sink.emit(Ping(seq=day * 100 + hour, ts=datetime(2026, 1, day, hour, tzinfo=UTC)))
    (tmp_path / "notes.txt").write_text("not an event file\n")
    everything = read_events(tmp_path)
    assert [e["seq"] for e in everything] == [1823, 1908, 2009, 2007]
    assert [p.name for p in everything.files] == [
        "events-2026-01-18.jsonl",
        DAY_FILE,
        "events-2026-01-20.jsonl",
    ]
    recent = read_events(tmp_path, since=datetime(2026, 1, 20, 8, tzinfo=UTC))
    assert [e["seq"] for e in recent] == [2009]
    assert [p.name for p in recent.files] == ["events-2026-01-20.jsonl"]
    naive = read_events(tmp_path, since=datetime(2026, 1, 19, 8))
    assert [e["seq"] for e in naive] == [1908, 2009, 2007]


def test_read_events_since_leaves_out_undated_events(tmp_path: Path) -> None:
    (tmp_path / DAY_FILE).write_text(
        '{"event": "x"}\n{"event": "y", "ts": "2026-01-19T13:00:00Z"}\n'
    )
    result = read_events(tmp_path, since=DAY)
    assert [e["event"] for e in result] == ["y"]
    assert len(read_events(tmp_path)) == 2


def test_read_events_of_a_missing_source_is_empty(tmp_path: Path) -> None:
    result = read_events(tmp_path / "nothing-yet")
    assert (result.events, result.files, result.corrupt, result.partial) == ([], [], 0, 0)


def test_read_events_skips_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / DAY_FILE).mkdir()  # matches the pattern but cannot be read as a file
    (tmp_path / "events-2026-01-20.jsonl").write_text('{"event": "ok"}\n')
    result = read_events(tmp_path)
    assert [e["event"] for e in result] == ["ok"]
    assert result.unreadable == [tmp_path / DAY_FILE]


def test_as_utc_converts_aware_times_and_takes_naive_ones_as_utc() -> None:
    later = datetime(2026, 1, 19, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    assert as_utc(later) == DAY
    assert as_utc(later).tzinfo is UTC
    assert as_utc(datetime(2026, 1, 19, 12, 30)) == DAY
    assert as_utc(datetime(2026, 1, 19, 12, 30)).tzinfo is UTC
