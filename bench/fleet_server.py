"""A fast local stand-in for an OpenAI Chat Completions server, for the framework benchmarks.

It answers every ``POST .../v1/chat/completions`` at once with a tool call carrying a pr-reviewer
result (the seed 000 schema, as in ``agents/pr-reviewer/agent.yml``), so a benchmark measures
the client framework and nothing else. Plain asyncio (a ``Protocol`` and a minimal HTTP/1.1
parser with keep-alive), standard library only.

The base URL picks the behaviour: ``http://127.0.0.1:PORT/<mode>/<latency_ms>/v1``, where

- ``mode`` is ``valid`` (every answer is a valid result), ``valid-<n>`` (a valid result with
  ``n`` comments, for output-size benchmarks) or ``invalid-first`` (the first turn of a
  conversation gets arguments that break the schema, a conversation that already holds a tool
  result gets a valid one: stateless, so it works at any concurrency);
- ``latency_ms`` is a delay before answering (``0`` for none).

The tool called is the one ``tool_choice`` forces, else the first tool offered, so every
framework's own output-tool name works. A request without tools is answered with the result as
JSON text. A request with ``"stream": true`` gets the same answer as server-sent events in
OpenAI's chunk format, the arguments (or text) in pieces of four characters (about a token
each), then a usage chunk when ``stream_options.include_usage`` asks for one, then ``[DONE]``.
``GET /stats`` returns the request counters as JSON.

It runs in its own process and stops by itself: when its standard input closes (the parent
closed the pipe or died), after ``--idle`` seconds without a request, or after ``--lifetime``
seconds in all. It prints ``PORT <n>`` on its first line of output once it listens.

    python bench/fleet_server.py [--port 0] [--idle 120] [--lifetime 1800]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from typing import Any

MAX_BODY = 16 * 1024 * 1024
"""Largest request body accepted (bytes)."""

REVIEW: dict[str, Any] = {
    "summary": (
        "Adds exponential back-off to the payment retry loop and an idempotency key per charge. "
        "The logic is sound; the retry cap and one unchecked error need fixing before merge."
    ),
    "approval": "request_changes",
    "comments": [
        {
            "file": "src/payments/retry.py",
            "line": 42,
            "severity": "blocker",
            "message": "The loop never stops on a 4xx: cap retries and give up on client errors.",
        },
        {
            "file": "src/payments/retry.py",
            "line": 57,
            "severity": "concern",
            "message": "The jitter uses random.random(); seed it per charge so tests repeat.",
        },
        {
            "file": "src/payments/client.py",
            "line": 118,
            "severity": "suggestion",
            "message": "Log the idempotency key with the charge id so support can trace retries.",
        },
        {
            "file": "tests/test_retry.py",
            "line": 9,
            "severity": "nitpick",
            "message": "Name the test after the behaviour: test_gives_up_after_five_attempts.",
        },
    ],
    "metrics": {"files_reviewed": 3, "lines_changed": 214, "complexity_score": 4.5},
}
"""The valid result: a pr-reviewer output (seed 000 schema) with four comments and metrics."""

INVALID_REVIEW: dict[str, Any] = {
    **REVIEW,
    "approval": "lgtm",
    "comments": [{**REVIEW["comments"][0], "line": 0}, *REVIEW["comments"][1:]],
}
"""An invalid result: ``approval`` is not in the enum and a comment's ``line`` is 0 (minimum 1)."""

_VALID_ARGS = json.dumps(REVIEW)
_INVALID_ARGS = json.dumps(INVALID_REVIEW)
_SIZED_ARGS: dict[int, str] = {}


def review_with(items: int) -> dict[str, Any]:
    """Return a valid review with ``items`` comments (the four of :data:`REVIEW`, repeated)."""
    comments = REVIEW["comments"]
    return {
        **REVIEW,
        "comments": [{**comments[i % len(comments)], "line": i + 1} for i in range(max(0, items))],
    }


def _valid_args(items: int | None) -> str:
    if items is None:
        return _VALID_ARGS
    if items not in _SIZED_ARGS:
        _SIZED_ARGS[items] = json.dumps(review_with(items))
    return _SIZED_ARGS[items]


