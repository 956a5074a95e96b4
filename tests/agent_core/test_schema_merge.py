from __future__ import annotations

from typing import Any

import pytest

from agent_core._schema_merge import merge_schemas
from agent_core._schema_walk import offline_validator

VALUES: list[Any] = [
    None,
    True,
    0,
    3,
    7.5,
    12,
    "",
    "ab",
    "abcdef",
    [],
    [1],
    [1, 1],
    {},
    {"a": "x"},
    {"a": 1},
    {"a": "x", "b": 2},
    {"b": 2},
    {"a": "x", "b": 2, "c": 3},
    {"c": 3},
]


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"type": ["integer", "string"]}, {"type": "integer", "minimum": 2}),
        ({"type": "number"}, {"type": "integer"}),
        ({"minimum": 1, "maximum": 10}, {"minimum": 3, "maximum": 20}),
        ({"minLength": 1}, {"maxLength": 4, "minLength": 2}),
        ({"enum": [0, 3, "ab"]}, {"enum": [3, "ab", 7.5]}),
        ({"required": ["a"]}, {"required": ["b"]}),
        (
            {"properties": {"a": {"type": "string"}}},
            {"properties": {"a": {"minLength": 1}, "b": {"type": "integer"}}},
        ),
        (
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"a": {}, "b": {}}, "additionalProperties": False},
        ),
        ({"additionalProperties": False, "properties": {"a": {}}}, {"properties": {"c": {}}}),
        ({"items": {"type": "integer"}}, {"items": {"minimum": 1}, "uniqueItems": True}),
        (
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            {"anyOf": [{"minimum": 5}, {"maxLength": 1}]},
        ),
        ({"allOf": [{"type": "string"}]}, {"allOf": [{"minLength": 2}]}),
    ],
)
def test_merge_accepts_exactly_what_both_accept(
    left: dict[str, Any], right: dict[str, Any]
) -> None:
    merged, reason = merge_schemas(left, right)
    assert merged is not None, reason
    both = offline_validator({"allOf": [left, right]})
    one = offline_validator(merged)
    assert [both.is_valid(v) for v in VALUES] == [one.is_valid(v) for v in VALUES]


@pytest.mark.parametrize(
    ("left", "right", "reason"),
    [
        ({"type": "string"}, {"type": "integer"}, "the types do not overlap"),
        ({"enum": [1]}, {"enum": [2]}, "the enums share no value"),
        ({"pattern": "^a"}, {"pattern": "b$"}, "both set `pattern` differently"),
        (
            {"properties": {"a": {}}, "additionalProperties": False},
            {"required": ["b"]},
            "required 'b' is forbidden by additionalProperties: false",
        ),
        (
            {"additionalProperties": {"type": "string"}},
            {"properties": {"a": {}}},
            "a schema-valued additionalProperties",
        ),
        (
            {"patternProperties": {"^a": {}}},
            {"properties": {"a": {}}},
            "patternProperties next to other property keywords",
        ),
    ],
)
def test_merge_refuses_what_it_cannot_do_exactly(
    left: dict[str, Any], right: dict[str, Any], reason: str
) -> None:
    assert merge_schemas(left, right) == (None, reason)


def test_annotations_keep_the_first_side() -> None:
    merged, _ = merge_schemas({"title": "A", "description": "a"}, {"title": "B", "default": 1})
    assert merged == {"title": "A", "description": "a", "default": 1}
