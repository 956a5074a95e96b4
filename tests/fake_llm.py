"""A local HTTP server that speaks just enough OpenAI and Anthropic for the real SDKs.

It listens on 127.0.0.1 (a free port), answers each request with the next scripted response and
records every request, so tests drive the real SDK over real HTTP and assert both on the result
and on what was sent::

    fake_llm.respond(openai_tool_call("submit_result", {"ok": True}))
    turn = await provider.request(...)
    assert fake_llm.requests[0].body["tool_choice"] == {...}

The builders below make the wire bodies: ``openai_*`` for ``POST /v1/chat/completions``,
``anthropic_*`` for ``POST /v1/messages``; ``status_error`` and ``delayed`` cover failures.

Streaming: a request with ``"stream": true`` gets its scripted reply as a real SSE stream in the
API's wire format (``tests.fake_llm_streams.stream_of`` splits it; a reply scripted there with
chosen split points, a cut or an error event is sent as scripted). Replies to other requests,
and error statuses, are answered as before.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = [
    "FakeLLM",
    "RecordedRequest",
    "ScriptedResponse",
    "anthropic_message",
    "anthropic_text",
    "anthropic_tool_use",
    "delayed",
    "openai_completion",
    "openai_text",
    "openai_tool_call",
    "openai_tool_calls",
    "status_error",
]

Json: TypeAlias = Any
"""Wire JSON as parsed by ``json.loads`` (test double: shapes are checked by the SDKs)."""

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass(frozen=True)
class ScriptedResponse:
    """One scripted reply: status, JSON (or text) body, headers, and a delay before answering."""

    status: int = 200
    body: Json = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    path: str | None = None
    """When set, the request must be for this path (else the server answers 404 saying so)."""
    events: tuple[tuple[str | None, str], ...] | None = None
    """When set, the reply is a server-sent event stream: each ``(event name, data)`` in turn."""
    cut: bool = False
    """With ``events``: drop the connection after the last event, the body unfinished."""
    gap_s: float = 0.0
    """With ``events``: the pause before each event (the headers go first), to stall a stream."""
    never_stream: bool = False
    """Answer a request for a stream with the body whole, as a server ignoring ``stream`` does."""
    content_type: str = "application/json"
    """The reply's ``Content-Type``."""
    payload: bytes | None = None
    """When set, the body's exact bytes (``body`` is then not sent)."""


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received: the JSON body parsed, header names lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: Json
    client_port: int = 0
    """The client's TCP port: two requests with the same port came over one connection."""


def delayed(response: ScriptedResponse, seconds: float) -> ScriptedResponse:
    """Return ``response`` answered only after ``seconds`` (to trip a client timeout)."""
    return replace(response, delay_s=seconds)


def status_error(
    status: int,
    message: str = "scripted error",
    *,
    headers: dict[str, str] | None = None,
    api: str = "openai",
) -> ScriptedResponse:
    """Return an error reply shaped like ``api``'s (``openai`` or ``anthropic``) error bodies."""
    if api == "anthropic":
        body: dict[str, Json] = {
            "type": "error",
            "error": {"type": "api_error", "message": message},
        }
    else:
        body = {"error": {"message": message, "type": "scripted", "param": None, "code": None}}
    return ScriptedResponse(status=status, body=body, headers=dict(headers or {}))


# OpenAI Chat Completions ------------------------------------------------------------------------


def openai_completion(
    message: dict[str, Json],
    *,
    finish_reason: str | None = "stop",
    usage: dict[str, int] | None = None,
    model: str = "gpt-test",
) -> ScriptedResponse:
    """Return a chat completion with one choice holding ``message``."""
    body: dict[str, Json] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": finish_reason,
            }
        ],
    }
    body["usage"] = usage if usage is not None else _openai_usage(11, 7)
    return ScriptedResponse(body=body, path=OPENAI_PATH)


def openai_text(text: str, *, finish_reason: str = "stop") -> ScriptedResponse:
    """Return a completion whose reply is ``text``."""
    return openai_completion({"content": text}, finish_reason=finish_reason)


def openai_tool_call(
    name: str,
    arguments: str | dict[str, Json],
    *,
    call_id: str | None = "call_1",
    finish_reason: str = "tool_calls",
    content: str | None = None,
) -> ScriptedResponse:
    """Return a completion calling ``name``; ``arguments`` as given (string, or an object quirk).

    ``call_id=None`` leaves the id out, as some OpenAI-compatible servers do.
    """
    return openai_tool_calls(
        [(name, arguments, call_id)], finish_reason=finish_reason, content=content
    )


def openai_tool_calls(
    calls: list[tuple[str, str | dict[str, Json], str | None]],
    *,
    finish_reason: str = "tool_calls",
    content: str | None = None,
) -> ScriptedResponse:
    """Return a completion making every ``(name, arguments, id)`` call in one turn."""
    tool_calls = []
    for name, arguments, call_id in calls:
        entry: dict[str, Json] = {
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        if call_id is not None:
            entry["id"] = call_id
        tool_calls.append(entry)
    return openai_completion(
        {"content": content, "tool_calls": tool_calls}, finish_reason=finish_reason
    )


def _openai_usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


# Anthropic Messages -----------------------------------------------------------------------------


def anthropic_message(
    content: list[dict[str, Json]],
    *,
    stop_reason: str | None = "end_turn",
    usage: dict[str, int] | None = None,
    model: str = "claude-test",
) -> ScriptedResponse:
    """Return a Messages reply with the given content blocks."""
    body = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": 13, "output_tokens": 5},
    }
    return ScriptedResponse(body=body, path=ANTHROPIC_PATH)


