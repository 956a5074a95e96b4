from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from agent_contracts import InvalidSchemaError, OutputValidationError, SchemaReferenceError
from agent_core import (
    compile_schema,
    issues_from_pydantic,
    model_from_schema,
    schema_hash,
    validate_output,
)
from agent_core._schema_documents import node_at, resolve_pointer, schema_draft

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT6 = "http://json-schema.org/draft-06/schema#"

REVIEW = {
    "type": "object",
    "required": ["summary", "issues"],
    "properties": {
        "summary": {"type": "string"},
        "n": {"type": "integer"},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["severity"],
                "properties": {"severity": {"enum": ["low", "medium", "high"]}},
            },
        },
    },
    "additionalProperties": False,
}


def test_issues_name_paths_keywords_and_schema_paths_in_a_fixed_order() -> None:
    value = {"n": "1", "zz": 0, "issues": [{"severity": "critical"}, {}]}
    issues = compile_schema(REVIEW).issues(value)
    assert [str(issue) for issue in issues] == [
        "$: Additional properties are not allowed ('zz' was unexpected)",
        "$: 'summary' is a required property",
        "$.issues[0].severity: 'critical' is not one of ['low', 'medium', 'high']",
        "$.issues[1]: 'severity' is a required property",
        "$.n: '1' is not of type 'integer'",
    ]
    assert [issue.keyword for issue in issues] == [
        "additionalProperties",
        "required",
        "enum",
        "required",
        "type",
    ]
    assert issues[0].schema_path == "$.additionalProperties"
    assert issues[2].schema_path == "$.properties.issues.items.properties.severity.enum"


def test_order_does_not_depend_on_key_order_in_schema_or_value() -> None:
    reordered_schema = json.loads(json.dumps(REVIEW, sort_keys=True))
    value = {"n": "1", "zz": 0, "issues": [{"severity": "critical"}, {}]}
    reordered_value = dict(reversed(list(value.items())))
    first = compile_schema(REVIEW)
    # lenient=True compiles the reordered schema afresh (no format is involved).
    second = compile_schema(reordered_schema, lenient=True)
    assert second is not first
    assert first.issues(value) == second.issues(reordered_value) == first.issues(reordered_value)


def test_array_indices_sort_numerically() -> None:
    compiled = compile_schema({"items": {"type": "string"}})
    paths = [issue.path for issue in compiled.issues([1] * 12)]
    assert paths == [f"$[{index}]" for index in range(12)]


@pytest.mark.parametrize(
    ("value", "valid"),
    [(1, True), (1.0, True), (-3, True), ("1", False), (True, False), (1.5, False), (None, False)],
)
def test_integers_are_exact_with_no_coercion(value: JsonValue, valid: bool) -> None:
    assert compile_schema({"type": "integer"}).is_valid(value) is valid


@pytest.mark.parametrize(
    ("value", "valid"), [(1, True), (2.5, True), ("2.5", False), (False, False)]
)
def test_numbers_are_exact_with_no_coercion(value: JsonValue, valid: bool) -> None:
    assert compile_schema({"type": "number"}).is_valid(value) is valid


@pytest.mark.parametrize(
    ("fmt", "bad", "good"),
    [
        ("date-time", "2024-13-01T00:00:00Z", "2024-01-31T12:00:00Z"),
        ("date", "2024-02-30", "2024-02-29"),
        ("time", "25:00:00Z", "23:59:59Z"),
        ("email", "not-an-email", "ada@example.com"),
        ("uri", "no scheme", "https://example.com/a"),
        ("ipv4", "1.2.3", "192.168.0.1"),
        ("ipv6", "1::2::3", "::1"),
        ("hostname", "-bad-.com", "example.com"),
        ("regex", "(unclosed", "^a+$"),
        ("uuid", "1234", "123e4567-e89b-12d3-a456-426614174000"),
    ],
)
def test_formats_are_asserted_unless_lenient(fmt: str, bad: str, good: str) -> None:
    schema = {"type": "string", "format": fmt}
    strict = compile_schema(schema)
    assert strict.is_valid(good)
    assert [str(issue) for issue in strict.issues(bad)] == [f"$: {bad!r} is not a {fmt!r}"]
    assert compile_schema(schema, lenient=True).is_valid(bad)


def test_drafts_are_read_from_dollar_schema() -> None:
    assert schema_draft({}) == 7
    assert schema_draft({"$schema": DRAFT4}) == 4
    assert schema_draft({"$schema": "http://json-schema.org/draft-06/schema"}) == 6
    assert schema_draft({"$schema": "http://json-schema.org/schema#"}) == 7
    assert schema_draft({"$schema": "https://example.com/my-meta"}) == 7
    assert schema_draft({"$schema": "https://json-schema.org/draft/2020-12/schema"}) == 2020
    assert schema_draft(True) == 7


