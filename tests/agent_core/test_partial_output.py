"""Partial outputs: every value read from a JSON text being written is a prefix of the final one."""

from __future__ import annotations

import itertools
import json
from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, JsonValue

from agent_core import PartialJson, partial_model, partial_value


def is_prefix(partial: JsonValue, final: JsonValue) -> bool:
    """Whether ``partial`` says nothing ``final`` contradicts (members may be missing)."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            key in final and is_prefix(value, final[key]) for key, value in partial.items()
        )
    if isinstance(partial, list):
        return (
            isinstance(final, list)
            and len(partial) <= len(final)
            and all(is_prefix(a, b) for a, b in zip(partial, final, strict=False))
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return type(partial) is type(final) and partial == final


def read_in_pieces(text: str, sizes: list[int], *, text_reply: bool = False) -> list[JsonValue]:
    """Feed ``text`` in pieces of the given sizes (cycled); return every value read."""
    reader = PartialJson(text_reply=text_reply)
    values: list[JsonValue] = []
    position, turn = 0, 0
    while position < len(text):
        size = sizes[turn % len(sizes)]
        piece, position, turn = text[position : position + size], position + size, turn + 1
        if reader.feed(piece, final=position >= len(text)):
            values.append(reader.value)
    return values


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=8), json_values, max_size=6),
    sizes=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=4),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 2]),
)
def test_every_partial_value_is_a_prefix_of_the_final_one(
    value: dict[str, JsonValue], sizes: list[int], ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    values = read_in_pieces(text, sizes)
    assert values, "the whole text is always read at the end"
    assert values[-1] == value
    for earlier, later in itertools.pairwise(values):
        assert is_prefix(earlier, later), (earlier, later)
    for partial in values:
        assert is_prefix(partial, value), (partial, value)


def test_a_number_is_shown_only_once_it_is_finished() -> None:
    reader = PartialJson()
    assert reader.feed('{"done": 1, "count": 12')
    assert reader.value == {"done": 1}
    assert reader.feed("3}", final=True)
    assert reader.value == {"done": 1, "count": 123}


def test_literals_and_keys_wait_until_written_whole() -> None:
    for text in ('{"ok": tr', '{"ok": nul', '{"name_of_it'):
        reader = PartialJson()
        reader.feed(text + " " * 16)
        assert reader.value in ({}, None), text


def test_strings_grow_at_their_end_and_cut_escapes_are_left_out() -> None:
    text = json.dumps({"note": "caf\u00e9 \U0001f600 end"}, ensure_ascii=True)
    values = read_in_pieces(text, [1])
    notes = [v["note"] for v in values if isinstance(v, dict) and "note" in v]
    assert notes[-1] == "caf\u00e9 \U0001f600 end"
    assert all(notes[-1].startswith(note) for note in notes)
    assert all("\\" not in note for note in notes)


def test_a_prompted_reply_is_read_after_its_code_fence() -> None:
    reply = 'Here it is:\n```json\n{"title": "Report", "pages": 3}\n```\nDone.'
    values = read_in_pieces(reply, [5], text_reply=True)
    assert values[-1] == {"title": "Report", "pages": 3}
    assert read_in_pieces("I would rather explain it in words.", [4], text_reply=True) == []


def test_text_that_is_not_json_gives_no_value() -> None:
    assert read_in_pieces("not json at all, sorry", [3]) == []


class Comment(BaseModel):
    line: int = Field(ge=1)
    severity: Literal["high", "low"]
    body: str = Field(min_length=5)


class Review(BaseModel):
    summary: str = Field(alias="summaryText")
    comments: list[Comment]
    by_file: dict[str, Comment] = {}
    score: float | None = None


def test_the_partial_class_has_every_field_optional_and_nested_classes_partial() -> None:
    partial = partial_model(Review)
    assert partial.__name__ == "PartialReview"
    empty = partial.model_validate({})
    assert empty.model_dump() == {"summary": None, "comments": None, "by_file": None, "score": None}
    assert partial_model(Review) is partial  # made once
    value = partial_value(Review, {"comments": [{"line": 3}], "by_file": {"a.py": {}}})
    assert value is not None
    assert type(value.comments[0]).__name__ == "PartialComment"  # type: ignore[attr-defined]
    assert value.comments[0].severity is None  # type: ignore[attr-defined]
    assert type(value.by_file["a.py"]).__name__ == "PartialComment"  # type: ignore[attr-defined]


def test_a_half_written_member_the_partial_class_refuses_is_left_out() -> None:
    data: JsonValue = {
        "summaryText": "Fine",
        "comments": [{"line": 2, "severity": "hi", "body": "ab"}],
    }
    value = partial_value(Review, data)
    assert value is not None
    dumped = value.model_dump()
    assert dumped["summary"] == "Fine"  # read under its alias
    assert dumped["comments"] == [{"line": 2, "severity": None, "body": "ab"}]


def test_constraints_wait_for_the_final_check() -> None:
    value = partial_value(Review, {"comments": [{"line": 0, "body": "x"}]})
    assert value is not None
    assert value.model_dump()["comments"] == [{"line": 0, "severity": None, "body": "x"}]
