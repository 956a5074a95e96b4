"""The one bounded JSON reader and the writers that never raise."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_contracts import ConfigFileError
from agent_core._json_text import (
    MAX_JSON_DEPTH,
    dump_json,
    encodable,
    encodable_data,
    json_body,
    parse_json,
    read_checked_json,
    unencodable,
    value_problem,
)


def nested(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def test_a_lone_surrogate_is_written_as_its_json_escape_and_reads_back_the_same() -> None:
    value = {"title": "half \ud83d", "name": "café"}
    text = dump_json(value, indent=2)

    assert '"half \\ud83d"' in text and '"café"' in text
    text.encode("utf-8")
    assert json.loads(text) == value


def test_nan_and_infinity_are_written_as_null_so_the_json_stays_valid() -> None:
    assert dump_json({"a": float("nan"), "b": [float("inf")], "c": 1.5}) == (
        '{"a": null, "b": [null], "c": 1.5}'
    )


def test_encodable_escapes_only_what_utf8_cannot_encode() -> None:
    assert encodable("plain é") == "plain é"
    assert encodable("a\udce9b") == "a\\udce9b"


def test_unencodable_names_the_byte_or_the_surrogate() -> None:
    assert unencodable("fine") is None
    assert unencodable("caf\udce9") == "byte 0xe9 at character 4"
    assert unencodable("x\ud800") == "a lone surrogate at character 2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,\n "b": }', "not valid JSON: Expecting value (line 2, column 7)"),
        ("[" * 5000 + "]" * 5000, f"not usable JSON: it nests deeper than {MAX_JSON_DEPTH} levels"),
        ("[" * 300 + "]" * 300, f"not usable JSON: it nests deeper than {MAX_JSON_DEPTH} levels"),
        (
            "9" * 5000,
            "not usable JSON: Exceeds the limit (4300 digits) for integer string conversion: "
            "value has 5000 digits",
        ),
        ('{"a": NaN}', "not usable JSON: NaN is not a JSON number"),
        ("[1e999]", "not usable JSON: the number 1e999 is too large"),
        (b'"\xff"', "not UTF-8 text (byte 1 cannot be decoded)"),
    ],
    ids=["invalid", "deep", "deep-but-parseable", "huge-integer", "nan", "overflow", "bytes"],
)
def test_parse_json_gives_one_typed_error_naming_the_source(
    text: str | bytes, message: str
) -> None:
    with pytest.raises(ConfigFileError) as caught:
        parse_json(text, source="input.json")
    assert caught.value.source == "input.json"
    assert caught.value.message == message


def test_parse_json_of_one_line_reports_the_files_line() -> None:
    with pytest.raises(ConfigFileError) as caught:
        parse_json('{"task": }', source="tasks.jsonl", line=7)
    assert str(caught.value) == "tasks.jsonl:7: not valid JSON: Expecting value (column 10)"


def test_parse_json_reads_what_is_within_bounds() -> None:
    assert parse_json(json.dumps(nested(MAX_JSON_DEPTH)), source="x") == nested(MAX_JSON_DEPTH)


def test_value_problem_finds_depth_and_non_numbers_without_recursing() -> None:
    assert value_problem({"a": [1, 2.5, "x"]}) is None
    assert value_problem(nested(100_000)) == f"it nests deeper than {MAX_JSON_DEPTH} levels"
    assert value_problem({"a": float("nan")}) == "it holds nan, which is not a JSON number"


def test_value_problem_is_the_same_for_large_values_and_types_beyond_plain_json() -> None:
    comments = [{"file": "a.py", "line": n, "ok": True, "note": None} for n in range(500)]
    assert value_problem({"comments": comments, "score": 2.5}) is None
    comments[321]["score"] = float("-inf")
    assert value_problem({"comments": comments}) == "it holds -inf, which is not a JSON number"
    assert value_problem(nested(MAX_JSON_DEPTH)) is None
    assert value_problem(nested(MAX_JSON_DEPTH + 1)) is not None
    deep_in_a_subclass = OrderedDict(a=nested(MAX_JSON_DEPTH + 5))
    assert value_problem([deep_in_a_subclass]) == f"it nests deeper than {MAX_JSON_DEPTH} levels"
    assert value_problem((1, 2)) is None  # not JSON data, but nothing the walk refuses


def test_json_body_is_compact_utf8_with_lone_surrogates_sent_as_their_escape_text() -> None:
    clean = {"model": "m", "messages": [{"role": "user", "content": "café \u2028"}], "n": 1.5}
    assert json_body(clean) == json.dumps(clean, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8"
    )
    dirty = {"k\udce9": ["ok", "half \ud83d"], "n": None}
    sent = json_body(dirty)
    assert sent == b'{"k\\\\udce9":["ok","half \\\\ud83d"],"n":null}'
    assert json.loads(sent) == encodable_data(dirty)


def test_json_body_refuses_what_json_cannot_express() -> None:
    with pytest.raises(ValueError):
        json_body({"temperature": float("nan")})
    with pytest.raises(ValueError):
        json_body({"scores": [1.0, -float("inf")]})
    with pytest.raises(TypeError):
        json_body({"when": object()})


def test_json_body_reads_back_as_the_data_it_was_given() -> None:
    # NaN and Infinity as words in text are text; big integers and floats keep their value.
    data = {"text": "NaN or -Infinity?", "big": 2**100, "tiny": 1e-07, "huge": 1e16, "z": -0.0}
    sent = json_body(data)
    assert json.loads(sent) == data
    assert b'"NaN or -Infinity?"' in sent


def test_encodable_data_escapes_strings_and_keys_and_copies_only_when_needed() -> None:
    clean = {"a": ["x", 1, None], "b": {"c": "é"}}
    assert encodable_data(clean) is clean
    dirty = {"k\udce9": ["ok", "half \ud83d"], "n": 2}
    assert encodable_data(dirty) == {"k\\udce9": ["ok", "half \\ud83d"], "n": 2}


# read_checked_json: vouches without a walk only for what the exact reading accepts -----------


def exact(text: str) -> tuple[Any, str | None]:
    """The exact reading: Python's parser (NaN and all), then the walk."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        return None, str(error)
    return value, value_problem(value)


