"""The chaos benchmark's model server: OpenAI Chat Completions with latency, and a ledger of turns.

It runs on the benchmark's own event loop (``asyncio.start_server`` on a free loopback port), so
it lives on while the agentshape processes around it are killed. Every run's prompt carries a
unique token (:data:`TOKEN`); a request's turn is its number of messages. Each run is answered
in three turns:

1. the first request (no assistant message yet) gets a call of the agent's input tool (the
   first tool offered that is not forced and not ``submit_result``);
2. the second gets a ``submit_result`` call whose arguments break the contract, so the run loop
   re-asks;
3. the third gets valid arguments, and the run completes.

A tool the request forces is always the one called. Every request is recorded in the
:class:`Ledger` when it arrives (a provider bills a request it has received, whether or not the
client is still there to read the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TOKEN = re.compile(r"chaos-[0-9a-f]{16}")
"""The unique token each run's prompt carries, which names the run to the model server."""

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["token", "verdict"],
    "properties": {
        "token": {"type": "string", "minLength": 1},
        "verdict": {"enum": ["ok", "bad"]},
    },
    "additionalProperties": False,
}
"""The chaos agent's contract: the run's token and a verdict."""

_MAX_HEAD = 64 * 1024
_MAX_BODY = 16 * 1024 * 1024


@dataclass
class Ledger:
    """Every model request, per run token in arrival order: ``(turn, monotonic time)``."""

    requests: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    total: int = 0
    malformed: int = 0

    def record(self, token: str, turn: int) -> None:
        """Record a request for ``token``'s turn ``turn`` (its number of messages)."""
        self.total += 1
        self.requests.setdefault(token, []).append((turn, time.monotonic()))

    def repeats(self, token: str, ended_at: float | None) -> tuple[int, int]:
        """Count the requests of a run that asked for a turn already asked for.

        A turn is finished once the run went on past it: the model server was asked for a
        later turn of the run, or the run was seen ended (``ended_at``, monotonic) before the
        repeat arrived. Repeating a finished turn pays for it twice; repeating a turn whose
        answer was still in flight when its runner died is the cost of the death.

        Args:
            token: The run's token.
            ended_at: When the benchmark first saw the run ended, if it did.

        Returns:
            ``(finished turns paid again, unfinished turns asked again)``.
        """
        seen: set[int] = set()
        furthest = 0
        paid_twice = in_flight = 0
        for turn, at in self.requests.get(token, []):
            if turn in seen:
                if furthest > turn or (ended_at is not None and at > ended_at):
                    paid_twice += 1
                else:
                    in_flight += 1
            seen.add(turn)
            furthest = max(furthest, turn)
        return paid_twice, in_flight


def _function_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
            name = tool["function"].get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def _forced(body: Mapping[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        return name if isinstance(name, str) else None
    return None


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def answer(body: Mapping[str, Any], token: str, number: int) -> dict[str, Any]:
    """Return the chat completion for a request of the run named by ``token``.

    Args:
        body: The parsed request.
        token: The run's token (echoed in the valid result).
        number: A request number, for unique ids.

    Returns:
        A ``chat.completion`` object: an input-tool call on the first turn, an invalid
        ``submit_result`` on the second, a valid one after.
    """
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    answered = sum(1 for m in messages if m.get("role") == "assistant")
    names = _function_names(body)
    forced = _forced(body)
    submit = forced or ("submit_result" if "submit_result" in names else None)
    inputs = [name for name in names if name != submit and name != "submit_result"]
    if forced is None and answered == 0 and inputs:
        name, arguments = inputs[0], {"path": "notes.txt"}
    else:
        verdict = "maybe" if answered <= 1 else "ok"  # "maybe" is outside the enum: a re-ask
        name, arguments = submit or "submit_result", {"token": token, "verdict": verdict}
    call = {
        "id": f"call_{number:08d}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {
        "id": f"chatcmpl-{number:08d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "chaos",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }


class ModelServer:
    """The model server: ``POST /v1/chat/completions`` answered after a random latency.

    Args:
        latency_s: The least and the most seconds before an answer (uniform).
        rng: The source of the latencies.
    """

    def __init__(self, latency_s: tuple[float, float], rng: random.Random) -> None:
        self.latency_s = latency_s
        self.rng = rng
        self.ledger = Ledger()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen on a free loopback port; return the base URL (``http://127.0.0.1:N/v1``)."""
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}/v1"

    async def stop(self) -> None:
        """Stop listening and drop the open connections."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away (a killed runner): its requests are already counted
        except asyncio.CancelledError:
            # Stopped (the server stops, or the benchmark is interrupted): end normally, since
            # asyncio's stream callback in Python 3.11 logs a cancelled handler as an error.
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; return whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _MAX_HEAD:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, target, *_ = [*lines[0].split(" "), "", ""]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        if length > _MAX_BODY:
            return False
        raw = await reader.readexactly(length)
        keep = headers.get("connection", "").lower() != "close"
        if method != "POST" or not target.split("?")[0].endswith("/chat/completions"):
            await _send(writer, 404, {"error": {"message": f"no route {method} {target}"}}, keep)
            return keep
        try:
            body = json.loads(raw)
            prompt = " ".join(_text(m) for m in body["messages"] if isinstance(m, dict))
            found = TOKEN.search(prompt)
            if found is None:
                raise ValueError("no chaos token in the messages")
        except (ValueError, KeyError, TypeError) as error:
            self.ledger.malformed += 1
            await _send(writer, 400, {"error": {"message": f"bad request: {error}"}}, keep)
            return keep
        self.ledger.record(found.group(), len(body["messages"]))
        number = self.ledger.total
        await asyncio.sleep(self.rng.uniform(*self.latency_s))
        await _send(writer, 200, answer(body, found.group(), number), keep)
        return keep


async def _send(writer: asyncio.StreamWriter, status: int, body: object, keep: bool) -> None:
    payload = json.dumps(body).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n"
        f"connection: {'keep-alive' if keep else 'close'}\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
