"""Small facts about JSON values the schema checks need: types, equality, numbers, patterns."""

from __future__ import annotations

from collections.abc import Mapping

import jsonschema_rs
from pydantic import JsonValue

from agent_core._ecma_patterns import annex_b_escaped


def _is_number(value: JsonValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_type(value: JsonValue) -> str:
    """Return the JSON Schema type of ``value`` (a float with no fraction is an ``integer``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _matches_types(value: JsonValue, types: list[str]) -> bool:
    kind = json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


def _json_equal(left: JsonValue, right: JsonValue) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


def _json_key(value: JsonValue) -> object:
    """Return a hashable key equal for two values exactly when :func:`_json_equal` holds."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", int(value) if isinstance(value, float) and value.is_integer() else value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_json_key(item) for item in value))
    return ("object", frozenset((key, _json_key(item)) for key, item in value.items()))


def _types_text(types: list[str]) -> str:
    return types[0] if len(types) == 1 else " or ".join(types)


def _is_regex(pattern: str) -> bool:
    try:
        jsonschema_rs.validator_for({"pattern": pattern})
    except jsonschema_rs.ValidationError:
        return False
    return True


def _pattern_matchers(patterns: Mapping[str, JsonValue]) -> list[jsonschema_rs.Validator]:
    """Compile ``patternProperties`` keys once, with the validation engine's own regexes.

    Not Python's ``re``: it could hang on ``^(a+)+$`` with no way to stop it.
    """
    matchers = []
    for pattern in patterns:
        try:
            matchers.append(jsonschema_rs.validator_for({"pattern": annex_b_escaped(pattern)}))
        except jsonschema_rs.ValidationError:
            continue
    return matchers


def _matches_any(name: str, matchers: list[jsonschema_rs.Validator]) -> bool:
    """Whether ``name`` matches one of the compiled ``patternProperties`` keys."""
    for matcher in matchers:
        try:
            if matcher.is_valid(name):
                return True
        except ValueError:  # the backtracking bound was reached: not shown to match
            continue
    return False
