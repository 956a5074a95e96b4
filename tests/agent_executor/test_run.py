"""The run loop against the real OpenAI and Anthropic SDKs talking to a scripted local server.

Every scenario asserts both what the caller gets back and what the server received.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_contracts import (
    AgentConfig,
    AttemptEvent,
    ConfigError,
    Message,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunOptions,
    RunStartedEvent,
    ToolCall,
)
from agent_executor import (
    Agent,
    AgentResult,
    AnthropicProvider,
    FunctionModel,
    JsonlAnalytics,
    MemoryAnalytics,
    OpenAIProvider,
    Provider,
    read_events,
)
from agent_executor import _run as run_module
from agent_executor._providers.base import ModelTurn, ModelTurnRequest
from agent_executor._providers.openai import TOOL_ERROR_PREFIX
from agent_executor._run import FORCE_REMINDER, TOOLS_REQUIRED_REMINDER, model_name
from tests.fake_llm import (
    FakeLLM,
    ScriptedResponse,
    anthropic_message,
    anthropic_text,
    anthropic_tool_use,
    delayed,
    openai_completion,
    openai_text,
    openai_tool_call,
    openai_tool_calls,
    status_error,
)

KEY = "test-key-5ecret-do-not-log"
APIS = ["openai", "anthropic"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "score"],
    "properties": {
        "title": {"type": "string"},
        "score": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": False,
}
VALID = {"title": "solid", "score": 4}
INVALID = {"title": 3}  # two problems: score missing, title not a string
INVALID_ERRORS = {"$: 'score' is a required property", "$.title: 3 is not of type 'string'"}


# Helpers ----------------------------------------------------------------------------------------


def provider_for(api: str, fake: FakeLLM, *, max_retries: int = 0, **kwargs: Any) -> Provider:
    if api == "openai":
        return OpenAIProvider(
            "gpt-test",
            api_key=KEY,
            base_url=fake.openai_base_url,
            max_retries=max_retries,
            **kwargs,
        )
    return AnthropicProvider(
        "claude-test",
        api_key=KEY,
        base_url=fake.anthropic_base_url,
        max_retries=max_retries,
        **kwargs,
    )


def call(api: str, name: str, arguments: Any, call_id: str = "call_1") -> ScriptedResponse:
    """A reply calling one tool (``submit_result`` is the wire name on both APIs)."""
    if api == "openai":
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return openai_tool_call(name, raw, call_id=call_id)
    return anthropic_tool_use(name, arguments, tool_id=call_id)


def text(api: str, reply: str) -> ScriptedResponse:
    return openai_text(reply) if api == "openai" else anthropic_text(reply)


def agent_for(
    provider: Provider | str,
    *,
    analytics: Any = None,
    env: dict[str, str] | None = None,
    output_type: type[BaseModel] | None = None,
    workspace: Path | None = None,
    **config: Any,
) -> Agent[Any]:
    data: dict[str, Any] = {"id": "grader", "system_prompt": "You grade things."}
    if output_type is None and "output_schema" not in config and "no_schema" not in config:
        data["output_schema"] = SCHEMA
    config.pop("no_schema", None)
    data.update(config)
    return Agent(
        AgentConfig.model_validate(data),
        model=provider,
        output_type=output_type,
        analytics=analytics if analytics is not None else MemoryAnalytics(),
        env=env if env is not None else {},
        workspace=workspace,
    )


def forced(api: str, body: dict[str, Any]) -> str | None:
    """The tool the request forced, ``required``/``any``/``auto``/``none``, or None."""
    choice = body.get("tool_choice")
    if choice is None:
        return None
    if api == "openai":
        return choice["function"]["name"] if isinstance(choice, dict) else choice
    return choice["name"] if choice["type"] == "tool" else choice["type"]


def tool_names(api: str, body: dict[str, Any]) -> list[str]:
    if api == "openai":
        return [tool["function"]["name"] for tool in body.get("tools", [])]
    return [tool["name"] for tool in body.get("tools", [])]


def system_text(api: str, body: dict[str, Any]) -> str:
    if api == "openai":
        return "\n\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
    return str(body.get("system", ""))


def last_tool_results(api: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results answering the last assistant turn: id, content, is_error."""
    messages = body["messages"]
    if api == "openai":
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        return [
            {
                "id": m["tool_call_id"],
                "content": m["content"].removeprefix(TOOL_ERROR_PREFIX),
                "is_error": m["content"].startswith(TOOL_ERROR_PREFIX),
            }
            for m in messages[last + 1 :]
            if m["role"] == "tool"
        ]
    blocks = messages[-1]["content"]
    return [
        {"id": b["tool_use_id"], "content": b["content"], "is_error": b.get("is_error", False)}
        for b in blocks
        if b["type"] == "tool_result"
    ]


