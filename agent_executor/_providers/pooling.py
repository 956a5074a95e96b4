"""Connection pools for the asynchronous SDK clients: :class:`ShardedTransport`.

httpcore2's pool walks every pooled connection on each request added or released, polling the
socket of each idle one, so a call's cost grows with the connections the pool holds (about 100
at 100 runs at once). :class:`ShardedTransport` spreads requests over several smaller pools
(shards), each request to the shard with the fewest requests in flight, so each walk covers a
few connections. :func:`sharded_transports` builds it with the proxies from the environment
mounted beside it, as the SDKs' default clients do. The synchronous clients make one call at a
time and keep their single pool.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING

import httpx2
from httpx2._utils import get_environment_proxies  # the rules httpx2 itself applies

if TYPE_CHECKING:
    from httpx2._transports.default import SOCKET_OPTION

__all__ = ["SHARDS", "ShardedTransport", "sharded_transports", "split_limits"]

SHARDS = 8
"""Pools an asynchronous client's direct requests are spread over (bench/RESULTS.md, issue 32)."""


class ShardedTransport(httpx2.AsyncBaseTransport):
    """An async transport that sends each request through the least busy of several transports.

    A request counts as in flight on its shard from when it is sent until its response is
    closed; a new request goes to the shard with the fewest, the first of them on a tie (so
    calls one at a time reuse one connection). Closing the transport closes every shard.
    """

    def __init__(self, shards: Sequence[httpx2.AsyncBaseTransport]) -> None:
        """Send requests through ``shards``.

        Args:
            shards: The transports to spread requests over (at least one).

        Raises:
            ValueError: If ``shards`` is empty.
        """
        if not shards:
            raise ValueError("a ShardedTransport needs at least one shard")
        self._shards = tuple(shards)
        self._in_flight = [0] * len(self._shards)

    @property
    def shards(self) -> tuple[httpx2.AsyncBaseTransport, ...]:
        """The transports requests are spread over."""
        return self._shards

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the least busy shard and return its response.

        Args:
            request: The request to send.

        Returns:
            The shard's response, whose closing ends the request's count on that shard.

        Raises:
            httpx2.TransportError: Whatever the shard raises, unchanged.
            TypeError: If the shard answered with a synchronous body.
        """
        index = self._pick()
        self._in_flight[index] += 1
        try:
            response = await self._shards[index].handle_async_request(request)
        except BaseException:
            self._in_flight[index] -= 1
            raise
        stream = response.stream
        if not isinstance(stream, httpx2.AsyncByteStream):
            self._in_flight[index] -= 1
            raise TypeError(f"shard {index} answered with a synchronous body: {stream!r}")
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CountedStream(stream, self, index),
            extensions=response.extensions,
        )

    def _pick(self) -> int:
        """Return the index of the shard with the fewest requests in flight, the first on ties."""
        # Ties go to the first shard rather than in turn, so calls made one at a time keep
        # reusing one kept-alive connection (no new connection, or TLS handshake, per shard).
        in_flight = self._in_flight
        best = 0
        fewest = in_flight[0]
        for index in range(1, len(in_flight)):
            if fewest == 0:
                break
            if in_flight[index] < fewest:
                best, fewest = index, in_flight[index]
        return best

    def _release(self, index: int) -> None:
        self._in_flight[index] -= 1

    async def aclose(self) -> None:
        """Close every shard (each closes its pooled connections)."""
        for shard in self._shards:
            await shard.aclose()


class _CountedStream(httpx2.AsyncByteStream):
    """A response body that ends its request's count on its shard when closed (once)."""

    def __init__(self, stream: httpx2.AsyncByteStream, owner: ShardedTransport, index: int) -> None:
        self._stream = stream
        self._owner: ShardedTransport | None = owner
        self._index = index

    def __aiter__(self) -> AsyncIterator[bytes]:
        # The shard's own iterator, not a generator around it: no extra step for each chunk.
        return self._stream.__aiter__()

    async def aclose(self) -> None:
        owner, self._owner = self._owner, None
        if owner is not None:
            owner._release(self._index)
        await self._stream.aclose()


def split_limits(limits: httpx2.Limits, shards: int) -> list[httpx2.Limits]:
    """Return ``limits`` divided between ``shards`` pools, their sums equal to ``limits``.

    Args:
        limits: The limits of the whole client.
        shards: How many pools share them.

    Returns:
        One :class:`httpx2.Limits` a pool; an unbounded limit stays unbounded in each, and a
        bounded one gives each pool at least one.
    """
    connections = _split(limits.max_connections, shards)
    keepalive = _split(limits.max_keepalive_connections, shards)
    return [
        httpx2.Limits(
            max_connections=connections[i],
            max_keepalive_connections=keepalive[i],
            keepalive_expiry=limits.keepalive_expiry,
        )
        for i in range(shards)
    ]


def _split(total: int | None, parts: int) -> list[int | None]:
    if total is None:
        return [None] * parts
    base, extra = divmod(total, parts)
    return [max(1, base + (1 if i < extra else 0)) for i in range(parts)]


def sharded_transports(
    *,
    verify: ssl.SSLContext,
    limits: httpx2.Limits,
    shards: int = SHARDS,
    socket_options: Iterable[SOCKET_OPTION] | None = None,
) -> tuple[ShardedTransport, dict[str, httpx2.AsyncBaseTransport | None]]:
    """Return a client's direct transport, sharded, and the proxy mounts the environment asks for.

    An ``httpx2.AsyncClient`` given a ``transport`` no longer mounts the proxies of
    ``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY`` itself, so they are mounted here as it would:
    one unsharded transport a proxy, and ``None`` (the direct transport) for hosts ``NO_PROXY``
    names. Pass both to the client: ``transport=``, ``mounts=``.

    Args:
        verify: The TLS context of every transport.
        limits: The client's connection limits, split between the shards (each proxy
            transport gets them whole).
        shards: How many pools direct requests are spread over.
        socket_options: Socket options of every transport (``None``: httpx2's).

    Returns:
        The sharded direct transport and the mounts.
    """
    options = None if socket_options is None else list(socket_options)
    transport = ShardedTransport(
        [
            httpx2.AsyncHTTPTransport(verify=verify, limits=part, socket_options=options)
            for part in split_limits(limits, shards)
        ]
    )
    mounts: dict[str, httpx2.AsyncBaseTransport | None] = {
        pattern: None
        if url is None
        else httpx2.AsyncHTTPTransport(
            verify=verify, limits=limits, proxy=httpx2.Proxy(url=url), socket_options=options
        )
        for pattern, url in get_environment_proxies().items()
    }
    return transport, mounts