def _mode_items(mode: str) -> tuple[str, int | None] | None:
    """Split ``valid``, ``invalid-first`` or ``valid-<n>`` into the mode and the item count."""
    if mode in ("valid", "invalid-first"):
        return mode, None
    base, _, count = mode.rpartition("-")
    if base == "valid" and count.isdigit() and int(count) <= 100_000:
        return base, int(count)
    return None


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Payload Too Large"}


class Stats:
    """Request counters, and the time of the last request (for the idle timeout)."""

    def __init__(self) -> None:
        self.requests = 0
        self.valid = 0
        self.invalid = 0
        self.errors = 0
        self.last = time.monotonic()

    def as_json(self) -> dict[str, int]:
        """Return the counters."""
        return {
            "requests": self.requests,
            "valid": self.valid,
            "invalid": self.invalid,
            "errors": self.errors,
        }


def _tool_name(body: dict[str, Any]) -> str | None:
    """Return the tool to call: the forced one, else the first offered, else ``None``."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if isinstance(name, str):
            return name
    tools = body.get("tools") or []
    if choice != "none" and tools and isinstance(tools[0], dict):
        name = (tools[0].get("function") or {}).get("name")
        if isinstance(name, str):
            return name
    return None


def completion(
    body: dict[str, Any], *, mode: str, number: int, items: int | None = None
) -> tuple[dict[str, Any], bool]:
    """Return the chat completion answering ``body``, and whether its result is valid.

    Args:
        body: The parsed request.
        mode: ``valid`` or ``invalid-first``.
        number: A request number, for unique ids.
        items: The number of comments of a valid result (``None``: the four of ``REVIEW``).
    """
    messages = body.get("messages") or []
    answered = any(isinstance(m, dict) and m.get("role") == "tool" for m in messages)
    valid = mode == "valid" or answered
    arguments = _valid_args(items) if valid else _INVALID_ARGS
    name = _tool_name(body)
    message: dict[str, Any]
    if name is None:
        message = {"role": "assistant", "content": arguments, "refusal": None}
        finish = "stop"
    else:
        call = {
            "id": f"call_{number:08d}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
        finish = "tool_calls"
    return (
        {
            "id": f"chatcmpl-{number:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "bench",
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 260, "total_tokens": 1160},
        },
        valid,
    )


STREAM_PIECE = 4
"""Characters per streamed chunk: about one token."""
_STREAMS: dict[tuple[str, str | None, bool], bytes] = {}


def _streamed(answer: dict[str, Any], body: dict[str, Any]) -> bytes:
    """Return ``answer`` as the server-sent events of a streamed chat completion.

    The events are made once per reply text, tool and usage setting, and kept.
    """
    message = answer["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    name = calls[0]["function"]["name"] if calls else None
    text = calls[0]["function"]["arguments"] if calls else message["content"]
    usage = bool((body.get("stream_options") or {}).get("include_usage"))
    key = (text, name, usage)
    if key not in _STREAMS:
        _STREAMS[key] = _stream_events(answer, text, name, usage)
    return _STREAMS[key]


def _stream_events(answer: dict[str, Any], text: str, name: str | None, usage: bool) -> bytes:
    head = {"id": answer["id"], "object": "chat.completion.chunk", "created": answer["created"]}
    head["model"] = answer["model"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return f"data: {json.dumps({**head, 'choices': [choice]})}\n\n"

    pieces = [text[i : i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)]
    events = [chunk({"role": "assistant", "content": None if name else ""})]
    if name is None:
        events += [chunk({"content": piece}) for piece in pieces]
    else:
        call = {"index": 0, "id": "call_streamed", "type": "function"}
        events.append(
            chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": ""}}]})
        )
        events += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces
        ]
    events.append(chunk({}, "tool_calls" if name else "stop"))
    if usage:
        events.append(f"data: {json.dumps({**head, 'choices': [], 'usage': answer['usage']})}\n\n")
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


class HTTPProtocol(asyncio.Protocol):
    """One client connection: parse HTTP/1.1 requests (with keep-alive) and answer them."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False  # a delayed answer is pending; later requests wait in the buffer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the transport."""
        self.transport = None

    def data_received(self, data: bytes) -> None:
        """Buffer the bytes and answer every complete request."""
        self.buffer += data
        self._drain()

    def _drain(self) -> None:
        while not self.busy and self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1")
            lines = head.split("\r\n")
            try:
                method, target, _ = lines[0].split(" ", 2)
            except ValueError:
                self._reply(400, {"error": {"message": "bad request line"}}, close=True)
                return
            headers: dict[str, str] = {}
            for line in lines[1:]:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._reply(400, {"error": {"message": "chunked bodies are not supported"}}, True)
                return
            length = int(headers.get("content-length") or 0)
            if length > MAX_BODY:
                self._reply(413, {"error": {"message": "body too large"}}, close=True)
                return
            if len(self.buffer) < end + 4 + length:
                return
            raw = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            close = headers.get("connection", "").lower() == "close"
            self._handle(method, target, raw, close)

    def _handle(self, method: str, target: str, raw: bytes, close: bool) -> None:
        stats = self.stats
        stats.last = time.monotonic()
        path = target.split("?", 1)[0]
        if method == "GET" and path == "/stats":
            self._reply(200, stats.as_json(), close)
            return
        parts = path.strip("/").split("/")
        if (
            method != "POST"
            or len(parts) != 5
            or parts[2:] != ["v1", "chat", "completions"]
            or _mode_items(parts[0]) is None
            or not parts[1].isdigit()
        ):
            stats.errors += 1
            message = f"no route {method} {path}; use POST /<valid|invalid-first>/<ms>/v1/..."
            self._reply(404, {"error": {"message": message}}, close)
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("expected a chat completion request (a JSON object)")
        except ValueError as exc:
            stats.errors += 1
            self._reply(400, {"error": {"message": str(exc)}}, close)
            return
        stats.requests += 1
        mode, items = _mode_items(parts[0]) or ("valid", None)
        answer, valid = completion(body, mode=mode, number=stats.requests, items=items)
        if valid:
            stats.valid += 1
        else:
            stats.invalid += 1
        delay = int(parts[1]) / 1000
        payload = _streamed(answer, body) if body.get("stream") else json.dumps(answer).encode()
        kind = "text/event-stream" if body.get("stream") else "application/json"
        if delay <= 0:
            self._send(200, payload, close, kind)
            return
        self.busy = True
        asyncio.get_running_loop().call_later(delay, self._delayed, payload, close, kind)

    def _delayed(self, payload: bytes, close: bool, kind: str) -> None:
        self.busy = False
        self._send(200, payload, close, kind)
        self._drain()

    def _reply(self, status: int, body: dict[str, Any], close: bool = False) -> None:
        self._send(status, json.dumps(body).encode(), close)

    def _send(
        self, status: int, payload: bytes, close: bool, kind: str = "application/json"
    ) -> None:
        if self.transport is None:
            return
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
            f"content-type: {kind}\r\ncontent-length: {len(payload)}\r\n"
            f"{'connection: close' if close else 'connection: keep-alive'}\r\n\r\n"
        )
        self.transport.write(head.encode() + payload)
        if close:
            self.transport.close()


async def serve(port: int, idle_s: float, lifetime_s: float) -> None:
    """Serve until stdin closes, ``idle_s`` pass without a request, or ``lifetime_s`` pass."""
    loop = asyncio.get_running_loop()
    stats = Stats()
    server = await loop.create_server(
        lambda: HTTPProtocol(stats), "127.0.0.1", port, backlog=1024, reuse_address=True
    )
    bound = server.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    stop = asyncio.Event()

    def stdin_ready() -> None:
        try:
            data = os.read(sys.stdin.fileno(), 4096)
        except OSError:
            data = b""
        if not data:
            stop.set()

    with contextlib.suppress(OSError, ValueError, NotImplementedError):
        loop.add_reader(sys.stdin.fileno(), stdin_ready)
    started = time.monotonic()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
        now = time.monotonic()
        if now - stats.last > idle_s or now - started > lifetime_s:
            break
    server.close()


def main() -> int:
    """Parse the options and serve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--idle", type=float, default=120.0, help="stop after this idle time (s)")
    parser.add_argument("--lifetime", type=float, default=1800.0, help="stop after this time (s)")
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.idle, args.lifetime))
    return 0


if __name__ == "__main__":
    sys.exit(main())
