from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, JsonValue, ValidationError

from agent_contracts import InvalidSchemaError, SchemaReferenceError
from agent_core import (
    SchemaModel,
    SchemaRootModel,
    clear_caches,
    compile_schema,
    model_from_schema,
    register_schema,
    unregister_schema,
)

PR_REVIEW = {
    "type": "object",
    "required": ["summary", "approval", "comments"],
    "properties": {
        "summary": {"type": "string", "description": "Brief summary of the PR"},
        "approval": {"type": "string", "enum": ["approve", "request_changes", "comment"]},
        "comments": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["file", "line", "severity", "message"],
                "properties": {
                    "file": {"type": "string"},
                    "line": {"type": "integer"},
                    "severity": {
                        "type": "string",
                        "enum": ["nitpick", "suggestion", "concern", "blocker"],
                    },
                    "message": {"type": "string"},
                },
            },
        },
        "metrics": {
            "type": "object",
            "properties": {
                "files_reviewed": {"type": "integer"},
                "lines_changed": {"type": "integer"},
                "complexity_score": {"type": "number", "minimum": 0, "maximum": 10},
            },
        },
    },
}

REVIEW: dict[str, JsonValue] = {
    "summary": "Adds retries",
    "approval": "comment",
    "comments": [
        {"file": "a.py", "line": 3, "severity": "nitpick", "message": "rename"},
        {"file": "b.py", "line": 10.0, "severity": "blocker", "message": "bug", "hint": [1]},
    ],
}


def _problems(error: ValidationError) -> list[str]:
    return [f"{item['ctx']['path']}: {item['msg']}" for item in error.errors()]


def test_valid_output_becomes_nested_models_with_attributes() -> None:
    model = model_from_schema(PR_REVIEW, name="Review")
    review = model.model_validate(REVIEW)
    assert isinstance(review, SchemaModel)
    assert review.summary == "Adds retries"
    first = review.comments[0]
    assert isinstance(first, SchemaModel)
    assert type(first).__name__ == "ReviewCommentsItem"
    assert (first.file, first.line, first.severity) == ("a.py", 3, "nitpick")
    assert review.metrics is None


def test_valid_output_is_given_back_unchanged() -> None:
    model = model_from_schema(PR_REVIEW)
    review = model.model_validate(REVIEW)
    assert review.to_data() == REVIEW
    assert review.model_dump(mode="json", by_alias=True, exclude_unset=True) == REVIEW
    line = review.to_data()["comments"][1]["line"]
    assert line == 10.0
    assert isinstance(line, float)


def test_to_data_is_a_copy() -> None:
    review = model_from_schema(PR_REVIEW).model_validate(copy.deepcopy(REVIEW))
    data = review.to_data()
    data["comments"][1]["hint"].append(2)
    assert review.to_data() == REVIEW


@pytest.mark.parametrize(
    ("line", "valid"), [(3, True), (3.0, True), ("3", False), (True, False), (3.5, False)]
)
def test_no_coercion_inside_the_model(line: JsonValue, valid: bool) -> None:
    model = model_from_schema(PR_REVIEW)
    value = {
        **REVIEW,
        "comments": [{"file": "a", "line": line, "severity": "nitpick", "message": ""}],
    }
    if valid:
        assert model.model_validate(value).to_data() == value
    else:
        with pytest.raises(ValidationError):
            model.model_validate(value)


def test_invalid_output_lists_every_problem_with_its_path() -> None:
    model = model_from_schema(PR_REVIEW, name="Review")
    bad = {
        "approval": "maybe",
        "comments": [{"file": "a.py", "line": "3", "severity": "critical", "message": "x"}],
        "metrics": {"complexity_score": 11},
    }
    with pytest.raises(ValidationError) as caught:
        model.model_validate(bad)
    assert caught.value.title == "Review"
    assert _problems(caught.value) == [
        "$: 'summary' is a required property",
        "$.approval: 'maybe' is not one of ['approve', 'request_changes', 'comment']",
        "$.comments[0].line: '3' is not of type 'integer'",
        "$.comments[0].severity: 'critical' is not one of "
        "['nitpick', 'suggestion', 'concern', 'blocker']",
        "$.metrics.complexity_score: 11 is greater than the maximum of 10",
    ]
    errors = caught.value.errors()
    assert [error["loc"] for error in errors] == [
        (),
        ("approval",),
        ("comments", 0, "line"),
        ("comments", 0, "severity"),
        ("metrics", "complexity_score"),
    ]
    assert {error["type"] for error in errors} == {"json_schema"}
    assert errors[2]["input"] == "3"


