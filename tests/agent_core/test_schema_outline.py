from __future__ import annotations

import json

from agent_core._schema_outline import schema_outline

REVIEW = {
    "type": "object",
    "additionalProperties": False,
    "required": ["summary", "score", "findings"],
    "properties": {
        "summary": {"type": "string", "minLength": 50, "description": "What the change does."},
        "score": {"type": "integer", "minimum": 0, "maximum": 100},
        "verdict": {"enum": ["approve", "reject", None]},
        "findings": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"$ref": "#/$defs/finding"},
        },
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "extra": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "$defs": {
        "finding": {
            "type": "object",
            "additionalProperties": False,
            "required": ["line"],
            "properties": {
                "line": {"type": "integer", "minimum": 1},
                "kind": {"const": "bug"},
                "id": {"type": ["string", "null"], "pattern": "^[A-Z]+-[0-9]+$"},
            },
        }
    },
}


def test_an_object_outline_says_types_optionality_and_constraints() -> None:
    assert schema_outline(REVIEW) == (
        "{\n"
        "  summary: string  // minLength 50; What the change does.\n"
        "  score: integer  // 0 <= x <= 100\n"
        '  verdict?: "approve" | "reject" | null\n'
        "  findings: {\n"
        "    line: integer  // 1 <= x\n"
        '    kind?: "bug"\n'
        '    id?: string | null  // pattern "^[A-Z]+-[0-9]+$"\n'
        "  }[]  // minItems 1; uniqueItems\n"
        "  ratio?: number  // 0 < x < 1\n"
        "  extra?: { [key: string]: string }\n"
        "}"
    )


def test_the_outline_is_far_shorter_than_the_schema_it_renders() -> None:
    assert len(schema_outline(REVIEW)) * 3 < len(json.dumps(REVIEW, indent=2))


def test_a_recursive_reference_is_named_instead_of_written_out_again() -> None:
    tree = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
    }
    assert schema_outline(tree) == ("{\n  name: string\n  children?: Node[]\n}")


def test_roots_that_are_not_objects() -> None:
    assert schema_outline(True) == "any"
    assert schema_outline(False) == "never"
    assert schema_outline({"type": "array", "items": {"type": "integer"}}) == "integer[]"
    assert schema_outline({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]}) == (
        "string /* maxLength 3 */ | integer"
    )
    assert schema_outline(
        {"type": "array", "prefixItems": [{"type": "string"}], "items": False}
    ) == ("[string]")
    assert schema_outline({"$ref": "#/$defs/missing"}) == "any"
