from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agent_contracts import ConfigError, InvalidSchemaError
from agent_core import (
    OUTPUT_TOOL_NAME,
    ToolNameMap,
    build_output_tool,
    json_schema_of,
    provider_tool_name,
)
from agent_core._schema_walk import offline_validator

CLOSED = {
    "type": "object",
    "required": ["files_analyzed", "issues"],
    "additionalProperties": False,
    "properties": {
        "files_analyzed": {"type": "integer", "minimum": 0},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["file", "severity"],
                "additionalProperties": False,
                "properties": {
                    "file": {"type": "string"},
                    "severity": {"type": "string", "enum": ["low", "medium", "high"]},
                    "message": {"type": "string", "minLength": 3},
                },
            },
        },
    },
}
OPEN = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    line: int | None = None
    severity: Literal["low", "high"] = "low"


class Review(BaseModel):
    model_config = ConfigDict(extra="forbid")
    summary: str = Field(min_length=10)
    findings: list[Finding]


def test_openai_tool_is_strict_when_nothing_changes() -> None:
    tool = build_output_tool(CLOSED)
    spec = tool.openai_tool()
    assert spec["type"] == "function"
    function = spec["function"]
    assert function["name"] == "submit_result" == OUTPUT_TOOL_NAME
    assert function["strict"] is True
    assert function["description"] == (
        "Submit your final result. Call this tool exactly once, when your work is done; "
        "its arguments are the result and must match the parameter schema."
    )
    item = function["parameters"]["properties"]["issues"]["items"]
    assert item["required"] == ["file", "severity", "message"]
    assert item["properties"]["message"] == {
        "type": ["string", "null"],
        "description": 'Constraints: {"minLength": 3}.',
    }


def test_openai_tool_falls_back_to_the_schema_as_written() -> None:
    tool = build_output_tool(OPEN)
    function = tool.openai_tool()["function"]
    assert function["strict"] is False
    assert function["parameters"] == OPEN
    assert not tool.report("openai").strict


def test_strict_false_sends_the_neutral_parameters() -> None:
    tool = build_output_tool(CLOSED)
    function = tool.openai_tool(strict=False)["function"]
    assert function["strict"] is False
    assert function["parameters"] == CLOSED
    anthropic = tool.anthropic_tool(strict=False)
    assert "strict" not in anthropic
    assert anthropic["input_schema"] == CLOSED


def test_anthropic_tool_shape() -> None:
    tool = build_output_tool(CLOSED)
    spec = tool.anthropic_tool()
    assert set(spec) == {"name", "description", "input_schema", "strict"}
    assert spec["strict"] is True
    schema = spec["input_schema"]
    assert schema["type"] == "object"
    assert schema["properties"]["files_analyzed"] == {
        "type": "integer",
        "description": 'Constraints: {"minimum": 0}.',
    }
    item = schema["properties"]["issues"]["items"]
    assert item["required"] == ["file", "severity"]
    assert "strict" not in build_output_tool(OPEN).anthropic_tool()


def test_neutral_tool_shape() -> None:
    tool = build_output_tool(OPEN, description="Hand in the answer.")
    assert tool.neutral_tool() == {
        "name": "submit_result",
        "description": "Hand in the answer.",
        "parameters": OPEN,
    }


def test_native_structured_output_formats() -> None:
    tool = build_output_tool(CLOSED)
    response_format = tool.openai_response_format()
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "submit_result"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"] == tool.openai_tool()["function"]["parameters"]
    output_format = tool.anthropic_output_format()
    assert output_format == {
        "type": "json_schema",
        "schema": tool.anthropic_tool()["input_schema"],
    }


def test_anthropic_output_format_needs_a_strict_schema() -> None:
    tool = build_output_tool(OPEN)
    with pytest.raises(ConfigError) as caught:
        tool.anthropic_output_format()
    assert str(caught.value) == (
        "this output schema cannot be used with Anthropic structured outputs, which accept only "
        "the strict subset; use the submit_result tool instead:\n"
        "  - $: additionalProperties blocks strict (undeclared properties are allowed; set "
        "additionalProperties: false)"
    )


def test_pydantic_contract_with_defs_round_trips_through_every_dialect() -> None:
    tool = build_output_tool(Review)
    schema = Review.model_json_schema()
    assert tool.schema == schema
    assert tool.openai_tool()["function"]["strict"] is True
    assert tool.anthropic_tool()["strict"] is True
    value = {"summary": "long enough text", "findings": [{"file": "a.py"}]}
    validator = offline_validator(schema)
    for dialect in ("neutral", "openai", "anthropic"):
        arguments = tool.to_arguments(value, dialect)
        assert tool.unwrap(arguments, dialect) == value
        assert validator.is_valid(tool.unwrap(arguments, dialect))
    openai_arguments = {
        "summary": "long enough text",
        "findings": [{"file": "a.py", "line": None, "severity": "high"}],
    }
    assert tool.from_openai_arguments(openai_arguments) == {
        "summary": "long enough text",
        "findings": [{"file": "a.py", "severity": "high"}],
    }
    assert tool.from_anthropic_input({"summary": "s", "findings": []}) == {
        "summary": "s",
        "findings": [],
    }
    assert (
        Review.model_validate(tool.from_openai_arguments(openai_arguments)).findings[0].line is None
    )


