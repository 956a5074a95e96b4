"""Scripted replies served as real SSE streams, in each API's wire format, for ``FakeLLM``.

A reply built with the ``openai_*`` or ``anthropic_*`` builders of :mod:`tests.fake_llm` is
streamed automatically when the request asks for a stream (:func:`stream_of`, default split);
script the split points, quirks and failures with these::

    fake_llm.respond(openai_stream(openai_tool_call("submit_result", '{"a": 1}'), piece_chars=1))
    fake_llm.respond(openai_stream(reply, whole_arguments=True, indexes=False))  # llama.cpp-like
    fake_llm.respond(anthropic_stream(anthropic_tool_use("submit_result", {"a": 1})))
    fake_llm.respond(stream_cut(openai_stream(reply), after=3))        # connection dropped
    fake_llm.respond(stream_error(anthropic_stream(reply), after=2, api="anthropic"))
    fake_llm.respond(stream_ended(openai_stream(reply), after=2))      # no finish_reason, no [DONE]

Every builder returns a :class:`~tests.fake_llm.ScriptedResponse` whose ``events`` are the
``(event name, data)`` pairs sent, one a chunk of the HTTP body.
"""

from __future__ import annotations

import json
from dataclasses import replace

from tests.fake_llm import ANTHROPIC_PATH, OPENAI_PATH, Json, ScriptedResponse

__all__ = [
    "anthropic_stream",
    "openai_stream",
    "pieces",
    "stream_cut",
    "stream_ended",
    "stream_error",
    "stream_of",
]

Event = tuple[str | None, str]


