from __future__ import annotations

from agent_executor._cli.secret_edge import EventJson, SecretEdge, hold_back

KEY = "gsk_" + "Qw3rTy8uIoP4aSdF" * 3


def texts(events: list[EventJson]) -> list[object]:
    return [event["text"] for event in events]


def test_text_pieces_are_passed_on_in_whole_words() -> None:
    edge = SecretEdge()
    shown: list[EventJson] = []
    for piece in ["Your key ", "is ", KEY[:8], KEY[8:20], KEY[20:], " ok", "ay."]:
        shown += edge.feed({"type": "text_delta", "text": piece, "step": 1})
    assert texts(shown) == ["Your key ", "is ", KEY + " "]
    assert texts(edge.flush()) == ["okay."]
    assert edge.flush() == []


def test_held_text_is_passed_on_before_the_next_event_or_turn() -> None:
    edge = SecretEdge()
    assert edge.feed({"type": "text_delta", "text": "Looking", "step": 1}) == []
    call = {"type": "tool_call_started", "call_id": "c", "name": "fs:read", "arguments": {}}
    assert edge.feed(call) == [{"type": "text_delta", "text": "Looking", "step": 1}, call]
    assert edge.feed({"type": "text_delta", "text": "Found", "step": 2}) == []
    assert edge.feed({"type": "text_delta", "text": "It", "step": 3}) == [
        {"type": "text_delta", "text": "Found", "step": 2}
    ]


def test_hold_back_cuts_only_the_last_strings_unfinished_word() -> None:
    partial = {"title": "a finished title", "tags": ["one", "two thr"]}
    assert hold_back(partial) == {"title": "a finished title", "tags": ["one", "two "]}
    assert partial["tags"] == ["one", "two thr"]  # not modified
    assert hold_back({"title": "done", "score": 4}) == {"title": "done", "score": 4}
    assert hold_back({"summary": KEY[:12]}) == {"summary": ""}
    assert hold_back([]) == [] and hold_back(None) is None


def test_partial_outputs_are_held_back_and_never_repeated() -> None:
    edge = SecretEdge()
    shown: list[EventJson] = []
    for data in [{"title": "Key"}, {"title": "Key: gsk_Qw3r"}, {"title": f"Key: {KEY}"}]:
        shown += edge.feed({"type": "partial_output", "data": data, "attempt": 1})
    shown += edge.feed({"type": "partial_output", "data": {"title": "x", "n": 1}, "attempt": 1})
    assert [event["data"] for event in shown] == [
        {"title": ""},
        {"title": "Key: "},
        {"title": "x", "n": 1},
    ]
    retry = {"type": "retry_started", "attempt": 1, "reason": "r", "errors": []}
    assert edge.feed(retry) == [retry]
    again = {"type": "partial_output", "data": {"title": ""}, "attempt": 2}
    assert edge.feed(again) == [again]  # a new attempt shows its first partial, even if alike