def test_a_non_object_root_is_wrapped_and_unwrapped() -> None:
    tool = build_output_tool({"type": "array", "items": {"type": "string"}})
    assert tool.wrapped
    assert tool.description.endswith(" Put the whole result in the `result` argument.")
    parameters = tool.openai_tool()["function"]["parameters"]
    assert parameters == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "string"}}},
        "required": ["result"],
        "additionalProperties": False,
    }
    assert tool.from_openai_arguments({"result": ["a", "b"]}) == ["a", "b"]
    assert tool.from_anthropic_input({"result": []}) == []
    assert tool.unwrap({"result": ["x"]}, "neutral") == ["x"]
    assert tool.report("openai").notes[0].action == "wrapped"


def test_reports_per_dialect() -> None:
    tool = build_output_tool(CLOSED)
    assert tool.report("neutral").strict is False
    openai = tool.report("openai")
    assert [str(note) for note in openai.unenforced()] == [
        "$.properties.issues.items.properties.message: minLength moved to description "
        "(not supported by OpenAI strict mode)"
    ]
    anthropic = tool.report("anthropic")
    assert [(n.path, n.keyword) for n in anthropic.unenforced()] == [
        ("$.properties.files_analyzed", "minimum"),
        ("$.properties.issues.items.properties.message", "minLength"),
    ]


def test_unknown_dialect_is_a_config_error() -> None:
    tool = build_output_tool(CLOSED)
    with pytest.raises(
        ConfigError, match="unknown dialect 'gemini'; use one of neutral, openai, anthropic"
    ):
        tool.report("gemini")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        tool.unwrap({}, "gemini")  # type: ignore[arg-type]


def test_returned_definitions_are_copies() -> None:
    tool = build_output_tool(CLOSED)
    spec = tool.openai_tool()
    spec["function"]["parameters"]["properties"].clear()
    tool.neutral_tool()["parameters"]["properties"].clear()
    assert tool.openai_tool()["function"]["parameters"]["properties"]
    assert tool.parameters == CLOSED


def test_narrowing_is_opt_in() -> None:
    assert build_output_tool(OPEN).openai_tool()["function"]["strict"] is False
    tool = build_output_tool(OPEN, allow_narrowing=True)
    assert tool.openai_tool()["function"]["strict"] is True
    assert [n.action for n in tool.report("openai").notes] == ["narrowed"]


@pytest.mark.parametrize(
    ("contract", "message"),
    [
        ([1, 2], "not list"),
        ("schema", "not str"),
        ({"type": float("nan")}, "not JSON"),
        ({"x": {1, 2}}, "not JSON"),
    ],
)
def test_contracts_that_are_not_schemas(contract: Any, message: str) -> None:
    with pytest.raises(InvalidSchemaError, match=message):
        build_output_tool(contract)


def test_json_schema_of_copies_mappings() -> None:
    source = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema = json_schema_of(source)
    assert schema == source
    assert isinstance(schema, dict)
    schema["properties"]["a"]["type"] = "integer"  # type: ignore[index]
    assert source["properties"]["a"]["type"] == "string"  # type: ignore[index]
    assert json_schema_of(True) is True
    assert json_schema_of(Finding) == Finding.model_json_schema()


# -- provider-safe tool names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("fs_read", "fs_read"),
        ("fs:read", "fs_read"),
        ("mind:rag-query", "mind_rag-query"),
        ("web.search v2", "web_search_v2"),
        ("é", "_"),
    ],
)
def test_provider_tool_name(name: str, expected: str) -> None:
    assert provider_tool_name(name) == expected


def test_long_names_are_cut_with_a_hash_and_stay_distinct() -> None:
    first = provider_tool_name("x" * 70 + "a")
    second = provider_tool_name("x" * 70 + "b")
    assert len(first) == len(second) == 64
    assert first != second
    assert first.startswith("x" * 55 + "_")


def test_empty_tool_name_is_an_error() -> None:
    with pytest.raises(ConfigError, match="must not be empty"):
        provider_tool_name("")


def test_tool_name_map_is_collision_free_and_reversible() -> None:
    names = ["fs:read", "fs_read", "fs.read", "submit_result"]
    mapping = ToolNameMap(names)
    spelled = [mapping.provider_name(name) for name in names]
    assert len(set(spelled)) == 4
    assert mapping.provider_name("fs_read") == "fs_read"
    assert mapping.provider_name("submit_result") == "submit_result"
    for name, provider_name in mapping.items():
        assert provider_tool_name(provider_name) == provider_name
        assert mapping.original_name(provider_name) == name
    assert mapping.original_name("unknown") is None
    assert list(mapping) == names
    assert len(mapping) == 4
    assert "fs:read" in mapping


def test_tool_name_map_does_not_depend_on_order() -> None:
    names = ["fs:read", "fs_read", "fs.read", "a b", "a_b"]
    forward = ToolNameMap(names)
    backward = ToolNameMap(list(reversed(names)))
    assert {n: forward.provider_name(n) for n in names} == {
        n: backward.provider_name(n) for n in names
    }


def test_tool_name_map_unknown_tool() -> None:
    with pytest.raises(ConfigError, match="tool 'nope' is not in the tool name map"):
        ToolNameMap(["a"]).provider_name("nope")


class Unrepresentable(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    call: Callable[[int], int]


def test_a_model_without_json_schema_is_an_invalid_schema() -> None:
    with pytest.raises(InvalidSchemaError, match="Unrepresentable has no JSON Schema"):
        build_output_tool(Unrepresentable)
