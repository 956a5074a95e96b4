"""The events run_stream yields, in their wire form (CLI JSON lines, the service's SSE)."""

from __future__ import annotations

import json

from pydantic import BaseModel

from agent_contracts import RunResult
from agent_executor import (
    AgentResult,
    PartialOutput,
    RetryStarted,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)


class Person(BaseModel):
    name: str


def test_each_event_is_a_json_object_named_by_its_type() -> None:
    events = [
        RunStarted("run_1", "extractor", "openai:gpt-4.1-mini", 1, "tool"),
        TextDelta("Ada", 2),
        ToolCallStarted("call_1", "fs:read", {"path": "a.txt"}, 1),
        ToolCallFinished("call_1", "fs:read", "hello", False, 1),
        RetryStarted(1, "output_schema_validation_failed", ["$.name: required"]),
    ]
    assert [event.to_json() for event in events] == [
        {
            "type": "run_started",
            "run_id": "run_1",
            "agent_id": "extractor",
            "model": "openai:gpt-4.1-mini",
            "model_tier": 1,
            "output_mode": "tool",
        },
        {"type": "text_delta", "text": "Ada", "step": 2},
        {
            "type": "tool_call_started",
            "call_id": "call_1",
            "name": "fs:read",
            "arguments": {"path": "a.txt"},
            "step": 1,
        },
        {
            "type": "tool_call_finished",
            "call_id": "call_1",
            "name": "fs:read",
            "content": "hello",
            "is_error": False,
            "step": 1,
        },
        {
            "type": "retry_started",
            "attempt": 1,
            "reason": "output_schema_validation_failed",
            "errors": ["$.name: required"],
        },
    ]
    for event in events:
        json.dumps(event.to_json())  # plain JSON, nothing left to convert


def test_a_partial_output_is_sent_as_its_data_and_a_finished_run_as_its_result() -> None:
    partial = PartialOutput(Person(name="Ad"), {"name": "Ad"}, 2)
    assert partial.to_json() == {"type": "partial_output", "data": {"name": "Ad"}, "attempt": 2}
    result = RunResult(status="completed", result_data={"name": "Ada"})
    finished = RunFinished(AgentResult(result, Person(name="Ada")))
    wire = finished.to_json()
    assert wire["type"] == "run_finished"
    assert wire["result"] == json.loads(result.model_dump_json())
