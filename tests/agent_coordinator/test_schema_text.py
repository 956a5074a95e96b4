"""Schema text as the editor sends it: parsed, or a syntax problem at its line; paths to lines."""

from __future__ import annotations

import json

import pytest

from agent_coordinator._schema_text import (
    TextBudget,
    TextOverBudget,
    line_of_path,
    parse_schema_text,
)

SCHEMA = {
    "type": "object",
    "required": ["a"],
    "properties": {"a": {"type": "integer"}, "odd key": {"minimum": 1}},
}


@pytest.mark.parametrize(
    ("path", "keyword", "line"),
    [
        ("$", None, 1),
        ("$.required[0]", None, 4),
        ("$.properties.a", None, 7),
        ("$.properties.a", "type", 8),
        ('$.properties["odd key"]', "minimum", 11),
        ("$.properties.missing", None, 6),
        ("$.required[9]", None, 3),
    ],
)
def test_each_path_is_found_at_its_line(path: str, keyword: str | None, line: int) -> None:
    parsed = parse_schema_text(json.dumps(SCHEMA, indent=2), "json")
    assert parsed.value == SCHEMA
    assert line_of_path(parsed.tree, path, keyword) == line


def test_yaml_and_its_lines() -> None:
    parsed = parse_schema_text("type: object\nproperties:\n  a:\n    type: strng\n", "yaml")
    assert parsed.problem is None
    assert line_of_path(parsed.tree, "$.properties.a", "type") == 4


@pytest.mark.parametrize(
    ("text", "fmt", "message", "line"),
    [
        ('{\n  "type": "object",\n}', "json", "not valid JSON: Expecting property name", 3),
        ("type: object\n  bad: [\n", "yaml", "not valid YAML", None),
        ("when: 2025-01-05\n", "yaml", "the YAML holds values JSON cannot", None),
    ],
)
def test_bad_text_is_a_problem_not_an_exception(
    text: str, fmt: str, message: str, line: int | None
) -> None:
    parsed = parse_schema_text(text, fmt)  # type: ignore[arg-type]
    assert parsed.problem is not None
    assert parsed.problem.message.startswith(message)
    if line is not None:
        assert parsed.problem.line == line


@pytest.mark.parametrize(
    ("text", "fmt", "limit"),
    [
        ("[" * 65 + "]" * 65, "yaml", "max_depth"),
        ("[" * 5000 + "]" * 5000, "json", "max_depth"),
        ("\t" + "[" * 5000 + "]" * 5000, "json", "max_depth"),
        ("a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n", "yaml", "max_values"),
    ],
)
def test_text_past_the_budget_raises_naming_the_limit(text: str, fmt: str, limit: str) -> None:
    budget = TextBudget(max_depth=64, max_values=80)
    with pytest.raises(TextOverBudget) as raised:
        parse_schema_text(text, fmt, budget)  # type: ignore[arg-type]
    assert raised.value.limit == limit
    assert str(getattr(budget, limit)) in raised.value.message


def test_aliases_within_the_budget_are_expanded() -> None:
    parsed = parse_schema_text(
        "a: &x {b: [1, 2]}\nc: *x\n", "yaml", TextBudget(max_values=13)
    )  # exactly
    assert parsed.value == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}}
    assert parse_schema_text("[" * 64 + "]" * 64, "json").value is not None
