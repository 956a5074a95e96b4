from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent_contracts import InvalidSchemaError, SchemaReferenceError
from agent_core import SchemaFinding, check_output_schema, ensure_output_schema


def _found(schema: Any) -> list[tuple[str, str, str]]:
    return [(f.path, f.severity, f.message) for f in check_output_schema(schema)]


GOOD = {
    "type": "object",
    "required": ["summary", "issues"],
    "properties": {
        "summary": {"type": "string", "minLength": 50},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["file", "severity"],
                "properties": {
                    "file": {"type": "string"},
                    "severity": {"type": "string", "enum": ["low", "medium", "high"]},
                },
            },
        },
        "score": {"type": "number", "minimum": 0, "maximum": 10, "default": 5},
        "ref": {"$ref": "#/$defs/Item"},
    },
    "$defs": {"Item": {"type": "string", "format": "date"}},
}


def test_a_good_schema_has_no_findings() -> None:
    assert check_output_schema(GOOD) == []
    assert ensure_output_schema(GOOD) == []


def test_typos_in_keywords_get_a_did_you_mean() -> None:
    schema = {"type": "object", "requried": ["a"], "propertys": {"a": {"type": "string"}}}
    assert _found(schema) == [
        (
            "$",
            "warning",
            "the root object declares no `properties`, so any object is accepted; list the "
            "fields the output must have",
        ),
        (
            "$",
            "warning",
            "unknown keyword `requried` is ignored by validation (did you mean 'required'?)",
        ),
        (
            "$",
            "warning",
            "unknown keyword `propertys` is ignored by validation (did you mean 'properties'?)",
        ),
    ]


def test_keyword_with_the_wrong_case_is_a_typo() -> None:
    found = _found({"type": "string", "MinLength": 3})
    assert (
        "$",
        "warning",
        "unknown keyword `MinLength` is ignored by validation (did you mean 'minLength'?)",
    ) in found


def test_vendor_extensions_are_quiet() -> None:
    assert _found({"type": "object", "properties": {"a": {"type": "string", "x-order": 1}}}) == []


def test_required_names_that_are_not_properties() -> None:
    open_object = {
        "type": "object",
        "required": ["summry"],
        "properties": {"summary": {"type": "string"}},
    }
    assert _found(open_object) == [
        (
            "$",
            "warning",
            "required property 'summry' is not in `properties`, so any value is accepted for it; "
            "declare it (did you mean 'summary'?)",
        )
    ]
    closed = {**open_object, "additionalProperties": False}
    assert _found(closed) == [
        (
            "$",
            "error",
            "required property 'summry' is not in `properties` and `additionalProperties` is "
            "false, so no value can match (did you mean 'summary'?)",
        )
    ]
    branch_only = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "anyOf": [{"required": ["a"]}],
    }
    assert _found(branch_only) == []


def test_empty_and_mistyped_enums() -> None:
    schema = {
        "type": "object",
        "properties": {
            "empty": {"enum": []},
            "twice": {"enum": ["a", "a"]},
            "misfit": {"type": "string", "enum": ["a", 1]},
            "none_fit": {"type": "integer", "enum": ["a", "b"]},
            "const": {"type": "boolean", "const": "yes"},
        },
    }
    assert _found(schema) == [
        ("$.properties.empty", "error", "`enum` is empty, so no value can match; list the values"),
        ("$.properties.twice", "warning", "`enum` lists 'a' twice"),
        (
            "$.properties.misfit",
            "warning",
            "`enum` value 1 is not of type string and can never match; remove it or widen `type`",
        ),
        (
            "$.properties.none_fit",
            "error",
            "no `enum` value is of type integer, so nothing can match; fix `type` or the values",
        ),
        (
            "$.properties.const",
            "error",
            "`const` 'yes' is not of type boolean, so nothing can match",
        ),
    ]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "integer", "minimum": 5, "maximum": 1},
            "`minimum` 5 is greater than `maximum` 1",
        ),
        (
            {"type": "number", "exclusiveMinimum": 3, "maximum": 3},
            "`exclusiveMinimum` 3 is not less than `maximum` 3",
        ),
        (
            {"type": "string", "minLength": 4, "maxLength": 2},
            "`minLength` 4 is greater than `maxLength` 2",
        ),
        (
            {"type": "array", "items": {}, "minItems": 3, "maxItems": 1},
            "`minItems` 3 is greater than `maxItems` 1",
        ),
        (
            {"type": "object", "minProperties": 2, "maxProperties": 1},
            "`minProperties` 2 is greater than `maxProperties` 1",
        ),
    ],
)
def test_contradictory_bounds(schema: dict[str, Any], message: str) -> None:
    errors = [f for f in check_output_schema(schema) if f.severity == "error"]
    assert [f.message for f in errors] == [
        f"{message}, so nothing can match; swap or fix the bounds"
    ]


