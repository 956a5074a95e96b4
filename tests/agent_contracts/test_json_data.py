from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_contracts import RunResult, ToolCall
from agent_contracts._json_data import PARSED_JSON


def test_a_callers_value_is_checked_as_json() -> None:
    with pytest.raises(ValidationError, match="result_data"):
        RunResult(status="completed", result_data={"when": object()})


def test_a_parsed_value_is_taken_as_it_is() -> None:
    value = {"comments": [{"line": 1}] * 3}
    result = RunResult.model_validate(
        {"status": "completed", "result_data": value}, context=PARSED_JSON
    )
    assert result.result_data is value


def test_a_copy_of_the_context_counts_too() -> None:
    value = {"comments": []}
    result = RunResult.model_validate(
        {"status": "completed", "result_data": value}, context=dict(PARSED_JSON)
    )
    assert result.result_data is value
    with pytest.raises(ValidationError, match="result_data"):
        RunResult.model_validate(
            {"status": "completed", "result_data": {"when": object()}}, context={"other": True}
        )


def test_the_other_checks_still_run_with_the_context() -> None:
    with pytest.raises(ValidationError, match="exactly one of result_text and result_data"):
        RunResult.model_validate({"status": "completed"}, context=PARSED_JSON)
    with pytest.raises(ValidationError, match="name"):
        ToolCall.model_validate({"id": "c1", "arguments": {}}, context=PARSED_JSON)


def test_the_json_schema_is_a_json_value_s() -> None:
    schema = RunResult.model_json_schema()
    assert schema["properties"]["result_data"] == {"$ref": "#/$defs/JsonValue", "default": None}


def test_a_json_object_field_is_taken_whole_from_a_parser_and_checked_otherwise() -> None:
    from pydantic import BaseModel

    from agent_contracts._json_data import JsonObjectData

    class Holder(BaseModel):
        body: JsonObjectData

    body = {"choices": [{"n": 1}], "usage": None}
    assert Holder.model_validate({"body": body}, context=PARSED_JSON).body is body
    assert Holder.model_validate({"body": body}).body == body
    with pytest.raises(ValidationError):
        Holder.model_validate({"body": {"when": object()}})
    with pytest.raises(ValidationError):
        Holder.model_validate({"body": [1]}, context=PARSED_JSON)
    assert Holder.model_json_schema()["properties"]["body"]["type"] == "object"
