from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import JsonValue, ValidationError

from agent_core import compile_schema, format_path, model_from_schema, validate_output
from agent_core._surrogates import (
    escape_surrogates,
    has_surrogates,
    mask_surrogates,
)

HALF = json.loads('"\\ud83d"')
LOW = json.loads('"\\udc00"')

SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 2},
        "tags": {
            "type": "array",
            "items": {"type": "string", "pattern": "^.$"},
            "uniqueItems": True,
        },
        "choice": {"enum": ["a", "\ue000"]},
        "note": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    "additionalProperties": {"type": "integer"},
    "propertyNames": {"maxLength": 5},
}

CASES: list[tuple[JsonValue, bool]] = [
    ({"title": HALF}, True),
    ({"title": LOW + HALF}, True),  # two code points (not a pair), as JSON Schema counts them
    ({"title": HALF * 3}, False),
    ({"tags": [HALF, LOW]}, True),
    ({"tags": [HALF, HALF]}, False),  # the same string twice
    ({"tags": [HALF + "x"]}, False),
    ({"choice": HALF}, False),  # the stand-in never equals a schema value
    ({HALF: 1}, True),
    ({HALF: "x"}, False),
    ({HALF * 6: 1}, False),
    ({"note": {"text": HALF, HALF: [LOW]}}, True),
    (HALF, False),
]


@pytest.mark.parametrize(("value", "valid"), CASES, ids=[repr(case[0]) for case in CASES])
def test_validator_and_dynamic_model_agree_on_lone_surrogates(
    value: JsonValue, valid: bool
) -> None:
    compiled = compile_schema(SCHEMA)
    assert compiled.is_valid(value) is valid
    issues = [str(issue) for issue in compiled.issues(value)]
    assert (issues == []) is valid
    assert all(text.isascii() for text in issues), issues
    model = model_from_schema(SCHEMA)
    if valid:
        assert model.model_validate(value).to_data() == value
        assert model.model_validate_json(json.dumps(value)).to_data() == value
    else:
        with pytest.raises(ValidationError) as caught:
            model.model_validate(value)
        assert [error["ctx"]["path"] for error in caught.value.errors()]
        str(caught.value)  # renders without UnicodeEncodeError
        with pytest.raises(ValidationError):
            model.model_validate_json(json.dumps(value))


def test_issues_name_surrogates_escaped_with_the_original_path() -> None:
    value: dict[str, Any] = {"title": HALF * 3, HALF + "key": "x"}
    issues = validate_output(value, SCHEMA)
    assert [str(issue) for issue in issues] == [
        "$.title: '\\ud83d\\ud83d\\ud83d' is too long",
        "$[\"\\ud83dkey\"]: 'x' is not of type 'integer'",
    ]
    details = compile_schema(SCHEMA).explain(value)
    assert details[1].parts == (HALF + "key",)  # the real key, to look the value up by
    assert details[0].value == HALF * 3


def test_format_path_escapes_a_surrogate_key() -> None:
    assert format_path(["a", HALF]) == '$.a["\\ud83d"]'


def test_escape_and_detection() -> None:
    assert has_surrogates("a" + HALF) and not has_surrogates("ascii") and not has_surrogates("é😀")
    assert escape_surrogates("x" + HALF + "y" + LOW) == "x\\ud83dy\\udc00"
    assert escape_surrogates("é😀") == "é😀"
    assert mask_surrogates({"a": ["b"]}) is None


def test_stand_ins_avoid_characters_the_value_and_schema_use() -> None:
    masked = mask_surrogates({"\ue000": HALF, "k": "\ue001"}, ["\ue002"])
    assert masked is not None
    assert masked.value == {"\ue000": "\ue003", "k": "\ue001"}
    assert masked.key("\ue003") == HALF
    assert masked.text("'\\ue003' and \ue003") == "'\\ud83d' and \\ud83d"


def test_model_json_text_with_a_lone_surrogate_escape_is_json() -> None:
    model = model_from_schema(SCHEMA)
    assert model.model_validate_json('{"title": "\\ud83d"}').to_data() == {"title": HALF}
    with pytest.raises(ValidationError, match="json_invalid"):
        model.model_validate_json('{"title": "\\ud83d", "n": NaN}')