def objects(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def arrays(levels: int) -> str:
    return "[" * levels + "]" * levels


def mixed(levels: int) -> str:
    opening = "".join('{"a":' if i % 2 else "[" for i in range(levels))
    return opening + "[]" + "".join("}" if i % 2 else "]" for i in reversed(range(levels)))


EDGES = [
    *(
        f(n)
        for f in (objects, arrays, mixed)
        for n in range(MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH + 4)
    ),
    "1e999",
    "-1E+400",
    "1e308",
    "1e-999",
    "1" * 400,
    "1" * 400 + ".5",
    "0." + "0" * 350 + "1",
    '{"a": NaN}',
    "[Infinity]",
    "[-Infinity]",
    '"\\ud800"',
    "1,2",
    "",
    " ",
    "[1]]",
    "{} ",
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_read_checked_json_at_the_edges(text: str) -> None:
    checked = read_checked_json(text)
    value, problem = exact(text)
    if checked is not None:
        assert problem is None and checked[0] == value


def test_read_checked_json_reads_ordinary_output_and_refuses_what_the_walk_would() -> None:
    text = json.dumps({"comments": [{"line": n, "body": "x" * n} for n in range(500)]})
    assert read_checked_json(text) == (json.loads(text),)
    assert read_checked_json(arrays(MAX_JSON_DEPTH)) == (json.loads(arrays(MAX_JSON_DEPTH)),)
    for refused in (arrays(MAX_JSON_DEPTH + 1), "1e999", "[NaN]", "1,2"):
        assert read_checked_json(refused) is None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(min_value=0, max_value=MAX_JSON_DEPTH + 3))
def test_read_checked_json_never_vouches_for_what_the_exact_reading_refuses(
    value: Any, wrap: int
) -> None:
    text = "[" * wrap + json.dumps(value) + "]" * wrap  # NaN and Infinity as Python writes them
    checked = read_checked_json(text)
    expected, problem = exact(text)
    if checked is not None:
        assert problem is None
        assert json.dumps(checked[0]) == json.dumps(expected)
