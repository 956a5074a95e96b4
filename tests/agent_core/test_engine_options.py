from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from agent_core import (
    compile_for_provider,
    compile_schema,
    model_from_schema,
    register_schema,
    unregister_schema,
)
from agent_core._schema_documents import (
    DRAFT_URIS,
    custom_meta_schema,
    schema_draft,
    validation_vocabulary,
)

DEPENDENCIES = {"dependencies": {"bar": ["foo"], "baz": {"required": ["qux"]}}}

NO_VALIDATION = "https://example.com/meta/no-validation"
FORMAT_ASSERTION = "https://example.com/meta/format-assertion"


@pytest.fixture
def custom_meta_schemas() -> Iterator[None]:
    register_schema(
        NO_VALIDATION,
        {
            "$schema": DRAFT_URIS[2020],
            "$id": NO_VALIDATION,
            "$vocabulary": {
                "https://json-schema.org/draft/2020-12/vocab/core": True,
                "https://json-schema.org/draft/2020-12/vocab/applicator": True,
            },
            "$dynamicAnchor": "meta",
            "allOf": [
                {"$ref": "https://json-schema.org/draft/2020-12/meta/core"},
                {"$ref": "https://json-schema.org/draft/2020-12/meta/applicator"},
            ],
        },
    )
    register_schema(
        FORMAT_ASSERTION,
        {
            "$schema": DRAFT_URIS[2020],
            "$id": FORMAT_ASSERTION,
            "$vocabulary": {
                "https://json-schema.org/draft/2020-12/vocab/core": True,
                "https://json-schema.org/draft/2020-12/vocab/format-assertion": True,
            },
            "$dynamicAnchor": "meta",
            "allOf": [
                {"$ref": "https://json-schema.org/draft/2020-12/meta/core"},
                {"$ref": "https://json-schema.org/draft/2020-12/meta/format-assertion"},
            ],
        },
    )
    yield
    unregister_schema(NO_VALIDATION)
    unregister_schema(FORMAT_ASSERTION)


@pytest.mark.parametrize("draft", [4, 6, 7])
def test_dependencies_is_enforced_up_to_draft7(draft: int) -> None:
    schema = {"$schema": DRAFT_URIS[draft], **DEPENDENCIES}
    compiled = compile_schema(schema)
    assert [str(issue) for issue in compiled.issues({"bar": 1})] == [
        "$: 'foo' is a dependency of 'bar'"
    ]
    assert not compiled.is_valid({"baz": 1})
    with pytest.raises(ValidationError):
        model_from_schema(schema).model_validate({"bar": 1})


@pytest.mark.parametrize("draft", [2019, 2020])
def test_dependencies_is_not_a_keyword_in_2019_09_and_2020_12(draft: int) -> None:
    schema = {"$schema": DRAFT_URIS[draft], **DEPENDENCIES}
    compiled = compile_schema(schema)
    assert compiled.is_valid({"bar": 1})
    assert compiled.is_valid({"baz": 1})
    assert compiled.issues({"bar": 1}) == []
    assert model_from_schema(schema).model_validate({"bar": 1}).to_data() == {"bar": 1}
    # Its replacements are keywords there, and a property named "dependencies" is still checked.
    replaced = {
        "$schema": DRAFT_URIS[draft],
        "dependentRequired": {"bar": ["foo"]},
        "properties": {"dependencies": {"type": "string"}},
    }
    assert not compile_schema(replaced).is_valid({"bar": 1})
    assert not compile_schema(replaced).is_valid({"dependencies": 1})


def test_strict_mode_drops_dependencies_after_draft7_and_blocks_it_before() -> None:
    base = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    base["additionalProperties"] = False
    later = compile_for_provider({"$schema": DRAFT_URIS[2020], **base, **DEPENDENCIES}, "openai")
    assert later.strict
    assert any(n.keyword == "dependencies" and n.action == "dropped" for n in later.report.notes)
    earlier = compile_for_provider({**base, **DEPENDENCIES}, "openai")
    assert not earlier.strict
    assert "dependencies" in str(earlier.report)


@pytest.mark.parametrize("draft", [4, 6, 7, 2019])
def test_formats_are_asserted_up_to_2019_09(draft: int) -> None:
    compiled = compile_schema({"$schema": DRAFT_URIS[draft], "format": "ipv4"})
    assert not compiled.is_valid("not-an-ip")
    assert compiled.is_valid("127.0.0.1")
    assert compile_schema({"$schema": DRAFT_URIS[draft], "format": "ipv4"}, lenient=True).is_valid(
        "not-an-ip"
    )


def test_2020_12_format_is_an_annotation_by_default() -> None:
    schema = {"$schema": DRAFT_URIS[2020], "format": "ipv4"}
    assert compile_schema(schema).is_valid("not-an-ip")
    assert model_from_schema(schema).model_validate("not-an-ip").to_data() == "not-an-ip"


def test_2020_12_format_assertion_vocabulary_asserts(custom_meta_schemas: None) -> None:
    schema = {"$schema": FORMAT_ASSERTION, "format": "ipv4"}
    assert schema_draft(schema) == 2020
    assert custom_meta_schema(schema) == FORMAT_ASSERTION
    compiled = compile_schema(schema)
    assert not compiled.is_valid("not-an-ip")
    assert compiled.is_valid("127.0.0.1")
    assert compile_schema(schema, lenient=True).is_valid("not-an-ip")


def test_a_custom_meta_schema_without_validation_vocabulary(custom_meta_schemas: None) -> None:
    schema = {
        "$schema": NO_VALIDATION,
        "type": "object",
        "properties": {"bad": False, "n": {"type": "object", "properties": {"m": {"minimum": 10}}}},
    }
    assert schema_draft(schema) == 2020
    assert not validation_vocabulary(schema)
    compiled = compile_schema(schema)
    assert compiled.is_valid({"n": {"m": 1}})
    assert compiled.is_valid("not an object: type is not a keyword here")
    assert not compiled.is_valid({"bad": 1})
    model = model_from_schema(schema)
    assert model.model_validate({"n": {"m": 1}}).to_data() == {"n": {"m": 1}}
    assert model.model_validate("text").to_data() == "text"
    with pytest.raises(ValidationError, match="bad"):
        model.model_validate({"bad": 1})
    report = compile_for_provider(schema, "openai").report
    assert not report.strict
    assert "custom meta-schema" in str(report)


def test_an_unregistered_meta_schema_is_still_read_as_draft7() -> None:
    schema = {"$schema": "https://example.com/unknown-meta", "format": "ipv4"}
    assert schema_draft(schema) == 7
    assert custom_meta_schema(schema) is None
    assert validation_vocabulary(schema)
    assert not compile_schema(schema).is_valid("not-an-ip")