def test_model_validate_json() -> None:
    model = model_from_schema(PR_REVIEW)
    assert model.model_validate_json(json.dumps(REVIEW)).to_data() == REVIEW
    with pytest.raises(ValidationError) as caught:
        model.model_validate_json('{"summary": "s", "approval": "nope", "comments": []}')
    assert _problems(caught.value) == [
        "$.approval: 'nope' is not one of ['approve', 'request_changes', 'comment']"
    ]
    for text in ['{"summary": NaN}', '{"summary": "s"', ""]:
        with pytest.raises(ValidationError) as caught:
            model.model_validate_json(text)
        assert caught.value.errors()[0]["type"] == "json_invalid"


def test_models_are_cached_by_schema_name_and_leniency() -> None:
    first = model_from_schema(PR_REVIEW, name="Cached")
    reordered = json.loads(json.dumps(PR_REVIEW, sort_keys=True))
    assert model_from_schema(reordered, name="Cached") is first
    assert model_from_schema(PR_REVIEW, name="Other") is not first
    assert model_from_schema(PR_REVIEW, name="Cached", lenient=True) is not first


def test_designer_schema_is_exposed() -> None:
    model = model_from_schema(PR_REVIEW)
    assert model.__agentshape_schema__ == PR_REVIEW
    assert model.model_json_schema() == PR_REVIEW
    item = type(model.model_validate(REVIEW).comments[0])
    assert item.model_json_schema() == PR_REVIEW["properties"]["comments"]["items"]
    assert model_from_schema(True).model_json_schema() == {}
    assert model_from_schema(False).model_json_schema() == {"not": {}}


def test_odd_property_names_get_aliases() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a-b": {"type": "integer"},
            "class": {"type": "string"},
            "json": {"type": "string"},
            "model_config": {"type": "string"},
            "Config": {"type": "string"},
            "1st": {"type": "string"},
            "_private": {"type": "string"},
            "to_data": {"type": "string"},
            "a_b": {"type": "integer"},
        },
        "required": ["a-b"],
    }
    model = model_from_schema(schema)
    value = {
        "a-b": 1,
        "class": "c",
        "json": "j",
        "model_config": "m",
        "Config": "C",
        "1st": "f",
        "_private": "p",
        "to_data": "t",
        "a_b": 2,
    }
    item = model.model_validate(value)
    assert (item.a_b_, item.a_b) == (1, 2)
    assert (item.class_, item.json_, item.model_config_) == ("c", "j", "m")
    assert (item.Config_, item.f_1st, item.f__private) == ("C", "f", "p")
    assert item.to_data_ == "t"
    assert item.to_data() == value
    assert item.model_dump(mode="json", by_alias=True, exclude_unset=True) == value
    with pytest.raises(ValidationError):
        model.model_validate({"a_b": 2})


def test_undeclared_properties_are_kept() -> None:
    model = model_from_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    item = model.model_validate({"a": 1, "x-extra": {"deep": [1, 2.0]}})
    assert item.to_data() == {"a": 1, "x-extra": {"deep": [1, 2.0]}}


def test_closed_objects_refuse_undeclared_properties() -> None:
    model = model_from_schema(
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    )
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"a": 1, "zz": 2})
    assert _problems(caught.value) == [
        "$: Additional properties are not allowed ('zz' was unexpected)"
    ]


TREE = {
    "definitions": {
        "node": {
            "type": "object",
            "required": ["value"],
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/definitions/node"}},
            },
        }
    },
    "type": "object",
    "properties": {"root": {"$ref": "#/definitions/node"}, "size": {"type": "integer"}},
}


def test_recursive_schemas_build_recursive_models() -> None:
    model = model_from_schema(TREE, name="Forest")
    value = {"root": {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}}
    forest = model.model_validate(value)
    grandchild = forest.root.children[0].children[0]
    assert type(grandchild).__name__ == "Node"
    assert type(grandchild) is type(forest.root)
    assert grandchild.value == 3
    assert forest.to_data() == value
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"root": {"value": 1, "children": [{"children": [{"value": "3"}]}]}})
    assert _problems(caught.value) == [
        "$.root.children[0]: 'value' is a required property",
        "$.root.children[0].children[0].value: '3' is not of type 'integer'",
    ]


