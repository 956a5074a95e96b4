"""The sharded connection pools, over real HTTP against a local server that watches connections."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import openai
import pytest

from agent_executor._providers import anthropic as anthropic_provider
from agent_executor._providers import openai as openai_provider
from agent_executor._providers.pooling import SHARDS, ShardedTransport, split_limits

WAIT_S = 30.0
"""Bound on every wait for the server to see something (never reached when all is well)."""

COMPLETION = {
    "id": "chatcmpl-fake",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-test",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
MESSAGE = {
    "id": "msg_fake",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


class WatchingServer:
    """An HTTP/1.1 keep-alive server recording connections opened and closed and requests seen.

    With ``hold`` set, each request is answered only once that many have been in flight at once (or
    after :data:`WAIT_S`), so a test sees whether the client sent them concurrently.
    """

    def __init__(self, hold: int = 0) -> None:
        self.hold = hold
        self.opened = 0
        self.closed = 0
        self.ports: list[int] = []
        self.targets: list[str] = []
        self.in_flight = 0
        self.peak = 0
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def wait_closed(self, count: int) -> int:
        """Wait until ``count`` connections have closed (or :data:`WAIT_S`); return how many."""
        with self._changed:
            self._changed.wait_for(lambda: self.closed >= count, timeout=WAIT_S)
            return self.closed

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with server._changed:
                    server.opened += 1
                    server._changed.notify_all()

            def finish(self) -> None:
                super().finish()
                with server._changed:
                    server.closed += 1
                    server._changed.notify_all()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                with server._changed:
                    server.ports.append(int(self.client_address[1]))
                    server.targets.append(self.path)
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                    server._changed.notify_all()
                    server._changed.wait_for(lambda: server.peak >= server.hold, WAIT_S)
                body = json.dumps(MESSAGE if "messages" in self.path else COMPLETION).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with server._changed:
                    server.in_flight -= 1

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


@pytest.fixture
def server() -> Iterator[WatchingServer]:
    watching = WatchingServer()
    try:
        yield watching
    finally:
        watching.close()


def single_connection_shards(count: int) -> ShardedTransport:
    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    return ShardedTransport([httpx2.AsyncHTTPTransport(limits=limits) for _ in range(count)])


async def test_concurrent_requests_are_spread_over_the_shards(server: WatchingServer) -> None:
    # Each shard may open one connection, so the server sees the four requests at once only
    # if each went to a different shard (one pool would send them one after another).
    server.hold = 4
    async with httpx2.AsyncClient(transport=single_connection_shards(4)) as client:
        responses = await asyncio.gather(*(client.post(server.url + "/x") for _ in range(4)))

    assert [response.status_code for response in responses] == [200] * 4
    assert server.peak == 4
    assert len(set(server.ports)) == 4


async def test_a_shard_keeps_its_connection_alive(server: WatchingServer) -> None:
    async with httpx2.AsyncClient(transport=single_connection_shards(2)) as client:
        for _ in range(6):
            response = await client.post(server.url + "/x")
            assert response.status_code == 200

    # Calls one at a time go to the first shard and reuse its connection.
    assert len(server.ports) == 6
    assert len(set(server.ports)) == 1
    assert server.opened == 1


async def test_a_streamed_response_counts_until_it_is_closed(server: WatchingServer) -> None:
    # While the first response is open its shard is busy, so both later requests take the
    # other shard; once it is closed, the first shard is free again.
    async with httpx2.AsyncClient(transport=single_connection_shards(2), timeout=WAIT_S) as client:
        async with client.stream("POST", server.url + "/x") as first:
            second = await client.post(server.url + "/x")
            third = await client.post(server.url + "/x")
            await first.aread()
        fourth = await client.post(server.url + "/x")

    assert [r.status_code for r in (first, second, third, fourth)] == [200] * 4
    assert server.ports[1] == server.ports[2] != server.ports[0]
    assert server.ports[3] == server.ports[0]
    assert server.opened == 2


def test_limits_are_split_without_losing_any() -> None:
    parts = split_limits(openai.DEFAULT_CONNECTION_LIMITS, SHARDS)

    assert len(parts) == SHARDS
    assert sum(part.max_connections or 0 for part in parts) == 1000
    assert sum(part.max_keepalive_connections or 0 for part in parts) == 100
    assert {part.keepalive_expiry for part in parts} == {5.0}
    unbounded = split_limits(httpx2.Limits(max_connections=None), 3)
    assert [part.max_connections for part in unbounded] == [None, None, None]


def test_a_transport_needs_a_shard() -> None:
    with pytest.raises(ValueError, match="at least one shard"):
        ShardedTransport([])


async def test_openai_client_serves_a_burst_keeps_and_closes_its_connections(
    server: WatchingServer,
) -> None:
    sdk = openai_provider.async_client("sk-test", server.url + "/v1", 0, 30.0)
    server.hold = SHARDS
    calls = [
        sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
        for _ in range(SHARDS)
    ]
    completions = await asyncio.gather(*calls)
    server.hold = 0
    for _ in range(SHARDS):
        await sdk.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
    await sdk.close()

    assert [c.choices[0].message.content for c in completions] == ["ok"] * SHARDS
    assert server.peak == SHARDS
    # The calls after the burst reuse its connections (keep-alive): none is opened anew.
    assert server.opened == SHARDS
    assert len(server.ports) == 2 * SHARDS
    assert server.wait_closed(SHARDS) == SHARDS


async def test_anthropic_client_keeps_its_connections_and_closes_them(
    server: WatchingServer,
) -> None:
    sdk = anthropic_provider.async_client(api_key="sk-test", base_url=server.url, max_retries=0)
    for _ in range(3):
        message = await sdk.messages.create(
            model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.content[0].type == "text"
    await sdk.close()

    assert len(server.ports) == 3
    assert server.opened <= 3
    assert server.wait_closed(server.opened) == server.opened


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY"])
async def test_a_proxy_from_the_environment_is_still_used(
    server: WatchingServer, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    # An HTTP proxy is sent the absolute URL: the request reached the proxy, not the host.
    monkeypatch.setenv(variable, server.url)
    sdk = openai_provider.async_client("sk-test", "http://upstream.invalid/v1", 0, 30.0)
    try:
        completion = await sdk.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
    finally:
        await sdk.close()

    assert completion.choices[0].message.content == "ok"
    assert server.targets == ["http://upstream.invalid/v1/chat/completions"]


async def test_a_host_no_proxy_names_goes_direct(
    server: WatchingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    sdk = anthropic_provider.async_client(api_key="sk-test", base_url=server.url, max_retries=0)
    try:
        await sdk.messages.create(
            model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    finally:
        await sdk.close()

    assert server.targets == ["/v1/messages"]
