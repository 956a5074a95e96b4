from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_contracts import (
    AgentConfig,
    ConfigError,
    Message,
    ProviderError,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
)
from agent_executor import ESCALATING_ERRORS, Agent, FunctionModel, MemoryAnalytics
from agent_executor._providers.base import ModelTurnRequest

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "score"],
    "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}
FAILING_TWICE = "test:fail_first=invalid_arguments+invalid_arguments"


def make_agent(sink: MemoryAnalytics, **fields: Any) -> Agent[Any]:
    data: dict[str, Any] = {"id": "grader", "system_prompt": "Grade.", "output_schema": SCHEMA}
    tiers = fields.pop("tiers", None)
    data.update(fields)
    return Agent(AgentConfig.model_validate(data), analytics=sink, env={}, model_tiers=tiers)


def answers_in_text(messages: list[Message], request: ModelTurnRequest) -> str:
    return "I think the essay is good."


def answers_well(messages: list[Message], request: ModelTurnRequest) -> dict[str, Any]:
    return {"title": "Essay", "score": 7}


def events_of(sink: MemoryAnalytics, kind: type) -> list[Any]:
    return [event for event in sink.events if isinstance(event, kind)]


def test_a_contract_failure_escalates_to_the_next_tier() -> None:
    sink = MemoryAnalytics()
    agent = make_agent(sink, model=FAILING_TWICE, model_tiers=["test"])
    result = agent.run_sync("Grade the essay.")

    assert result.ok and result.model_tier == 1 and result.model == "test"
    assert [a.number for a in result.attempts] == [1, 2, 3]
    assert [a.ok for a in result.attempts] == [False, False, True]
    assert result.retries == 2 and result.usage.requests == 3
    assert set(result.output.model_dump()) == {"title", "score"}
    started = events_of(sink, RunStartedEvent)
    failed = events_of(sink, RunFailedEvent)
    completed = events_of(sink, RunCompletedEvent)
    assert len(started) == 2 and started[0].run_id != started[1].run_id
    assert [e.error_type for e in failed] == ["output_schema_validation_failed"]
    assert [(e.model_tier, e.run_id) for e in completed] == [(1, started[1].run_id)]
    assert result.run_id == started[1].run_id


def test_function_model_tiers_name_each_attempts_model() -> None:
    sink = MemoryAnalytics()
    small = FunctionModel(answers_in_text, model="small")
    big = FunctionModel(answers_well, model="big")
    result = make_agent(sink, tiers=[big]).run_sync("Grade.", model=small)

    assert result.ok and result.model == "function:big" and result.model_tier == 1
    assert [a.model for a in result.attempts] == ["function:small"] * 2 + ["function:big"]
    assert result.result_data == {"title": "Essay", "score": 7}
    assert events_of(sink, RunFailedEvent)[0].error_type == "output_tool_not_called"


def test_when_every_tier_fails_the_last_tiers_failure_is_returned() -> None:
    sink = MemoryAnalytics()
    tiers = [FunctionModel(answers_in_text, model="mid"), FunctionModel(answers_in_text)]
    result = make_agent(sink, tiers=tiers).run_sync("Grade.", model=FAILING_TWICE)

    assert not result.ok and result.model_tier == 2 and result.model == "function"
    assert result.error is not None and result.error.type == "output_tool_not_called"
    assert len(result.attempts) == 6 and result.retries == 5
    assert len(events_of(sink, RunFailedEvent)) == 3


def test_a_provider_error_does_not_escalate() -> None:
    def broken(messages: list[Message], request: ModelTurnRequest) -> str:
        raise ProviderError("overloaded", provider="function", kind="provider_server_error")

    sink = MemoryAnalytics()
    big = FunctionModel(answers_well, model="big")
    result = make_agent(sink, tiers=[big]).run_sync("Grade.", model=FunctionModel(broken))

    assert not result.ok and result.model_tier == 0 and result.model == "function"
    assert result.error is not None and result.error.type == "provider_server_error"
    assert len(events_of(sink, RunStartedEvent)) == 1


def test_bad_parameters_do_not_escalate() -> None:
    sink = MemoryAnalytics()
    agent = make_agent(
        sink,
        model=FAILING_TWICE,
        model_tiers=["test"],
        parameters_schema={"type": "object", "required": ["n"]},
    )
    result = agent.run_sync("Grade.", parameters={})
    assert result.error is not None and result.error.type == "input_validation_failed"
    assert result.model_tier == 0 and len(events_of(sink, RunStartedEvent)) == 1


def test_escalate_false_stays_on_the_first_tier() -> None:
    sink = MemoryAnalytics()
    agent = make_agent(sink, model=FAILING_TWICE, model_tiers=["test"])
    result = agent.run_sync("Grade.", escalate=False)
    assert not result.ok and result.model_tier == 0 and len(result.attempts) == 2
    assert result.error is not None and result.error.type in ESCALATING_ERRORS


def test_model_tier_starts_on_that_tier() -> None:
    sink = MemoryAnalytics()
    agent = make_agent(sink, model=FAILING_TWICE, tiers=[FunctionModel(answers_well)])
    result = agent.run_sync("Grade.", model_tier=1)
    assert result.ok and result.model_tier == 1 and len(result.attempts) == 1
    with pytest.raises(ConfigError, match="model_tier 2 does not exist"):
        agent.run_sync("Grade.", model_tier=2)


def test_a_tier_without_its_key_fails_before_any_model_call() -> None:
    sink = MemoryAnalytics()
    agent = make_agent(sink, model="test", model_tiers=["openai:gpt-4o"])
    with pytest.raises(ConfigError, match=r"cannot escalate to tier 1: .*OPENAI_API_KEY"):
        agent.run_sync("Grade.")
    assert sink.events == []
    assert agent.run_sync("Grade.", escalate=False).ok


def test_yaml_llm_tiers(tmp_path: Path) -> None:
    path = tmp_path / "agent.yml"
    path.write_text(
        "schema: kb.agent/1\nid: grader\nllm:\n  model: test:fail_first=text+text\n"
        "  tiers: [test]\ncontext:\n  static:\n    system: Grade.\noutput:\n  schema:\n"
        "    type: object\n    required: [title]\n    properties:\n      title: {type: string}\n"
    )
    result = Agent.from_yaml(path, analytics=MemoryAnalytics(), env={}).run_sync("Grade.")
    assert result.ok and result.model_tier == 1 and len(result.attempts) == 3
