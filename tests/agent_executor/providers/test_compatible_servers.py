"""Re-prompts that every OpenAI-compatible server accepts, and errors read from their bodies.

The fake server checks each request as llama-cpp-python's server, Ollama and vLLM do
(``tests/compatible_servers.py``), so a request shape one of them refuses fails here as it
would against the real server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_contracts import RunOptions
from agent_executor import Agent
from agent_executor._cli import main
from agent_executor._providers.error_text import says_context_overflow, says_malformed
from tests.compatible_servers import SERVERS
from tests.fake_llm import (
    FakeLLM,
    ScriptedResponse,
    delayed,
    openai_text,
    openai_tool_call,
    status_error,
)
from tests.gbnf_recognizer import accepts

SCHEMA = {
    "type": "object",
    "required": ["summary", "score"],
    "properties": {"summary": {"type": "string", "minLength": 1}, "score": {"type": "integer"}},
    "additionalProperties": False,
}
VALID = {"summary": "Adds a retry.", "score": 3}
TOOL_MODE = RunOptions(output_mode="tool")  # llamacpp: would default to native


def _agent(prefix: str, fake_llm: FakeLLM) -> Agent:
    env = {f"{prefix.upper()}_BASE_URL": fake_llm.openai_base_url}
    return Agent(
        output_schema=SCHEMA, system_prompt="Review the change.", model=f"{prefix}:m", env=env
    )


def _assistant_turns(body: Any) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]


@pytest.mark.parametrize("server", sorted(SERVERS))
@pytest.mark.parametrize(
    "first",
    [
        pytest.param('{"summary": "trunc', id="cut-off-arguments"),
        pytest.param("[1, 2]", id="arguments-not-an-object"),
        pytest.param({"summary": "", "score": "3"}, id="invalid-object"),
    ],
)
async def test_a_retry_after_a_bad_first_answer_is_accepted(
    server: str, first: str | dict[str, Any], fake_llm: FakeLLM
) -> None:
    fake_llm.refuse_when(SERVERS[server])
    fake_llm.respond(
        openai_tool_call("submit_result", first, content=None),
        openai_tool_call("submit_result", VALID),
    )

    result = await _agent(server, fake_llm).run("Review PR 7", options=TOOL_MODE)

    assert result.ok, result.error
    assert result.result_data == VALID
    assert result.retries == 1
    echoed = _assistant_turns(fake_llm.requests[1].body)[0]
    assert echoed["content"] == ""
    arguments = json.loads(echoed["tool_calls"][0]["function"]["arguments"])
    assert arguments == (first if isinstance(first, dict) else {})


async def test_an_object_answer_is_echoed_as_the_model_sent_it(fake_llm: FakeLLM) -> None:
    fake_llm.refuse_when(SERVERS["ollama"])
    sent = '{"summary": "",   "score": 3}'
    fake_llm.respond(
        openai_tool_call("submit_result", sent), openai_tool_call("submit_result", VALID)
    )

    await _agent("ollama", fake_llm).run("Review PR 7")

    echoed = _assistant_turns(fake_llm.requests[1].body)[0]
    assert echoed["tool_calls"][0]["function"]["arguments"] == sent


REFUSED_SHAPE = (
    "[{'type': 'string_type', 'loc': ('body', 'messages', 2, 'typed-dict', 'content'), "
    "'msg': 'Input should be a valid string', 'input': None}]"
)


@pytest.mark.parametrize(
    ("reply", "kind", "requests"),
    [
        pytest.param(status_error(500, REFUSED_SHAPE), "provider_bad_request", 1, id="shape-500"),
        pytest.param(
            ScriptedResponse(status=500, body="Internal Server Error"),
            "provider_server_error",
            3,
            id="bare-500-is-retried",
        ),
        pytest.param(
            status_error(
                400,
                "This model's maximum context length is 2048 tokens. However, you requested "
                "2300 tokens (2200 in the messages, 100 in the completion).",
            ),
            "provider_context_length_exceeded",
            1,
            id="context-overflow",
        ),
    ],
)
async def test_what_an_error_body_says_decides_its_type(
    reply: ScriptedResponse, kind: str, requests: int, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(reply)

    result = await _agent("llamacpp", fake_llm).run("Review PR 7")

    assert not result.ok and result.error is not None
    assert result.error.type == kind
    assert len(fake_llm.requests) == requests


@pytest.mark.parametrize(
    ("check", "status", "text", "expected"),
    [
        (says_malformed, 500, "Input should be 'text' or 'json_object'", True),
        (says_malformed, 500, "tool_choice 'required' is not supported", True),
        (says_malformed, 502, "upstream connect error", False),
        (says_malformed, 400, "Input should be a valid string", False),
        (says_context_overflow, 400, "Requested tokens (4100) exceed context window of 4096", True),
        (says_context_overflow, 400, "prompt is too long: 210000 tokens > 200000 maximum", True),
        (says_context_overflow, 400, "unknown parameter: foo", False),
    ],
)
def test_error_texts(
    check: Callable[[int, str], bool], status: int, text: str, expected: bool
) -> None:
    assert check(status, text) is expected


async def test_llamacpp_native_output_is_agentshapes_grammar(fake_llm: FakeLLM) -> None:
    ranged = {
        "type": "object",
        "properties": {
            "verdict": {"enum": ["approve", "reject"]},
            "score": {"type": "integer", "minimum": 0, "maximum": 10},
        },
        "required": ["verdict", "score"],
        "additionalProperties": False,
    }
    fake_llm.refuse_when(SERVERS["llamacpp"])
    fake_llm.respond(openai_text('{"verdict": "approve", "score": 10}'))
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = Agent(output_schema=ranged, system_prompt="Judge.", model="llamacpp:m", env=env)

    result = await agent.run("Review PR 7")

    assert result.ok, result.error
    assert [attempt.mode for attempt in result.attempts] == ["native"]
    body = fake_llm.requests[0].body
    assert "response_format" not in body  # llama-server refuses a schema beside a grammar
    # The server decodes under this grammar: the range and the enum are enforced there.
    assert accepts(body["grammar"], '{"verdict": "approve", "score": 10}')
    assert not accepts(body["grammar"], '{"verdict": "approve", "score": 11}')
    assert not accepts(body["grammar"], '{"verdict": "maybe", "score": 1}')
    assert not accepts(body["grammar"], '{"verdict": "reject"}')
    # Compact JSON only: Gemma 3 270M, let lay its answer out over lines, lost its way in it.
    assert not accepts(body["grammar"], '{\n  "verdict": "approve",\n  "score": 10\n}')


async def test_llamacpp_grammar_takes_only_the_declared_properties(fake_llm: FakeLLM) -> None:
    open_schema = {
        "type": "object",
        "required": ["files_analyzed"],
        "properties": {"files_analyzed": {"type": "integer"}},
    }
    fake_llm.refuse_when(SERVERS["llamacpp"])
    fake_llm.respond(openai_text('{"files_analyzed": 2}'))
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = Agent(output_schema=open_schema, system_prompt="Count.", model="llamacpp:m", env=env)

    assert (await agent.run("Analyze it.")).ok
    grammar = fake_llm.requests[0].body["grammar"]
    assert accepts(grammar, '{"files_analyzed": 2}')
    # The schema allows more keys; a small model let loose on them wrote them to its limit.
    assert not accepts(grammar, '{"files_analyzed": 2, "message": "major"}')


async def test_llamacpp_without_takes_grammar_sends_its_json_object_schema(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.refuse_when(SERVERS["llamacpp"])
    fake_llm.respond(openai_text(json.dumps(VALID)))
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = Agent(
        output_schema=SCHEMA,
        system_prompt="Review the change.",
        model="llamacpp:m",
        env=env,
        profile={"takes_grammar": False},  # reaches the wire, not only the run loop
    )

    result = await agent.run("Review PR 7")

    assert result.ok, result.error
    body = fake_llm.requests[0].body
    assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "grammar" not in body


def test_the_llamacpp_fake_refuses_a_grammar_beside_a_schema_or_one_that_does_not_parse() -> None:
    both = {"grammar": 'root ::= "x"', "response_format": {"type": "json_object", "schema": {}}}
    refused = SERVERS["llamacpp"](both)
    assert refused is not None and refused.status == 400
    broken = SERVERS["llamacpp"]({"grammar": "root ::= ("})
    assert broken is not None and broken.status == 500


@pytest.mark.parametrize("server", sorted(SERVERS))
async def test_the_default_mode_follows_the_profile(server: str, fake_llm: FakeLLM) -> None:
    """llama.cpp's grammar-backed native output is the default there; tool mode elsewhere."""
    fake_llm.refuse_when(SERVERS[server])
    fake_llm.respond(openai_text(json.dumps(VALID)), openai_tool_call("submit_result", VALID))

    result = await _agent(server, fake_llm).run("Review PR 7")

    assert result.ok, result.error
    body = fake_llm.requests[0].body
    if server == "llamacpp":
        assert [attempt.mode for attempt in result.attempts] == ["native"]
        assert accepts(body["grammar"], json.dumps(VALID))
        assert "tools" not in body and "response_format" not in body
    else:
        assert [attempt.mode for attempt in result.attempts] == ["tool"]
        assert "response_format" not in body