def test_references_that_point_nowhere() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/Itme"},
            "b": {"$ref": "https://example.com/item.json"},
            "c": {"$ref": "#/$defs/Item"},
        },
        "$defs": {"Item": {"type": "string"}},
    }
    assert _found(schema) == [
        (
            "$.properties.a",
            "error",
            "`$ref` '#/$defs/Itme' points to nothing in this schema (did you mean 'Item'?)",
        ),
        (
            "$.properties.b",
            "error",
            "`$ref` 'https://example.com/item.json' is not in this document and is never fetched "
            "from the network; copy the definition into `$defs` and refer to it with '#/$defs/...'",
        ),
    ]


def test_keywords_next_to_ref_under_draft_07() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/x", "maxLength": 3, "description": "fine"}},
        "definitions": {"x": {"type": "string"}},
    }
    assert _found(schema) == [
        (
            "$.properties.a",
            "warning",
            "draft-07 ignores keywords next to `$ref` (`maxLength`); move them and the `$ref` "
            "into an `allOf`",
        )
    ]
    modern = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    assert _found(modern) == []


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("strng", " (did you mean 'string'?)"),
        ("dict", " (did you mean 'object'?)"),
        ("float", " (did you mean 'number'?)"),
        ("any", "; leave `type` out to accept any value"),
        ("banana", "; use one of array, boolean, integer, null, number, object, string"),
    ],
)
def test_unknown_type_names(name: str, hint: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": name}}}
    assert _found(schema) == [("$.properties.a", "error", f"unknown type {name!r}{hint}")]


def test_keywords_that_do_not_apply_to_the_type() -> None:
    assert _found({"type": "object", "properties": {"n": {"type": "integer", "minLength": 2}}}) == [
        (
            "$.properties.n",
            "warning",
            "`minLength` applies only to string values but this schema's type is integer, so it "
            "has no effect",
        )
    ]
    assert (
        _found(
            {
                "type": "object",
                "properties": {"n": {"type": ["string", "integer"], "minLength": 2, "minimum": 1}},
            }
        )
        == []
    )


def test_patterns_formats_and_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {"type": "string", "pattern": "("},
            "f": {"type": "string", "format": "emial"},
            "d": {"type": "integer", "default": "x"},
        },
        "patternProperties": {"[": {"type": "string"}},
    }
    assert _found(schema) == [
        ("$", "error", "`patternProperties` key '[' is not a valid regular expression"),
        ("$.properties.p", "error", "`pattern` '(' is not a valid regular expression (ECMA-262)"),
        (
            "$.properties.f",
            "warning",
            "unknown format 'emial' is not checked by validation (did you mean 'email'?)",
        ),
        ("$.properties.d", "warning", "`default` 'x' does not match its own schema"),
    ]


def test_foreign_and_draft_specific_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "nullable": True, "example": "x"}},
        "dependentRequired": {"a": ["b"]},
        "if": {"required": ["a"]},
    }
    assert _found(schema) == [
        (
            "$",
            "warning",
            "`dependentRequired` is a draft 2019-09/2020-12 keyword that draft-07 ignores; set "
            '"$schema" to draft 2020-12 or use a draft-07 keyword',
        ),
        ("$", "warning", "`if` without `then` or `else` has no effect"),
        (
            "$.properties.a",
            "warning",
            'OpenAPI\'s `nullable` is not JSON Schema; add "null" to `type` instead',
        ),
        ("$.properties.a", "warning", "`example` is OpenAPI; JSON Schema uses `examples` (a list)"),
    ]


