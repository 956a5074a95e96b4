from __future__ import annotations

import pytest

from agent_core._schema_walk import (
    child_path,
    fragment_keys,
    offline_validator,
    resolve_local_ref,
    subschemas,
    without_own_id,
)


def test_child_path_spells_paths_like_validation_does() -> None:
    assert child_path("$", "properties") == "$.properties"
    assert child_path("$.items", 0) == "$.items[0]"
    assert child_path("$.properties", "date-of-birth") == '$.properties["date-of-birth"]'
    assert child_path("$", "$defs") == '$["$defs"]'


def test_fragment_keys_percent_decode_then_unescape_each_token() -> None:
    assert fragment_keys("") == []
    assert fragment_keys("/$defs/a%20b/c~1d/e~0f/0") == ["$defs", "a b", "c/d", "e~f", "0"]
    assert fragment_keys("/a%2Fb/~01") == ["a/b", "~1"]


def test_without_own_id_keeps_only_the_fragment_of_a_same_document_ref() -> None:
    root_id = "https://example.com/order.json"
    assert without_own_id(f"{root_id}#/$defs/a", root_id) == "#/$defs/a"
    assert without_own_id(f"{root_id}#/$defs/a", root_id + "#") == "#/$defs/a"
    assert without_own_id("other.json#/$defs/a", root_id) == "other.json#/$defs/a"
    assert without_own_id(f"{root_id}#/x", None) == f"{root_id}#/x"
    assert without_own_id(f"{root_id}#/x", "") == f"{root_id}#/x"


def test_subschemas_visits_schema_positions_only() -> None:
    schema = {
        "type": "object",
        "properties": {"enum": {"type": "string", "enum": [{"type": "x"}]}},
        "items": [{"type": "integer"}],
        "anyOf": [True],
        "$defs": {"A": {"not": {"type": "null"}}},
        "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
        "default": {"properties": {}},
    }
    assert [path for path, _ in subschemas(schema)] == [
        "$",
        "$.properties.enum",
        "$.items[0]",
        "$.anyOf[0]",
        '$["$defs"].A',
        '$["$defs"].A.not',
        "$.dependencies.c",
    ]


def test_resolve_local_ref() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "$defs": {"a/b": {"type": "string"}, "c d": {"type": "integer"}},
        "items": [{"type": "null"}],
    }
    assert resolve_local_ref(schema, "#") == (schema, "")
    assert resolve_local_ref(schema, "#/$defs/a~1b") == ({"type": "string"}, "/$defs/a~1b")
    assert resolve_local_ref(schema, "#/$defs/c%20d") == ({"type": "integer"}, "/$defs/c%20d")
    assert resolve_local_ref(schema, "#/items/0") == ({"type": "null"}, "/items/0")
    assert resolve_local_ref(schema, "https://example.com/root.json#/$defs/a~1b") is not None
    assert resolve_local_ref(schema, "#/$defs/missing") is None
    assert resolve_local_ref(schema, "other.json#/x") is None
    assert resolve_local_ref(schema, "#anchor") is None


def test_offline_validator_follows_the_draft_and_never_fetches() -> None:
    assert not offline_validator({"type": "string", "format": "email"}).is_valid("x")
    modern = {"$schema": "https://json-schema.org/draft/2020-12/schema", "format": "email"}
    assert offline_validator(modern).is_valid("x")
    with pytest.raises(ValueError, match="not fetched"):
        offline_validator({"$ref": "http://127.0.0.1:9/schema.json"})
