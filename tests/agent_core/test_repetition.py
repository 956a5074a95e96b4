"""Finding the loop a cut-off reply ends in."""

from __future__ import annotations

import pytest

from agent_core._repetition import Loop, find_loop


@pytest.mark.parametrize(
    ("text", "loop"),
    [
        ('{"summary": "' + "summary: " * 40 + "summ", Loop("summary: ", 13)),
        ('{"summary": "summary' + "_model" * 50, Loop("_model", 20)),
        ('{"steps": ["1", "' + "19, " * 30, Loop("19, ", 17)),
        ("x" * 30, Loop("x", 0)),
    ],
)
def test_a_reply_that_ends_in_a_loop_gives_its_piece_and_start(text: str, loop: Loop) -> None:
    assert find_loop(text) == loop


@pytest.mark.parametrize(
    "text",
    [
        "",
        '{"summary": "The service checks keys in src/auth/keys.py on every request."}',
        "ab" * 3,  # too short to be a loop
        '{"a": "' + "word " * 3,  # three times is not a loop
    ],
)
def test_a_reply_without_a_loop_gives_none(text: str) -> None:
    assert find_loop(text) is None


def test_a_loop_at_the_end_of_a_long_reply_is_found_where_it_starts() -> None:
    text = "a sentence." * 1000 + "loop " * 10
    assert find_loop(text) == Loop("loop ", 11000)
