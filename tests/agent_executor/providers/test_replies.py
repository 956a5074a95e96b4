"""Reading a reply: ``ModelTurn`` checks what a caller gives it, not what a parser read."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_contracts import Usage
from agent_executor._providers.base import ModelTurn
from agent_executor._providers.replies import call_usage, parsed_turn


def test_a_turn_built_by_a_caller_has_its_raw_body_checked_as_json() -> None:
    with pytest.raises(ValidationError):
        ModelTurn(raw={"choices": [object()]})
    turn = ModelTurn(raw={"choices": [{"finish_reason": "stop"}]})
    assert turn.raw == {"choices": [{"finish_reason": "stop"}]}


def test_a_body_read_by_a_json_parser_is_kept_as_read_without_a_copy() -> None:
    body = {"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 3}}
    turn = parsed_turn(raw=body, stop_reason="end_turn")
    assert turn.raw["choices"] is body["choices"]
    with pytest.raises(ValidationError):  # the other fields are still checked
        parsed_turn(raw=body, stop_reason="finished")


def test_a_parsed_body_must_still_be_an_object() -> None:
    with pytest.raises(ValidationError, match="raw"):
        parsed_turn(raw=["not", "an", "object"], stop_reason="end_turn")
    with pytest.raises(ValidationError, match="raw"):
        ModelTurn(raw={1: "a key that is no string"})  # type: ignore[dict-item]


def test_a_calls_usage_is_one_request_and_equal_counts_share_one_object() -> None:
    usage = call_usage(11, 7)

    assert usage == Usage(input_tokens=11, output_tokens=7, requests=1)
    assert call_usage(11, 7) is usage
    assert call_usage(11, 8).output_tokens == 8
    assert call_usage() == Usage(requests=1)
    assert (usage + call_usage(1, 2)).model_dump() == {
        "input_tokens": 12,
        "output_tokens": 9,
        "requests": 2,
    }