async def test_llamacpp_with_input_tools_defaults_to_native_mode_its_tools_first(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.refuse_when(SERVERS["llamacpp"])
    fake_llm.respond(openai_text("Nothing to read."), openai_text(json.dumps(VALID)))
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = Agent(
        output_schema=SCHEMA,
        system_prompt="Review the change.",
        model="llamacpp:m",
        tools=["fs:read"],
        env=env,
        workspace=tmp_path,
    )

    result = await agent.run("Review PR 7")

    assert result.ok, result.error
    assert [attempt.mode for attempt in result.attempts] == ["native"]
    tools_turn, answer_turn = (request.body for request in fake_llm.requests)
    assert "grammar" not in tools_turn and tools_turn["tools"]
    assert "tools" not in answer_turn and answer_turn["grammar"].startswith("root ::=")


async def test_llamacpp_tool_mode_forces_the_tool_by_name(fake_llm: FakeLLM) -> None:
    fake_llm.refuse_when(SERVERS["llamacpp"])
    fake_llm.respond(openai_tool_call("submit_result", VALID))

    result = await _agent("llamacpp", fake_llm).run("Review PR 7", options=TOOL_MODE)

    assert result.ok, result.error
    assert fake_llm.requests[0].body["tool_choice"] == {
        "type": "function",
        "function": {"name": "submit_result"},
    }


async def test_a_request_timeout_from_the_agent_config_bounds_each_call(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 5))
    config = tmp_path / "agent.yml"
    config.write_text(
        "schema: kb.agent/1\nid: slow\nllm: {model: 'llamacpp:m'}\n"
        "context: {static: {system: Review the change.}}\n"
        "limits: {requestTimeoutSeconds: 0.3}\n"
        f"output: {{schema: {json.dumps(SCHEMA)}}}\n"
    )
    agent = Agent.from_yaml(config, env={"LLAMACPP_BASE_URL": fake_llm.openai_base_url})

    result = await agent.run("Review PR 7")

    assert result.error is not None and result.error.type == "provider_timeout"


def test_the_request_timeout_flag_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "pr-reviewer", "--task", "x", "--model", "test", "--request-timeout", "0"])
    assert code == 2
    assert "--request-timeout" in capsys.readouterr().err


async def test_a_reply_cut_off_by_the_token_limit_is_output_truncated(fake_llm: FakeLLM) -> None:
    cut = openai_tool_call("submit_result", '{"summary": "Adds a', finish_reason="length")
    fake_llm.respond(cut, cut)

    result = await _agent("vllm", fake_llm).run("Review PR 7")

    assert result.error is not None
    assert result.error.type == "output_truncated"
    assert "max_tokens" in result.error.message
    assert all("cut off" in str(attempt.errors[0]) for attempt in result.attempts)


async def test_a_cut_off_reply_is_re_prompted_and_can_be_rescued(fake_llm: FakeLLM) -> None:
    fake_llm.respond(
        openai_text('{"summary": "Adds', finish_reason="length"),
        openai_tool_call("submit_result", VALID),
    )

    result = await _agent("ollama", fake_llm).run("Review PR 7")

    assert result.ok and result.retries == 1
    assert "cut off" in str(result.attempts[0].errors[0])