def test_roots() -> None:
    assert _found({"type": "array", "items": {"type": "string"}}) == [
        (
            "$",
            "warning",
            "the root is not `type: object`; for tool calling it is wrapped as "
            '{"result": <value>} and unwrapped before validation. Set `type: object` if the '
            "output is an object",
        )
    ]
    assert _found(False) == [
        ("$", "error", "the schema `false` accepts no value; describe the output")
    ]
    assert _found(True) == [
        ("$", "warning", "the schema accepts any value; add `type` and `properties`")
    ]
    assert _found([1]) == [
        ("$", "error", "an output schema must be a JSON object or a boolean, not list")
    ]
    pydantic_style = {
        "$ref": "#/$defs/M",
        "$defs": {"M": {"type": "object", "properties": {"a": {"type": "string"}}}},
    }
    assert _found(pydantic_style) == []


def test_meta_schema_errors_are_reported_once() -> None:
    schema = {"type": "object", "properties": {"a": {"minLength": -1}, "b": {"type": "strng"}}}
    assert _found(schema) == [
        ("$.properties.b", "error", "unknown type 'strng' (did you mean 'string'?)"),
        (
            "$.properties.a",
            "error",
            "-1 is less than the minimum of 0 (fails the draft's meta-schema)",
        ),
    ]


def test_names_with_odd_characters_are_quoted_in_paths() -> None:
    schema = {"type": "object", "properties": {"date-of-birth": {"type": "strin"}}}
    assert _found(schema)[0][0] == '$.properties["date-of-birth"]'


def test_findings_render_with_their_source() -> None:
    finding = check_output_schema(
        {"type": "object", "properties": {"a": {"enum": []}}}, source="agents/x.yml"
    )[0]
    assert finding == SchemaFinding(
        path="$.properties.a",
        severity="error",
        message="`enum` is empty, so no value can match; list the values",
        keyword="enum",
        source="agents/x.yml",
    )
    assert str(finding) == (
        "agents/x.yml: $.properties.a: error: `enum` is empty, so no value can match; "
        "list the values"
    )


def test_ensure_raises_with_every_error_and_returns_warnings() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"enum": []},
            "b": {"type": "integer", "minimum": 2, "maximum": 1},
            "c": {"nullable": True},
        },
    }
    with pytest.raises(InvalidSchemaError) as caught:
        ensure_output_schema(schema, source="agents/x.yml")
    error = caught.value
    assert error.path == "$.properties.a"
    assert error.source == "agents/x.yml"
    assert str(error) == (
        "agents/x.yml: invalid schema at $.properties.a: output schema has 2 errors:\n"
        "  - $.properties.a: `enum` is empty, so no value can match; list the values\n"
        "  - $.properties.b: `minimum` 2 is greater than `maximum` 1, so nothing can match; swap "
        "or fix the bounds"
    )
    warnings = ensure_output_schema(
        {"type": "object", "properties": {"c": {"type": "string", "nullable": True}}}
    )
    assert [w.keyword for w in warnings] == ["nullable"]


def test_ensure_raises_a_reference_error_when_only_references_fail() -> None:
    with pytest.raises(SchemaReferenceError) as caught:
        ensure_output_schema(
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}, source="x.yml"
        )
    assert caught.value.reference == "#/$defs/nope"
    assert str(caught.value) == (
        "x.yml: output schema has 1 error:\n"
        "  - $.properties.a: `$ref` '#/$defs/nope' points to nothing in this schema"
    )


def test_meta_schema_check_uses_the_draft_the_engine_reads() -> None:
    # https + trailing "#": the engine reads draft-04, where exclusiveMaximum is a boolean.
    schema = {
        "$schema": "https://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": True}},
    }
    assert [f for f in check_output_schema(schema) if f.severity == "error"] == []
    wrong = dict(schema, properties={"n": {"type": "number", "exclusiveMaximum": 5}})
    errors = [f for f in check_output_schema(wrong) if f.severity == "error"]
    # Under draft-04 a numeric exclusiveMaximum is wrong (it needs maximum, and is a boolean).
    assert len(errors) == 1 and "exclusiveMaximum" in errors[0].message


