"""A local server speaking OpenAI's Batch API and Anthropic's Message Batches for the real SDKs.

Each request, live or batched, is answered by one ``responder(api, body)``: ``api`` is
``"openai"`` or ``"anthropic"``, ``body`` the request body parsed; it returns the reply body
(a chat completion or a message) or an :class:`ItemFault`. The server records the exact bytes
of every live body and every batch item's body, so tests compare what a batch sends with what a
live call sends. Endpoints:

- OpenAI: ``POST /v1/chat/completions`` (live), ``POST /v1/files`` (multipart upload),
  ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``,
  ``POST /v1/batches/{id}/cancel``.
- Anthropic: ``POST /v1/messages`` (live), ``POST /v1/messages/batches``,
  ``POST /v1/messages/batches/{id}/cancel``,
  ``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches/{id}/results``.

A batch ends after ``polls_to_end`` status reads (not after seconds); ``turnaround_s`` is the
provider's simulated time per batch, added up in :attr:`FakeBatches.simulated_s`, never slept.
``fail_batches`` makes every batch fail whole.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = ["FakeBatches", "ItemFault", "Responder", "submit_reply"]

Json: TypeAlias = Any


@dataclass(frozen=True)
class ItemFault:
    """An item the provider does not answer: ``error`` (failed) or ``expired``."""

    kind: str
    message: str = "scripted fault"


Responder = Callable[[str, Json], "Json | ItemFault"]


def submit_reply(api: str, arguments: dict[str, Any], answered: int) -> Json:
    """Return a reply calling ``submit_result`` with ``arguments``, in ``api``'s wire format.

    ``answered``: the assistant turns before it, which numbers the call's id.
    """
    if api == "anthropic":
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {
                    "type": "tool_use",
                    "id": f"toolu_{answered}",
                    "name": "submit_result",
                    "input": arguments,
                }
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 5},
        }
    call = {
        "id": f"call_{answered}",
        "type": "function",
        "function": {"name": "submit_result", "arguments": json.dumps(arguments)},
    }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


@dataclass
class _Batch:
    id: str
    api: str
    items: list[tuple[str, bytes]]
    polls: int = 0
    output: bytes = b""
    errors: bytes = b""
    counts: dict[str, int] = field(default_factory=dict)
    cancelled: bool = False


class FakeBatches:
    """The batch server; stop it with :meth:`close`.

    Args:
        responder: Answers each request body.
        polls_to_end: Status reads before a batch ends (1: ended at the first read).
        turnaround_s: Simulated provider time per batch, counted in :attr:`simulated_s`.
    """

    def __init__(
        self, responder: Responder, *, polls_to_end: int = 2, turnaround_s: float = 30.0
    ) -> None:
        self.responder = responder
        self.polls_to_end = polls_to_end
        self.turnaround_s = turnaround_s
        self.fail_batches = False
        self.live_bodies: list[bytes] = []
        self.batches: list[_Batch] = []
        self.files: dict[str, bytes] = {}
        self.simulated_s = 0.0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The server's root URL."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def items_sent(self) -> int:
        """Batch items received, over every batch."""
        return sum(len(batch.items) for batch in self.batches)

    def item_bodies(self) -> list[bytes]:
        """The exact body bytes of every batch item, in the order received."""
        return [body for batch in self.batches for _, body in batch.items]

    def close(self) -> None:
        """Stop the server."""
        self._server.shutdown()
        self._server.server_close()

    # -- the two APIs ---------------------------------------------------------------------------

    def openai_upload(self, content_type: str, data: bytes) -> Json:
        message = BytesParser(policy=HTTP).parsebytes(
            b"content-type: " + content_type.encode() + b"\r\n\r\n" + data
        )
        payload = b""
        for part in message.iter_parts():
            if part.get_param("name", header="content-disposition") == "file":
                payload = part.get_payload(decode=True)
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = payload
        return _file_object(file_id, len(payload))

    def openai_create(self, body: Json) -> Json:
        items = []
        for line in self.files[body["input_file_id"]].splitlines():
            record = json.loads(line)
            assert record["method"] == "POST" and record["url"] == body["endpoint"]
            start = line.index(b'"body":') + len(b'"body":')
            items.append((record["custom_id"], line[start:-1]))  # the body's exact bytes
        batch = self._new("openai", f"batch_{next(self._ids)}", items)
        return self._openai_object(batch)

    def openai_get(self, batch_id: str) -> Json:
        batch = self._poll(batch_id)
        return self._openai_object(batch)

    def _openai_object(self, batch: _Batch) -> Json:
        ended = batch.polls >= self.polls_to_end
        status = "in_progress" if not ended else "failed" if self.fail_batches else "completed"
        if batch.cancelled:
            status = "cancelling"
        counts = batch.counts if ended else {}
        obj = {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": "file-in",
            "completion_window": "24h",
            "status": status,
            "created_at": 1_700_000_000,
            "output_file_id": f"{batch.id}-out" if ended and batch.output else None,
            "error_file_id": f"{batch.id}-err" if ended and batch.errors else None,
            "request_counts": {
                "total": len(batch.items),
                "completed": counts.get("succeeded", 0),
                "failed": counts.get("failed", 0),
            },
        }
        if status == "failed":
            obj["errors"] = {"object": "list", "data": [{"code": "scripted", "message": "down"}]}
            obj["output_file_id"] = obj["error_file_id"] = None
        return obj

    def openai_content(self, file_id: str) -> bytes:
        batch_id, which = file_id.rsplit("-", 1)
        batch = next(b for b in self.batches if b.id == batch_id)
        return batch.output if which == "out" else batch.errors

    def anthropic_create(self, body: Json) -> Json:
        items = [
            (request["custom_id"], json.dumps(request["params"]).encode())
            for request in body["requests"]
        ]
        batch = self._new("anthropic", f"msgbatch_{next(self._ids)}", items)
        return self._anthropic_object(batch)

    def anthropic_get(self, batch_id: str) -> Json:
        return self._anthropic_object(self._poll(batch_id))

    def _anthropic_object(self, batch: _Batch) -> Json:
        ended = batch.polls >= self.polls_to_end
        counts = batch.counts if ended else {}
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else len(batch.items),
                "succeeded": counts.get("succeeded", 0),
                "errored": counts.get("errored", 0),
                "canceled": 0,
                "expired": counts.get("expired", 0),
            },
            "created_at": "2026-11-26T00:00:00Z",
            "expires_at": "2026-11-27T00:00:00Z",
            "ended_at": "2026-11-26T00:00:30Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": "2026-11-26T00:00:01Z" if batch.cancelled else None,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def cancel(self, batch_id: str) -> Json:
        """Mark a batch cancelled (both APIs answer with the batch's object)."""
        batch = next(b for b in self.batches if b.id == batch_id)
        batch.cancelled = True
        if batch.api == "openai":
            return self._openai_object(batch)
        return self._anthropic_object(batch)

    def anthropic_results(self, batch_id: str) -> bytes:
        return next(b for b in self.batches if b.id == batch_id).output

    # -- answering ------------------------------------------------------------------------------

    def _new(self, api: str, batch_id: str, items: list[tuple[str, bytes]]) -> _Batch:
        batch = _Batch(batch_id, api, items)
        out, err = [], []
        counts = {"succeeded": 0, "failed": 0, "errored": 0, "expired": 0}
        for custom_id, body in items:
            reply = self.responder(api, json.loads(body))
            line = _result_line(api, custom_id, reply)
            if isinstance(reply, ItemFault):
                counts["failed"] += 1
                counts["errored" if reply.kind == "error" else "expired"] += 1
                (err if api == "openai" else out).append(line)
            else:
                counts["succeeded"] += 1
                out.append(line)
        if self.fail_batches:
            out, err, counts = [], [], {}
        batch.output = b"".join(json.dumps(x).encode() + b"\n" for x in out)
        batch.errors = b"".join(json.dumps(x).encode() + b"\n" for x in err)
        batch.counts = counts
        with self._lock:
            self.batches.append(batch)
            self.simulated_s += self.turnaround_s
        return batch

    def _poll(self, batch_id: str) -> _Batch:
        batch = next(b for b in self.batches if b.id == batch_id)
        batch.polls += 1
        return batch

    def live(self, api: str, data: bytes) -> Json:
        self.live_bodies.append(data)
        reply = self.responder(api, json.loads(data))
        assert not isinstance(reply, ItemFault)
        return reply


def _result_line(api: str, custom_id: str, reply: Json | ItemFault) -> Json:
    if api == "openai":
        if isinstance(reply, ItemFault):
            code = "batch_expired" if reply.kind == "expired" else "server_error"
            return {
                "id": "r",
                "custom_id": custom_id,
                "response": None,
                "error": {"code": code, "message": reply.message},
            }
        return {
            "id": "r",
            "custom_id": custom_id,
            "error": None,
            "response": {"status_code": 200, "request_id": "q", "body": reply},
        }
    if isinstance(reply, ItemFault):
        if reply.kind == "expired":
            return {"custom_id": custom_id, "result": {"type": "expired"}}
        error = {"type": "error", "error": {"type": "api_error", "message": reply.message}}
        return {"custom_id": custom_id, "result": {"type": "errored", "error": error}}
    return {"custom_id": custom_id, "result": {"type": "succeeded", "message": reply}}


def _file_object(file_id: str, size: int) -> Json:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": 1_700_000_000,
        "filename": "batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def _handler_for(fake: FakeBatches) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("content-length") or 0))
            path = self.path.split("?", 1)[0]
            if path == "/v1/chat/completions":
                self._json(fake.live("openai", data))
            elif path == "/v1/messages":
                self._json(fake.live("anthropic", data))
            elif path == "/v1/files":
                self._json(fake.openai_upload(self.headers["content-type"], data))
            elif path == "/v1/batches":
                self._json(fake.openai_create(json.loads(data)))
            elif path == "/v1/messages/batches":
                self._json(fake.anthropic_create(json.loads(data)))
            elif re.fullmatch(r"/v1/(messages/)?batches/[^/]+/cancel", path):
                self._json(fake.cancel(path.split("/")[-2]))
            else:
                self._json({"error": {"message": f"no route {path}"}}, 404)

        def do_GET(self) -> None:
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            if parts[:2] == ["v1", "batches"] and len(parts) == 3:
                self._json(fake.openai_get(parts[2]))
            elif parts[:2] == ["v1", "files"] and parts[3:] == ["content"]:
                self._send(fake.openai_content(parts[2]), "application/octet-stream")
            elif parts[:3] == ["v1", "messages", "batches"] and len(parts) == 4:
                self._json(fake.anthropic_get(parts[3]))
            elif parts[:3] == ["v1", "messages", "batches"] and parts[4:] == ["results"]:
                self._send(fake.anthropic_results(parts[3]), "application/binary")
            else:
                self._json({"error": {"message": f"no route {self.path}"}}, 404)

        def _json(self, body: Json, status: int = 200) -> None:
            self._send(json.dumps(body).encode(), "application/json", status)

        def _send(self, payload: bytes, content_type: str, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