def test_self_referencing_root() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "parts": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    model = model_from_schema(schema, name="Part")
    part = model.model_validate({"name": "car", "parts": [{"name": "wheel", "parts": []}]})
    assert part.parts[0].name == "wheel"
    assert isinstance(part.parts[0], model)
    with pytest.raises(ValidationError):
        model.model_validate({"parts": [{"name": 1}]})


def test_non_object_roots() -> None:
    listing = model_from_schema(
        {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}}
    )
    assert issubclass(listing, SchemaRootModel)
    rows = listing.model_validate([{"id": 1}, {"id": 2, "tag": "x"}])
    assert rows.root[1].id == 2
    assert rows.to_data() == [{"id": 1}, {"id": 2, "tag": "x"}]
    with pytest.raises(ValidationError):
        listing.model_validate([{"id": "1"}])

    email = model_from_schema({"type": "string", "format": "email"})
    assert email.model_validate_json('"ada@example.com"').to_data() == "ada@example.com"
    with pytest.raises(ValidationError):
        email.model_validate("ada")

    anything = model_from_schema(True)
    assert anything.model_validate({"x": [1, None]}).to_data() == {"x": [1, None]}
    with pytest.raises(ValidationError) as caught:
        model_from_schema(False).model_validate(1)
    assert _problems(caught.value) == ["$: False schema does not allow 1"]


def test_object_schema_without_type_accepts_non_objects() -> None:
    model = model_from_schema({"properties": {"a": {"type": "integer"}}, "required": ["a"]})
    assert issubclass(model, SchemaRootModel)
    assert model.model_validate("not an object").to_data() == "not an object"
    assert model.model_validate({"a": 1}).to_data() == {"a": 1}
    with pytest.raises(ValidationError):
        model.model_validate({"a": "1"})


def test_nullable_object_property() -> None:
    schema = {
        "type": "object",
        "properties": {
            "owner": {"type": ["object", "null"], "properties": {"id": {"type": "string"}}}
        },
    }
    model = model_from_schema(schema)
    assert model.model_validate({"owner": None}).owner is None
    assert model.model_validate({"owner": {"id": "u1"}}).owner.id == "u1"
    assert model.model_validate({"owner": None}).to_data() == {"owner": None}


# (schema, a valid value, an invalid value): keywords Pydantic has no type for.
KEYWORDS: list[tuple[dict[str, JsonValue], JsonValue, JsonValue]] = [
    (
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}},
        {"x-a": 1, "b": "s"},
        {"x-a": "1"},
    ),
    (
        {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
        {"ok": 1},
        {"Not OK": 1},
    ),
    (
        {"type": "object", "dependencies": {"card": ["billing"]}},
        {"card": 1, "billing": 2},
        {"card": 1},
    ),
    (
        {
            "type": "object",
            "if": {"properties": {"kind": {"const": "bug"}}},
            "then": {"required": ["severity"]},
            "else": {"not": {"required": ["severity"]}},
        },
        {"kind": "bug", "severity": 2},
        {"kind": "idea", "severity": 2},
    ),
    (
        {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        {"a": 1},
        {"a": 1, "b": 2},
    ),
    (
        {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
        {"b": 1},
        {"c": 1},
    ),
    (
        {"type": "object", "allOf": [{"properties": {"n": {"minimum": 1}}}, {"required": ["n"]}]},
        {"n": 1},
        {"n": 0},
    ),
    ({"type": "array", "uniqueItems": True, "contains": {"const": 1}}, [1, 2], [1, 1]),
    ({"type": "array", "items": [{"type": "string"}], "additionalItems": False}, ["a"], ["a", 1]),
    ({"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0}, 1.5, 0),
    ({"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"}, "abc", "abcd"),
    ({"type": "object", "minProperties": 1, "maxProperties": 2}, {"a": 1}, {}),
    ({"const": {"a": [1, 2]}}, {"a": [1, 2]}, {"a": [2, 1]}),
    ({"enum": [1, "1", None]}, None, 2),
    ({"type": "string", "format": "date-time"}, "2024-05-01T10:00:00Z", "yesterday"),
]


@pytest.mark.parametrize(("schema", "valid", "invalid"), KEYWORDS)
def test_every_keyword_is_enforced_by_the_model(
    schema: dict[str, JsonValue], valid: JsonValue, invalid: JsonValue
) -> None:
    model = model_from_schema(schema)
    assert model.model_validate(valid).to_data() == valid
    with pytest.raises(ValidationError):
        model.model_validate(invalid)


def test_lenient_models_do_not_assert_formats() -> None:
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}
    with pytest.raises(ValidationError):
        model_from_schema(schema).model_validate({"when": "soon"})
    assert model_from_schema(schema, lenient=True).model_validate({"when": "soon"}).to_data() == {
        "when": "soon"
    }


def test_draft4_schema_is_read_under_draft4() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 3, "exclusiveMaximum": True}},
    }
    model = model_from_schema(schema)
    assert model.model_validate({"n": 2}).to_data() == {"n": 2}
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"n": 3})
    assert _problems(caught.value) == ["$.n: 3 is greater than or equal to the maximum of 3"]


