from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agent_contracts import AgentConfig, RunCompletedEvent, RunError, RunFailedError, RunResult
from agent_executor import Agent, AgentResult, MemoryAnalytics, TestModel
from agent_executor._run import RunOutcome
from tests.fake_llm import FakeLLM, openai_tool_call

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string"}},
    "additionalProperties": False,
}


def agent(model: TestModel, sink: MemoryAnalytics | None = None) -> Agent[BaseModel]:
    return Agent(
        AgentConfig(id="grader", system_prompt="Grade.", output_schema=SCHEMA),
        model=model,
        analytics=sink or MemoryAnalytics(),
        env={},
    )


def completed(run_id: str) -> RunResult:
    return RunResult(status="completed", result_data={"title": "ok"}, run_id=run_id)


def test_a_deferred_result_is_built_once_and_only_when_read() -> None:
    built: list[RunResult] = []

    def build() -> RunResult:
        built.append(completed("run_1"))
        return built[-1]

    result: AgentResult[BaseModel] = AgentResult.deferred(RunOutcome(build), None)
    assert result.ok and result.status == "completed" and result.error is None
    assert built == []
    assert result.run_id == "run_1" and result.result_data == {"title": "ok"}
    assert result.result is built[0] and len(built) == 1


def test_a_deferred_failure_raises_without_building_and_agrees_once_built() -> None:
    error = RunError(type="run_timeout", message="too slow", last_output="{")
    failed = RunResult(status="failed", error=error)
    calls: list[int] = []

    def build() -> RunResult:
        calls.append(1)
        return failed

    result: AgentResult[BaseModel] = AgentResult.deferred(RunOutcome(build, error=error), None)
    assert not result.ok and result.status == "failed" and result.error is error
    with pytest.raises(RunFailedError) as caught:
        _ = result.output
    assert caught.value.type == "run_timeout" and caught.value.last_output == "{"
    assert calls == []
    assert result.result.status == result.status and result.result.error == result.error


def test_a_runs_result_reads_the_same_whichever_is_read_first() -> None:
    sink = MemoryAnalytics()
    first = agent(TestModel(), sink).run_sync("Grade.")
    assert isinstance(first.output, BaseModel)
    ended = sink.events[-1]
    assert isinstance(ended, RunCompletedEvent)
    # Built after the run: the duration and usage are the ones the run ended with.
    assert first.duration_ms == ended.duration_ms and first.usage == ended.usage
    assert first.result.transcript[-1].role == "tool"
    assert first.result is first.result
    second = agent(TestModel(fail_first=["text", "text"])).run_sync("Grade.")
    assert second.result.status == "failed" == second.status
    assert second.error is not None and second.error == second.result.error
    assert second.error.type == "output_tool_not_called"


def test_a_result_made_from_a_run_result_reads_it() -> None:
    result: AgentResult[BaseModel] = AgentResult(completed("run_2"), None)
    assert result.ok and result.run_id == "run_2"
    assert "status='completed'" in repr(result)


def test_output_of_a_run_that_broke_its_schema_raises_output_schema_validation_error(
    fake_llm: FakeLLM,
) -> None:
    import agentshape

    fake_llm.respond_always(openai_tool_call("submit_result", {"title": 7}))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    grader: Agent[BaseModel] = Agent(
        AgentConfig(id="grader", system_prompt="Grade.", output_schema=SCHEMA),
        model="openai:gpt-test",
        analytics=MemoryAnalytics(),
        env=env,
    )
    result = grader.run_sync("Grade.")
    with pytest.raises(agentshape.OutputSchemaValidationError) as caught:
        _ = result.output
    assert isinstance(caught.value, agentshape.RunFailedError)
    assert caught.value.type == "output_schema_validation_failed"
    assert [str(issue) for issue in caught.value.errors] == ["$.title: 7 is not of type 'string'"]
    assert caught.value.last_output == {"title": 7}


def test_other_failures_raise_run_failed_error_but_not_the_schema_one() -> None:
    import agentshape

    result = agent(TestModel(fail_first=["text", "text"])).run_sync("Grade.")
    assert result.error is not None and result.error.type == "output_tool_not_called"
    with pytest.raises(agentshape.RunFailedError) as caught:
        result.raise_for_status()
    assert not isinstance(caught.value, agentshape.OutputSchemaValidationError)