def test_draft4_boolean_exclusive_maximum() -> None:
    compiled = compile_schema({"$schema": DRAFT4, "maximum": 3, "exclusiveMaximum": True})
    assert compiled.draft == 4
    assert compiled.is_valid(2.5)
    assert [str(issue) for issue in compiled.issues(3)] == [
        "$: 3 is greater than or equal to the maximum of 3"
    ]
    with pytest.raises(InvalidSchemaError) as caught:
        compile_schema({"maximum": 3, "exclusiveMaximum": True})
    assert caught.value.path == "$.exclusiveMaximum"
    assert "draft-07 meta-schema" in str(caught.value)


def test_const_is_ignored_before_draft6() -> None:
    assert compile_schema({"$schema": DRAFT4, "const": 1}).is_valid(2)
    assert not compile_schema({"$schema": DRAFT6, "const": 1}).is_valid(2)
    assert not compile_schema({"const": 1}).is_valid(2)


def test_meta_schema_check_uses_the_schemas_draft() -> None:
    assert compile_schema({"required": []}).is_valid({})
    with pytest.raises(InvalidSchemaError) as caught:
        compile_schema({"$schema": DRAFT4, "required": []}, source="agents/old.yml")
    assert caught.value.path == "$.required"
    assert caught.value.source == "agents/old.yml"
    assert str(caught.value) == (
        "agents/old.yml: invalid schema at $.required: [] should be non-empty "
        "(checked against the draft-04 meta-schema)"
    )


def test_a_draft_04_dependency_fault_names_the_keyword_that_needs_it() -> None:
    schema = {"$schema": DRAFT4, "properties": {"n": {"exclusiveMaximum": True}}}
    with pytest.raises(InvalidSchemaError) as caught:
        compile_schema(schema)
    assert caught.value.path == "$.properties.n"
    assert str(caught.value) == (
        "invalid schema at $.properties.n: 'maximum' is a dependency of 'exclusiveMaximum' "
        "(checked against the draft-04 meta-schema)"
    )


def test_newer_drafts_keep_their_own_keywords() -> None:
    compiled = compile_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "prefixItems": [{"type": "integer"}],
            "items": False,
        }
    )
    assert compiled.draft == 2020
    assert compiled.is_valid([1])
    assert not compiled.is_valid(["1"])
    assert not compiled.is_valid([1, 2])


def test_draft3_is_refused() -> None:
    with pytest.raises(InvalidSchemaError, match="draft-03"):
        compile_schema({"$schema": "http://json-schema.org/draft-03/schema#"})


@pytest.mark.parametrize(
    ("schema", "path", "message"),
    [
        (
            {"properties": {"age": {"type": "strng"}}},
            "$.properties.age.type",
            "'strng' is not one of ['array', 'boolean', 'integer', 'null', 'number', "
            "'object', 'string']",
        ),
        ({"items": {"minItems": "3"}}, "$.items.minItems", "'3' is not of type 'integer'"),
        ({"pattern": "(unclosed"}, "$.pattern", "'(unclosed' is not a valid regular expression"),
        (
            {"patternProperties": {"(bad": {}}},
            '$.patternProperties["(bad"]',
            "'(bad' is not a valid regular expression",
        ),
        ({"type": "object", "minLength": -1}, "$.minLength", "-1 is less than the minimum of 0"),
    ],
)
def test_invalid_schemas_name_the_path_of_the_fault(
    schema: JsonValue, path: str, message: str
) -> None:
    with pytest.raises(InvalidSchemaError) as caught:
        compile_schema(schema)
    assert caught.value.path == path
    assert caught.value.message == f"{message} (checked against the draft-07 meta-schema)"


@pytest.mark.parametrize(
    "schema", [[{"type": "string"}], "string", None, {"maximum": float("inf")}]
)
def test_non_schemas_are_refused(schema: object) -> None:
    with pytest.raises(InvalidSchemaError) as caught:
        compile_schema(schema)
    assert caught.value.path == "$"


def test_unresolvable_local_ref_is_a_reference_error() -> None:
    with pytest.raises(SchemaReferenceError) as caught:
        compile_schema({"properties": {"a": {"$ref": "#/definitions/missing"}}})
    assert caught.value.reference == "#/definitions/missing"
    assert "does not exist" in str(caught.value)


def test_compiled_schemas_are_cached_by_canonical_hash() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    same = {"properties": {"a": {"type": "string"}}, "type": "object"}
    first = compile_schema(schema)
    assert compile_schema(same) is first
    assert compile_schema(schema, lenient=True) is not first
    assert compile_schema(schema, lenient=True).lenient