def pieces(text: str, size: int) -> list[str]:
    """Return ``text`` cut into pieces of ``size`` characters (one empty piece for ``""``)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream_of(response: ScriptedResponse) -> ScriptedResponse:
    """Return ``response`` as a stream with the default split, unless it is one already.

    A chat completion becomes OpenAI chunks, a message Anthropic events; anything else (an
    error, a malformed body) is returned as it is.
    """
    if response.events is not None or not isinstance(response.body, dict):
        return response
    if response.body.get("object") == "chat.completion":
        return openai_stream(response)
    if response.body.get("type") == "message":
        return anthropic_stream(response)
    return response


def openai_stream(
    reply: ScriptedResponse,
    *,
    piece_chars: int = 3,
    whole_arguments: bool = False,
    indexes: bool = True,
    content_parts: bool = False,
    usage: bool = True,
    finish_with_delta: bool = False,
) -> ScriptedResponse:
    """Return a chat completion reply as ``chat.completion.chunk`` events ending in ``[DONE]``.

    Args:
        reply: A reply from ``openai_completion``/``openai_text``/``openai_tool_call(s)``.
        piece_chars: How many characters of text or arguments each chunk carries.
        whole_arguments: Send each call's arguments whole, in its first chunk (an object
            stays an object), as llama.cpp and Ollama do.
        indexes: Give tool-call entries their ``index`` (some servers leave it out).
        content_parts: Send text as a list of ``{"type": "text"}`` parts.
        usage: End with OpenAI's usage chunk (``choices: []``); without, no usage at all.
        finish_with_delta: Put ``finish_reason`` on the last chunk with a delta instead of a
            chunk of its own.
    """
    body: dict[str, Json] = reply.body
    choice = body["choices"][0]
    message = choice["message"]
    head: dict[str, Json] = {k: body[k] for k in ("id", "created", "model") if k in body}
    head["object"] = "chat.completion.chunk"
    deltas: list[dict[str, Json]] = [{"role": "assistant", "content": ""}]
    if message.get("content"):
        for piece in pieces(message["content"], piece_chars):
            text: Json = [{"type": "text", "text": piece}] if content_parts else piece
            deltas.append({"content": text})
    if message.get("refusal"):
        deltas.append({"refusal": message["refusal"]})
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        first: dict[str, Json] = {"type": "function", "function": {"name": function["name"]}}
        if "id" in call:
            first["id"] = call["id"]
        arguments = function["arguments"]
        if whole_arguments or not isinstance(arguments, str):
            entries = [{**first, "function": {**first["function"], "arguments": arguments}}]
        else:
            entries = [{**first, "function": {**first["function"], "arguments": ""}}]
            entries += [{"function": {"arguments": p}} for p in pieces(arguments, piece_chars)]
        for entry in entries:
            deltas.append({"tool_calls": [{"index": index, **entry} if indexes else entry]})
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    finish = choice.get("finish_reason")
    if finish_with_delta:
        chunks[-1]["choices"][0]["finish_reason"] = finish
    else:
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage and body.get("usage") is not None:
        chunks.append({**head, "choices": [], "usage": body["usage"]})
    events: list[Event] = [(None, json.dumps(chunk)) for chunk in chunks]
    events.append((None, "[DONE]"))
    return replace(reply, body=None, events=tuple(events), path=OPENAI_PATH)


def anthropic_stream(
    reply: ScriptedResponse, *, piece_chars: int = 3, whole_arguments: bool = False
) -> ScriptedResponse:
    """Return a Messages reply as named events: ``message_start`` ... ``message_stop``.

    Args:
        reply: A reply from ``anthropic_message``/``anthropic_text``/``anthropic_tool_use``
            (``thinking`` blocks with a ``signature`` stream as thinking and signature deltas).
        piece_chars: How many characters of text, thinking or input JSON each delta carries.
        whole_arguments: Send each tool input's JSON in one ``input_json_delta``.
    """
    body: dict[str, Json] = reply.body
    usage = dict(body.get("usage") or {})
    output_tokens = usage.pop("output_tokens", 0)
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    events: list[tuple[str, dict[str, Json]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(body["content"]):
        kind = block.get("type")
        deltas: list[dict[str, Json]] = []
        if kind == "text":
            opening: dict[str, Json] = {**block, "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"], piece_chars)]
        elif kind == "tool_use":
            opening = {**block, "input": {}}
            text = json.dumps(block["input"])
            size = len(text) if whole_arguments else piece_chars
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(text, size)]
        elif kind == "thinking":
            opening = {**block, "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in pieces(block["thinking"], piece_chars)
            ]
            deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
        else:
            opening = block
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")}
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": stop, "usage": {"output_tokens": output_tokens}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    wire = tuple((name, json.dumps(data)) for name, data in events)
    return replace(reply, body=None, events=wire, path=ANTHROPIC_PATH)


def stream_cut(stream: ScriptedResponse, *, after: int) -> ScriptedResponse:
    """Return ``stream`` with the connection dropped after its first ``after`` events."""
    return replace(stream, events=_events(stream)[:after], cut=True)


def stream_ended(stream: ScriptedResponse, *, after: int) -> ScriptedResponse:
    """Return ``stream`` ending cleanly after its first ``after`` events (never finished)."""
    return replace(stream, events=_events(stream)[:after])


def stream_error(
    stream: ScriptedResponse,
    *,
    after: int,
    error: dict[str, Json] | None = None,
    api: str = "openai",
) -> ScriptedResponse:
    """Return ``stream`` sending an error after its first ``after`` events, then ending.

    Args:
        stream: The stream.
        after: How many of its events go first.
        error: The error object (``{"type": ..., "message": ...}``); an overload by default.
        api: ``openai`` (a ``data:`` line holding ``{"error": ...}``) or ``anthropic`` (an
            ``error`` event).
    """
    if api == "anthropic":
        inner = error or {"type": "overloaded_error", "message": "Overloaded"}
        event: Event = ("error", json.dumps({"type": "error", "error": inner}))
    else:
        inner = error or {"type": "server_error", "message": "The server had an error"}
        event = (None, json.dumps({"error": inner}))
    return replace(stream, events=(*_events(stream)[:after], event))


def _events(stream: ScriptedResponse) -> tuple[Event, ...]:
    if stream.events is None:
        raise ValueError("not a stream: build it with openai_stream or anthropic_stream")
    return stream.events