# Hostile schemas: patterns by the engine's bounded regexes, lists too long to check -----------


def _finishes(work: Any, seconds: float = 30) -> Any:
    """Run ``work`` in a daemon thread, so a hang fails the test instead of freezing it."""
    import threading

    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert outcome, "the check hung"
    return outcome[0]


def test_a_catastrophic_pattern_property_is_matched_by_the_bounded_engine() -> None:
    name = "a" * 32 + "!"
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "required": ["id", name],
        "additionalProperties": False,
    }
    found = _finishes(lambda: _found(schema))
    assert found == [
        (
            "$",
            "error",
            f"required property {name!r} is not in `properties` and `additionalProperties` "
            "is false, so no value can match",
        )
    ]


def test_pattern_properties_use_ecma_syntax_as_the_validator_does() -> None:
    schema = {
        "type": "object",
        "properties": {},
        "patternProperties": {"^x}$": {}},  # Annex B: a lone '}' is a plain character
        "required": ["x}"],
        "additionalProperties": False,
    }
    assert [finding for finding in _found(schema) if finding[1] == "error"] == []


def test_enum_duplicates_are_found_in_one_pass() -> None:
    values: list[Any] = [*range(9_999), 7.0]  # 7.0 is 7 in JSON; True is not 1
    values[5] = True
    found = _found({"type": ["integer", "number", "boolean"], "enum": values})
    assert [finding for finding in found if "enum" in finding[2]] == [
        ("$", "warning", "`enum` lists 7.0 twice")
    ]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "integer", "enum": list(range(100_000))},
            "`enum` lists 100,000 values; at most 10,000 are supported (split the schema, or "
            "use a `pattern` or `type`)",
        ),
        (
            {
                "type": "object",
                "properties": {f"p{i}": {} for i in range(50_000)},
                "required": [f"p{i}" for i in range(50_000)],
            },
            "`required` lists 50,000 names; at most 10,000 are supported (split the schema, or "
            "use a `minProperties`)",
        ),
    ],
    ids=["enum", "required"],
)
def test_lists_too_long_to_use_are_one_clear_error(schema: Any, message: str) -> None:
    found = _finishes(lambda: _found(schema))
    assert [finding for finding in found if finding[1] == "error"] == [("$", "error", message)]
    with pytest.raises(InvalidSchemaError, match="at most 10,000 are supported"):
        ensure_output_schema(schema)


def test_checking_a_schema_again_gives_the_same_findings_with_the_new_source() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimun": 1}}}
    first = check_output_schema(schema, source="agents/a.yml")
    again = check_output_schema(dict(schema), source="agents/b.yml")
    assert [f.message for f in first] == [f.message for f in again] != []
    assert {f.source for f in first} == {"agents/a.yml"}
    assert {f.source for f in again} == {"agents/b.yml"}


def test_the_checks_need_no_python_jsonschema() -> None:
    # The base install has jsonschema-rs only: the meta-schema checks must not import
    # python-jsonschema (None in sys.modules makes any import of it fail).
    program = (
        "import sys\n"
        "sys.modules['jsonschema'] = None\n"
        "from agent_core._schema_checks import check_output_schema\n"
        "schema = {'$schema': 'http://json-schema.org/draft-04/schema#', 'type': 'object',\n"
        "          'properties': {'n': {'exclusiveMaximum': 5}, 'm': {'minLength': -1}}}\n"
        "for finding in check_output_schema(schema):\n"
        "    print(finding.path, finding.keyword, finding.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "$.properties.m minLength -1 is less than the minimum of 0 (fails the draft's meta-schema)",
        "$.properties n 'maximum' is a dependency of 'exclusiveMaximum' (fails the draft's "
        "meta-schema)",
    ]


def test_the_base_install_does_not_depend_on_python_jsonschema() -> None:
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~;\[ ]", requirement)[0] for requirement in project["dependencies"]]
    assert "jsonschema-rs" in names and "jsonschema" not in names