def test_nested_classes_validate_their_subschema_on_their_own() -> None:
    model = model_from_schema(PR_REVIEW, name="Review")
    item = type(model.model_validate(REVIEW).comments[0])
    ok = {"file": "a", "line": 1, "severity": "concern", "message": "m"}
    assert item.model_validate(ok).to_data() == ok
    with pytest.raises(ValidationError) as caught:
        item.model_validate({"file": "a", "line": 1, "severity": "meh", "message": "m"})
    assert _problems(caught.value) == [
        "$.severity: 'meh' is not one of ['nitpick', 'suggestion', 'concern', 'blocker']"
    ]


def test_root_checks_nested_instances_given_to_its_constructor() -> None:
    model = model_from_schema(PR_REVIEW, name="Review")
    item = type(model.model_validate(REVIEW).comments[0])
    good = item.model_validate({"file": "a", "line": 1, "severity": "concern", "message": "m"})
    review = model(summary="s", approval="approve", comments=[good])
    assert review.to_data() == {"summary": "s", "approval": "approve", "comments": [good.to_data()]}
    unchecked = item.model_construct(file="a", line="1", severity="concern", message="m")
    with pytest.raises(ValidationError) as caught:
        model(summary="s", approval="approve", comments=[unchecked])
    assert _problems(caught.value) == ["$.comments[0].line: '1' is not of type 'integer'"]


def test_models_embedded_in_other_pydantic_models_are_enforced() -> None:
    review_model = model_from_schema(PR_REVIEW, name="Review")

    class Run(BaseModel):
        id: str
        result: review_model

    run = Run.model_validate({"id": "r1", "result": REVIEW})
    assert run.result.to_data() == REVIEW
    with pytest.raises(ValidationError) as caught:
        Run.model_validate({"id": "r1", "result": {**REVIEW, "approval": "no"}})
    assert caught.value.errors()[0]["loc"] == ("result", "approval")


@pytest.fixture
def address_document() -> Iterator[str]:
    uri = "https://schemas.agentshape.test/model/address.json"
    register_schema(
        uri,
        {
            "definitions": {
                "address": {
                    "type": "object",
                    "required": ["city"],
                    "properties": {"city": {"type": "string"}},
                }
            }
        },
    )
    yield uri
    unregister_schema(uri)


def test_registered_remote_refs_become_nested_models(address_document: str) -> None:
    schema = {
        "type": "object",
        "properties": {"ship_to": {"$ref": f"{address_document}#/definitions/address"}},
    }
    model = model_from_schema(schema)
    order = model.model_validate({"ship_to": {"city": "Oslo"}})
    address = order.ship_to
    assert (type(address).__name__, address.city) == ("Address", "Oslo")
    with pytest.raises(ValidationError) as caught:
        type(address).model_validate({})
    assert _problems(caught.value) == ["$: 'city' is a required property"]


def test_unregistered_remote_ref_fails_at_build() -> None:
    with pytest.raises(SchemaReferenceError) as caught:
        model_from_schema({"$ref": "https://schemas.agentshape.test/model/missing.json"})
    assert caught.value.reference == "https://schemas.agentshape.test/model/missing.json"


def test_invalid_schema_fails_at_build_with_its_path() -> None:
    with pytest.raises(InvalidSchemaError) as caught:
        model_from_schema(
            {"type": "object", "properties": {"age": {"type": "int"}}}, source="agents/a.yml"
        )
    assert caught.value.path == "$.properties.age.type"
    assert caught.value.source == "agents/a.yml"
    with pytest.raises(InvalidSchemaError) as caught:
        model_from_schema({"a": float("nan")}, source="agents/b.yml")
    assert caught.value.source == "agents/b.yml"


