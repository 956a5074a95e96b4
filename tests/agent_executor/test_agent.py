from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from agent_contracts import (
    AgentConfig,
    ConfigError,
    ConfigFileError,
    InvalidSchemaError,
    Message,
    RunError,
    RunFailedError,
    RunOptions,
    RunRequest,
    RunResult,
    SchemaNotFoundError,
)
from agent_core import SchemaRegistry, validate_output
from agent_executor import (
    Agent,
    AgentResult,
    FunctionModel,
    MemoryAnalytics,
    OpenAIProvider,
    TestModel,
    format_child_result,
    read_events,
    run_many,
)
from agent_executor._providers.base import ModelTurn, ModelTurnRequest

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "score"],
    "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}

AGENT_YML = """\
schema: kb.agent/1
id: grader
name: Grader
context:
  static:
    system: You grade essays.
limits:
  maxSteps: 3
output:
  schema:
    type: object
    required: [title, score]
    properties:
      title: { type: string }
      score: { type: integer, minimum: 0 }
    additionalProperties: false
"""


def config(**fields: Any) -> AgentConfig:
    data: dict[str, Any] = {"id": "grader", "system_prompt": "You grade essays."}
    data.update(fields)
    return AgentConfig.model_validate(data)


def quiet(**kwargs: Any) -> dict[str, Any]:
    return {"analytics": MemoryAnalytics(), "env": {}, **kwargs}


class Review(BaseModel):
    title: str
    score: int


# Construction -----------------------------------------------------------------------------------


def test_from_yaml_and_run_sync_with_the_test_model(tmp_path: Path) -> None:
    path = tmp_path / "agent.yml"
    path.write_text(AGENT_YML)
    agent = Agent.from_yaml(path, model="test", **quiet())
    result = agent.run_sync("Grade the essay.")

    assert agent.id == "grader" and agent.config.max_steps == 3
    assert result.ok and result.model == "test"
    assert isinstance(result.output, agent.contract.model)  # type: ignore[union-attr]
    assert set(result.result_data) == {"title", "score"}  # type: ignore[arg-type]


def test_from_yaml_reports_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.yml"
    path.write_text(AGENT_YML.replace("maxSteps: 3", "maxStepz: 3"))
    with pytest.raises(ConfigFileError, match="maxStepz"):
        Agent.from_yaml(path, **quiet())


def test_a_bad_output_schema_fails_at_construction() -> None:
    with pytest.raises(InvalidSchemaError):
        Agent(config(output_schema={"type": "objekt"}), **quiet())


def test_an_unknown_tool_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="fs:raed"):
        Agent(config(tools=["fs:raed"]), workspace=tmp_path, **quiet())


def test_output_type_and_output_schema_conflict() -> None:
    with pytest.raises(ConfigError, match="give one contract"):
        Agent(config(output_schema=SCHEMA), output_type=Review, **quiet())


def test_provider_resolution(tmp_path: Path) -> None:
    agent = Agent(config(output_schema=SCHEMA), **quiet())
    with pytest.raises(ConfigError, match="no model to run on"):
        agent.provider()  # no model anywhere and no key: never a silent fake answer
    with pytest.raises(ConfigError, match="no model to run on"):
        agent.run_sync("Grade.")
    keyed = Agent(config(output_schema=SCHEMA), **quiet(env={"OPENAI_API_KEY": "sk-test"}))
    chosen = keyed.provider()
    assert isinstance(chosen, OpenAIProvider) and chosen.model == "gpt-4.1-mini"
    own = Agent(config(output_schema=SCHEMA, model="test:seed=3"), **quiet())
    assert isinstance(own.provider(), TestModel) and own.provider().seed == 3  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        agent.provider("openai:gpt-4.1-mini")


def test_analytics_are_written_only_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Agent(config(output_schema=SCHEMA), model="test", env={}).run_sync("Grade.")
    assert list(tmp_path.iterdir()) == []  # no sink, no directory: nothing written

    by_dir = Agent(config(output_schema=SCHEMA), model="test", env={}, analytics_dir="logs")
    result = by_dir.run_sync("Grade.")
    events = list(read_events(tmp_path / "logs"))
    assert events[0]["event"] == "run_started"
    assert events[-1]["event"] == "run_completed" and events[-1]["run_id"] == result.run_id

    env = {"AGENTSHAPE_ANALYTICS_DIR": str(tmp_path / "from-env")}
    by_env = Agent(config(output_schema=SCHEMA), model="test", env=env).run_sync("Grade.")
    assert list(read_events(tmp_path / "from-env"))[-1]["run_id"] == by_env.run_id