def anthropic_text(text: str, *, stop_reason: str = "end_turn") -> ScriptedResponse:
    """Return a Messages reply holding one text block."""
    return anthropic_message([{"type": "text", "text": text}], stop_reason=stop_reason)


def anthropic_tool_use(
    name: str,
    tool_input: Json,
    *,
    tool_id: str = "toolu_1",
    text: str | None = None,
    stop_reason: str = "tool_use",
) -> ScriptedResponse:
    """Return a Messages reply calling ``name`` with ``tool_input`` (after ``text`` if given)."""
    blocks: list[dict[str, Json]] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
    return anthropic_message(blocks, stop_reason=stop_reason)


# The server -------------------------------------------------------------------------------------


class FakeLLM:
    """The scripted server; start it with ``FakeLLM()``, stop it with :meth:`close`."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: deque[ScriptedResponse] = deque()
        self._always: ScriptedResponse | None = None
        self._refuse: Callable[[Json], ScriptedResponse | None] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._hurry = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:PORT`` (Anthropic's base URL)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The base URL to give the OpenAI SDK (``.../v1``)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL to give the Anthropic SDK (it posts to ``/v1/messages``)."""
        return self.url

    def respond(self, *responses: ScriptedResponse) -> None:
        """Queue replies, answered in order, one a request."""
        with self._lock:
            self._queue.extend(responses)

    def respond_always(self, response: ScriptedResponse) -> None:
        """Answer with ``response`` whenever the queue is empty."""
        with self._lock:
            self._always = response

    def refuse_when(self, check: Callable[[Json], ScriptedResponse | None]) -> None:
        """Judge each request body first, as a real server's request validation does.

        ``check`` returns the refusal to answer with, or ``None`` to let the request take the
        next scripted reply (a refused request does not use one up).
        """
        with self._lock:
            self._refuse = check

    def end_delays(self) -> None:
        """Answer every delayed reply now, and later ones without their delay.

        A test that holds model calls with a long delay (long enough for any machine) ends the
        hold when it has seen what it waited for, instead of waiting the delay out.
        """
        self._hurry.set()

    def hold_delays(self) -> None:
        """Undo :meth:`end_delays`: delayed replies wait their delay again."""
        self._hurry.clear()

    def _wait_delay(self, seconds: float) -> bool:
        """Wait out a reply's delay (cut short by :meth:`end_delays`); ``True`` if stopping."""
        deadline = time.monotonic() + seconds
        while not self._hurry.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self._stopping.wait(min(left, 0.05)):
                break
        return self._stopping.is_set()

    def close(self) -> None:
        """Stop the server, cutting short any delayed reply."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, request: RecordedRequest) -> ScriptedResponse:
        with self._lock:
            self.requests.append(request)
            refusal = self._refuse(request.body) if self._refuse is not None else None
            if refusal is not None:
                return refusal
            if self._queue:
                response = self._queue.popleft()
            elif self._always is not None:
                response = self._always
            else:
                return ScriptedResponse(
                    status=400,
                    body={"error": {"message": "fake_llm: no scripted response left"}},
                    headers={"x-should-retry": "false"},
                )
        if response.path is not None and response.path != request.path:
            return ScriptedResponse(
                status=404,
                body={"error": {"message": f"fake_llm: expected {response.path}"}},
                headers={"x-should-retry": "false"},
            )
        return response


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            data = self.rfile.read(length).decode("utf-8")
            try:
                body: Json = json.loads(data) if data else None
            except ValueError:
                body = data
            request = RecordedRequest(
                method="POST",
                path=self.path.split("?", 1)[0],
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
                client_port=int(self.client_address[1]),
            )
            response = fake._next(request)
            if response.delay_s and fake._wait_delay(response.delay_s):
                return
            wants_stream = isinstance(body, dict) and body.get("stream") is True
            if wants_stream and response.status == 200 and not response.never_stream:
                from tests.fake_llm_streams import stream_of

                response = stream_of(response)
            if response.events is not None:
                self._send_events(response)
                return
            payload = response.payload
            if payload is None:
                text = (
                    response.body if isinstance(response.body, str) else json.dumps(response.body)
                )
                payload = text.encode("utf-8")
            try:
                self.send_response(response.status)
                self.send_header("content-type", response.content_type)
                self.send_header("content-length", str(len(payload)))
                for name, value in response.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def _send_events(self, response: ScriptedResponse) -> None:
            """Send ``response.events`` as a chunked ``text/event-stream`` body, one a chunk."""
            try:
                self.send_response(response.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                for name, value in response.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for event, data in response.events or ():
                    if response.gap_s and fake._stopping.wait(response.gap_s):
                        return
                    text = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
                    payload = text.encode("utf-8")
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
                    self.wfile.flush()
                if response.cut:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