def test_clear_caches_makes_the_next_load_cold() -> None:
    schema: dict[str, JsonValue] = {"type": "object", "properties": {"a": {"type": "string"}}}
    model = model_from_schema(schema, name="Cleared")
    compiled = compile_schema(schema)
    assert model_from_schema(schema, name="Cleared") is model
    assert compile_schema(schema) is compiled
    clear_caches()
    again = model_from_schema(schema, name="Cleared")
    assert again is not model
    assert compile_schema(schema) is not compiled
    assert model_from_schema(schema, name="Cleared") is again
    # Models handed out before keep working.
    assert model.model_validate({"a": "x"}).a == "x"
    with pytest.raises(ValidationError):
        model.model_validate({"a": 1})


def test_annex_b_patterns_build_models_with_the_designers_schema() -> None:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {
            "path": {
                "type": "object",
                "properties": {"selector": {"type": "string", "pattern": "^\\[\\*]$"}},
                "patternProperties": {"^x}": {"type": "integer"}},
            }
        },
    }
    original = copy.deepcopy(schema)
    model = model_from_schema(schema, name="Config")
    assert model.__agentshape_schema__ == original
    assert model.model_json_schema() == original
    value = model.model_validate({"path": {"selector": "[*]", "x}1": 2}})
    nested = type(value.path)
    assert nested.__agentshape_schema__ == original["properties"]["path"]
    with pytest.raises(ValidationError) as caught:
        nested.model_validate({"selector": "[*", "x}": "s"})
    assert [(e["loc"], e["msg"], e["ctx"]["schema_path"]) for e in caught.value.errors()] == [
        (("selector",), "'[*' does not match '^\\\\[\\\\*]$'", "$.properties.selector.pattern"),
        (("x}",), "'s' is not of type 'integer'", '$.patternProperties["^x}"].type'),
    ]


ARRAY_CYCLES: list[tuple[str, dict[str, JsonValue], JsonValue, JsonValue]] = [
    (
        "root array of itself",
        {"type": "array", "items": {"$ref": "#"}},
        [[[]], []],
        [[1]],
    ),
    (
        "definition that is an array of itself",
        {
            "definitions": {"tree": {"type": "array", "items": {"$ref": "#/definitions/tree"}}},
            "type": "object",
            "properties": {"x": {"$ref": "#/definitions/tree"}},
        },
        {"x": [[[]], []]},
        {"x": [["leaf"]]},
    ),
    (
        "two definitions, arrays of each other, nullable, 2020-12",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {
                "a": {"type": ["array", "null"], "items": {"$ref": "#/$defs/b"}},
                "b": {"type": "array", "items": {"allOf": [{"$ref": "#/$defs/a"}]}},
            },
            "$ref": "#/$defs/a",
        },
        [[None, [[]]]],
        [[None, [[3]]]],
    ),
]


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [case[1:] for case in ARRAY_CYCLES],
    ids=[case[0] for case in ARRAY_CYCLES],
)
def test_recursion_through_arrays_alone_builds_a_model(
    schema: dict[str, JsonValue], good: JsonValue, bad: JsonValue
) -> None:
    clear_caches()
    model = model_from_schema(schema)
    assert model.model_validate(good).to_data() == good
    assert model.model_validate_json(json.dumps(good)).to_data() == good
    with pytest.raises(ValidationError):
        model.model_validate(bad)
    assert compile_schema(schema).is_valid(good)
    assert not compile_schema(schema).is_valid(bad)


def test_recursion_through_an_array_and_an_object_keeps_typed_models() -> None:
    schema: dict[str, JsonValue] = {
        "definitions": {
            "forest": {"type": "array", "items": {"$ref": "#/definitions/node"}},
            "node": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "kids": {"$ref": "#/definitions/forest"},
                },
            },
        },
        "type": "object",
        "properties": {"roots": {"$ref": "#/definitions/forest"}},
    }
    data = {"roots": [{"name": "a", "kids": [{"name": "b", "kids": []}]}]}
    model = model_from_schema(schema)
    built = model.model_validate(data)
    assert built.roots[0].kids[0].name == "b"  # type: ignore[attr-defined]
    assert built.to_data() == data
