"""``CompletionChunks.read``: events read without a parse give what parsing each one gives."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable

import pytest
from pydantic import JsonValue

from agent_executor._providers import openai_chunks, sse
from agent_executor._providers.base import ToolNameMap
from agent_executor._providers.openai_chunks import CompletionChunks
from agent_executor._providers.sse import MalformedEvent
from agent_executor._providers.streaming import TurnDelta

PIECES = ['{"summary": "', "fine ", 'a "quoted" ', "été ☃ ", "\n\t", "\\", '", "n": 4}', "\u2028"]
Encoder = Callable[[JsonValue], str]
ENCODINGS: dict[str, Encoder] = {
    "compact": lambda value: json.dumps(value, separators=(",", ":")),
    "spaced, ascii": lambda value: json.dumps(value),
    "utf-8": lambda value: json.dumps(value, ensure_ascii=False),
}


def chunk(delta: dict[str, JsonValue], finish: str | None = None) -> dict[str, JsonValue]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def piece(index: int, text: str) -> dict[str, JsonValue]:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})


def stream(rng: random.Random) -> list[dict[str, JsonValue]]:
    """A tool-call stream: two calls, their pieces sometimes interleaved, some empty."""
    events = [chunk({"role": "assistant", "content": None})]
    for index, name in enumerate(("look_up", "submit_result")):
        function: dict[str, JsonValue] = {"name": name, "arguments": ""}
        opening: dict[str, JsonValue] = {
            "index": index,
            "id": f"call_{index}",
            "type": "function",
            "function": function,
        }
        events.append(chunk({"tool_calls": [opening]}))
        for _ in range(rng.randint(5, 30)):
            text = rng.choice(PIECES) if rng.random() < 0.9 else ""
            events.append(piece(index if rng.random() < 0.9 else 0, text))
    events.append(chunk({}, "tool_calls"))
    events.append({**chunk({}), "choices": [], "usage": {"prompt_tokens": 3}})
    return events


def read_each(events: list[dict[str, JsonValue]]) -> tuple[JsonValue, list[TurnDelta]]:
    deltas: list[TurnDelta] = []
    chunks = CompletionChunks(ToolNameMap(["look_up", "submit_result", "f"]), deltas.append)
    for event in events:
        chunks.add(event)
        chunks.flush()
    return chunks.completion(), _merged(deltas)


def read_batched(datas: list[bytes], rng: random.Random) -> tuple[JsonValue, list[TurnDelta]]:
    deltas: list[TurnDelta] = []
    chunks = CompletionChunks(ToolNameMap(["look_up", "submit_result", "f"]), deltas.append)
    at = 0
    while at < len(datas):
        size = rng.randint(1, len(datas))
        chunks.read(datas[at : at + size], lambda value: None)
        at += size
    return chunks.completion(), _merged(deltas)


def _merged(deltas: list[TurnDelta]) -> list[TurnDelta]:
    """Adjacent argument pieces of one call as one (batches hand them over merged)."""
    merged: list[TurnDelta] = []
    for delta in deltas:
        last = merged[-1] if merged else None
        if (
            last is not None
            and delta.call_index == last.call_index is not None
            and delta.call_id is None
            and delta.name is None
            and not delta.text
        ):
            merged[-1] = dataclasses.replace(last, arguments=last.arguments + delta.arguments)
        else:
            merged.append(delta)
    return merged


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("seed", range(12))
def test_batches_read_without_parsing_equal_every_event_parsed(encoding: str, seed: int) -> None:
    rng = random.Random(seed)
    events = stream(rng)
    datas = [ENCODINGS[encoding](event).encode() for event in events]
    assert read_batched(datas, rng) == read_each(events)


def test_most_pieces_are_read_without_a_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    original = sse.parse_data

    def counting(datas: list[bytes]) -> list[JsonValue]:
        parsed.append(len(datas))
        return original(datas)

    monkeypatch.setattr(openai_chunks, "parse_data", counting)
    events = [chunk({"role": "assistant", "content": None})]
    function: dict[str, JsonValue] = {"name": "f", "arguments": ""}
    call: dict[str, JsonValue] = {"index": 0, "id": "c", "type": "function", "function": function}
    events += [chunk({"tool_calls": [call]})]
    texts = [f'"k{n}": "été {n}", ' for n in range(100)]  # quotes and accents: escaped on the wire
    events += [piece(0, text) for text in texts] + [chunk({}, "tool_calls")]
    chunks = CompletionChunks(ToolNameMap(["look_up", "submit_result", "f"]), lambda delta: None)
    chunks.read([json.dumps(event).encode() for event in events], lambda value: None)
    assert sum(parsed) <= 5  # the opening events and the first piece; the other 99 are not parsed
    body = json.loads(json.dumps(chunks.completion()))
    [entry] = body["choices"][0]["message"]["tool_calls"]
    assert entry["function"]["arguments"] == "".join(texts)


@pytest.mark.parametrize(
    "bad",
    [
        b'"part \x01 "',  # a control character: not JSON
        b'"part \\q "',  # an escape JSON does not have
        b'"part \\"',  # the last quote escaped: the string runs on
    ],
)
def test_an_event_that_is_not_json_is_refused_as_the_parser_would(bad: bytes) -> None:
    good = json.dumps(piece(0, "ok ")).encode()
    head = good[: good.index(b'"ok "')]
    tail = good[good.index(b'"ok "') + len(b'"ok "') :]
    opening = chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]})
    chunks = CompletionChunks(ToolNameMap(["look_up", "submit_result", "f"]), lambda delta: None)
    chunks.read([json.dumps(opening).encode(), good, good], lambda value: None)
    with pytest.raises(MalformedEvent):
        chunks.read([head + bad + tail], lambda value: None)


def test_an_error_event_among_pieces_is_checked() -> None:
    opening = chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]})
    events = [opening, piece(0, "a"), piece(0, "b"), {"error": {"message": "overloaded"}}]
    seen: list[JsonValue] = []
    chunks = CompletionChunks(ToolNameMap(["look_up", "submit_result", "f"]), lambda delta: None)
    chunks.read([json.dumps(event).encode() for event in events], seen.append)
    assert seen[-1] == {"error": {"message": "overloaded"}}


@pytest.mark.parametrize(
    "texts",
    [
        ["plain ", "and plain"],
        ["lone \ud83d half", " then plain"],  # Pydantic's parser refuses it; Python's reads it
        ["nul \u0000 escaped", " tab \t", ' "quoted" \\ '],
        ["\\", '"', '\\\\"', ' "'],  # backslashes and quotes at a piece's edges
    ],
)
def test_pieces_read_together_are_those_each_event_gives(texts: list[str]) -> None:
    opening = chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]})
    events = [opening, piece(0, "{")] + [piece(0, text) for text in texts]
    datas = [json.dumps(event).encode() for event in events]  # lone surrogates as escapes
    fast = CompletionChunks(ToolNameMap(["f"]), lambda delta: None)
    fast.read(datas, lambda value: None)
    assert fast.completion() == read_each(events)[0]
    assert fast._calls[0].arguments == ["{", *texts]
