from __future__ import annotations

import pytest
from pydantic import JsonValue

from agent_core._lenient_json import (
    MAX_DEPTH,
    STRICT_DECODER,
    HopelessInput,
    LenientParser,
    ParseFailure,
    decode_inner,
    depth_ok,
    parse_block,
    skip_balanced,
)


def test_value_returns_the_value_and_where_it_ends() -> None:
    text = 'x = {"a": [1, "two", {"b": null}]}; more'
    parser = LenientParser(text)
    value, end = parser.value(4)
    assert value == {"a": [1, "two", {"b": None}]}
    assert text[end:] == "; more"
    assert parser.repairs == set()


def test_repairs_are_recorded_by_name() -> None:
    parser = LenientParser("{a: 'x', # note\n b: [True, None,],}")
    value, _ = parser.value(0)
    assert value == {"a": "x", "b": [True, None]}
    assert parser.repairs == {
        "read an unquoted key",
        "read a single-quoted string",
        "skipped a comment",
        "read a Python literal",
        "removed a trailing comma",
    }


def test_duplicate_keys_keep_the_last_value_like_json_loads() -> None:
    value, _ = LenientParser('{"a": 1, "b": 2, "a": 3}').value(0)
    assert value == {"a": 3, "b": 2}


def test_failure_says_where_and_why() -> None:
    with pytest.raises(ParseFailure) as caught:
        LenientParser('{"a": 1 "b": 2}').value(0)
    failure = caught.value
    assert (failure.pos, failure.truncated, failure.trailing) == (8, False, False)
    assert failure.reason == "expected ',' or '}' but found '\"'"


def test_running_out_is_truncation_at_the_end() -> None:
    text = '{"a": "never closed'
    with pytest.raises(ParseFailure) as caught:
        LenientParser(text).value(0)
    assert caught.value.truncated is True
    assert caught.value.pos == len(text)
    assert caught.value.reason == "the text ends inside a string that starts at offset 6"


def test_closing_brackets_are_added_only_after_a_complete_value() -> None:
    parser = LenientParser('[{"a": "x"}, "y"')
    assert parser.value(0) == ([{"a": "x"}, "y"], 16)
    assert parser.repairs == {"added missing closing brackets at the end"}
    for cut in ('[{"a": "x"}, ', '[{"a": ', '[{"a": 1'):
        with pytest.raises(ParseFailure) as caught:
            LenientParser(cut).value(0)
        assert caught.value.truncated is True


def test_document_wants_exactly_one_value() -> None:
    assert LenientParser('  // lead\n{"a": 1} /* tail */ ').document() == ({"a": 1}, 10, 18)
    with pytest.raises(ParseFailure) as caught:
        LenientParser('{"a": 1} and more').document()
    assert caught.value.trailing is True
    assert caught.value.pos == 8


def test_nesting_past_the_limit_is_hopeless() -> None:
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    value, _ = LenientParser(deep).value(0)
    assert depth_ok(value)
    with pytest.raises(HopelessInput, match=f"deeper than {MAX_DEPTH}"):
        LenientParser("[" + deep + "]").value(0)


@pytest.mark.parametrize(
    ("value", "ok"),
    [(1, True), ([[[]]], True), ({"a": [{"b": []}]}, True)],
)
def test_depth_ok_on_shallow_values(value: JsonValue, ok: bool) -> None:
    assert depth_ok(value) is ok


def test_depth_ok_rejects_deep_values() -> None:
    value: JsonValue = []
    for _ in range(MAX_DEPTH):
        value = [value]
    assert depth_ok(value) is False


def test_parse_block_reports_offsets_in_the_reply() -> None:
    assert parse_block('\n {"a": 1}\n', 100) == ({"a": 1}, 102, 110, ())
    assert parse_block("{'a': 1,}", 5) == (
        {"a": 1},
        5,
        14,
        ("read a single-quoted string", "removed a trailing comma"),
    )


def test_strict_decoder_rejects_non_json_constants() -> None:
    with pytest.raises(ValueError, match="NaN is not JSON"):
        STRICT_DECODER.decode('{"a": NaN}')


@pytest.mark.parametrize(
    ("string", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        (" [1, 2] ", [1, 2]),
        ("42", None),
        ('"{}"', None),
        ("{'a': 1}", None),
        ("{not json}", None),
    ],
)
def test_decode_inner_reads_only_strict_objects_and_arrays(
    string: str, expected: JsonValue
) -> None:
    assert decode_inner(string) == expected


@pytest.mark.parametrize(
    ("text", "pos", "depth", "expected"),
    [
        ('oops, "b": [1, {"c": "}]"}]} after', 0, 1, 28),
        ("x] y", 0, 1, 2),
        ("x] y", 0, 0, 0),
        ('oops, "unclosed', 0, 1, 15),
        ("[[never", 0, 1, 7),
    ],
)
def test_skip_balanced(text: str, pos: int, depth: int, expected: int) -> None:
    assert skip_balanced(text, pos, depth) == expected


@pytest.mark.parametrize(
    ("text", "committed", "depth"),
    [
        ("{name}", False, 1),
        ("[see below]", False, 1),
        ("{ for example }", False, 1),
        ('{"a" oops}', True, 1),
        ("{a: oops}", True, 1),
        ("[1, oops]", True, 1),
        ('{"a": [{"b": oops}]}', True, 3),
    ],
)
def test_failures_say_whether_the_text_looked_like_json(
    text: str, committed: bool, depth: int
) -> None:
    with pytest.raises(ParseFailure) as caught:
        LenientParser(text).value(0)
    assert (caught.value.committed, caught.value.depth) == (committed, depth)


def test_a_failure_inside_a_string_scans_from_the_string() -> None:
    text = '{"a": "bad \\u12G4", "b": 1}'
    with pytest.raises(ParseFailure) as caught:
        LenientParser(text).value(0)
    assert caught.value.pos == 11
    assert caught.value.scan_from == 6
    assert skip_balanced(text, caught.value.scan_from, caught.value.depth) == len(text)
