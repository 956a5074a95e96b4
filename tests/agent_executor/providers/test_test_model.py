from __future__ import annotations

import json
import logging
import random

import jsonschema
import pytest
from pydantic import JsonValue

from agent_contracts import ConfigError, Message, ToolCall, ToolResult
from agent_executor import TestModel
from agent_executor._providers.base import (
    JsonObject,
    ModelTurnRequest,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
)
from agent_executor._providers.test import FAILURE_MODES, WRONG_TOOL_NAME, generate_value

REVIEW_SCHEMA: JsonObject = {
    "type": "object",
    "required": ["summary", "findings", "approved"],
    "additionalProperties": False,
    "properties": {
        "summary": {"type": "string", "minLength": 50},
        "findings": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["description", "files", "confidence"],
                "properties": {
                    "description": {"type": "string"},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "confidence": {"type": "string", "enum": ["low", "medium", "high"]},
                },
            },
        },
        "approved": {"type": "boolean"},
        "coverage": {"type": "number", "minimum": 0, "maximum": 100},
    },
}
SUBMIT = ToolDefinition(name="submit_result", parameters=REVIEW_SCHEMA)
CONVERSATION = [Message.system("You review code."), Message.user("Review it.")]


def is_valid(value: JsonValue, schema: JsonValue) -> bool:
    validator_class = jsonschema.validators.validator_for(schema)
    checker = validator_class.FORMAT_CHECKER
    return bool(validator_class(schema, format_checker=checker).is_valid(value))


def forced(*tools: ToolDefinition, name: str = "submit_result") -> ModelTurnRequest:
    return ModelTurnRequest(
        messages=CONVERSATION, tools=list(tools) or [SUBMIT], tool_choice=ToolChoice.tool(name)
    )


async def test_forced_submit_result_gets_valid_arguments() -> None:
    turn = await TestModel().request(forced())

    assert turn.provider == "test"
    assert turn.stop_reason == "tool_use"
    [call] = turn.tool_calls
    assert call.name == "submit_result"
    assert is_valid(call.arguments, REVIEW_SCHEMA)
    assert json.loads(call.raw_arguments) == call.arguments
    assert turn.usage.requests == 1


async def test_same_seed_same_answer_other_seeds_differ() -> None:
    answers = [(await TestModel(seed=seed).request(forced())).tool_calls[0] for seed in range(6)]
    again = (await TestModel(seed=0).request(forced())).tool_calls[0]

    assert again == answers[0]
    assert len({call.raw_arguments for call in answers}) > 1


SCHEMAS: dict[str, JsonObject] = {
    "string lengths": {"type": "string", "minLength": 30, "maxLength": 31},
    "short string": {"type": "string", "maxLength": 3},
    "enum and const": {
        "type": "object",
        "properties": {"a": {"enum": ["x", 2, None]}, "b": {"const": {"k": [1]}}},
        "required": ["a", "b"],
    },
    "integer bounds": {"type": "integer", "exclusiveMinimum": 10, "maximum": 11},
    "draft-04 exclusive": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 1,
    },
    "multipleOf": {"type": "number", "minimum": 0.05, "maximum": 1, "multipleOf": 0.01},
    "integer multipleOf": {"type": "integer", "minimum": 7, "multipleOf": 5},
    "boolean and null": {
        "type": "object",
        "properties": {"b": {"type": "boolean"}, "n": {"type": "null"}},
        "required": ["b", "n"],
    },
    "nullable": {"type": ["string", "null"], "minLength": 2},
    "nested arrays": {
        "type": "array",
        "minItems": 3,
        "maxItems": 3,
        "uniqueItems": True,
        "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
    },
    "unique strings": {
        "type": "array",
        "minItems": 4,
        "uniqueItems": True,
        "items": {"type": "string", "maxLength": 10},
    },
    "definitions": {
        "definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "type": "object",
        "properties": {"p": {"$ref": "#/definitions/point"}},
        "required": ["p"],
    },
    "$defs": {
        "$defs": {"name": {"type": "string", "minLength": 1}},
        "type": "array",
        "items": {"$ref": "#/$defs/name"},
        "minItems": 2,
    },
    "recursion": {
        "$defs": {
            "node": {
                "type": "object",
                "required": ["value", "children"],
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
        "$ref": "#/$defs/node",
    },
    "anyOf": {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]},
    "oneOf": {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]},
    "allOf": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]
    },
    "formats": {
        "type": "object",
        "required": ["when", "day", "mail", "link", "id"],
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
            "link": {"type": "string", "format": "uri"},
            "id": {"type": "string", "format": "uuid"},
        },
    },
    "pattern": {"type": "string", "pattern": "^[A-Z]{3}-\\d{2,4}(-(?:alpha|beta))?$"},
    "tuple items": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": [{"type": "string"}, {"type": "integer"}],
        "additionalItems": False,
        "minItems": 2,
    },
    "prefixItems": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "array",
        "prefixItems": [{"type": "boolean"}, {"const": "x"}],
        "items": False,
    },
    "additional properties": {
        "type": "object",
        "required": ["extra"],
        "additionalProperties": {"type": "integer"},
        "minProperties": 2,
    },
    "openai strict dialect": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "nickname"],
        "properties": {
            "name": {"type": "string"},
            "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
    },
    "untyped": {},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_values_validate(name: str, seed: int) -> None:
    schema = SCHEMAS[name]

    value = generate_value(schema, rng=random.Random(seed))

    assert is_valid(value, schema), value


