"""A webhook receiver for the tests: a real HTTP server on loopback that checks what it gets.

It answers each POST with the next scripted status (200 once the script is used up), records the
raw body and headers of every request, checks the HMAC signature over the raw body the way a
user's receiver would, and keeps each event once by its ``X-Agentshape-Event-Id``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Delivery:
    """One request the receiver got."""

    path: str
    headers: dict[str, str]
    raw: bytes
    signed: bool
    """Whether ``X-Agentshape-Signature`` was the HMAC-SHA256 of ``raw`` with the secret."""
    status: int
    """What the receiver answered."""

    @property
    def body(self) -> Any:
        return json.loads(self.raw)


class Receiver:
    """A loopback HTTP server receiving webhooks signed with ``secret``."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.statuses: deque[int] = deque()
        self.always: int = 200
        """The status once the script is used up."""
        self.delays: deque[float] = deque()
        """Seconds to wait before answering, one a request (none once used up)."""
        self.deliveries: list[Delivery] = []
        self.events: dict[str, Any] = {}
        """Each event once, by its event id: what a deduping receiver keeps."""
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver._take(self, raw)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/agentshape"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _take(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        expected = "sha256=" + hmac.new(self.secret.encode(), raw, hashlib.sha256).hexdigest()
        given = handler.headers.get("x-agentshape-signature", "")
        signed = hmac.compare_digest(given, expected)
        with self._lock:
            delay = self.delays.popleft() if self.delays else 0.0
        if delay:
            time.sleep(delay)
        with self._lock:
            status = self.statuses.popleft() if self.statuses else self.always
            delivery = Delivery(
                path=handler.path,
                headers={k.lower(): v for k, v in handler.headers.items()},
                raw=raw,
                signed=signed,
                status=status,
            )
            self.deliveries.append(delivery)
            event_id = delivery.headers.get("x-agentshape-event-id", "")
            if signed and status == 200 and event_id not in self.events:
                self.events[event_id] = delivery.body
        handler.send_response(status)
        handler.send_header("content-length", "0")
        handler.end_headers()

    def wait_for(self, count: int, timeout: float = 60) -> list[Delivery]:
        """Return the deliveries once there are at least ``count`` (fail after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.deliveries) >= count:
                    return list(self.deliveries)
            time.sleep(0.05)
        raise AssertionError(f"{len(self.deliveries)} deliveries, not {count}, in {timeout} s")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
