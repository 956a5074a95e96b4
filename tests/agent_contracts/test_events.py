from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import get_args

import pytest
from pydantic import BaseModel, ValidationError

from agent_contracts import (
    AnalyticsEvent,
    AttemptEvent,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
    Usage,
    ValidationIssue,
    parse_event,
)

TS = datetime(2026, 1, 19, 12, 30, tzinfo=UTC)
COMMON = {"ts": TS, "run_id": "run_1", "agent_id": "researcher"}
USAGE = Usage(input_tokens=100, output_tokens=20, requests=1)

EVENTS = [
    RunStartedEvent(**COMMON, model="test", output_mode="tool", schema_hash="h1", max_retries=1),
    ModelTurnEvent(
        **COMMON,
        step=1,
        model="test",
        usage=USAGE,
        latency_ms=250.0,
        stop_reason="tool_use",
        tool_calls=["submit_result"],
    ),
    AttemptEvent(
        **COMMON,
        number=1,
        mode="tool",
        schema_hash="h1",
        raw_output='{"summary": 1}',
        errors=[ValidationIssue(path="$.summary", message="1 is not of type 'string'")],
    ),
    RetryEvent(**COMMON, number=1, reason="output_schema_validation_failed", error_count=1),
    RunCompletedEvent(**COMMON, usage=USAGE, duration_ms=900.0, attempts=2, retries=1),
    RunFailedEvent(
        **COMMON,
        error_type="output_tool_not_called",
        message="Agent did not call submit_result tool",
        attempts=2,
        retries=1,
    ),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda event: event.event)
def test_every_event_round_trips_through_a_json_line(event: BaseModel) -> None:
    assert isinstance(event, get_args(get_args(AnalyticsEvent)[0]))
    line = event.model_dump_json()

    parsed = parse_event(line + "\n")

    assert type(parsed) is type(event)
    assert parsed == event


def test_line_names_the_event_and_an_iso_timestamp() -> None:
    line = EVENTS[-1].to_json_line()
    data = json.loads(line)

    assert "\n" not in line
    assert data["event"] == "run_failed"
    assert data["error_type"] == "output_tool_not_called"
    assert datetime.fromisoformat(data["ts"]) == TS
    assert (data["run_id"], data["agent_id"]) == ("run_1", "researcher")


def test_timestamp_defaults_to_now_in_utc() -> None:
    event = RetryEvent(run_id="r", agent_id="a", number=1, reason="no_json_found")
    assert event.ts.tzinfo is not None


def test_naive_timestamps_are_rejected() -> None:
    line = json.dumps(
        {
            "event": "retry",
            "ts": "2026-01-19T12:30:00",
            "run_id": "r",
            "agent_id": "a",
            "number": 1,
            "reason": "no_json_found",
        }
    )
    with pytest.raises(ValidationError, match="timezone"):
        parse_event(line)


def test_unknown_events_and_fields_are_rejected() -> None:
    base = {"ts": "2026-01-19T12:30:00Z", "run_id": "r", "agent_id": "a"}
    with pytest.raises(ValidationError, match="run_paused"):
        parse_event(json.dumps(base | {"event": "run_paused"}))
    with pytest.raises(ValidationError, match="api_key"):
        parse_event(json.dumps(base | {"event": "run_started", "api_key": "sk-secret"}))
    with pytest.raises(ValidationError):
        parse_event("not json")


def test_no_event_has_a_place_for_credentials_or_headers() -> None:
    forbidden = ("key", "header", "authorization", "secret", "password", "credential")
    for event_class in get_args(get_args(AnalyticsEvent)[0]):
        for name in event_class.model_fields:
            assert not any(word in name.lower() for word in forbidden), (event_class, name)