def test_unsatisfiable_schema_still_answers_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    schema: JsonObject = {"type": "string", "minLength": 5, "maxLength": 2}

    with caplog.at_level(logging.WARNING, logger="agent_executor._providers.test"):
        value = generate_value(schema)

    assert isinstance(value, str)
    assert "no generated value validates" in caplog.text


async def test_scripted_failures_come_first_then_a_valid_answer() -> None:
    model = TestModel(fail_first=list(FAILURE_MODES))
    turns = [await model.request(forced()) for _ in range(len(FAILURE_MODES) + 1)]
    by_mode = dict(zip(FAILURE_MODES, turns, strict=False))

    invalid = by_mode["invalid_arguments"].tool_calls[0]
    assert invalid.name == "submit_result"
    assert invalid.parse_error is None
    assert not is_valid(invalid.arguments, REVIEW_SCHEMA)

    assert by_mode["text"].tool_calls == []
    assert "{" not in by_mode["text"].text

    json_text = by_mode["json_text"]
    assert json_text.tool_calls == []
    fenced = json_text.text.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert is_valid(json.loads(fenced), REVIEW_SCHEMA)

    assert (by_mode["no_tool_call"].text, by_mode["no_tool_call"].tool_calls) == ("", [])

    broken = by_mode["unparseable_json"].tool_calls[0]
    assert broken.arguments is None
    assert broken.parse_error is not None
    with pytest.raises(ValueError):
        json.loads(broken.raw_arguments)

    assert by_mode["wrong_tool"].tool_calls[0].name == WRONG_TOOL_NAME

    cut = by_mode["max_tokens"]
    assert cut.stop_reason == "max_tokens"
    assert cut.tool_calls[0].parse_error is not None

    assert is_valid(turns[-1].tool_calls[0].arguments, REVIEW_SCHEMA)
    assert model.pending_failures == []


async def test_invalid_arguments_break_a_schema_without_required_fields() -> None:
    schema: JsonObject = {"type": "object", "properties": {"a": {"type": "string"}}}
    tool = ToolDefinition(name="submit_result", parameters=schema)

    turn = await TestModel(fail_first=["invalid_arguments"]).request(forced(tool))

    assert not is_valid(turn.tool_calls[0].arguments, schema)


def test_unknown_failure_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown failure mode.*'explode'.*invalid_arguments"):
        TestModel(fail_first=["explode"])


async def test_without_tools_it_answers_text() -> None:
    turn = await TestModel(text="Plain answer.").request(ModelTurnRequest(messages=CONVERSATION))

    assert (turn.text, turn.tool_calls, turn.stop_reason) == ("Plain answer.", [], "end_turn")