def test_schema_hash_is_sha256_of_canonical_json() -> None:
    schema = {"b": [1, {"y": 2, "x": 1}], "a": "é"}
    canonical = '{"a":"é","b":[1,{"x":1,"y":2}]}'
    assert schema_hash(schema) == hashlib.sha256(canonical.encode()).hexdigest()
    assert schema_hash({"a": "é", "b": [1, {"x": 1, "y": 2}]}) == schema_hash(schema)
    assert schema_hash({"a": 1}) != schema_hash({"a": 1.0})
    assert schema_hash(True) != schema_hash(False)


def test_validate_raises_with_every_issue_and_the_output() -> None:
    compiled = compile_schema(REVIEW)
    compiled.validate({"summary": "ok", "issues": []})
    value = {"issues": [{"severity": "critical"}]}
    with pytest.raises(OutputValidationError) as caught:
        compiled.validate(value)
    assert caught.value.last_output == value
    assert [str(issue) for issue in caught.value.errors] == [
        "$: 'summary' is a required property",
        "$.issues[0].severity: 'critical' is not one of ['low', 'medium', 'high']",
    ]
    assert "2 problems" in str(caught.value)


def test_validate_output_accepts_schemas_and_models() -> None:
    bad = {"summary": 3, "issues": []}
    expected = ["$.summary: 3 is not of type 'string'"]
    assert [str(issue) for issue in validate_output(bad, REVIEW)] == expected
    model = model_from_schema(REVIEW, name="Review")
    assert [str(issue) for issue in validate_output(bad, model)] == expected
    assert validate_output({"summary": "s", "issues": []}, model) == []


def test_validate_output_lenient_turns_formats_off() -> None:
    schema = {"type": "string", "format": "date"}
    assert [str(issue) for issue in validate_output("soon", schema)] == [
        "$: 'soon' is not a 'date'"
    ]
    assert validate_output("soon", schema, lenient=True) == []
    assert validate_output("soon", model_from_schema(schema), lenient=True) == []


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    line: int


class Report(BaseModel):
    findings: list[Finding]


def test_pydantic_contracts_are_validated_by_pydantic() -> None:
    issues = validate_output({"findings": [{"file": "a.py", "col": 1}]}, Report)
    assert [str(issue) for issue in issues] == [
        "$.findings[0]: 'line' is a required property",
        "$.findings[0]: Additional properties are not allowed ('col' was unexpected)",
    ]
    assert [issue.keyword for issue in issues] == ["required", "additionalProperties"]
    assert validate_output({"findings": [{"file": "a.py", "line": 2}]}, Report) == []


def test_issues_from_pydantic_keeps_other_messages_with_their_path() -> None:
    with pytest.raises(ValidationError) as caught:
        Report.model_validate({"findings": [{"file": 1, "line": 2}]})
    assert [str(issue) for issue in issues_from_pydantic(caught.value)] == [
        "$.findings[0].file: Input should be a valid string"
    ]


def test_issues_from_pydantic_reads_schema_model_errors_with_full_paths() -> None:
    model = model_from_schema(REVIEW, name="Review")

    class Run(BaseModel):
        result: model

    with pytest.raises(ValidationError) as caught:
        Run.model_validate({"result": {"summary": "s", "issues": [{"severity": "x"}]}})
    issues = issues_from_pydantic(caught.value)
    assert [str(issue) for issue in issues] == [
        "$.result.issues[0].severity: 'x' is not one of ['low', 'medium', 'high']"
    ]
    assert issues[0].keyword == "enum"
    assert issues[0].schema_path == "$.properties.issues.items.properties.severity.enum"


# --- ECMA-262 Annex B patterns: a lone "]" or "}" is a literal character


@pytest.mark.parametrize(
    ("pattern", "valid", "invalid"),
    [
        ("a]", ["a]", "xa]y"], ["a", "]", "a\\]"]),
        ("^\\[\\*]$", ["[*]"], ["[*", "*]", "[**]"]),
        ("^a}$", ["a}"], ["a", "}"]),
        ("^x{2}}$", ["xx}"], ["x}", "xx", "x{2}}"]),
        ("^]{2}$", ["]]"], ["]", "]]]"]),
        ("^a{,5}$", ["a{,5}"], ["a", "aaaaa"]),
        ("^{a}$", ["{a}"], ["a"]),
        ("^[]]$", [], ["]", "", "[]]"]),
        ("^[^]]$", ["a]", "]]"], ["a", "]"]),
        ("^[$@](\\[\\*]|\\[[0-9]+((, [0-9]+)*|:[0-9]+)])*$", ["$[*]", "@[1, 2][3:4]"], ["$[*"]),
    ],
)
def test_annex_b_literal_brackets_in_patterns_match_themselves(
    pattern: str, valid: list[str], invalid: list[str]
) -> None:
    schema: dict[str, JsonValue] = {"pattern": pattern}
    compiled = compile_schema(schema)
    assert compiled.schema is schema
    assert schema == {"pattern": pattern}
    assert [value for value in valid if not compiled.is_valid(value)] == []
    assert [value for value in invalid if compiled.is_valid(value)] == []


