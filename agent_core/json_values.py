"""Small facts about JSON values the schema checks need: types, equality, numbers, patterns."""

from __future__ import annotations

import re
from collections.abc import Mapping

import jsonschema_rs
from pydantic import JsonValue


def _is_number(value: JsonValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_type(value: JsonValue) -> str:
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
    kind = _json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


def _json_equal(left: JsonValue, right: JsonValue) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


def _types_text(types: list[str]) -> str:
    return types[0] if len(types) == 1 else " or ".join(types)


def _is_regex(pattern: str) -> bool:
    try:
        jsonschema_rs.validator_for({"pattern": pattern})
    except jsonschema_rs.ValidationError:
        return False
    return True


def _matches_any(name: str, patterns: Mapping[str, JsonValue]) -> bool:
    for pattern in patterns:
        try:
            if re.search(pattern, name):
                return True
        except re.error:
            continue
    return False
