"""The grammar of a schema accepts its instances and rejects what breaks a carried keyword.

Each grammar is judged by :mod:`tests.gbnf_recognizer`, which reads GBNF as llama.cpp does, and
each verdict is checked against the schema's own validator, so a case cannot pass by a wrong
expectation.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest

from agent_core import schema_to_gbnf
from tests.gbnf_recognizer import accepts, parse_grammar

# (name, schema, instances the grammar accepts, instances it rejects); all written as the
# grammar spells JSON: properties in the schema's order, enum values compact.
CASES: list[tuple[str, Any, list[str], list[str]]] = [
    (
        "integer range",
        {"type": "integer", "minimum": -12, "maximum": 305},
        ["-12", "-1", "0", "7", "99", "100", "299", "305"],
        ["-13", "306", "1000", "-0.5", "01", '"5"'],
    ),
    (
        "exclusive bounds, one side open",
        {"type": "integer", "exclusiveMinimum": 9},
        ["10", "11", "99", "100", "123456"],
        ["9", "0", "-10", "-1"],
    ),
    (
        "draft 4 exclusive maximum",
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "integer",
            "maximum": 0,
            "exclusiveMaximum": True,
        },
        ["-1", "-100"],
        ["0", "1"],
    ),
    (
        "enum of any type",
        {"enum": ["red", 3, None, True, [1, "a"], {"k": {"v": 2}}]},
        ['"red"', "3", "null", "true", '[1,"a"]', '{"k":{"v":2}}'],
        ['"blue"', "4", "false", "[1]", '{"k":{"v":3}}'],
    ),
    (
        "const object",
        {"const": {"a": [1, 2]}},
        ['{"a":[1,2]}'],
        ['{"a":[1]}', '{"a":[1,2],"b":1}', "null"],
    ),
    (
        "enum filtered by type",
        {"type": "string", "enum": ["x", 1]},
        ['"x"'],
        ["1"],
    ),
    (
        "minItems and maxItems",
        {"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3},
        ["[true,false]", "[ true, false, true ]"],
        ["[]", "[true]", "[true,true,true,true]", "[1,2]"],
    ),
    (
        "tuple items then no more",
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "null"}], "items": False},
        ["[]", '["a"]', '["a",null]'],
        ['["a",null,1]', "[null]", '["a","b"]'],
    ),
    (
        "string lengths",
        {"type": "string", "minLength": 2, "maxLength": 3},
        ['"ab"', '"abc"', '"a\\n"', '"\\u00e9t"'],
        ['"a"', '"abcd"', '""', "12"],
    ),
    (
        "formats",
        {
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "id": {"type": "string", "format": "uuid"},
            },
            "required": ["day", "id"],
        },
        ['{"day":"2026-11-26","id":"123e4567-e89b-12d3-a456-426614174000"}'],
        [
            '{"day":"2026-13-01","id":"123e4567-e89b-12d3-a456-426614174000"}',
            '{"day":"x","id":"y"}',
        ],
    ),
    (
        "required and additionalProperties false",
        {
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "string"},
                "c": {"type": "boolean"},
            },
            "required": ["b"],
            "additionalProperties": False,
        },
        ['{"b":"x"}', '{"a":1,"b":"x"}', '{"b":"x","c":true}', '{ "a": 1, "b": "x", "c": false }'],
        ["{}", '{"a":1}', '{"b":"x","d":1}', '{"b":1}', '{"b":"x",}', '{"a":1"b":"x"}'],
    ),
    (
        "additionalProperties as a schema",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": {"type": "integer", "minimum": 0},
        },
        ["{}", '{"name":"n"}', '{"name":"n","x":1}', '{"x":1,"nam":2,"names":3}'],
        ['{"x":-1}', '{"x":"s"}', '{"name":"n","name":1}'],
    ),
    (
        "open object allows other keys",
        {"type": "object", "properties": {"a": {"type": "null"}}},
        ["{}", '{"a":null}', '{"a":null,"z":[1,{"q":"r"}]}', '{"z":1}'],
        ['{"a":1}', "[]"],
    ),
    (
        "nested $ref, recursive",
        {
            "$ref": "#/$defs/tree",
            "$defs": {
                "tree": {
                    "type": "object",
                    "properties": {
                        "value": {"$ref": "#/$defs/small"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}},
                    },
                    "required": ["value"],
                    "additionalProperties": False,
                },
                "small": {"type": "integer", "minimum": 1, "maximum": 3},
            },
        },
        ['{"value":1}', '{"value":2,"children":[{"value":3,"children":[{"value":1}]}]}'],
        ['{"value":4}', '{"value":2,"children":[{"value":0}]}', '{"value":1,"children":[{}]}'],
    ),
    (
        "draft 7 definitions and anyOf",
        {
            "definitions": {"pos": {"type": "integer", "minimum": 1}},
            "anyOf": [{"$ref": "#/definitions/pos"}, {"type": "string", "maxLength": 1}],
        },
        ["1", "42", '"a"', '""'],
        ["0", '"ab"', "null"],
    ),
    (
        "allOf of a $ref and more keywords",
        {
            "$defs": {"named": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "allOf": [{"$ref": "#/$defs/named"}, {"required": ["name"]}],
            "maxProperties": 9,
        },
        ['{"name":"a"}', '{"name":"a","x":1}'],
        ["{}", '{"name":1}', '"name"'],
    ),
    (
        "anchored pattern",
        {"type": "string", "pattern": "^[A-Z]{2,3}-\\d+(\\.[a-z_]+)?$"},
        ['"AB-1"', '"XYZ-042.v_2"'.replace("2", ""), '"AB-12.x"'],
        ['"A-1"', '"ab-1"', '"AB-"', '"AB-1."', '"ABCD-1"', '"AB-1x"'],
    ),
    (
        "unanchored pattern, quotes and alternation",
        {"type": "string", "pattern": '(cat|dog)s?"|[^a-c]z'},
        ['"cat\\""', '"my dogs\\" here"', '"dz"', '"--dz!"', r'"\"z"', r'"\\z"'],
        ['"cat"', '"az"', '"ca"', '""'],
    ),
    (
        "type and properties beside anyOf",
        {
            "type": "object",
            "properties": {"kind": {"enum": ["a", "b"]}},
            "anyOf": [{"required": ["kind"]}, {"required": ["n"]}],
        },
        ['{"kind":"a"}', '{"n":1}', '{"kind":"b","n":[]}'],
        ["[]", "{}", '{"kind":"c"}', '{"kind":"c","n":1}', "1"],
    ),
]


@pytest.mark.parametrize(
    ("schema", "good", "bad"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_grammar_accepts_valid_instances_and_rejects_invalid_ones(
    schema: Any, good: list[str], bad: list[str]
) -> None:
    grammar = schema_to_gbnf(schema)
    parsed = parse_grammar(grammar.text)
    validator = jsonschema_rs.validator_for(schema, validate_formats=True)
    for text in good:
        assert validator.is_valid(json.loads(text)), text
        assert accepts(parsed, text), text
    for text in bad:
        try:
            valid = validator.is_valid(json.loads(text))
        except json.JSONDecodeError:
            valid = False
        if valid:  # valid JSON of the schema, but not as the grammar spells it
            assert text in ('{"name":"n","name":1}',), text
        assert not accepts(parsed, text), text
    assert grammar.notes == () or grammar.notes == ("$: maxProperties is not in the grammar",)


def test_what_the_grammar_cannot_carry_is_noted_and_left_to_validation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "code": {"type": "string", "pattern": "^(?=A)[A-Z]{3}$"},
            "even": {"type": "integer", "multipleOf": 2},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "mail": {"type": "string", "format": "email"},
        },
    }

    grammar = schema_to_gbnf(schema)

    assert grammar.notes == (
        "$.properties.tags: uniqueItems is not in the grammar",
        "$.properties.code: pattern is not in the grammar",
        "$.properties.even: multipleOf is not in the grammar",
        "$.properties.ratio: maximum, minimum on a number is not in the grammar",
        "$.properties.mail: format 'email' is not in the grammar",
    )
    # Left out, the keywords do not narrow the grammar: what they would refuse still passes.
    text = '{"tags":["a","a"],"code":"abc","even":3,"ratio":7.5,"mail":"x"}'
    assert accepts(grammar.text, text)


def test_the_same_schema_gives_the_same_text() -> None:
    schema = CASES[13][1]
    assert schema_to_gbnf(schema).text == schema_to_gbnf(json.loads(json.dumps(schema))).text
    assert schema_to_gbnf(schema).text.startswith("root ::= ")


def test_property_names_that_need_escaping_are_literal_keys() -> None:
    schema = {
        "type": "object",
        "properties": {'a"b\\c': {"type": "integer", "maximum": 5}, "é\n": {"const": 1}},
        "required": ['a"b\\c'],
        "additionalProperties": False,
    }
    grammar = schema_to_gbnf(schema)
    assert accepts(grammar.text, '{"a\\"b\\\\c":5,"é\\n":1}')
    assert not accepts(grammar.text, '{"a\\"b\\\\c":6}')


def test_other_keys_exclude_declared_names_spelled_with_class_characters() -> None:
    schema = {
        "type": "object",
        "properties": {"a-b": {"type": "null"}, "^]": {"type": "null"}},
        "additionalProperties": {"type": "boolean"},
    }
    grammar = schema_to_gbnf(schema)
    assert "\\-" not in grammar.text and "\\^" not in grammar.text  # llama.cpp has no such escape
    assert accepts(grammar.text, '{"a-b":null,"^]":null,"a-c":true,"^":false}')
    assert not accepts(grammar.text, '{"a-b":null,"a-b":true}')
    assert not accepts(grammar.text, '{"^]":true}')


ANALYZER = {
    "type": "object",
    "required": ["files_analyzed", "issues"],
    "properties": {
        "files_analyzed": {"type": "integer"},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string"}},
            },
        },
    },
}


def test_declared_only_takes_the_declared_properties_where_the_schema_does_not_say() -> None:
    wide = schema_to_gbnf(ANALYZER).text
    narrow = schema_to_gbnf(ANALYZER, declared_only=True).text
    extra_top = '{"files_analyzed":1,"issues":[],"message":"major","message":"minor"}'
    extra_nested = '{"files_analyzed":1,"issues":[{"file":"a.py","line":3}]}'
    plain = '{"files_analyzed":1,"issues":[{"file":"a.py"}]}'
    # The schema allows the extra keys, so the default grammar does too.
    assert accepts(wide, extra_top) and accepts(wide, extra_nested)
    assert not accepts(narrow, extra_top) and not accepts(narrow, extra_nested)
    assert accepts(narrow, plain)


@pytest.mark.parametrize(
    "schema, text",
    [
        ({"type": "object", "additionalProperties": True, "properties": {"a": {}}}, '{"b":1}'),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, '{"b":1}'),
        ({"type": "object"}, '{"b":1}'),  # no properties declared: any object
        (
            {"type": "object", "properties": {"a": {}}, "patternProperties": {"^x": {}}},
            '{"xb":1}',
        ),
    ],
)
def test_declared_only_keeps_extra_keys_a_schema_asks_for(schema: Any, text: str) -> None:
    assert accepts(schema_to_gbnf(schema, declared_only=True).text, text)


def test_compact_allows_one_space_between_tokens_and_no_line_breaks() -> None:
    pretty = json.dumps({"files_analyzed": 1, "issues": []}, indent=2)
    spaced = '{ "files_analyzed": 1, "issues": []}'
    wide = schema_to_gbnf(ANALYZER).text
    compact = schema_to_gbnf(ANALYZER, compact=True).text
    assert accepts(wide, pretty) and accepts(wide, spaced)
    assert not accepts(compact, pretty)
    assert accepts(compact, spaced) and accepts(compact, '{"files_analyzed":1,"issues":[]}')