# Running ----------------------------------------------------------------------------------------


def test_scripted_failures_are_retried() -> None:
    agent = Agent(
        config(output_schema=SCHEMA), model="test:fail_first=invalid_arguments", **quiet()
    )
    result = agent.run_sync("Grade.")
    assert result.ok and result.retries == 1
    assert result.attempts[0].errors != []


def test_run_sync_inside_an_event_loop_is_refused() -> None:
    agent = Agent(config(output_schema=SCHEMA), model="test", **quiet())

    async def inside() -> None:
        agent.run_sync("Grade.")

    with pytest.raises(ConfigError, match="await run"):
        asyncio.run(inside())


async def test_text_mode_with_a_contract_is_a_config_error() -> None:
    agent = Agent(config(output_schema=SCHEMA), model="test", **quiet())
    with pytest.raises(ConfigError, match="output_mode 'text'"):
        await agent.run("Grade.", options=RunOptions(output_mode="text"))


async def test_tool_mode_on_a_model_without_tools_is_a_config_error() -> None:
    class Plain(TestModel):
        supports_tools = False

    agent = Agent(config(output_schema=SCHEMA), model=Plain(), **quiet())
    with pytest.raises(ConfigError, match="cannot call tools"):
        await agent.run("Grade.", options=RunOptions(output_mode="tool"))
    result = await agent.run("Grade.")
    # The model read the schema from its prompt and answered with JSON text.
    assert result.ok and result.attempts[0].mode == "prompted"
    assert result.attempts[0].raw_output == json.dumps(result.result_data)
    assert validate_output(result.result_data, SCHEMA) == []


async def test_pydantic_output_type() -> None:
    agent: Agent[Review] = Agent(config(), model="test", output_type=Review, **quiet())
    result = await agent.run("Grade.")
    assert isinstance(result.output, Review)
    assert result.result_data == result.output.model_dump()


async def test_failed_result_raises_only_on_request() -> None:
    agent = Agent(
        config(output_schema=SCHEMA, options={"max_retries": 0}),
        model=TestModel(fail_first=["text"]),
        **quiet(),
    )
    result = await agent.run("Grade.")
    assert not result.ok and result.status == "failed"
    assert result.error is not None and result.error.type == "output_tool_not_called"
    with pytest.raises(RunFailedError) as caught:
        result.raise_for_status()
    assert caught.value.type == "output_tool_not_called"
    assert caught.value.last_output == result.error.last_output
    with pytest.raises(RunFailedError):
        _ = result.output
    assert "status='failed'" in repr(result)
    assert result.usage.requests == 1  # attribute access falls through to the RunResult


async def test_named_schema_is_recorded(tmp_path: Path) -> None:
    registry = SchemaRegistry(tmp_path / "schemas.db")
    registry.add("review", SCHEMA)
    agent = Agent(config(), model="test", registry=registry, **quiet())
    result = await agent.run(RunRequest(task="Grade.", schema_name="review"))
    assert result.ok and result.schema_source == "named" and result.schema_name == "review"
    assert result.schema_validation is not None
    assert result.schema_validation.schema_name == "review"


async def test_a_named_schemas_held_content_is_used_without_the_registry(tmp_path: Path) -> None:
    registry = SchemaRegistry(tmp_path / "schemas.db")  # "review" is not (or no longer) in it
    agent = Agent(config(), model="test", registry=registry, **quiet())
    request = RunRequest(task="Grade.", schema_name="review", named_schema=SCHEMA)
    result = await agent.run(request)
    assert result.ok and result.schema_source == "named" and result.schema_name == "review"
    assert result.schema_validation is not None and result.schema_validation.valid
    assert isinstance(result.result.result_data, dict)
    assert set(result.result.result_data) == {"title", "score"}
    with pytest.raises(SchemaNotFoundError):
        await agent.run(RunRequest(task="Grade.", schema_name="review"))
    with pytest.raises(PydanticValidationError, match="named_schema is the content"):
        RunRequest(task="Grade.", named_schema=SCHEMA)


# run_many ---------------------------------------------------------------------------------------