def user_texts(api: str, body: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [b["text"] for b in content if b["type"] == "text"]
    return texts


def bodies(fake: FakeLLM) -> list[dict[str, Any]]:
    return [request.body for request in fake.requests]


def error_lines(content: str) -> list[str]:
    return [line[2:] for line in content.splitlines() if line.startswith("- ")]


# Valid first time, invalid then valid, invalid twice --------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_valid_first_time_forces_submit_result(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(call(api, "submit_result", VALID))
    result = await agent_for(provider_for(api, fake_llm)).run("Grade the essay.")

    assert result.ok and result.status == "completed"
    assert result.result_data == VALID
    assert result.result_text is None
    assert result.output.to_data() == VALID  # type: ignore[attr-defined]
    assert result.retries == 0
    assert [a.mode for a in result.attempts] == ["tool"]
    assert result.attempts[0].tool_name == "submit_result"
    assert result.usage.requests == 1 and result.usage.total_tokens > 0
    assert result.model == ("openai:gpt-test" if api == "openai" else "anthropic:claude-test")
    assert result.schema_source == "agent"

    (body,) = bodies(fake_llm)
    assert forced(api, body) == "submit_result"
    assert tool_names(api, body) == ["submit_result"]
    system = system_text(api, body)
    assert system.startswith("You grade things.")
    assert "## Required Output Format" in system
    assert system.rstrip().endswith("call it again.")  # the section comes last
    assert '"properties"' not in system  # the tool's parameters carry the schema, once
    assert user_texts(api, body) == ["Grade the essay."]


async def test_tool_mode_states_in_the_prompt_what_a_strict_tool_could_not_carry(
    fake_llm: FakeLLM,
) -> None:
    schema = {
        "type": "object",
        "required": ["tags"],
        "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 3}},
        "additionalProperties": False,
    }
    fake_llm.respond(call("anthropic", "submit_result", {"tags": ["a", "b", "c"]}))
    agent = agent_for(provider_for("anthropic", fake_llm), output_schema=schema)
    assert (await agent.run("Tag it.")).ok

    (body,) = bodies(fake_llm)
    (tool,) = body["tools"]
    assert tool["input_schema"]["properties"]["tags"]["minItems"] == 1
    system = system_text("anthropic", body)
    assert system.endswith(
        "The result must also meet these constraints:\n- $.properties.tags: minItems (sent as "
        "minItems 1; Anthropic strict mode allows only 0 or 1)"
    )


@pytest.mark.parametrize("api", APIS)
async def test_invalid_then_valid_sends_every_error_back_in_the_session(
    fake_llm: FakeLLM, api: str
) -> None:
    fake_llm.respond(
        call(api, "submit_result", INVALID, "call_a"),
        call(api, "submit_result", VALID, "call_b"),
    )
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.ok and result.result_data == VALID
    assert result.retries == 1
    assert len(result.attempts) == 2
    first, second = result.attempts
    assert {str(e) for e in first.errors} == INVALID_ERRORS
    assert first.parsed == INVALID and second.errors == []
    assert result.usage.requests == 2
    assert result.usage == first.usage + second.usage

    retry = bodies(fake_llm)[1]
    (answer,) = last_tool_results(api, retry)
    assert answer["id"] == "call_a"
    assert answer["is_error"] is True
    assert "<output-validation-error>" in answer["content"]
    assert set(error_lines(answer["content"])) == INVALID_ERRORS
    assert len(error_lines(answer["content"])) == 2  # each error stated once
    # seed 000: the re-prompt repeats the schema under "## Required Schema" before it closes
    schema_block = answer["content"].split("## Required Schema\n```json\n", 1)[1]
    assert json.loads(schema_block.split("\n```", 1)[0]) == SCHEMA
    assert answer["content"].rstrip().endswith("</output-validation-error>")
    assert forced(api, retry) == "submit_result"


@pytest.mark.parametrize("api", APIS)
async def test_invalid_twice_fails_with_errors_and_last_output(fake_llm: FakeLLM, api: str) -> None:
    second_try = {"title": "ok", "score": -1}
    fake_llm.respond(
        call(api, "submit_result", INVALID, "call_a"),
        call(api, "submit_result", second_try, "call_b"),
    )
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.status == "failed"
    assert result.result_data is None and result.result_text is None
    assert result.error is not None
    assert result.error.type == "output_schema_validation_failed"
    assert [str(e) for e in result.error.validation_errors] == [
        "$.score: -1 is less than the minimum of 0"
    ]
    assert result.error.last_output == second_try
    assert result.retries == 1 and len(result.attempts) == 2
    assert len(fake_llm.requests) == 2  # max_retries defaults to one re-prompt
    with pytest.raises(Exception, match="output_schema_validation_failed"):
        _ = result.output


# Text instead of a tool call, wrong tool name, unparseable arguments ----------------------------


@pytest.mark.parametrize("api", APIS)
async def test_text_instead_of_tool_call_gets_a_reminder(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(
        text(api, "The essay is fine, I'd say 4/5."), call(api, "submit_result", VALID)
    )
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.ok and result.result_data == VALID
    assert result.retries == 1
    assert result.attempts[0].tool_name is None
    assert result.attempts[0].raw_output == "The essay is fine, I'd say 4/5."
    assert "instead of calling submit_result" in str(result.attempts[0].errors[0])

    retry = bodies(fake_llm)[1]
    reminder = user_texts(api, retry)[-1]
    assert "<output-tool-not-called>" in reminder
    assert "submit_result" in reminder
    assert forced(api, retry) == "submit_result"


@pytest.mark.parametrize("api", APIS)
async def test_text_twice_fails_as_tool_not_called(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(text(api, "Four."), text(api, "Still four."))
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.status == "failed"
    assert result.error is not None and result.error.type == "output_tool_not_called"
    assert result.error.last_output == "Still four."
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize("api", APIS)
async def test_wrong_tool_name_is_answered_with_an_error(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(
        call(api, "submit_answer", VALID, "call_w"), call(api, "submit_result", VALID, "call_ok")
    )
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.ok and result.retries == 1
    assert "'submit_answer' is not one of your tools" in str(result.attempts[0].errors[0])
    (answer,) = last_tool_results(api, bodies(fake_llm)[1])
    assert answer["id"] == "call_w" and answer["is_error"] is True
    assert "submit_answer" in answer["content"] and "submit_result" in answer["content"]


async def test_unparseable_arguments_are_recovered_when_the_value_validates(
    fake_llm: FakeLLM,
) -> None:
    fenced = "```json\n" + json.dumps(VALID) + "\n```"
    fake_llm.respond(openai_tool_call("submit_result", fenced))
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade it.")

    assert result.ok and result.result_data == VALID
    assert result.recovered_by_extraction is True
    assert result.attempts[0].recovered_by_extraction is True
    assert result.attempts[0].raw_output == fenced
    assert len(fake_llm.requests) == 1


async def test_unparseable_arguments_that_do_not_validate_are_re_asked(fake_llm: FakeLLM) -> None:
    fenced_invalid = "```json\n" + json.dumps(INVALID) + "\n```"
    fake_llm.respond(
        openai_tool_call("submit_result", fenced_invalid, call_id="call_a"),
        openai_tool_call("submit_result", "title=solid score=4", call_id="call_b"),
        openai_tool_call("submit_result", json.dumps(VALID), call_id="call_c"),
    )
    agent = agent_for(provider_for("openai", fake_llm), options={"max_retries": 2})
    result = await agent.run("Grade it.")

    assert result.ok and result.retries == 2
    assert result.recovered_by_extraction is False
    assert [a.recovered_by_extraction for a in result.attempts] == [False, False, False]
    for attempt in result.attempts[:2]:
        assert "the arguments are not valid JSON" in str(attempt.errors[0])
        assert str(attempt.errors[0]).count("not valid JSON") == 1  # said once
    (answer,) = last_tool_results("openai", bodies(fake_llm)[1])
    assert answer["is_error"] and answer["content"].count("not valid JSON") == 1


# Two tool calls in one turn ---------------------------------------------------------------------


async def test_two_submit_calls_first_invalid_second_valid(fake_llm: FakeLLM) -> None:
    fake_llm.respond(
        openai_tool_calls(
            [
                ("submit_result", json.dumps(INVALID), "call_a"),
                ("submit_result", json.dumps(VALID), "call_b"),
            ]
        )
    )
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade it.")

    assert result.ok and result.result_data == VALID and result.retries == 0
    tool_message = result.transcript[-1]
    assert tool_message.role == "tool"
    assert [(r.tool_call_id, r.is_error) for r in tool_message.tool_results] == [
        ("call_a", True),
        ("call_b", False),
    ]


@pytest.mark.parametrize("api", APIS)
async def test_two_invalid_calls_answer_every_id_and_state_each_error_once(
    fake_llm: FakeLLM, api: str
) -> None:
    if api == "openai":
        first = openai_tool_calls(
            [
                ("submit_result", json.dumps(INVALID), "call_a"),
                ("submit_result", json.dumps(INVALID), "call_b"),
            ]
        )
    else:
        first = anthropic_message(
            [
                {"type": "tool_use", "id": "call_a", "name": "submit_result", "input": INVALID},
                {"type": "tool_use", "id": "call_b", "name": "submit_result", "input": INVALID},
            ],
            stop_reason="tool_use",
        )
    fake_llm.respond(first, call(api, "submit_result", VALID, "call_c"))
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.ok and result.retries == 1
    assert {str(e) for e in result.attempts[0].errors} == INVALID_ERRORS
    assert len(result.attempts[0].errors) == 2
    answers = last_tool_results(api, bodies(fake_llm)[1])
    assert [a["id"] for a in answers] == ["call_a", "call_b"]
    assert all(a["is_error"] for a in answers)


# Input tools ------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_input_tool_then_submit_result(fake_llm: FakeLLM, api: str, tmp_path: Path) -> None:
    (tmp_path / "essay.txt").write_text("A short essay about owls.\n")
    fake_llm.respond(
        call(api, "fs_read", {"path": "essay.txt"}, "call_read"),
        call(api, "submit_result", VALID, "call_submit"),
    )
    agent = agent_for(provider_for(api, fake_llm), tools=["fs:read"], workspace=tmp_path)
    result = await agent.run("Grade essay.txt.")

    assert result.ok and result.result_data == VALID and result.retries == 0
    first, second = bodies(fake_llm)
    assert forced(api, first) == ("required" if api == "openai" else "any")
    assert tool_names(api, first) == ["fs_read", "submit_result"]
    (answer,) = last_tool_results(api, second)
    assert answer["id"] == "call_read" and not answer["is_error"]
    assert "A short essay about owls." in answer["content"]
    assert [c.name for c in result.transcript[2].tool_calls] == ["fs:read"]


@pytest.mark.parametrize("api", APIS)
async def test_forced_step_that_calls_an_input_tool_is_a_failed_attempt(
    fake_llm: FakeLLM, api: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    fake_llm.respond(
        call(api, "fs_read", {"path": "a.txt"}, "call_1"),
        call(api, "fs_read", {"path": "a.txt"}, "call_2"),  # on the forced last step
        call(api, "submit_result", VALID, "call_3"),
    )
    agent = agent_for(
        provider_for(api, fake_llm), tools=["fs:read"], workspace=tmp_path, max_steps=2
    )
    result = await agent.run("Grade a.txt.")

    assert result.ok and result.retries == 1
    assert "'fs:read' is not a tool you can call now" in str(result.attempts[0].errors[0])
    _, last_step, retry = bodies(fake_llm)
    assert forced(api, last_step) == "submit_result"
    assert tool_names(api, last_step) == ["submit_result"]
    (answer,) = last_tool_results(api, retry)
    assert answer["id"] == "call_2" and answer["is_error"]
    assert "alpha" not in answer["content"]  # the tool did not run


async def test_input_tool_errors_go_back_to_the_model(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.respond(
        call("openai", "fs_read", {"path": "../etc/passwd"}, "call_1"),
        call("openai", "submit_result", VALID, "call_2"),
    )
    agent = agent_for(provider_for("openai", fake_llm), tools=["fs:read"], workspace=tmp_path)
    result = await agent.run("Read it.")

    assert result.ok and result.retries == 0  # a tool error is not a failed attempt
    (answer,) = last_tool_results("openai", bodies(fake_llm)[1])
    assert answer["is_error"] and answer["content"].startswith("fs:read:")


# Provider failures ------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_rate_limit_with_retry_after_then_success(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(
        status_error(429, "slow down", headers={"retry-after-ms": "5"}, api=api),
        call(api, "submit_result", VALID),
    )
    result = await agent_for(provider_for(api, fake_llm, max_retries=1)).run("Grade it.")

    assert result.ok and result.result_data == VALID
    assert result.retries == 0  # the SDK's retry is not an attempt
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize("api", APIS)
async def test_rate_limit_every_time_fails_typed(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond_always(
        status_error(429, "slow down", headers={"retry-after-ms": "1"}, api=api)
    )
    result = await agent_for(provider_for(api, fake_llm, max_retries=1)).run("Grade it.")

    assert result.status == "failed"
    assert result.error is not None and result.error.type == "provider_rate_limited"
    assert "429" in result.error.message
    assert len(fake_llm.requests) == 2  # one SDK retry, then the run gives up


@pytest.mark.parametrize("api", APIS)
async def test_server_error_every_time(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond_always(status_error(500, "boom", headers={"retry-after-ms": "1"}, api=api))
    result = await agent_for(provider_for(api, fake_llm, max_retries=2)).run("Grade it.")

    assert result.status == "failed"
    assert result.error is not None and result.error.type == "provider_server_error"
    assert "boom" in result.error.message
    assert len(fake_llm.requests) == 3
    assert result.attempts == []


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, "provider_authentication_error"), (400, "provider_bad_request")],
)
async def test_client_errors_fail_with_their_own_type(
    fake_llm: FakeLLM, status: int, kind: str
) -> None:
    fake_llm.respond(status_error(status, "nope"))
    result = await agent_for(provider_for("openai", fake_llm, max_retries=2)).run("Grade it.")
    assert result.error is not None and result.error.type == kind
    assert len(fake_llm.requests) == 1  # not retried


@pytest.mark.parametrize("api", APIS)
async def test_request_timeout(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(delayed(call(api, "submit_result", VALID), 5.0))
    provider = provider_for(api, fake_llm, timeout_s=0.2)
    result = await agent_for(provider).run("Grade it.")

    assert result.status == "failed"
    assert result.error is not None and result.error.type == "provider_timeout"


async def test_connection_refused_is_a_connection_error() -> None:
    server = FakeLLM()
    url = server.openai_base_url
    server.close()
    provider = OpenAIProvider("gpt-test", api_key=KEY, base_url=url, max_retries=0)
    result = await agent_for(provider).run("Grade it.")
    assert result.error is not None and result.error.type == "provider_connection_error"


@pytest.mark.parametrize("api", APIS)
async def test_overall_run_timeout(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(
        call(api, "submit_result", INVALID), delayed(call(api, "submit_result", VALID), 120)
    )
    # Time enough for the first, immediate, call on a loaded machine; the second is cut.
    agent = agent_for(provider_for(api, fake_llm), options={"timeout_s": 5.0})
    result = await agent.run("Grade it.")

    assert result.status == "failed"
    assert result.error is not None and result.error.type == "run_timeout"
    assert result.error.last_output == INVALID
    assert len(result.attempts) == 1


async def test_a_run_without_a_timeout_gets_the_default_one(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_module, "DEFAULT_RUN_TIMEOUT_S", 0.5)  # 300 s in real life
    fake_llm.respond(delayed(call("openai", "submit_result", VALID), 30))
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade it.")

    assert result.status == "failed"
    assert result.error is not None
    assert result.error.message == "the run took longer than its timeout of 0.5 s"


async def test_a_model_function_that_raises_is_a_failed_result() -> None:
    def broken(messages: list[Message], request: ModelTurnRequest) -> str:
        raise RuntimeError("the model function broke")

    result = await agent_for(FunctionModel(broken)).run("Grade it.")
    assert result.status == "failed"
    assert result.error is not None and result.error.type == "internal_error"
    assert "the model function broke" in result.error.message


# max_tokens -------------------------------------------------------------------------------------


async def test_arguments_cut_off_by_max_tokens_are_not_recovered(fake_llm: FakeLLM) -> None:
    cut = '{"title": "solid", "score": 4'
    fake_llm.respond(
        openai_completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "submit_result", "arguments": cut},
                    }
                ],
            },
            finish_reason="length",
        ),
        openai_tool_call("submit_result", json.dumps(VALID), call_id="call_b"),
    )
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade it.")

    assert result.ok and result.retries == 1
    assert result.recovered_by_extraction is False
    assert "cut off by the max_tokens limit" in str(result.attempts[0].errors[0])
    (answer,) = last_tool_results("openai", bodies(fake_llm)[1])
    assert "max_tokens" in answer["content"]


async def test_anthropic_reply_cut_off_in_text(fake_llm: FakeLLM) -> None:
    fake_llm.respond(
        anthropic_text('{"title": "solid", "sc', stop_reason="max_tokens"),
        anthropic_tool_use("submit_result", VALID),
    )
    result = await agent_for(provider_for("anthropic", fake_llm)).run("Grade it.")
    assert result.ok and result.retries == 1
    assert "cut off by the max_tokens limit" in str(result.attempts[0].errors[0])


# OpenAI-compatible quirks -----------------------------------------------------------------------


async def test_arguments_sent_as_an_object(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade it.")
    assert result.ok and result.result_data == VALID
    assert json.loads(result.attempts[0].raw_output) == VALID


@pytest.mark.parametrize(
    "reply",
    [json.dumps(VALID), "Here you go:\n```json\n" + json.dumps(VALID) + "\n```\nDone."],
)
async def test_tool_choice_ignored_and_answer_written_as_json_text(
    fake_llm: FakeLLM, reply: str
) -> None:
    fake_llm.respond(openai_text(reply))
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade it.")

    assert result.ok and result.result_data == VALID
    assert result.attempts[0].tool_name is None
    assert result.recovered_by_extraction is True
    assert len(fake_llm.requests) == 1


async def test_json_text_is_refused_when_extraction_is_off(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text(json.dumps(VALID)), openai_tool_call("submit_result", VALID))
    agent = agent_for(provider_for("openai", fake_llm), options={"extract_json": False})
    result = await agent.run("Grade it.")
    assert result.ok and result.retries == 1
    assert result.attempts[0].errors[0].keyword == "tool"


async def test_missing_tool_call_ids_are_made_up_and_echoed(fake_llm: FakeLLM) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", json.dumps(INVALID), call_id=None),
        openai_tool_call("submit_result", json.dumps(VALID), call_id=None),
    )
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade it.")

    assert result.ok and result.retries == 1
    retry = bodies(fake_llm)[1]
    assistant = next(m for m in retry["messages"] if m["role"] == "assistant")
    made_up = assistant["tool_calls"][0]["id"]
    assert made_up.startswith("call_")
    (answer,) = last_tool_results("openai", retry)
    assert answer["id"] == made_up


# No schema, prompted, native --------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_no_schema_returns_result_text(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(text(api, "Owls are great."))
    agent = agent_for(provider_for(api, fake_llm), no_schema=True)
    result = await agent.run("Tell me about owls.")

    assert result.ok and result.result_text == "Owls are great."
    assert result.result_data is None
    assert result.schema_source is None and result.schema_hash is None
    assert [a.mode for a in result.attempts] == ["text"]
    (body,) = bodies(fake_llm)
    assert "tools" not in body
    assert system_text(api, body) == "You grade things."
    with pytest.raises(ConfigError, match="no output contract"):
        _ = result.output


@pytest.mark.parametrize("api", APIS)
async def test_text_mode_input_tools_then_last_step_without_tools(
    fake_llm: FakeLLM, api: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    fake_llm.respond(call(api, "fs_read", {"path": "a.txt"}, "call_1"), text(api, "It says alpha."))
    agent = agent_for(
        provider_for(api, fake_llm),
        no_schema=True,
        tools=["fs:read"],
        workspace=tmp_path,
        max_steps=2,
    )
    result = await agent.run("What is in a.txt?")

    assert result.ok and result.result_text == "It says alpha."
    first, last = bodies(fake_llm)
    assert forced(api, first) == "auto"
    assert forced(api, last) == "none"
    assert tool_names(api, last) == ["fs_read"]  # still defined: the history uses it


async def test_text_mode_model_that_keeps_calling_tools_exceeds_max_steps(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    fake_llm.respond(
        call("openai", "fs_read", {"path": "a.txt"}, "call_1"),
        call("openai", "fs_read", {"path": "a.txt"}, "call_2"),
    )
    agent = agent_for(
        provider_for("openai", fake_llm),
        no_schema=True,
        tools=["fs:read"],
        workspace=tmp_path,
        max_steps=2,
    )
    result = await agent.run("What is in a.txt?")
    assert result.error is not None and result.error.type == "max_steps_exceeded"
    assert len(fake_llm.requests) == 2
    assert result.transcript[-1].role == "tool"  # every call answered


@pytest.mark.parametrize("api", APIS)
async def test_prompted_mode_extracts_validates_and_re_prompts(fake_llm: FakeLLM, api: str) -> None:
    first = "Sure! Here it is:\n```json\n" + json.dumps(INVALID) + "\n```"
    fake_llm.respond(text(api, first), text(api, json.dumps(VALID)))
    agent = agent_for(provider_for(api, fake_llm), options={"output_mode": "prompted"})
    result = await agent.run("Grade it.")

    assert result.ok and result.result_data == VALID and result.retries == 1
    assert [a.mode for a in result.attempts] == ["prompted", "prompted"]
    assert {str(e) for e in result.attempts[0].errors} == INVALID_ERRORS
    first_body, retry = bodies(fake_llm)
    assert "tools" not in first_body
    assert "Reply with only the JSON value" in system_text(api, first_body)
    prompt = user_texts(api, retry)[-1]
    assert prompt.startswith("Your previous response did not match the required JSON schema.")
    assert "## Your Previous Response:\n" + first in prompt
    assert "## Required Schema:" in prompt
    assert set(error_lines(prompt)) == INVALID_ERRORS and len(error_lines(prompt)) == 2


async def test_prompted_mode_marks_extraction(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text("My grade: " + json.dumps(VALID) + " — hope that helps"))
    agent = agent_for(provider_for("openai", fake_llm), options={"output_mode": "prompted"})
    result = await agent.run("Grade it.")
    assert result.ok and result.recovered_by_extraction is True


async def test_prompted_strict_json_only_refuses_prose(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text("Grade: " + json.dumps(VALID)), openai_text(json.dumps(VALID)))
    options = {"output_mode": "prompted", "strict_json_only": True}
    result = await agent_for(provider_for("openai", fake_llm), options=options).run("Grade it.")
    assert result.ok and result.retries == 1
    assert "strict_json_only" in str(result.attempts[0].errors[0])


@pytest.mark.parametrize(
    ("replies", "options", "kind", "message"),
    [
        (
            ["I would rather not.", "Still no."],
            {},
            "no_json_found",
            "the reply held no JSON value after 2 attempts",
        ),
        (
            ["Grade: " + json.dumps(VALID), "```json\n" + json.dumps(VALID) + "\n```"],
            {"strict_json_only": True},
            "strict_json_only_violated",
            "not JSON alone",
        ),
        (
            [json.dumps(INVALID), json.dumps(INVALID)],
            {},
            "output_schema_validation_failed",
            "did not match the schema after 2 attempts",
        ),
    ],
)
async def test_prompted_failures_are_typed(
    fake_llm: FakeLLM, replies: list[str], options: dict[str, Any], kind: str, message: str
) -> None:
    fake_llm.respond(*(openai_text(reply) for reply in replies))
    agent = agent_for(
        provider_for("openai", fake_llm), options={"output_mode": "prompted", **options}
    )
    result = await agent.run("Grade it.")
    assert result.error is not None and result.error.type == kind
    assert message in result.error.message
    assert result.error.validation_errors != []
    assert len(fake_llm.requests) == 2


class _NoTools:
    """An OpenAI provider that says it cannot call tools (a plain completion model)."""

    supports_tools = False

    def __init__(self, inner: OpenAIProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        return await self.inner.request(turn)


async def test_a_model_without_tools_runs_prompted(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text(json.dumps(VALID)))
    inner = provider_for("openai", fake_llm)
    assert isinstance(inner, OpenAIProvider)
    result = await agent_for(_NoTools(inner)).run("Grade it.")
    assert result.ok and result.attempts[0].mode == "prompted"
    assert "tools" not in bodies(fake_llm)[0]


OPTIONAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string"}, "note": {"type": "string"}},
    "additionalProperties": False,
}


async def test_native_mode_openai_response_format(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text(json.dumps({"title": "x", "note": None})))
    agent = agent_for(
        provider_for("openai", fake_llm),
        output_schema=OPTIONAL_SCHEMA,
        options={"output_mode": "native"},
    )
    result = await agent.run("Grade it.")

    assert result.ok and result.result_data == {"title": "x"}  # strict mode's null removed
    assert result.attempts[0].mode == "native"
    (body,) = bodies(fake_llm)
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["title", "note"]
    assert "tools" not in body


async def test_native_mode_anthropic_output_config(fake_llm: FakeLLM) -> None:
    fake_llm.respond(anthropic_text(json.dumps(INVALID)), anthropic_text(json.dumps(VALID)))
    agent = agent_for(provider_for("anthropic", fake_llm), options={"output_mode": "native"})
    result = await agent.run("Grade it.")

    assert result.ok and result.result_data == VALID and result.retries == 1
    first, retry = bodies(fake_llm)
    assert first["output_config"]["format"]["type"] == "json_schema"
    assert "<output-validation-error>" not in user_texts("anthropic", retry)[-1]
    assert "did not match the required JSON schema" in user_texts("anthropic", retry)[-1]


async def test_native_mode_with_a_schema_anthropic_cannot_take_is_a_config_error(
    fake_llm: FakeLLM,
) -> None:
    recursive = {
        "type": "object",
        "properties": {"child": {"$ref": "#"}},
        "additionalProperties": False,
    }
    agent = agent_for(
        provider_for("anthropic", fake_llm),
        output_schema=recursive,
        options={"output_mode": "native"},
    )
    with pytest.raises(ConfigError, match="structured outputs"):
        await agent.run("Grade it.")
    assert fake_llm.requests == []


# Extended thinking: a forced tool is downgraded to auto ------------------------------------------


async def test_thinking_downgrade_adds_reminders_and_still_enforces(fake_llm: FakeLLM) -> None:
    fake_llm.respond(
        anthropic_text("I think it deserves a 4."),
        anthropic_tool_use("submit_result", VALID),
    )
    provider = provider_for("anthropic", fake_llm, thinking_budget=1024)
    result = await agent_for(provider).run("Grade it.")

    assert result.ok and result.retries == 1
    assert result.attempts[0].errors[0].keyword == "tool"
    first, retry = bodies(fake_llm)
    assert first["tool_choice"]["type"] == "auto"
    assert FORCE_REMINDER in user_texts("anthropic", first)[0]
    assert "<output-tool-not-called>" in user_texts("anthropic", retry)[-1]


async def test_thinking_downgrade_reminds_after_input_tools(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    fake_llm.respond(
        anthropic_tool_use("fs_read", {"path": "a.txt"}, tool_id="toolu_r"),
        anthropic_tool_use("submit_result", VALID, tool_id="toolu_s"),
    )
    provider = provider_for("anthropic", fake_llm, thinking_budget=1024)
    agent = agent_for(provider, tools=["fs:read"], workspace=tmp_path, max_steps=2)
    result = await agent.run("Grade a.txt.")

    assert result.ok and result.retries == 0
    first, last = bodies(fake_llm)
    assert TOOLS_REQUIRED_REMINDER in user_texts("anthropic", first)[0]
    final_user = last["messages"][-1]["content"]
    assert final_user[0]["type"] == "tool_result"  # results first, then the reminder
    assert final_user[-1] == {"type": "text", "text": FORCE_REMINDER}


# Resume, budget, options, schemas, parameters ---------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_resume_enforces_the_schema_again(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(
        call(api, "submit_result", VALID, "call_1"),
        call(api, "submit_result", INVALID, "call_2"),
        call(api, "submit_result", {"title": "better", "score": 5}, "call_3"),
    )
    agent = agent_for(provider_for(api, fake_llm))
    first = await agent.run("Grade it.")
    history = list(first.transcript)
    snapshot = [m.model_copy(deep=True) for m in history]
    second = await agent.run("Now grade it more strictly.", messages=history)

    assert second.ok and second.result_data == {"title": "better", "score": 5}
    assert second.retries == 1
    assert history == snapshot  # the caller's list is untouched
    resumed = bodies(fake_llm)[1]
    assert forced(api, resumed) == "submit_result"
    assert user_texts(api, resumed) == ["Grade it.", "Now grade it more strictly."]
    assert system_text(api, resumed).count("## Required Output Format") == 1


async def test_resume_after_a_cut_short_run_answers_dangling_tool_calls(
    fake_llm: FakeLLM,
) -> None:
    dangling = [
        Message.user("Grade it."),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="call_x", name="submit_result", arguments=VALID)],
        ),
    ]
    fake_llm.respond(openai_tool_call("submit_result", VALID, call_id="call_y"))
    result = await agent_for(provider_for("openai", fake_llm)).run("Again.", messages=dangling)

    assert result.ok
    messages = bodies(fake_llm)[0]["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert messages[3]["tool_call_id"] == "call_x"


async def test_callers_message_list_is_not_mutated(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    history = [Message.user("Earlier question."), Message(role="assistant", content="Earlier.")]
    before = list(history)
    result = await agent_for(provider_for("openai", fake_llm)).run("Grade.", messages=history)
    assert result.ok
    assert history == before and len(history) == 2
    assert result.transcript[1:3] == before


@pytest.mark.parametrize("api", APIS)
async def test_token_budget_counts_every_turn(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(call(api, "submit_result", INVALID), call(api, "submit_result", VALID))
    agent = agent_for(provider_for(api, fake_llm), options={"token_budget": 25})
    result = await agent.run("Grade it.")

    assert result.status == "failed"
    assert result.error is not None and result.error.type == "token_budget_exceeded"
    assert result.usage.requests == 2 and result.usage.total_tokens > 25
    assert "over its budget of 25" in result.error.message
    closing = result.transcript[-1]  # the unanswered call is closed, so the run can resume
    assert closing.role == "tool" and closing.tool_results[0].is_error
    assert closing.tool_results[0].tool_call_id == result.transcript[-2].tool_calls[0].id


async def test_env_defaults_are_overridden_by_agent_then_run_options(fake_llm: FakeLLM) -> None:
    env = {"SCHEMA_ENFORCEMENT_MAX_RETRIES": "0"}
    fake_llm.respond_always(openai_tool_call("submit_result", json.dumps(INVALID)))

    only_env = await agent_for(provider_for("openai", fake_llm), env=env).run("Grade it.")
    assert only_env.status == "failed" and len(only_env.attempts) == 1

    agent_layer = agent_for(provider_for("openai", fake_llm), env=env, options={"max_retries": 2})
    assert len((await agent_layer.run("Grade it.")).attempts) == 3

    run_layer = await agent_layer.run("Grade it.", options=RunOptions(max_retries=1))
    assert len(run_layer.attempts) == 2
    assert len(fake_llm.requests) == 1 + 3 + 2


async def test_env_extract_json_default(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text(json.dumps(VALID)), openai_text(json.dumps(VALID)))
    env = {"SCHEMA_ENFORCEMENT_EXTRACT_JSON": "false"}
    result = await agent_for(provider_for("openai", fake_llm), env=env).run("Grade it.")
    assert result.error is not None and result.error.type == "output_tool_not_called"

    fake_llm.respond(openai_text(json.dumps(VALID)))
    again = await agent_for(provider_for("openai", fake_llm), env=env).run(
        "Grade it.", options=RunOptions(extract_json=True)
    )
    assert again.ok


INLINE: dict[str, Any] = {
    "type": "object",
    "required": ["verdict"],
    "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}},
    "additionalProperties": False,
}


async def test_inline_schema_replaces_the_default_output_schema(fake_llm: FakeLLM) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", {"verdict": "pass"}),
        openai_tool_call("submit_result", VALID),
    )
    agent = agent_for(
        provider_for("openai", fake_llm), output_schema=None, default_output_schema=SCHEMA
    )
    inline = await agent.run("Judge it.", output_schema=INLINE)
    default = await agent.run("Grade it.")

    assert inline.ok and inline.result_data == {"verdict": "pass"}
    assert inline.schema_source == "inline" and default.schema_source == "default"
    assert inline.schema_hash != default.schema_hash
    first, second = bodies(fake_llm)
    assert list(first["tools"][0]["function"]["parameters"]["properties"]) == ["verdict"]
    assert list(second["tools"][0]["function"]["parameters"]["properties"]) == ["title", "score"]


async def test_inline_schema_on_an_agent_without_one(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_tool_call("submit_result", {"verdict": "fail"}))
    agent = agent_for(provider_for("openai", fake_llm), no_schema=True)
    result = await agent.run("Judge it.", output_schema=INLINE)
    assert result.ok and result.schema_source == "inline"
    assert result.output.to_data() == {"verdict": "fail"}  # type: ignore[attr-defined]


async def test_an_agents_own_schema_cannot_be_overridden(fake_llm: FakeLLM) -> None:
    agent = agent_for(provider_for("openai", fake_llm))
    with pytest.raises(ConfigError, match="cannot override"):
        await agent.run("Judge it.", output_schema=INLINE)
    assert fake_llm.requests == []


PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["essay_path"],
    "properties": {"essay_path": {"type": "string"}},
}


async def test_parameters_failing_their_schema_make_no_model_call(fake_llm: FakeLLM) -> None:
    sink = MemoryAnalytics()
    agent = agent_for(
        provider_for("openai", fake_llm), parameters_schema=PARAMS_SCHEMA, analytics=sink
    )
    result = await agent.run("Grade it.", parameters={"essay_path": 7})

    assert fake_llm.requests == []
    assert result.status == "failed"
    assert result.error is not None and result.error.type == "input_validation_failed"
    assert [str(e) for e in result.error.validation_errors] == [
        "$.essay_path: 7 is not of type 'string'"
    ]
    assert [type(e) for e in sink.events] == [RunStartedEvent, RunFailedEvent]


async def test_valid_parameters_reach_the_model(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    agent = agent_for(provider_for("openai", fake_llm), parameters_schema=PARAMS_SCHEMA)
    result = await agent.run("Grade it.", parameters={"essay_path": "owls.md"})
    assert result.ok
    task = user_texts("openai", bodies(fake_llm)[0])[0]
    assert task.startswith("Grade it.") and '"essay_path": "owls.md"' in task


class Review(BaseModel):
    title: str
    score: int


@pytest.mark.parametrize("api", APIS)
async def test_pydantic_contract_gives_an_instance(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(call(api, "submit_result", {"title": "ok", "score": "x"}, "c1"))
    fake_llm.respond(call(api, "submit_result", VALID, "c2"))
    result: AgentResult[Review] = await agent_for(
        provider_for(api, fake_llm), output_type=Review
    ).run("Grade it.")

    assert result.ok and result.retries == 1
    assert isinstance(result.output, Review)
    assert result.output == Review(title="solid", score=4)
    assert result.schema_name == "Review"


# Analytics --------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_analytics_jsonl_lines_without_the_key(
    fake_llm: FakeLLM, api: str, tmp_path: Path
) -> None:
    fake_llm.respond(
        call(api, "submit_result", INVALID, "c1"), call(api, "submit_result", VALID, "c2")
    )
    fake_llm.respond(status_error(400, "bad request body", api=api))
    sink = JsonlAnalytics(tmp_path / "analytics")
    agent = agent_for(provider_for(api, fake_llm), analytics=sink)
    ok = await agent.run("Grade it.")
    failed = await agent.run("Grade it again.")
    assert ok.ok and failed.error is not None

    (log,) = (tmp_path / "analytics").glob("events-*.jsonl")
    raw = log.read_text()
    assert KEY not in raw and "authorization" not in raw.lower()
    lines = [json.loads(line) for line in raw.splitlines()]
    first_run = [e for e in lines if e["run_id"] == ok.run_id]
    assert [e["event"] for e in first_run] == [
        "run_started",
        "model_turn",
        "attempt",
        "retry",
        "model_turn",
        "attempt",
        "run_completed",
    ]
    attempt = first_run[2]
    assert attempt["mode"] == "tool" and attempt["schema_hash"] == ok.schema_hash
    assert json.loads(attempt["raw_output"]) == INVALID
    assert {f"{e['path']}: {e['message']}" for e in attempt["errors"]} == INVALID_ERRORS
    turn = first_run[1]
    assert turn["usage"]["requests"] == 1 and turn["latency_ms"] > 0
    assert first_run[-1]["retries"] == 1
    last = [e for e in lines if e["run_id"] == failed.run_id][-1]
    assert last["event"] == "run_failed" and last["error_type"] == "provider_bad_request"


async def test_memory_analytics_event_types(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    sink = MemoryAnalytics()
    result = await agent_for(provider_for("openai", fake_llm), analytics=sink).run("Grade it.")
    assert [type(e) for e in sink.events] == [
        RunStartedEvent,
        ModelTurnEvent,
        AttemptEvent,
        RunCompletedEvent,
    ]
    assert all(getattr(e, "run_id", None) == result.run_id for e in sink.events)
    assert not any(isinstance(e, RetryEvent) for e in sink.events)


async def test_a_jsonl_sink_that_overrides_emit_gets_each_event_built(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    class Counting(JsonlAnalytics):
        def __init__(self, directory: Path) -> None:
            super().__init__(directory)
            self.seen: list[str] = []

        def emit(self, event: BaseModel) -> None:
            self.seen.append(type(event).__name__)
            super().emit(event)

    fake_llm.respond(openai_tool_call("submit_result", VALID))
    sink = Counting(tmp_path)
    result = await agent_for(provider_for("openai", fake_llm), analytics=sink).run("Grade it.")
    assert result.ok
    names = ["RunStartedEvent", "ModelTurnEvent", "AttemptEvent", "RunCompletedEvent"]
    assert sink.seen == names
    assert len(read_events(tmp_path)) == 4


async def test_a_failing_analytics_sink_does_not_break_the_run(fake_llm: FakeLLM) -> None:
    class Broken:
        def emit(self, event: BaseModel) -> None:
            raise OSError("disk full")

    fake_llm.respond(openai_tool_call("submit_result", VALID))
    result = await agent_for(provider_for("openai", fake_llm), analytics=Broken()).run("Go.")
    assert result.ok


# Model names ------------------------------------------------------------------------------------


def test_model_name_is_the_model_spec(fake_llm: FakeLLM) -> None:
    from agent_executor import TestModel

    assert model_name(TestModel()) == "test"
    assert model_name(provider_for("openai", fake_llm)) == "openai:gpt-test"
    assert model_name(FunctionModel(lambda m, r: "x")) == "function"
