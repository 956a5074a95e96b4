"""A local OpenAI-speaking server that enforces limits as a provider does, and counts.

It answers every ``POST /v1/chat/completions`` with one scripted reply after ``delay_s``, unless
the request is above its ``concurrency`` (requests in flight) or its ``requests_per_minute``:
then it answers 429 with ``retry-after``, as OpenAI does. It records the most requests it ever
had in flight and every 429 it sent, so a test asserts the limits a client kept::

    with LimitedLLM(reply, concurrency=2, requests_per_minute=600) as server:
        ...
    assert server.max_in_flight <= 2 and server.refused == 0
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from tests.fake_llm import ScriptedResponse

__all__ = ["LimitedLLM"]


class LimitedLLM:
    """The server; a context manager that stops it on exit.

    Args:
        reply: What every request within the limits is answered.
        concurrency: Most requests in flight; one more is answered 429.
        requests_per_minute: Most requests accepted in any ``window_s``; one more is answered 429.
        delay_s: How long each accepted request takes.
        retry_after_s: The ``retry-after`` a 429 carries.
        sdk_retries: Let the SDKs retry a 429 themselves; ``False`` sends ``x-should-retry:
            false`` with it, so the client's own handling of the 429 is what is seen.
        window_s: The span ``requests_per_minute`` counts over (a minute, as a provider's; a
            test gives the client the same shorter one).
    """

    def __init__(
        self,
        reply: ScriptedResponse,
        *,
        concurrency: int,
        requests_per_minute: int,
        delay_s: float = 0.3,
        retry_after_s: float = 1.0,
        sdk_retries: bool = True,
        window_s: float = 60.0,
    ) -> None:
        self.sdk_retries = sdk_retries
        self.reply = reply
        self.concurrency = concurrency
        self.requests_per_minute = requests_per_minute
        self.delay_s = delay_s
        self.retry_after_s = retry_after_s
        self.window_s = window_s
        self.accepted_at: list[float] = []
        """When each accepted request came (``time.monotonic()``), in order."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.accepted = 0
        self.refused = 0
        self._started: deque[float] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def anthropic_base_url(self) -> str:
        """The base URL to give the Anthropic SDK (it posts to ``/v1/messages``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The base URL to give the OpenAI SDK (``.../v1``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def enter(self) -> bool:
        """Count a request in, or return ``False`` when it is above a limit (a 429)."""
        now = time.monotonic()
        with self._lock:
            while self._started and self._started[0] <= now - self.window_s:
                self._started.popleft()
            if self.in_flight >= self.concurrency or len(self._started) >= self.requests_per_minute:
                self.refused += 1
                return False
            self._started.append(now)
            self.accepted_at.append(now)
            self.in_flight += 1
            self.accepted += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return True

    def leave(self) -> None:
        """Count an accepted request out."""
        with self._lock:
            self.in_flight -= 1

    def close(self) -> None:
        """Stop the server."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LimitedLLM:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _handler_for(server: LimitedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            if not server.enter():
                self._send(
                    429,
                    {"error": {"message": "Rate limit reached", "type": "requests"}},
                    {"retry-after": str(server.retry_after_s)}
                    | ({} if server.sdk_retries else {"x-should-retry": "false"}),
                )
                return
            try:
                time.sleep(server.delay_s)
            finally:
                # counted out before the reply is written: a client that starts its next call
                # as soon as it reads this one's reply is not taken for one over the limit
                server.leave()
            self._send(server.reply.status, server.reply.body, server.reply.headers)

        def _send(self, status: int, body: object, headers: dict[str, str]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
