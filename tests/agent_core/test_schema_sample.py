from __future__ import annotations

import random
from typing import Any

from agent_core import validate_output
from agent_core._schema_sample import generate_value, invalid_value

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "tags", "when"],
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1},
        "when": {"type": "string", "format": "date"},
        "score": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
    },
    "additionalProperties": False,
}


def test_generated_values_meet_the_schema() -> None:
    for seed in range(20):
        value = generate_value(SCHEMA, rng=random.Random(seed))
        assert validate_output(value, SCHEMA) == []


def test_generation_is_deterministic_for_a_seed() -> None:
    first = generate_value(SCHEMA, rng=random.Random(7))
    assert generate_value(SCHEMA, rng=random.Random(7)) == first


def test_an_invalid_value_breaks_the_schema() -> None:
    valid = generate_value(SCHEMA, rng=random.Random(1))
    assert validate_output(invalid_value(SCHEMA, valid), SCHEMA) != []


def test_huge_minimums_give_a_short_invalid_value_instead_of_minutes_of_work() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "required": ["xs", "text", "more"],
        "properties": {
            "xs": {"type": "array", "minItems": 100_000_000, "items": {"type": "integer"}},
            "text": {"type": "string", "minLength": 1_000_000_000},
            "more": {"type": "object", "minProperties": 100_000_000},
        },
    }
    value = generate_value(schema)

    assert isinstance(value, dict)
    assert set(value) == {"xs", "text", "more"}
    assert all(part is None or len(part) <= 100_000 for part in value.values())


def test_a_pattern_with_a_huge_repeat_count_is_not_sampled() -> None:
    value = generate_value({"type": "string", "pattern": "^a{1000000000}$"})
    assert isinstance(value, str) and len(value) < 1_000
    assert generate_value({"type": "string", "pattern": "^[a-z]{3}-[0-9]{2}$"})[3] == "-"
