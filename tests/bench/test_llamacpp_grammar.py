from __future__ import annotations

from bench.llamacpp_grammar import grammar_notes


def test_a_schema_the_grammar_covers_has_no_notes() -> None:
    schema = {
        "type": "object",
        "required": ["when", "tags", "kind"],
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
            "kind": {"enum": ["a", "b"]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        },
        "additionalProperties": False,
    }
    assert grammar_notes(schema) == []


def test_each_keyword_the_grammar_leaves_out_is_named_at_its_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
            "ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            "mail": {"type": "string", "format": "email"},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "code": {"type": "string", "pattern": "^a+$", "maxLength": 4},
            "ref": {"$ref": "#/definitions/x", "required": ["y"]},
        },
        "definitions": {"x": {"type": "object"}},
    }
    assert grammar_notes(schema) == [
        "$.properties.score: minimum is not in the grammar",
        "$.properties.score: maximum is not in the grammar",
        "$.properties.ids: uniqueItems is not in the grammar",
        "$.properties.mail: format 'email' is not in the grammar",
        "$.properties.either: oneOf is read as anyOf (more than one branch may match)",
        "$.properties.code: maxLength beside pattern not in the grammar",
        "$.properties.ref: required beside $ref is not in the grammar",
    ]
