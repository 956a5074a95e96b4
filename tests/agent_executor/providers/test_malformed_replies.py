"""A model's malformed output, over the real SDKs: a failed attempt that is re-prompted.

Arguments nested far past any real document, ``NaN`` (which JSON has no word for), tool calls
that are not a list and content that is not blocks are the model's mistakes, not ours: each is
an attempt that failed the contract, answered with a re-prompt, never ``internal_error``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agent_executor.test_run import VALID, agent_for, call, provider_for
from tests.fake_llm import FakeLLM, ScriptedResponse, anthropic_message, openai_completion

APIS = ["openai", "anthropic"]


def nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return {"title": value, "score": 1}


def not_a_list_of_calls(api: str) -> ScriptedResponse:
    if api == "openai":
        return openai_completion({"content": None, "tool_calls": 5}, finish_reason="tool_calls")
    response = anthropic_message([], stop_reason="tool_use")
    return ScriptedResponse(body={**response.body, "content": 5}, path=response.path)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (lambda api: call(api, "submit_result", nested(700)), "nests deeper than 200 levels"),
        (
            lambda api: call(api, "submit_result", {"title": "t", "score": float("nan")}),
            "it holds nan, which is not a JSON number",
        ),
        (not_a_list_of_calls, "the reply was empty instead of calling submit_result"),
    ],
    ids=["nested-700", "nan", "tool-calls-not-a-list"],
)
async def test_malformed_output_is_a_failed_attempt_that_is_re_prompted(
    fake_llm: FakeLLM, api: str, reply: Any, problem: str
) -> None:
    fake_llm.respond(reply(api), call(api, "submit_result", VALID, "call_2"))
    result = await agent_for(provider_for(api, fake_llm), options={"max_retries": 1}).run("Go.")

    assert result.ok, result.error
    assert result.result_data == VALID
    assert result.retries == 1
    assert problem in str(result.attempts[0].errors[0])
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize("api", APIS)
async def test_malformed_output_every_time_fails_the_contract_not_the_run(
    fake_llm: FakeLLM, api: str
) -> None:
    fake_llm.respond_always(call(api, "submit_result", nested(700)))
    result = await agent_for(provider_for(api, fake_llm), options={"max_retries": 1}).run("Go.")

    assert result.status == "failed"
    assert result.error is not None
    assert result.error.type == "output_schema_validation_failed"
    assert len(result.attempts) == 2


@pytest.mark.parametrize("api", APIS)
async def test_lone_surrogates_in_the_task_and_the_answer_go_out_as_escapes(
    fake_llm: FakeLLM, api: str
) -> None:
    half = {"title": "half \ud83d", "score": "not a number"}  # judged, then echoed back
    fake_llm.respond(call(api, "submit_result", half), call(api, "submit_result", VALID, "c2"))
    agent = agent_for(provider_for(api, fake_llm), options={"max_retries": 1})
    result = await agent.run("Grade \ud83d this.")

    assert result.ok, result.error
    assert result.retries == 1
    first, second = (json.dumps(request.body) for request in fake_llm.requests)
    # Sent as the visible escape: a backslash, then "ud83d" (UTF-8 cannot carry the surrogate).
    assert "Grade \\\\ud83d this." in first
    assert "half \\\\ud83d" in second
