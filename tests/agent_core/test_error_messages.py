from __future__ import annotations

import jsonschema
import pytest
from pydantic import JsonValue

from agent_core import compile_schema, format_path

# (schema, instance, every issue as "path: message"), in python-jsonschema's wording.
MESSAGES: list[tuple[JsonValue, JsonValue, list[str]]] = [
    ({"type": "integer"}, "1", ["$: '1' is not of type 'integer'"]),
    ({"type": "integer"}, True, ["$: True is not of type 'integer'"]),
    ({"type": ["string", "null"]}, 1, ["$: 1 is not of type 'string', 'null'"]),
    (
        {"enum": ["low", "medium", "high"]},
        "critical",
        ["$: 'critical' is not one of ['low', 'medium', 'high']"],
    ),
    ({"const": {"a": 1}}, {"a": 2}, ["$: {'a': 1} was expected"]),
    (
        {"required": ["a", "b"]},
        {},
        ["$: 'a' is a required property", "$: 'b' is a required property"],
    ),
    (
        {"properties": {"a": {}}, "additionalProperties": False},
        {"zz": 1, "a": 2, "b": 3},
        ["$: Additional properties are not allowed ('b', 'zz' were unexpected)"],
    ),
    (
        {"patternProperties": {"^x-": {}}, "additionalProperties": False},
        {"y": 1},
        ["$: 'y' does not match any of the regexes: '^x-'"],
    ),
    (
        {"items": [{}], "additionalItems": False},
        [1, 2, "three"],
        ["$: Additional items are not allowed (2, 'three' were unexpected)"],
    ),
    ({"minimum": 5}, 4, ["$: 4 is less than the minimum of 5"]),
    ({"maximum": 5}, 6, ["$: 6 is greater than the maximum of 5"]),
    ({"exclusiveMinimum": 5}, 5, ["$: 5 is less than or equal to the minimum of 5"]),
    ({"exclusiveMaximum": 5}, 5.0, ["$: 5.0 is greater than or equal to the maximum of 5"]),
    ({"multipleOf": 3}, 7, ["$: 7 is not a multiple of 3"]),
    ({"minLength": 1}, "", ["$: '' should be non-empty"]),
    ({"minLength": 3}, "ab", ["$: 'ab' is too short"]),
    ({"maxLength": 0}, "a", ["$: 'a' is expected to be empty"]),
    ({"maxLength": 2}, "abc", ["$: 'abc' is too long"]),
    ({"minItems": 1}, [], ["$: [] should be non-empty"]),
    ({"maxItems": 1}, [1, 2], ["$: [1, 2] is too long"]),
    ({"uniqueItems": True}, [1, 1], ["$: [1, 1] has non-unique elements"]),
    ({"contains": {"const": 5}}, [1, 2], ["$: None of [1, 2] are valid under the given schema"]),
    ({"minProperties": 2}, {"a": 1}, ["$: {'a': 1} does not have enough properties"]),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, ["$: {'a': 1, 'b': 2} has too many properties"]),
    ({"pattern": "^a+$"}, "b", ["$: 'b' does not match '^a+$'"]),
    ({"format": "email"}, "no-at", ["$: 'no-at' is not a 'email'"]),
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1, "ok": 2}, ["$: 'abc' is too long"]),
    (
        {"dependencies": {"card": ["billing"]}},
        {"card": 1},
        ["$: 'billing' is a dependency of 'card'"],
    ),
    (
        {"dependencies": {"card": {"required": ["cvv"]}}},
        {"card": 1},
        ["$: 'cvv' is a required property"],
    ),
    ({"not": {"type": "string"}}, "s", ["$: 's' should not be valid under {'type': 'string'}"]),
    (
        {"anyOf": [{"type": "string"}, {"minimum": 3}]},
        1,
        ["$: 1 is not valid under any of the given schemas"],
    ),
    (
        {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
        1,
        ["$: 1 is valid under each of {'minimum': 0}, {'type': 'integer'}"],
    ),
    (
        {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
        -0.5,
        ["$: -0.5 is not valid under any of the given schemas"],
    ),
    (
        {"if": {"type": "integer"}, "then": {"minimum": 10}, "else": {"type": "string"}},
        3,
        ["$: 3 is less than the minimum of 10"],
    ),
    (
        {"if": {"type": "integer"}, "then": {"minimum": 10}, "else": {"type": "string"}},
        3.5,
        ["$: 3.5 is not of type 'string'"],
    ),
    (False, {"a": 1}, ["$: False schema does not allow {'a': 1}"]),
    ({"properties": {"x": False}}, {"x": 1}, ["$.x: False schema does not allow 1"]),
]


@pytest.mark.parametrize(("schema", "instance", "expected"), MESSAGES)
def test_every_keyword_is_reported_in_python_jsonschema_wording(
    schema: JsonValue, instance: JsonValue, expected: list[str]
) -> None:
    assert [str(issue) for issue in compile_schema(schema).issues(instance)] == expected


@pytest.mark.parametrize(("schema", "instance", "expected"), MESSAGES)
def test_messages_match_python_jsonschema_itself(
    schema: JsonValue, instance: JsonValue, expected: list[str]
) -> None:
    checker = jsonschema.Draft7Validator.FORMAT_CHECKER
    theirs = jsonschema.Draft7Validator(schema, format_checker=checker).iter_errors(instance)
    ours = compile_schema(schema).issues(instance)
    assert sorted(issue.message for issue in ours) == sorted(error.message for error in theirs)


def test_values_that_are_not_json_are_reported() -> None:
    compiled = compile_schema({"items": {"type": "number"}})
    assert not compiled.is_valid({1, 2})
    assert [str(issue) for issue in compiled.issues({1, 2})] == ["$: {1, 2} is not a JSON value"]
    assert [str(issue) for issue in compiled.issues([1, float("nan")])] == [
        "$[1]: nan is not a JSON number"
    ]


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ((), "$"),
        (("issues", 0, "severity"), "$.issues[0].severity"),
        (("a-b",), '$["a-b"]'),
        (("0",), '$["0"]'),
        (("$schema", "x y"), '$["$schema"]["x y"]'),
        (("_ok", "é"), '$._ok["é"]'),
    ],
)
def test_format_path(parts: tuple[str | int, ...], expected: str) -> None:
    assert format_path(parts) == expected
