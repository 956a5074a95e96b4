from __future__ import annotations

import io

from agent_executor._cli.live import LiveRegion
from agent_executor._cli.secret_edge import EventJson
from agent_executor._cli.stream_view import REDRAW_INTERVAL_S, GrowingView, JsonLinesView
from tests.agent_executor.cli.test_live import Terminal


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


STARTED: EventJson = {"type": "run_started", "model": "test", "model_tier": 0}


def partial(title: str, attempt: int = 1) -> EventJson:
    return {"type": "partial_output", "data": {"title": title}, "attempt": attempt}


def test_piped_partials_are_lines_at_most_every_interval_and_the_last_is_shown() -> None:
    clock, err = Clock(), io.StringIO()
    view = GrowingView(err, None, clock=clock)
    view.show(STARTED)
    view.show(partial("a "))
    view.show(partial("a b "))  # too soon after the last line: kept for later
    clock.now += REDRAW_INTERVAL_S
    view.show(partial("a b c "))
    view.show(partial("a b c d "))
    view.show({"type": "retry_started", "attempt": 1, "reason": "why", "errors": ["$: bad"]})
    view.show(partial("x ", attempt=2))
    view.show(partial("x y ", attempt=2))
    view.close()
    view.show(partial("after the end "))
    assert err.getvalue().splitlines() == [
        'partial: {"title": "a "}',
        'partial: {"title": "a b c "}',
        'partial: {"title": "a b c d "}',  # the attempt's last, before the retry line
        "retry: attempt 1 was rejected (why: $: bad); asking again",
        'partial: {"title": "x "}',
        'partial: {"title": "x y "}',  # shown when the view closes
    ]


def test_piped_text_is_written_as_it_comes_and_the_line_ended() -> None:
    err = io.StringIO()
    view = GrowingView(err, None, clock=Clock())
    view.show(STARTED)
    for piece in ["Hello ", "there ", "\x1b[2J"]:
        view.show({"type": "text_delta", "text": piece, "step": 1})
    call = {"type": "tool_call_started", "name": "fs:read", "arguments": {"path": "a"}}
    view.show(call)
    view.show({**call, "type": "tool_call_finished", "content": "abc", "is_error": False})
    view.show({"type": "text_delta", "text": "Done.", "step": 2})
    view.close()
    assert err.getvalue() == (
        "Hello there \\x1b[2J\n"
        'tool: fs:read {"path": "a"}\n'
        "tool: fs:read answered (3 characters)\n"
        "Done.\n"
    )


def test_on_a_terminal_the_output_grows_in_place_under_the_status_lines() -> None:
    terminal, clock = Terminal(80, 10), Clock()
    view = GrowingView(terminal, LiveRegion(terminal, size=lambda: (80, 10)), clock=clock)
    view.show(STARTED)
    view.show(partial("one "))
    assert terminal.lines()[:4] == ["{", '  "title": "one "', "}", ""]
    clock.now += REDRAW_INTERVAL_S
    view.show({"type": "retry_started", "attempt": 1, "reason": "r", "errors": []})
    view.show({**STARTED, "model_tier": 1})
    view.show(partial("two ", attempt=2))
    assert terminal.lines()[:6] == [
        "retry: attempt 1 was rejected (r); asking again",
        "escalate: tier 1, test",
        "{",
        '  "title": "two "',
        "}",
        "",
    ]
    view.close()
    assert terminal.lines()[2:] == [""] * 8


def test_json_lines_are_redacted_and_end_when_closed() -> None:
    out = io.StringIO()
    view = JsonLinesView(out)
    view.show({"type": "text_delta", "text": "key sk-abcdefghijklmnopqrstuvwx ", "step": 1})
    view.close()
    view.show({"type": "text_delta", "text": "late", "step": 1})
    assert out.getvalue() == '{"type": "text_delta", "text": "key [REDACTED] ", "step": 1}\n'
