"""Agent.run_stream: the events a caller iterates, ending with what Agent.run returns."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest
from pydantic import BaseModel, JsonValue

from agent_contracts import AgentConfig, ConfigError, Message, RunOptions, RunRequest
from agent_executor import (
    Agent,
    FunctionModel,
    PartialOutput,
    RetryStarted,
    RunFinished,
    RunStarted,
    StreamEvent,
    TestModel,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from agent_executor._providers.base import ModelTurnRequest
from tests.agent_core.test_partial_output import is_prefix

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "score", "tags"],
    "properties": {
        "title": {"type": "string", "minLength": 3},
        "score": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    },
    "additionalProperties": False,
}


class Comment(BaseModel):
    line: int
    severity: Literal["high", "low"]
    body: str


class Review(BaseModel):
    summary: str
    comments: list[Comment]


def grader(**fields: Any) -> Agent[Any]:
    data: dict[str, Any] = {"id": "grader", "system_prompt": "Grade.", "output_schema": SCHEMA}
    data.update(fields)
    return Agent(AgentConfig.model_validate(data), env={})


def collect(agent: Agent[Any], request: RunRequest | str, **keywords: Any) -> list[Any]:
    async def go() -> list[StreamEvent[Any]]:
        return [event async for event in agent.run_stream(request, **keywords)]

    return asyncio.run(go())


def partials(events: list[Any]) -> list[PartialOutput]:
    return [event for event in events if isinstance(event, PartialOutput)]


def test_a_pydantic_contract_streams_partial_instances_then_the_run_result() -> None:
    agent: Agent[Review] = Agent(output_type=Review, system_prompt="Review.", env={})
    events = collect(agent, "Review the diff.", model=TestModel(seed=3))

    assert isinstance(events[0], RunStarted) and events[0].output_mode == "tool"
    assert isinstance(events[-1], RunFinished)
    result = events[-1].result
    assert result.ok and isinstance(result.output, Review)
    shown = partials(events)
    assert len(shown) >= 3, "the test model streams in small pieces"
    assert all(type(p.value).__name__ == "PartialReview" for p in shown)
    assert all(p.attempt == 1 for p in shown)
    for partial in shown:
        assert is_prefix(partial.data, result.result_data)
    assert shown[-1].data == result.result_data
    assert shown[-1].value.model_dump() == result.output.model_dump()  # type: ignore[union-attr]

    plain = asyncio.run(agent.run("Review the diff.", model=TestModel(seed=3)))
    assert plain.result_data == result.result_data and plain.status == result.status


def test_a_json_schema_contract_streams_plain_json() -> None:
    events = collect(grader(), "Grade it.", model="test")
    shown = partials(events)
    final = events[-1].result
    assert final.ok and shown
    assert all(isinstance(p.value, dict) and p.value == p.data for p in shown)
    assert all(is_prefix(p.data, final.result_data) for p in shown)


def test_a_retry_shows_as_its_own_events() -> None:
    events = collect(grader(), "Grade it.", model=TestModel(fail_first=["invalid_arguments"]))
    kinds = [type(event).__name__ for event in events]
    retry_at = kinds.index("RetryStarted")
    retry = events[retry_at]
    assert isinstance(retry, RetryStarted)
    assert retry.attempt == 1 and retry.reason == "output_schema_validation_failed"
    assert retry.errors, "the failed attempt's problems come with it"
    after = partials(events[retry_at:])
    assert after and all(p.attempt == 2 for p in after)
    assert all(p.attempt == 1 for p in partials(events[:retry_at]))
    result = events[-1].result
    assert result.ok and result.retries == 1
    assert all(is_prefix(p.data, result.result_data) for p in after)


def test_a_failed_run_ends_with_the_failure_run_would_return() -> None:
    model = "test:fail_first=invalid_arguments+invalid_arguments"
    options = RunOptions(max_retries=1)
    events = collect(grader(), "Grade it.", model=model, options=options)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.status == "failed"
    assert finished.result.error is not None
    plain = grader().run_sync("Grade it.", model=model, options=options)
    assert plain.error is not None
    assert finished.result.error.type == plain.error.type
    assert finished.result.error.validation_errors == plain.error.validation_errors
    assert [type(e).__name__ for e in events].count("RetryStarted") == 1


def test_input_tool_calls_and_results_are_events(tmp_path: Any) -> None:
    agent = Agent(
        output_schema=SCHEMA,
        system_prompt="Read, then grade.",
        tools=["fs:list"],
        env={},
        workspace=tmp_path,
    )
    events = collect(agent, "Grade it.", model=TestModel(call_tools=["fs:list"]))
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.name for e in started] == ["fs:list"] and len(finished) == 1
    assert finished[0].call_id == started[0].call_id
    assert events.index(started[0]) < events.index(finished[0]) < events.index(partials(events)[0])
    transcript = events[-1].result.transcript
    tool_results = [r for m in transcript for r in m.tool_results if r.name == "fs:list"]
    assert tool_results[0].content == finished[0].content
    assert finished[0].step == 1 and partials(events)[0].attempt == 1


def test_a_free_text_run_streams_its_text_in_pieces() -> None:
    agent = Agent(system_prompt="Chat.", env={})
    text = "A reply long enough to arrive in several pieces, as a server sends it."
    events = collect(agent, "Hello", model=TestModel(text=text))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3 and all(d.step == 1 for d in deltas)
    assert "".join(d.text for d in deltas) == text == events[-1].result.result_text
    assert not partials(events)


@pytest.mark.parametrize("mode", ["native", "prompted"])
def test_json_text_modes_stream_text_and_partial_outputs(mode: str) -> None:
    events = collect(
        grader(),
        "Grade it.",
        model="test",
        options=RunOptions(output_mode=mode),  # type: ignore[arg-type]
    )
    final = events[-1].result
    assert final.ok and events[0].output_mode == mode
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == final.attempts[-1].raw_output
    shown = partials(events)
    assert shown and shown[-1].data == final.result_data


def test_a_provider_without_streaming_hands_over_its_reply_whole() -> None:
    def answer(messages: list[Message], request: ModelTurnRequest) -> JsonValue:
        return {"title": "Essay", "score": 7, "tags": ["a", "b"]}

    events = collect(grader(), "Grade it.", model=FunctionModel(answer))
    assert [p.data for p in partials(events)] == [
        {"title": "Essay", "score": 7, "tags": ["a", "b"]}
    ]


def test_each_escalation_tier_starts_with_its_own_run_started() -> None:
    agent = grader(
        model="test:fail_first=invalid_arguments+invalid_arguments", model_tiers=["test"]
    )
    events = collect(agent, "Grade it.")
    starts = [e for e in events if isinstance(e, RunStarted)]
    assert [s.model_tier for s in starts] == [0, 1]
    assert starts[0].run_id != starts[1].run_id
    assert events[-1].result.ok and events[-1].result.model_tier == 1


def test_a_developer_mistake_raises_from_the_iteration() -> None:
    request = RunRequest(task="Grade it.")
    with pytest.raises(ConfigError, match="give these in the RunRequest"):
        collect(grader(), request, options=RunOptions())


def test_stopping_early_cancels_the_run() -> None:
    seen: list[str] = []

    async def slow(messages: list[Message], request: ModelTurnRequest) -> str:
        seen.append("called")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "never"

    agent = Agent(system_prompt="Chat.", env={})

    async def go() -> None:
        stream = agent.run_stream("Hello", model=FunctionModel(slow))
        async for event in stream:
            assert isinstance(event, RunStarted)
            await asyncio.sleep(0.05)  # the model call has begun
            break
        await stream.aclose()  # type: ignore[attr-defined]

    asyncio.run(go())
    assert seen == ["called", "cancelled"]