def test_annex_b_pattern_messages_keep_the_designers_spelling() -> None:
    compiled = compile_schema(
        {
            "properties": {"path": {"pattern": "^\\[\\*]$"}, "n": {"not": {"pattern": "a]"}}},
            "patternProperties": {"^x]": {"type": "integer"}, "^y}": False},
            "additionalProperties": False,
        }
    )
    assert compiled.is_valid({"path": "[*]", "x]1": 1})
    issues = compiled.issues({"path": "[*", "n": "a]", "x]1": "s", "y}": 0, "z": 1})
    assert [str(issue) for issue in issues] == [
        "$: 'z' does not match any of the regexes: '^x]', '^y}'",
        "$.n: 'a]' should not be valid under {'pattern': 'a]'}",
        "$.path: '[*' does not match '^\\\\[\\\\*]$'",
        "$[\"x]1\"]: 's' is not of type 'integer'",
        '$["y}"]: False schema does not allow 0',
    ]
    assert [issue.schema_path for issue in issues] == [
        "$.additionalProperties",
        "$.properties.n.not",
        "$.properties.path.pattern",
        '$.patternProperties["^x]"].type',
        '$.patternProperties["^y}"]',
    ]


def test_annex_b_respelling_never_collides_with_a_pattern_already_there() -> None:
    # "a]" and "a\]" are the same regex; each key keeps its own subschema and its own name.
    compiled = compile_schema({"patternProperties": {"^a]$": {"minimum": 5}, "^a\\]$": {}}})
    assert compiled.is_valid({"a]": 7})
    assert [str(issue) for issue in compiled.issues({"a]": 1})] == [
        '$["a]"]: 1 is less than the minimum of 5'
    ]
    assert compiled.issues({"a]": 1})[0].schema_path == '$.patternProperties["^a]$"].minimum'


def test_annex_b_only_touches_patterns_not_data() -> None:
    schema: dict[str, JsonValue] = {
        "pattern": "a]",
        "properties": {"pattern": {"const": "b]"}},
        "enum": [{"pattern": "b]"}, "a]"],
    }
    compiled = compile_schema(schema)
    assert compiled.is_valid({"pattern": "b]"})
    assert not compiled.is_valid({"pattern": "b\\]"})
    assert compiled.is_valid("a]")


@pytest.mark.parametrize(
    ("schema", "path", "shown"),
    [
        ({"pattern": "("}, "$.pattern", "'('"),
        ({"pattern": "[a-"}, "$.pattern", "'[a-'"),
        ({"pattern": "(]"}, "$.pattern", "'(]'"),
        ({"patternProperties": {"[a-": {}}}, '$.patternProperties["[a-"]', "'[a-'"),
        (
            {"pattern": "a]", "properties": {"x": {"pattern": "("}}},
            "$.properties.x.pattern",
            "'('",
        ),
        (
            {"patternProperties": {"a]": {"pattern": "(}"}}},
            '$.patternProperties["a]"].pattern',
            "'(}'",
        ),
        ({"patternProperties": {"a]": {}, "(]": {}}}, '$.patternProperties["(]"]', "'(]'"),
    ],
)
def test_really_invalid_patterns_are_still_refused_with_their_path(
    schema: JsonValue, path: str, shown: str
) -> None:
    with pytest.raises(InvalidSchemaError) as caught:
        compile_schema(schema, source="agents/a.yml")
    assert caught.value.path == path
    assert caught.value.source == "agents/a.yml"
    assert caught.value.message == (
        f"{shown} is not a valid regular expression (checked against the draft-07 meta-schema)"
    )


def test_annex_b_schema_with_another_fault_reports_that_fault() -> None:
    with pytest.raises(InvalidSchemaError) as caught:
        compile_schema({"pattern": "a]", "properties": {"age": {"type": "int"}}})
    assert caught.value.path == "$.properties.age.type"


def test_resolve_pointer_unescapes_tokens_and_indexes_arrays() -> None:
    document: JsonValue = {"a/b": [{"~x": 1}, None], "": "empty key"}
    assert resolve_pointer(document, "") == document
    assert resolve_pointer(document, "/a~1b/0/~0x") == 1
    assert resolve_pointer(document, "/") == "empty key"
    assert resolve_pointer(document, "/a~1b/2") is None
    assert resolve_pointer(document, "/a~1b/-") is None


def test_node_at_tells_a_null_node_from_a_missing_one() -> None:
    document: JsonValue = {"a": [1, None]}
    assert node_at(document, ["a", "1"]) == (None,)
    assert node_at(document, ["a", "2"]) is None
    assert node_at(document, ["b"]) is None
    assert node_at(document, []) == (document,)