async def test_run_many_keeps_order_and_bounds_concurrency() -> None:
    in_flight = 0
    peak = 0

    async def model(messages: list[Message], request: ModelTurnRequest) -> dict[str, Any]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        task = messages[-1].content
        await asyncio.sleep(0.03 if task in ("t0", "t3") else 0.001)  # finish out of order
        in_flight -= 1
        return {"title": task, "score": 1}

    finished: list[int] = []

    async def on_result(index: int, result: AgentResult[Any]) -> None:
        finished.append(index)

    agent = Agent(config(output_schema=SCHEMA), model=FunctionModel(model), **quiet())
    tasks = [f"t{i}" for i in range(6)]
    results = await run_many(agent, tasks, concurrency=2, on_result=on_result)

    assert [r.result_data["title"] for r in results] == tasks  # type: ignore[index]
    assert peak == 2
    assert sorted(finished) == list(range(6)) and finished != list(range(6))


async def test_run_many_sync_callback_and_requests() -> None:
    seen: list[tuple[int, str]] = []
    agent = Agent(config(), model="test", **quiet())
    results = await run_many(
        agent,
        [RunRequest(task="a", output_schema=SCHEMA), RunRequest(task="b", output_schema=SCHEMA)],
        concurrency=5,
        on_result=lambda i, r: seen.append((i, r.status)),
    )
    assert [r.schema_source for r in results] == ["inline", "inline"]
    assert sorted(seen) == [(0, "completed"), (1, "completed")]


async def test_run_many_refuses_zero_concurrency() -> None:
    agent = Agent(config(output_schema=SCHEMA), model="test", **quiet())
    with pytest.raises(ConfigError, match="at least 1"):
        await run_many(agent, ["a"], concurrency=0)


async def test_run_many_stops_the_batch_on_a_developer_mistake() -> None:
    started: list[str] = []

    async def model(messages: list[Message], request: ModelTurnRequest) -> ModelTurn | str:
        started.append(messages[-1].content)
        await asyncio.sleep(0.05)
        return "done"

    agent = Agent(config(output_schema=SCHEMA), model=FunctionModel(model), **quiet())
    with pytest.raises(ConfigError, match="cannot override"):
        requests = [RunRequest(task=task, output_schema=SCHEMA) for task in "abc"]
        await run_many(agent, requests, concurrency=3)
    assert started == []  # the mistake is found before any model call


# format_child_result ----------------------------------------------------------------------------


def test_format_child_result() -> None:
    data = RunResult(status="completed", result_data={"files": 2, "ok": True})
    text = RunResult(status="completed", result_text="All good.")
    failed = RunResult(status="failed", error=RunError(type="run_timeout", message="slow"))

    assert format_child_result(data) == json.dumps({"files": 2, "ok": True}, indent=2)
    assert format_child_result(text) == "All good."
    assert format_child_result(failed) == "(No result available)"
    assert format_child_result(AgentResult(data, None)) == format_child_result(data)
    assert format_child_result({"result_data": [1], "result_text": None}) == "[\n  1\n]"
    assert format_child_result({"result_text": "hi"}) == "hi"
    assert format_child_result({"result_text": ""}) == "(No result available)"


def test_a_callers_run_id_is_the_results_and_the_events() -> None:
    sink = MemoryAnalytics()
    agent = Agent(config(output_schema=SCHEMA), model="test", analytics=sink, env={})
    result = agent.run_sync(RunRequest(task="Grade.", run_id="run_from_a_service"))
    assert result.run_id == "run_from_a_service"
    assert {event.run_id for event in sink.events} == {"run_from_a_service"}


def test_the_agents_own_contract_is_resolved_once_for_every_run() -> None:
    agent: Agent[BaseModel] = Agent(config(output_schema=SCHEMA), model="test", **quiet())
    plans = [agent.plan(RunRequest(task=f"Grade {n}.")) for n in range(3)]
    assert all(plan.contract is agent.contract for plan in plans)
    lenient = agent.plan(RunRequest(task="Go.", options=RunOptions(lenient_formats=True)))
    assert lenient.contract is not agent.contract
    assert lenient.contract is not None and lenient.contract.lenient
    again = agent.plan(RunRequest(task="Go.", options=RunOptions(lenient_formats=True)))
    assert again.contract is lenient.contract


def test_a_pydantic_output_type_is_not_rebuilt_per_run() -> None:
    agent = Agent(output_type=Review, system_prompt="Grade.", model="test", **quiet())
    first = agent.run_sync("Grade it.")
    assert isinstance(first.output, Review)
    assert agent.plan(RunRequest(task="Again.")).contract is agent.contract
