"""The run state's handling of a model's turn: what is judged and what is sent back.

A model may answer with half a surrogate pair (``"\\ud83d"``), which JSON allows. The answer is
judged as written, its errors are reported escaped, and the turn is sent back to the provider
in a form the SDK can encode, so a re-prompt happens where one is due.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agent_contracts import Message
from agent_executor import FunctionModel
from agent_executor._providers.base import ModelTurnRequest
from tests.agent_executor.test_run import (
    APIS,
    agent_for,
    bodies,
    call,
    error_lines,
    last_tool_results,
    provider_for,
)
from tests.fake_llm import FakeLLM, openai_tool_call

HALF = json.loads('"\\ud83d"')  # half an emoji, as a JSON parser reads it


def surrogate_call(api: str, arguments: dict[str, Any], call_id: str) -> Any:
    if api == "openai":  # the JSON text the provider sends, with the escape as written
        return openai_tool_call("submit_result", json.dumps(arguments), call_id=call_id)
    return call(api, "submit_result", arguments, call_id)


@pytest.mark.parametrize("api", APIS)
async def test_a_lone_surrogate_is_judged_reported_and_reprompted(
    fake_llm: FakeLLM, api: str
) -> None:
    bad = {"title": HALF + "!", "score": -1, HALF: 1}
    good = {"title": HALF, "score": 1}
    fake_llm.respond(surrogate_call(api, bad, "call_a"), surrogate_call(api, good, "call_b"))
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.status == "completed", result.error
    assert result.result_data == good  # judged and returned as the model wrote it
    assert result.retries == 1
    first = [str(error) for error in result.attempts[0].errors]
    assert first == [
        "$: Additional properties are not allowed ('\\ud83d' was unexpected)",
        "$.score: -1 is less than the minimum of 0",
    ]
    assert all(text.isascii() for text in first)
    (answer,) = last_tool_results(api, bodies(fake_llm)[1])
    assert answer["is_error"] is True
    assert set(error_lines(answer["content"])) == set(first)


@pytest.mark.parametrize("api", APIS)
async def test_a_lone_surrogate_twice_fails_as_validation_not_internal_error(
    fake_llm: FakeLLM, api: str
) -> None:
    bad = {"title": HALF, "score": -1}
    fake_llm.respond(surrogate_call(api, bad, "call_a"), surrogate_call(api, bad, "call_b"))
    result = await agent_for(provider_for(api, fake_llm)).run("Grade it.")

    assert result.error is not None
    assert result.error.type == "output_schema_validation_failed"
    assert [str(e) for e in result.error.validation_errors] == [
        "$.score: -1 is less than the minimum of 0"
    ]
    assert result.error.last_output == bad


class Reading(BaseModel):
    model_config = ConfigDict(strict=True)

    taken: datetime.datetime
    level: decimal.Decimal
    count: int


async def test_a_strict_pydantic_contract_accepts_json_and_returns_its_json_form() -> None:
    answer = {"taken": "2024-01-02T03:04:05+00:00", "level": "2.50", "count": 3}

    def model(messages: list[Message], request: ModelTurnRequest) -> dict[str, Any]:
        return answer

    result = await agent_for(FunctionModel(model), output_type=Reading).run("Read it.")
    assert result.status == "completed", result.error
    assert result.retries == 0
    assert result.result_data == {"taken": "2024-01-02T03:04:05Z", "level": "2.50", "count": 3}
    assert result.output == Reading.model_validate_json(json.dumps(answer))