async def test_native_structured_output_is_json_text() -> None:
    request = ModelTurnRequest(
        messages=CONVERSATION, response_format=ResponseFormat(json_schema=REVIEW_SCHEMA)
    )

    turn = await TestModel().request(request)

    assert is_valid(json.loads(turn.text), REVIEW_SCHEMA)


async def test_input_tools_are_called_once_before_the_answer() -> None:
    read = ToolDefinition(
        name="fs:read",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    model = TestModel(call_tools=["fs:read"])
    first_request = ModelTurnRequest(messages=CONVERSATION, tools=[read, SUBMIT])

    first = await model.request(first_request)
    history = [
        *CONVERSATION,
        first.to_message(),
        Message(
            role="tool",
            tool_results=[
                ToolResult(tool_call_id=first.tool_calls[0].id, name="fs:read", content="code")
            ],
        ),
    ]
    second = await model.request(ModelTurnRequest(messages=history, tools=[read, SUBMIT]))

    assert [call.name for call in first.tool_calls] == ["fs:read"]
    assert [call.name for call in second.tool_calls] == ["submit_result"]
    assert first.tool_calls[0].id != second.tool_calls[0].id


async def test_auto_without_the_output_tool_answers_text_and_required_calls_a_tool() -> None:
    read = ToolDefinition(name="fs:read", parameters={"type": "object"})

    auto = await TestModel().request(ModelTurnRequest(messages=CONVERSATION, tools=[read]))
    required = await TestModel().request(
        ModelTurnRequest(messages=CONVERSATION, tools=[read], tool_choice=ToolChoice.required())
    )
    none = await TestModel().request(
        ModelTurnRequest(messages=CONVERSATION, tools=[SUBMIT], tool_choice=ToolChoice.none())
    )

    assert auto.tool_calls == []
    assert [call.name for call in required.tool_calls] == ["fs:read"]
    assert none.tool_calls == []


async def test_forcing_another_tool_calls_that_tool() -> None:
    read = ToolDefinition(
        name="fs:read",
        parameters={"type": "object", "required": ["path"], "properties": {"path": {}}},
    )

    turn = await TestModel().request(forced(read, SUBMIT, name="fs:read"))

    assert turn.tool_calls == [
        ToolCall(
            id=turn.tool_calls[0].id,
            name="fs:read",
            arguments=turn.tool_calls[0].arguments,
            raw_arguments=turn.tool_calls[0].raw_arguments,
        )
    ]
    assert is_valid(turn.tool_calls[0].arguments, read.parameters)


async def test_prompted_mode_answers_with_json_matching_the_run_contract() -> None:
    from agent_core import enriched_system_prompt

    schema: JsonValue = {
        "type": "object",
        "required": ["verdict"],
        "properties": {"verdict": {"enum": ["yes", "no"]}},
        "additionalProperties": False,
    }
    system = enriched_system_prompt("You judge.", schema, mode="prompted")
    messages = [Message.system(system), Message.user("Is it?")]
    turn = await TestModel().request(ModelTurnRequest(messages=messages, answer_schema=schema))
    assert turn.tool_calls == []
    jsonschema.validate(json.loads(turn.text), schema)


async def test_a_json_schema_written_in_a_hand_made_system_prompt_is_answered() -> None:
    schema: JsonValue = {"type": "object", "required": ["n"], "properties": {"n": {"const": 3}}}
    system = f"## Required Output Format\n\n```json\n{json.dumps(schema)}\n```"
    turn = await TestModel().request(
        ModelTurnRequest(messages=[Message.system(system), Message.user("Is it?")])
    )
    assert json.loads(turn.text) == {"n": 3}


async def test_without_any_schema_it_answers_its_fixed_text() -> None:
    turn = await TestModel(text="plain answer").request(
        ModelTurnRequest(messages=[Message.user("Hi")])
    )
    assert turn.text == "plain answer"
